#ifndef SYMHEAP_DEVICE_HIP_H
#define SYMHEAP_DEVICE_HIP_H
#include "symheap_adaptor.h"
extern const symheap_device_ops symheap__hip_device_ops;
#endif

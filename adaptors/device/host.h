#ifndef SYMHEAP_DEVICE_HOST_H
#define SYMHEAP_DEVICE_HOST_H
#include "symheap_adaptor.h"
extern const symheap_device_ops symheap__host_device_ops;
#endif

#ifndef SYMHEAP_DEVICE_CUDA_H
#define SYMHEAP_DEVICE_CUDA_H
#include "symheap_adaptor.h"
extern const symheap_device_ops symheap__cuda_device_ops;
#endif

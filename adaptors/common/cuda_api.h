/* The slice of the CUDA driver API that the CUDA adaptor uses, declared here
 * so that symheap builds without the CUDA toolkit.  Names are our own (cu_*)
 * so this header can sit beside cuda.h; test/test_cuda_abi.c checks every
 * size, offset and value below against the toolkit's cuda.h when one is
 * installed.  Entry points are resolved with cuGetProcAddress at the version
 * given in CU_FUNCS, which pins their ABI. */
#ifndef SYMHEAP_CUDA_API_H
#define SYMHEAP_CUDA_API_H

#include <stddef.h>

typedef int cu_result_t;
typedef int cu_device_t;
typedef struct cu_ctx_st *cu_context_t;
typedef unsigned long long cu_deviceptr_t;
typedef unsigned long long cu_mem_handle_t;
typedef struct cu_stream_st *cu_stream_t;
/* The legacy default stream and the per-thread one, as handles. */
#define CU_STREAM_LEGACY_HANDLE ((cu_stream_t)0x1)
#define CU_STREAM_PER_THREAD_HANDLE ((cu_stream_t)0x2)

typedef struct {
  int type; /* CU_MEM_LOCATION_TYPE_* */
  int id;
} cu_mem_location_t;

typedef struct {
  int type;                   /* CU_MEM_ALLOCATION_TYPE_* */
  int requested_handle_types; /* CU_MEM_HANDLE_TYPE_* */
  cu_mem_location_t location;
  void *win32_handle_meta_data;
  struct {
    unsigned char compression_type;
    unsigned char gpu_direct_rdma_capable;
    unsigned short usage;
    unsigned char reserved[4];
  } alloc_flags;
} cu_mem_prop_t;

typedef struct {
  cu_mem_location_t location;
  int flags; /* CU_MEM_ACCESS_FLAGS_* */
} cu_access_desc_t;

typedef struct {
  unsigned int num_devices;
  size_t size;
  unsigned long long handle_types;
  unsigned long long flags;
} cu_mc_prop_t;

#define CU_IPC_HANDLE_BYTES 64
typedef struct {
  char reserved[CU_IPC_HANDLE_BYTES];
} cu_ipc_mem_handle_t;

enum {
  CU_OK = 0,
  CU_ERR_INVALID_VALUE = 1,
  CU_ERR_OUT_OF_MEMORY = 2,
  CU_ERR_NOT_INITIALIZED = 3,
  CU_ERR_NO_DEVICE = 100,
  CU_ERR_INVALID_DEVICE = 101,
  CU_ERR_INVALID_CONTEXT = 201,
  CU_ERR_NOT_MAPPED = 211,
  CU_ERR_INVALID_HANDLE = 400,
  CU_ERR_ILLEGAL_STATE = 401,
  CU_ERR_NOT_FOUND = 500,
  CU_ERR_NOT_READY = 600,
  CU_ERR_PEER_ACCESS_ALREADY_ENABLED = 704,
  CU_ERR_NOT_SUPPORTED = 801,
  CU_ERR_UNKNOWN = 999,
};

enum {
  CU_ATTR_VMM_SUPPORTED = 102,
  CU_ATTR_POSIX_FD_SUPPORTED = 103,
  CU_ATTR_MULTICAST_SUPPORTED = 132,
  CU_MEM_HANDLE_TYPE_POSIX_FD = 1,
  CU_RANGE_DMA_BUF_FD = 1, /* CUmemRangeHandleType */
  CU_ALLOC_TYPE_PINNED = 1,
  CU_LOCATION_DEVICE = 1,
  CU_MEM_ACCESS_READWRITE = 3,
  CU_GRANULARITY_MINIMUM = 0,
  CU_GRANULARITY_RECOMMENDED = 1,
  CU_IPC_LAZY_ENABLE_PEER_ACCESS = 1,
  CU_STREAM_FLAG_NON_BLOCKING = 1,
  CU_HOSTALLOC_PORTABLE = 1,  /* every context may use it */
  CU_HOSTALLOC_DEVICEMAP = 2, /* mapped into the device's space */
  CU_CAPTURE_STATUS_NONE = 0,
  CU_CAPTURE_STATUS_ACTIVE = 1,
  CU_ERR_STREAM_CAPTURE_IMPLICIT = 906,
};

/* name, the version cuGetProcAddress is asked for, return, parameters.
 * 12000 is the oldest driver the adaptor accepts; multicast needs 12010. */
#define CU_FUNCS(X)                                                            \
  X(cuInit, 12000, (unsigned int flags))                                       \
  X(cuDriverGetVersion, 12000, (int *version))                                 \
  X(cuGetErrorName, 12000, (cu_result_t e, const char **s))                    \
  X(cuGetErrorString, 12000, (cu_result_t e, const char **s))                  \
  X(cuDeviceGetCount, 12000, (int *count))                                     \
  X(cuDeviceGet, 12000, (cu_device_t * dev, int ordinal))                      \
  X(cuDeviceGetAttribute, 12000, (int *v, int attr, cu_device_t dev))          \
  X(cuDeviceGetName, 12000, (char *name, int len, cu_device_t dev))            \
  X(cuDeviceCanAccessPeer, 12000,                                              \
    (int *can, cu_device_t dev, cu_device_t peer))                             \
  X(cuCtxGetCurrent, 12000, (cu_context_t * ctx))                              \
  X(cuCtxSetCurrent, 12000, (cu_context_t ctx))                                \
  X(cuCtxGetDevice, 12000, (cu_device_t * dev))                                \
  X(cuCtxEnablePeerAccess, 12000, (cu_context_t peer, unsigned int flags))     \
  X(cuDevicePrimaryCtxRetain, 12000, (cu_context_t * ctx, cu_device_t dev))    \
  X(cuDevicePrimaryCtxRelease, 12000, (cu_device_t dev))                       \
  X(cuMemGetAllocationGranularity, 12000,                                      \
    (size_t * g, const cu_mem_prop_t *prop, int option))                       \
  X(cuMemCreate, 12000,                                                        \
    (cu_mem_handle_t * h, size_t size, const cu_mem_prop_t *prop,              \
     unsigned long long flags))                                                \
  X(cuMemRelease, 12000, (cu_mem_handle_t h))                                  \
  X(cuMemExportToShareableHandle, 12000,                                       \
    (void *out, cu_mem_handle_t h, int type, unsigned long long flags))        \
  X(cuMemImportFromShareableHandle, 12000,                                     \
    (cu_mem_handle_t * h, void *os_handle, int type))                          \
  X(cuMemAddressReserve, 12000,                                                \
    (cu_deviceptr_t * ptr, size_t size, size_t align, cu_deviceptr_t addr,     \
     unsigned long long flags))                                                \
  X(cuMemAddressFree, 12000, (cu_deviceptr_t ptr, size_t size))                \
  X(cuMemMap, 12000,                                                           \
    (cu_deviceptr_t ptr, size_t size, size_t offset, cu_mem_handle_t h,        \
     unsigned long long flags))                                                \
  X(cuMemUnmap, 12000, (cu_deviceptr_t ptr, size_t size))                      \
  X(cuMemSetAccess, 12000,                                                     \
    (cu_deviceptr_t ptr, size_t size, const cu_access_desc_t *desc,            \
     size_t count))                                                            \
  X(cuMemRetainAllocationHandle, 12000, (cu_mem_handle_t * h, void *addr))     \
  X(cuMemGetAddressRange, 12000,                                               \
    (cu_deviceptr_t * base, size_t * size, cu_deviceptr_t ptr))                \
  X(cuIpcGetMemHandle, 12000, (cu_ipc_mem_handle_t * h, cu_deviceptr_t ptr))   \
  X(cuIpcOpenMemHandle, 12000,                                                 \
    (cu_deviceptr_t * ptr, cu_ipc_mem_handle_t h, unsigned int flags))         \
  X(cuIpcCloseMemHandle, 12000, (cu_deviceptr_t ptr))                          \
  X(cuStreamCreate, 12000, (cu_stream_t * s, unsigned int flags))              \
  X(cuStreamSynchronize, 12000, (cu_stream_t s))                               \
  X(cuStreamDestroy, 12000, (cu_stream_t s))                                   \
  X(cuMemsetD8Async, 12000,                                                    \
    (cu_deviceptr_t ptr, unsigned char v, size_t n, cu_stream_t s))            \
  X(cuStreamIsCapturing, 12000, (cu_stream_t s, int *status))                  \
  X(cuMemGetHandleForAddressRange, 12000,                                      \
    (void *handle, cu_deviceptr_t ptr, size_t size, int type,                  \
     unsigned long long flags))                                                \
  X(cuMemcpyDtoH, 12000, (void *dst, cu_deviceptr_t src, size_t n))            \
  X(cuMemcpyHtoD, 12000, (cu_deviceptr_t dst, const void *src, size_t n))      \
  X(cuMemAlloc, 12000, (cu_deviceptr_t * ptr, size_t n))                       \
  X(cuMemFree, 12000, (cu_deviceptr_t ptr))                                    \
  X(cuStreamQuery, 12000, (cu_stream_t s))                                    \
  X(cuMemHostAlloc, 12000, (void **p, size_t n, unsigned int flags))          \
  X(cuMemHostGetDevicePointer, 12000,                                          \
    (cu_deviceptr_t * dptr, void *p, unsigned int flags))                      \
  X(cuMemFreeHost, 12000, (void *p))                                           \
  X(cuMemcpyDtoHAsync, 12000,                                                  \
    (void *dst, cu_deviceptr_t src, size_t n, cu_stream_t s))                  \
  X(cuMemcpyHtoDAsync, 12000,                                                  \
    (cu_deviceptr_t dst, const void *src, size_t n, cu_stream_t s))

/* Resolved only where the driver and device offer multicast. */
#define CU_MC_FUNCS(X)                                                         \
  X(cuMulticastGetGranularity, 12010,                                          \
    (size_t * g, const cu_mc_prop_t *prop, int option))                        \
  X(cuMulticastCreate, 12010,                                                  \
    (cu_mem_handle_t * mc, const cu_mc_prop_t *prop))                          \
  X(cuMulticastAddDevice, 12010, (cu_mem_handle_t mc, cu_device_t dev))        \
  X(cuMulticastBindMem, 12010,                                                 \
    (cu_mem_handle_t mc, size_t mc_offset, cu_mem_handle_t mem,                \
     size_t mem_offset, size_t size, unsigned long long flags))                \
  X(cuMulticastUnbind, 12010,                                                  \
    (cu_mem_handle_t mc, cu_device_t dev, size_t mc_offset, size_t size))

/* cuGetProcAddress as CUDA 12 and later export it (cuGetProcAddress_v2). */
typedef cu_result_t (*cu_get_proc_address_t)(const char *symbol, void **pfn,
                                             int version,
                                             unsigned long long flags,
                                             int *status);

#endif

/* The slice of the HIP runtime API the HIP adaptor uses, declared here so
 * symheap builds without ROCm (libamdhip64.so is loaded with dlopen).  Names
 * are our own (hip_* lower case); layouts and values follow ROCm 6's
 * hip_runtime_api.h, which mirrors the CUDA driver's VMM API (no ROCm is
 * installed here to check them against, unlike cuda_api.h; the fake
 * libamdhip64 of the tests is written from the same declarations). */
#ifndef SYMHEAP_HIP_API_H
#define SYMHEAP_HIP_API_H

#include <stddef.h>

typedef int hip_error_t;
typedef struct hip_mem_handle_st *hip_mem_handle_t; /* opaque pointer */
typedef struct hip_stream_st *hip_stream_t;

typedef struct {
  int type; /* HIP_LOCATION_DEVICE */
  int id;
} hip_mem_location_t;

typedef struct {
  int type;                  /* HIP_ALLOC_PINNED */
  int requested_handle_type; /* HIP_HANDLE_POSIX_FD */
  hip_mem_location_t location;
  void *win32_handle_meta_data;
  struct {
    unsigned char compression_type;
    unsigned char gpu_direct_rdma_capable;
    unsigned short usage;
  } alloc_flags;
} hip_mem_prop_t;

typedef struct {
  hip_mem_location_t location;
  int flags; /* HIP_ACCESS_READWRITE */
} hip_access_desc_t;

#define HIP_IPC_HANDLE_BYTES 64
typedef struct {
  char reserved[HIP_IPC_HANDLE_BYTES];
} hip_ipc_mem_handle_t;

enum {
  HIP_OK = 0,
  HIP_ERR_INVALID_VALUE = 1,
  HIP_ERR_OUT_OF_MEMORY = 2,
  HIP_ERR_NO_DEVICE = 100,
  HIP_ERR_NOT_SUPPORTED = 801,
  HIP_ERR_PEER_ACCESS_ALREADY_ENABLED = 704,
  HIP_ALLOC_PINNED = 1,
  HIP_HANDLE_POSIX_FD = 1,
  HIP_LOCATION_DEVICE = 1,
  HIP_ACCESS_READWRITE = 3,
  HIP_GRANULARITY_MINIMUM = 0,
  HIP_GRANULARITY_RECOMMENDED = 1,
  HIP_IPC_LAZY_ENABLE_PEER_ACCESS = 1,
  HIP_STREAM_NON_BLOCKING = 1,
};

/* name, return, parameters; resolved by name with dlsym. */
#define HIP_FUNCS(X)                                                           \
  X(hipGetDeviceCount, (int *count))                                           \
  X(hipSetDevice, (int device))                                                \
  X(hipGetDevice, (int *device))                                               \
  X(hipDeviceGetName, (char *name, int len, int device))                       \
  X(hipDeviceCanAccessPeer, (int *can, int device, int peer))                  \
  X(hipDeviceEnablePeerAccess, (int peer, unsigned int flags))                 \
  X(hipMemGetAllocationGranularity,                                            \
    (size_t * g, const hip_mem_prop_t *prop, int option))                      \
  X(hipMemCreate, (hip_mem_handle_t * h, size_t size,                          \
                   const hip_mem_prop_t *prop, unsigned long long flags))      \
  X(hipMemRelease, (hip_mem_handle_t h))                                       \
  X(hipMemExportToShareableHandle,                                             \
    (void *out, hip_mem_handle_t h, int type, unsigned long long flags))       \
  X(hipMemImportFromShareableHandle,                                           \
    (hip_mem_handle_t * h, void *os_handle, int type))                         \
  X(hipMemAddressReserve, (void **ptr, size_t size, size_t align, void *addr,  \
                           unsigned long long flags))                          \
  X(hipMemAddressFree, (void *ptr, size_t size))                               \
  X(hipMemMap, (void *ptr, size_t size, size_t offset, hip_mem_handle_t h,     \
                unsigned long long flags))                                     \
  X(hipMemUnmap, (void *ptr, size_t size))                                     \
  X(hipMemSetAccess,                                                           \
    (void *ptr, size_t size, const hip_access_desc_t *desc, size_t count))     \
  X(hipMemRetainAllocationHandle, (hip_mem_handle_t * h, void *addr))          \
  X(hipMemGetAddressRange, (void **base, size_t *size, void *ptr))             \
  X(hipIpcGetMemHandle, (hip_ipc_mem_handle_t * h, void *ptr))                 \
  X(hipIpcOpenMemHandle,                                                       \
    (void **ptr, hip_ipc_mem_handle_t h, unsigned int flags))                  \
  X(hipIpcCloseMemHandle, (void *ptr))                                         \
  X(hipStreamCreateWithFlags, (hip_stream_t * s, unsigned int flags))          \
  X(hipStreamSynchronize, (hip_stream_t s))                                    \
  X(hipStreamDestroy, (hip_stream_t s))                                        \
  X(hipMemsetAsync, (void *ptr, int v, size_t n, hip_stream_t s))

#endif

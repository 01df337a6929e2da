/* adaptors/common/cuda_api.h declares the driver API symheap uses without
 * the toolkit; this checks every layout and value against the real cuda.h.
 * Built only where the toolkit is installed (CI has it). */
#include <cuda.h>
#include <stddef.h>
#include <stdio.h>

#include "../adaptors/common/cuda_api.h"

#define SAME_SIZE(ours, theirs)                                                \
  _Static_assert(sizeof(ours) == sizeof(theirs), #ours " size")
#define SAME_OFFSET(ours, om, theirs, tm)                                      \
  _Static_assert(offsetof(ours, om) == offsetof(theirs, tm), #ours "." #om)
#define SAME_VALUE(ours, theirs)                                               \
  _Static_assert((long)(ours) == (long)(theirs), #ours)

SAME_SIZE(cu_result_t, CUresult);
SAME_SIZE(cu_device_t, CUdevice);
SAME_SIZE(cu_context_t, CUcontext);
SAME_SIZE(cu_deviceptr_t, CUdeviceptr);
SAME_SIZE(cu_mem_handle_t, CUmemGenericAllocationHandle);
SAME_SIZE(cu_mem_location_t, CUmemLocation);
SAME_OFFSET(cu_mem_location_t, id, CUmemLocation, id);
SAME_SIZE(cu_mem_prop_t, CUmemAllocationProp);
SAME_OFFSET(cu_mem_prop_t, requested_handle_types, CUmemAllocationProp,
            requestedHandleTypes);
SAME_OFFSET(cu_mem_prop_t, location, CUmemAllocationProp, location);
SAME_OFFSET(cu_mem_prop_t, win32_handle_meta_data, CUmemAllocationProp,
            win32HandleMetaData);
SAME_OFFSET(cu_mem_prop_t, alloc_flags, CUmemAllocationProp, allocFlags);
SAME_SIZE(cu_access_desc_t, CUmemAccessDesc);
SAME_OFFSET(cu_access_desc_t, flags, CUmemAccessDesc, flags);
SAME_SIZE(cu_mc_prop_t, CUmulticastObjectProp);
SAME_OFFSET(cu_mc_prop_t, size, CUmulticastObjectProp, size);
SAME_OFFSET(cu_mc_prop_t, handle_types, CUmulticastObjectProp, handleTypes);
SAME_OFFSET(cu_mc_prop_t, flags, CUmulticastObjectProp, flags);
SAME_SIZE(cu_ipc_mem_handle_t, CUipcMemHandle);
SAME_SIZE(cu_stream_t, CUstream);
SAME_VALUE(CU_STREAM_FLAG_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME_VALUE(CU_HOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE);
SAME_VALUE(CU_HOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_DEVICEMAP);
SAME_VALUE(CU_CAPTURE_STATUS_NONE, CU_STREAM_CAPTURE_STATUS_NONE);
SAME_VALUE(CU_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_ACTIVE);
SAME_VALUE(CU_ERR_STREAM_CAPTURE_IMPLICIT, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);

SAME_VALUE(CU_ERR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
SAME_VALUE(CU_ERR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME_VALUE(CU_ERR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
SAME_VALUE(CU_ERR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME_VALUE(CU_ERR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE);
SAME_VALUE(CU_ERR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT);
SAME_VALUE(CU_ERR_NOT_MAPPED, CUDA_ERROR_NOT_MAPPED);
SAME_VALUE(CU_ERR_INVALID_HANDLE, CUDA_ERROR_INVALID_HANDLE);
SAME_VALUE(CU_ERR_ILLEGAL_STATE, CUDA_ERROR_ILLEGAL_STATE);
SAME_VALUE(CU_ERR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
SAME_VALUE(CU_ERR_PEER_ACCESS_ALREADY_ENABLED,
           CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
SAME_VALUE(CU_ERR_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED);
SAME_VALUE(CU_ERR_UNKNOWN, CUDA_ERROR_UNKNOWN);
SAME_VALUE(CU_ATTR_VMM_SUPPORTED,
           CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
SAME_VALUE(CU_ATTR_POSIX_FD_SUPPORTED,
           CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
SAME_VALUE(CU_ATTR_MULTICAST_SUPPORTED,
           CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED);
SAME_VALUE(CU_MEM_HANDLE_TYPE_POSIX_FD,
           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
SAME_VALUE(CU_ERR_NOT_READY, CUDA_ERROR_NOT_READY);
SAME_VALUE(CU_RANGE_DMA_BUF_FD, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);
SAME_VALUE(CU_ALLOC_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED);
SAME_VALUE(CU_LOCATION_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);
SAME_VALUE(CU_MEM_ACCESS_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
SAME_VALUE(CU_GRANULARITY_MINIMUM, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
SAME_VALUE(CU_GRANULARITY_RECOMMENDED, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
SAME_VALUE(CU_GRANULARITY_RECOMMENDED, CU_MULTICAST_GRANULARITY_RECOMMENDED);
SAME_VALUE(CU_IPC_LAZY_ENABLE_PEER_ACCESS, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
SAME_VALUE(CU_IPC_HANDLE_BYTES, CU_IPC_HANDLE_SIZE);

int main(void) {
  /* Handles, not constant expressions: compared here. */
  if ((void *)CU_STREAM_LEGACY_HANDLE != (void *)CU_STREAM_LEGACY ||
      (void *)CU_STREAM_PER_THREAD_HANDLE != (void *)CU_STREAM_PER_THREAD) {
    printf("FAIL cuda_abi/layouts_and_values: stream handles differ\n");
    return 1;
  }
  printf("PASS cuda_abi/layouts_and_values (cuda.h %d)\n", CUDA_VERSION);
  return 0;
}

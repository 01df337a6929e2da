/* The cuda adaptor's multicast objects (cuda_adaptor.h), refused whenever
 * SYMHEAP_DISABLE_MULTICAST=1 or NCCL_NVLS_ENABLE=0. */
#include "cuda_adaptor.h"

/* Multicast.  The core never gets here when multicast is disabled; this
 * second check is for safety on shared machines, not for control flow. */
static symheap_result_t mc_allowed(void) {
  const symheap_host_services_t *svc = symheap_cu_svc;
  int off = 1;
  long nvls = 1;
  /* A malformed value counts as "disabled": never create by mistake. */
  if (svc->param_get_bool("SYMHEAP_DISABLE_MULTICAST", &off) != SYMHEAP_SUCCESS)
    off = 1;
  if (svc->param_is_set("NCCL_NVLS_ENABLE") &&
      svc->param_get_int("NCCL_NVLS_ENABLE", &nvls) != SYMHEAP_SUCCESS)
    nvls = 0;
  if (off || nvls == 0)
    return symheap_cu_svc->error(
        SYMHEAP_ERR_UNSUPPORTED,
        "multicast is disabled (SYMHEAP_DISABLE_MULTICAST / "
        "NCCL_NVLS_ENABLE)");
  return SYMHEAP_SUCCESS;
}

symheap_result_t cuda_mc_create(void *ctx, size_t size, int ndevices,
                                symheap_mem_handle_t *mc) {
  cuda_t *c = ctx;
  symheap_result_t r = mc_allowed();
  if (r == SYMHEAP_SUCCESS)
    r = cuda_bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  cu_mc_prop_t p = {(unsigned)ndevices, size, CU_MEM_HANDLE_TYPE_POSIX_FD, 0};
  cu_mem_handle_t h = 0;
  CU_TRY(cuMulticastCreate(&h, &p));
  *mc = h;
  return SYMHEAP_SUCCESS;
}

symheap_result_t cuda_mc_add_device(void *ctx, symheap_mem_handle_t mc) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMulticastAddDevice(mc, c->dev));
  return SYMHEAP_SUCCESS;
}

symheap_result_t cuda_mc_bind(void *ctx, symheap_mem_handle_t mc,
                              size_t mc_offset, symheap_mem_handle_t mem,
                              size_t mem_offset, size_t size) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMulticastBindMem(mc, mc_offset, mem, mem_offset, size, 0));
  return SYMHEAP_SUCCESS;
}

symheap_result_t cuda_mc_unbind(void *ctx, symheap_mem_handle_t mc,
                                size_t mc_offset, size_t size) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMulticastUnbind(mc, c->dev, mc_offset, size));
  return SYMHEAP_SUCCESS;
}

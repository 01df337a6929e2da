/* The cuda adaptor's page-locked host memory and its copies to and from the
 * device (cuda_adaptor.h): the device proxy's ring and the net floor's
 * staging. */
#include <string.h>

#include "cuda_adaptor.h"

/* The device proxy's ring and staging (docs/device-api.md): page-locked,
 * mapped into the device, usable from every context. */
symheap_result_t cuda_host_alloc(void *ctx, size_t size, void **host,
                                 void **dev) {
  cuda_t *c = ctx;
  BIND(c);
  void *p = NULL;
  CU_TRY(
      cuMemHostAlloc(&p, size, CU_HOSTALLOC_PORTABLE | CU_HOSTALLOC_DEVICEMAP));
  cu_deviceptr_t d = 0;
  cu_result_t e = symheap_cu.cuMemHostGetDevicePointer(&d, p, 0);
  if (e != CU_OK) {
    symheap_cu.cuMemFreeHost(p);
    return symheap_cu_fail("cuMemHostGetDevicePointer", e);
  }
  memset(p, 0, size);
  *host = p;
  *dev = (void *)(uintptr_t)d;
  return SYMHEAP_SUCCESS;
}

symheap_result_t cuda_host_free(void *ctx, void *host) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMemFreeHost(host));
  return SYMHEAP_SUCCESS;
}

/* The copies' stream, made at first use.  The proxy thread and the net
 * floor's staging (progress thread, waits) may both be first: one stream
 * wins, the other is destroyed. */
static symheap_result_t copy_stream(cuda_t *c) {
  if (__atomic_load_n(&c->copy, __ATOMIC_ACQUIRE))
    return SYMHEAP_SUCCESS;
  cu_stream_t s = NULL, none = NULL;
  CU_TRY(cuStreamCreate(&s, CU_STREAM_FLAG_NON_BLOCKING));
  if (!__atomic_compare_exchange_n(&c->copy, &none, s, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    (void)symheap_cu.cuStreamDestroy(s);
  return SYMHEAP_SUCCESS;
}

/* On a non-blocking stream of its own: a copy on the legacy stream would
 * wait for the kernel that is waiting for this very copy's descriptor
 * (copy_to_host: the proxy's descriptors; copy_from_host: landing the net
 * floor's staged data). */
static symheap_result_t copy(void *ctx, void *dst, const void *src,
                             size_t size, int to_host) {
  cuda_t *c = ctx;
  BIND(c);
  symheap_result_t r = copy_stream(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (to_host)
    CU_TRY(cuMemcpyDtoHAsync(dst, (cu_deviceptr_t)(uintptr_t)src, size,
                             c->copy));
  else
    CU_TRY(cuMemcpyHtoDAsync((cu_deviceptr_t)(uintptr_t)dst, src, size,
                             c->copy));
  CU_TRY(cuStreamSynchronize(c->copy));
  return SYMHEAP_SUCCESS;
}

symheap_result_t cuda_copy_to_host(void *ctx, void *dst, const void *src,
                                   size_t size) {
  return copy(ctx, dst, src, size, 1);
}

symheap_result_t cuda_copy_from_host(void *ctx, void *dst, const void *src,
                                     size_t size) {
  return copy(ctx, dst, src, size, 0);
}

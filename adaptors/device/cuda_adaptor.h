/* What the cuda adaptor's files share (cuda.c: the context, VMM memory,
 * the ops table and the plugin entry; cuda_ipc.c: the legacy IPC
 * fallback; cuda_mc.c: multicast; cuda_host.c: page-locked host memory
 * and its copies; cuda_params.c: the variables).  Public headers and the
 * host services only, like any vendor's adaptor. */
#ifndef SYMHEAP_CUDA_ADAPTOR_H
#define SYMHEAP_CUDA_ADAPTOR_H

#include <stddef.h>

#include "cuda_api.h"
#include "cuda_driver.h"
#include "ipc_table.h"

typedef struct {
  cu_device_t dev;
  int ordinal;
  cu_context_t ctx;
  int retained; /* we retained the primary context */
  int local_nranks;
  symheap_ipc_rec_t *ipc; /* pointers ipc_open handed out */
  cu_stream_t copy;       /* copy_to_host's stream (the proxy thread's) */
} cuda_t;

/* Every operation runs in the rank's context: thread-ranks share the
 * process, and the caller may have made another context current since. */
static inline symheap_result_t cuda_bind(cuda_t *c) {
  CU_TRY(cuCtxSetCurrent(c->ctx));
  return SYMHEAP_SUCCESS;
}
#define BIND(c) CU_TRY(cuCtxSetCurrent((c)->ctx))

/* cuda_ipc.c: symheap_device_ops' ipc_get, ipc_open, ipc_close; at fini,
 * every handle this rank opened closed. */
symheap_result_t cuda_ipc_get(void *ctx, void *ptr, size_t size,
                              symheap_shareable_t *out);
symheap_result_t cuda_ipc_open(void *ctx, const symheap_shareable_t *in,
                               void **ptr);
symheap_result_t cuda_ipc_close(void *ctx, void *ptr);
void cuda_ipc_close_all(cuda_t *c);

/* cuda_mc.c: the mc_* ops. */
symheap_result_t cuda_mc_create(void *ctx, size_t size, int ndevices,
                                symheap_mem_handle_t *mc);
symheap_result_t cuda_mc_add_device(void *ctx, symheap_mem_handle_t mc);
symheap_result_t cuda_mc_bind(void *ctx, symheap_mem_handle_t mc,
                              size_t mc_offset, symheap_mem_handle_t mem,
                              size_t mem_offset, size_t size);
symheap_result_t cuda_mc_unbind(void *ctx, symheap_mem_handle_t mc,
                                size_t mc_offset, size_t size);

/* cuda_host.c: host_alloc, host_free, copy_to_host, copy_from_host. */
symheap_result_t cuda_host_alloc(void *ctx, size_t size, void **host,
                                 void **dev);
symheap_result_t cuda_host_free(void *ctx, void *host);
symheap_result_t cuda_copy_to_host(void *ctx, void *dst, const void *src,
                                   size_t size);
symheap_result_t cuda_copy_from_host(void *ctx, void *dst, const void *src,
                                     size_t size);

/* cuda_params.c: the variables the plugin's init declares. */
extern const symheap_param_t cuda_params[];
extern const size_t cuda_nparams;

#endif

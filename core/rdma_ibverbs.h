/* RDMA registration through libibverbs, loaded with dlopen: one device
 * context and protection domain per comm, one memory region per window.
 * The core (core/rdma.c) decides when; this file only speaks verbs. */
#ifndef SYMHEAP_IBVERBS_H
#define SYMHEAP_IBVERBS_H

#include "internal.h"

typedef struct symheap__ibv symheap__ibv_t;

/* Load the library, open `device` (NULL: the first listed) and allocate a
 * protection domain.  No library or no device is SYMHEAP_ERR_UNSUPPORTED
 * with a message saying which. */
symheap_result_t symheap__ibv_open(const char *library, const char *device,
                                   symheap__ibv_t **out);
void symheap__ibv_close(symheap__ibv_t *v);
const char *symheap__ibv_name(const symheap__ibv_t *v);
/* The verbs objects, for callers that post work requests on them. */
void *symheap__ibv_context(const symheap__ibv_t *v);
void *symheap__ibv_pd(const symheap__ibv_t *v);

/* Register [addr, addr+len) for local and remote read, write and atomics:
 * CPU-visible memory when dmabuf_fd < 0, else `len` bytes at dmabuf_offset
 * of the dma-buf, addressed remotely as `addr` (ibv_reg_dmabuf_mr's iova).
 * The fd stays the caller's. */
symheap_result_t symheap__ibv_reg(symheap__ibv_t *v, void *addr, size_t len,
                                  int dmabuf_fd, uint64_t dmabuf_offset,
                                  void **mr, uint32_t *lkey, uint32_t *rkey);
symheap_result_t symheap__ibv_dereg(symheap__ibv_t *v, void *mr);

#endif

/* Net registration of windows: every window's local memory becomes a
 * region of the comm's net adaptor (comm/net_reg.c); heap windows address
 * their chunks' regions (mem/net_heap.c) by offset. */
#include "mem/heap.h"
#include "net_window.h"

symheap_result_t symheap__net_window_register(symheap_comm_t c,
                                              struct symheap_window *w) {
  symheap__rdma_t *x = w->rdma;
  /* Heap windows lie in chunks registered once; a view of a registration
   * shares its mapping's region (the same on every rank: agreed). */
  if (w->heap || !x || x->netreg)
    return SYMHEAP_SUCCESS;
  symheap_result_t r = symheap__netreg_make(c, w->user_ptr, w->size,
                                            &x->netreg);
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "registering the window with the "
                                         "net adaptor");
}

symheap_result_t symheap__net_locate(struct symheap_window *w, int peer,
                                     size_t off, size_t len, void **rkey,
                                     uint64_t *roff, size_t *span) {
  symheap__netreg_t *g = NULL;
  symheap_result_t r =
      symheap__net_locate_reg(w, peer, off, len, &g, roff, span);
  if (r == SYMHEAP_SUCCESS)
    *rkey = g->rkeys[peer];
  return r;
}

symheap_result_t symheap__net_locate_reg(struct symheap_window *w, int peer,
                                         size_t off, size_t len,
                                         symheap__netreg_t **reg,
                                         uint64_t *roff, size_t *span) {
  (void)peer; /* every rank's key is in the registration */
  symheap_comm_t c = w->comm;
  symheap__netc_t *n = c->netc;
  if (w->heap) {
    size_t ch = (size_t)c->heap->arena.chunk;
    size_t at = w->head + off;
    uint32_t i = (uint32_t)(at / ch);
    if (!n->chunks || i >= n->nchunks || !n->chunks[i])
      return symheap__error(SYMHEAP_ERR_INTERNAL,
                            "heap chunk %u has no net region", i);
    *reg = n->chunks[i];
    *roff = at % ch;
    *span = ch - at % ch < len ? ch - at % ch : len;
    return SYMHEAP_SUCCESS;
  }
  symheap__netreg_t *g = w->rdma ? w->rdma->netreg : NULL;
  if (!g)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "the window is not registered with the net adaptor "
                          "(registered before it was open)");
  *reg = g;
  *roff = off;
  *span = len;
  return SYMHEAP_SUCCESS;
}

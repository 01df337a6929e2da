/* The local window accessors: pointers into a window, its size, its device
 * view.  No communication; a handle is looked up in the live list
 * (win/window_access.c). */
#include <string.h>

#include "proxy.h"
#include "win/window.h"

/* Accessors: local, and safe on a stale handle. */
#define LIVE_OR_FAIL(h, fn)                                                    \
  struct symheap_window *w = symheap__window_get(h, fn);                       \
  if (!w)                                                                      \
  return SYMHEAP_ERR_INVALID_ARG

SYMHEAP__EXPORT symheap_result_t symheap_window_local_ptr(symheap_window_t h,
                                                          void **ptr) {
  LIVE_OR_FAIL(h, "symheap_window_local_ptr");
  if (!ptr)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_local_ptr: ptr is NULL");
  *ptr = w->user_ptr;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_peer_ptr(symheap_window_t h,
                                                         int peer, void **ptr) {
  LIVE_OR_FAIL(h, "symheap_window_peer_ptr");
  if (!ptr || peer < 0 || peer >= w->comm->nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_peer_ptr: %s",
                          !ptr ? "ptr is NULL" : "peer is out of range");
  if (!w->comm->reach[peer])
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "symheap_window_peer_ptr: rank %d is on another host "
                          "and cannot be reached by load/store (see "
                          "symheap_window_peer_reach; symheap_put, "
                          "symheap_get and symheap_atomic reach it through "
                          "the net adaptor, SYMHEAP_NET)",
                          peer);
  *ptr = w->peer[peer];
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_flat_base(symheap_window_t h,
                                                          void **base,
                                                          size_t *stride) {
  LIVE_OR_FAIL(h, "symheap_window_flat_base");
  if (!base || !stride)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_flat_base: NULL output pointer");
  if (!w->flat)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "symheap_window_flat_base: the window uses per-peer "
                          "IPC mappings (its memory is not VMM memory); use "
                          "symheap_window_peer_ptr");
  *base = w->reserve + w->head;
  *stride = w->stride;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t
symheap_window_multicast_ptr(symheap_window_t h, void **ptr) {
  LIVE_OR_FAIL(h, "symheap_window_multicast_ptr");
  if (!ptr)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_multicast_ptr: ptr is NULL");
  if (!w->mc.mapped)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "symheap_window_multicast_ptr: the window has no "
                          "multicast object (register with "
                          "SYMHEAP_WINDOW_MULTICAST)");
  *ptr = (char *)w->mc.va + w->head;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_size(symheap_window_t h,
                                                     size_t *size) {
  LIVE_OR_FAIL(h, "symheap_window_size");
  if (!size)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_size: size is NULL");
  *size = w->size;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t
symheap_window_device_view(symheap_window_t h, symheap_device_window_t *v) {
  LIVE_OR_FAIL(h, "symheap_window_device_view");
  if (!v)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_device_view: view is NULL");
  /* A kernel gave up waiting for a peer: the comm is broken, and a view
   * for more kernels would only time out again. */
  symheap_result_t dev =
      symheap__dstatus_check(w->comm, "symheap_window_device_view");
  if (dev != SYMHEAP_SUCCESS)
    return dev;
  memset(v, 0, sizeof *v);
  v->version = SYMHEAP_DEVICE_WINDOW_VERSION;
  v->struct_size = sizeof *v;
  v->size = w->size;
  v->rank = w->comm->rank;
  v->nranks = w->comm->nranks;
  if (w->flat) {
    v->flags |= SYMHEAP_VIEW_FLAT;
    v->flat_base = w->reserve + w->head;
    v->stride = w->stride;
  }
  if (w->mc.mapped) {
    v->flags |= SYMHEAP_VIEW_MULTICAST;
    v->multicast_base = (char *)w->mc.va + w->head;
  }
  symheap_comm_t c = w->comm;
  if (c->pad_ready) {
    v->flags |= SYMHEAP_VIEW_PAD;
    v->pad_base = c->pad->reserve + c->pad->head;
    v->pad_stride = c->pad->stride;
  }
  if (c->dstatus) {
    v->flags |= SYMHEAP_VIEW_STATUS;
    v->status = c->dstatus_dev;
    v->timeout_ns = (uint64_t)c->timeout_ms * 1000000u;
  }
  if (w->slot >= 0) {
    __atomic_store_n(&w->view_taken, 1, __ATOMIC_RELAXED);
    v->flags |= SYMHEAP_VIEW_SIGNALS;
    v->signal_count = SYMHEAP_SLOT_SIGNALS;
    v->signal_offset =
        SYMHEAP_PAD_SLOTS_OFFSET + (uint64_t)w->slot * SYMHEAP_PAD_SLOT_BYTES;
  }
  for (int p = 0; p < SYMHEAP_DEVICE_MAX_PEERS; p++)
    v->world_ranks[p] = p < c->nranks ? c->world[p] : -1;
  for (int p = 0; p < c->nranks && p < SYMHEAP_DEVICE_MAX_PEERS; p++)
    v->peer_ptrs[p] = w->peer[p];
  v->local_rank = c->local_rank;
  v->local_nranks = c->local_nranks;
  if (c->local_nranks != c->nranks) {
    v->flags |= SYMHEAP_VIEW_PARTIAL;
    for (int p = 0; p < c->nranks && p < 64; p++)
      if (c->reach[p])
        v->reachable |= 1ull << p;
  }
  symheap__rdma_view(w, v);
  symheap__proxy_view(w, v);
  return SYMHEAP_SUCCESS;
}

/* Window handles as callers see them: the process-wide list of live
 * windows (so a stale or foreign handle is an error, not a crash) and the
 * local accessors. */
#include <pthread.h>
#include <string.h>

#include "comm.h"

/* Every live window of the process, so accessors can tell a live handle from
 * a stale one without touching freed memory. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct symheap_window *live;

static struct symheap_window *live_find(symheap_window_t w) {
  pthread_mutex_lock(&live_lock);
  struct symheap_window *p = live;
  while (p && p != w)
    p = p->gnext;
  pthread_mutex_unlock(&live_lock);
  return p;
}

symheap_result_t symheap__window_check(symheap_window_t w, const char *fn) {
  if (live_find(w))
    return SYMHEAP_SUCCESS;
  return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                        "%s: unknown window %p (never registered or already "
                        "released)",
                        fn, (void *)w);
}

void symheap__live_add(struct symheap_window *w) {
  pthread_mutex_lock(&live_lock);
  w->gnext = live;
  live = w;
  pthread_mutex_unlock(&live_lock);
}

void symheap__window_unlink(symheap_comm_t c, struct symheap_window *w) {
  for (struct symheap_window **pp = &c->windows; *pp; pp = &(*pp)->next)
    if (*pp == w) {
      *pp = w->next;
      break;
    }
  pthread_mutex_lock(&live_lock);
  for (struct symheap_window **pp = &live; *pp; pp = &(*pp)->gnext)
    if (*pp == w) {
      *pp = w->gnext;
      break;
    }
  pthread_mutex_unlock(&live_lock);
}

/* Accessors: local, and safe on a stale handle. */
#define LIVE_OR_FAIL(w, fn)                                                    \
  do {                                                                         \
    symheap_result_t live_r_ = symheap__window_check(w, fn);                   \
    if (live_r_ != SYMHEAP_SUCCESS)                                            \
      return live_r_;                                                          \
  } while (0)

SYMHEAP__EXPORT symheap_result_t symheap_window_local_ptr(symheap_window_t w,
                                                          void **ptr) {
  LIVE_OR_FAIL(w, "symheap_window_local_ptr");
  if (!ptr)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_local_ptr: ptr is NULL");
  *ptr = w->user_ptr;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_peer_ptr(symheap_window_t w,
                                                         int peer, void **ptr) {
  LIVE_OR_FAIL(w, "symheap_window_peer_ptr");
  if (!ptr || peer < 0 || peer >= w->comm->nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_peer_ptr: %s",
                          !ptr ? "ptr is NULL" : "peer is out of range");
  if (!w->comm->reach[peer])
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "symheap_window_peer_ptr: rank %d is on another host "
                          "and cannot be reached by load/store (see "
                          "symheap_comm_local_ranks; RDMA: "
                          "symheap_window_rdma_key)",
                          peer);
  *ptr = w->peer[peer];
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_flat_base(symheap_window_t w,
                                                          void **base,
                                                          size_t *stride) {
  LIVE_OR_FAIL(w, "symheap_window_flat_base");
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
symheap_window_multicast_ptr(symheap_window_t w, void **ptr) {
  LIVE_OR_FAIL(w, "symheap_window_multicast_ptr");
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

SYMHEAP__EXPORT symheap_result_t symheap_window_size(symheap_window_t w,
                                                     size_t *size) {
  LIVE_OR_FAIL(w, "symheap_window_size");
  if (!size)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_size: size is NULL");
  *size = w->size;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t
symheap_window_device_view(symheap_window_t w, symheap_device_window_t *v) {
  LIVE_OR_FAIL(w, "symheap_window_device_view");
  if (!v)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_device_view: view is NULL");
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
  return SYMHEAP_SUCCESS;
}

/* Windows: the public calls that make and release them, and teardown.  A
 * window is a view holding a reference on a mapping (mapobj.c), which
 * decides at its last reference whether it is kept or unmapped.
 * Registration's phases are in register.c, flat mappings in mapping.c, the
 * heap's windows in heap.c, accessors in window_access.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "mapping.h"
#include "window.h"

symheap_result_t symheap__close_ipc(symheap_comm_t c, void **peer) {
  symheap_result_t first = SYMHEAP_SUCCESS;
  for (int p = 0; p < c->nranks; p++)
    if (p != c->rank && peer[p]) {
      symheap_result_t r = c->dev.ops.ipc_close(c->dev_ctx, peer[p]);
      if (r != SYMHEAP_SUCCESS && first == SYMHEAP_SUCCESS)
        first = r;
      peer[p] = NULL;
    }
  return first;
}

void symheap__window_free(struct symheap_window *w) {
  if (w)
    free(w->peer);
  free(w);
}

static symheap_result_t window_register_one(symheap_comm_t c, void *ptr,
                                            size_t size, unsigned flags,
                                            symheap_window_t *win) {
  symheap_result_t r = symheap__comm_enter(c, "symheap_window_register");
  if (r != SYMHEAP_SUCCESS)
    return r;
  r = symheap__register(c, ptr, size, flags, SYMHEAP_SUCCESS, 0, win);
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "symheap_window_register");
}

SYMHEAP__EXPORT symheap_result_t
symheap_window_register(symheap_comm_t c, void *ptr, size_t size,
                        unsigned flags, symheap_window_t *win) {
  SYMHEAP__CLAIMED(c, "symheap_window_register",
                   window_register_one(c, ptr, size, flags, win));
}

/* symheap_malloc's checks, carried into the first agreement. */
static symheap_result_t malloc_args(symheap_comm_t c, size_t size,
                                    unsigned flags, symheap_window_t *win) {
  if (!win)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "win is NULL");
  symheap_result_t room = symheap__handles_room();
  if (room != SYMHEAP_SUCCESS)
    return room;
  if (size == 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "size is zero");
  if (flags & ~SYMHEAP_WINDOW_FLAGS_ALL)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "unknown flags 0x%x",
                          flags & ~SYMHEAP_WINDOW_FLAGS_ALL);
  if (flags & SYMHEAP_WINDOW_MULTICAST)
    return symheap__mc_check(c);
  return SYMHEAP_SUCCESS;
}

/* Collective: an allocation of its own, registered (`pre`: this rank's
 * failure so far). */
static symheap_result_t malloc_registered(symheap_comm_t c,
                                          symheap_result_t pre, size_t size,
                                          unsigned flags,
                                          symheap_window_t *win) {
  void *ptr = NULL;
  symheap_result_t r = pre;
  if (r == SYMHEAP_SUCCESS) {
    /* Multicast binds whole multicast-granularity units. */
    size_t alloc = size;
    if ((flags & SYMHEAP_WINDOW_MULTICAST) &&
        size <= SIZE_MAX - c->caps.multicast_granularity)
      alloc = symheap__round_up(size, c->caps.multicast_granularity);
    r = symheap__mem_alloc(c, alloc, &ptr);
  }
  r = symheap__register(c, ptr, size, flags, r, 1, win);
  if (r != SYMHEAP_SUCCESS && ptr)
    SYMHEAP__KEEP_ERROR((void)symheap__mem_free(c, ptr));
  return r;
}

symheap_result_t symheap__malloc_registered(symheap_comm_t c, size_t size,
                                            unsigned flags,
                                            symheap_window_t *win) {
  return malloc_registered(c, malloc_args(c, size, flags, win), size, flags,
                           win);
}

static symheap_result_t malloc_one(symheap_comm_t c, size_t size,
                                   unsigned flags, symheap_window_t *win) {
  symheap_result_t r = symheap__comm_enter(c, "symheap_malloc");
  if (r != SYMHEAP_SUCCESS)
    return r;
  r = malloc_args(c, size, flags, win);
  /* The heap first: every rank agrees whether it serves this call. */
  int done = 0;
  r = symheap__heap_malloc(c, r, size, flags, win, &done);
  if (!done && r == SYMHEAP_SUCCESS)
    r = malloc_registered(c, r, size, flags, win);
  return r == SYMHEAP_SUCCESS ? r : symheap__error_context(r, "symheap_malloc");
}

SYMHEAP__EXPORT symheap_result_t symheap_malloc(symheap_comm_t c, size_t size,
                                                unsigned flags,
                                                symheap_window_t *win) {
  SYMHEAP__CLAIMED(c, "symheap_malloc", malloc_one(c, size, flags, win));
}

/* The window's handle is gone: out of the counts (once). */
static void count_out(symheap_comm_t c, struct symheap_window *w) {
  if (!w->released) {
    w->released = 1;
    c->stats.windows_live--;
    c->stats.bytes_registered -= w->size;
  }
}

/* A heap window: its block goes back to the heap, or, while windows view
 * part of it, waits for the last of them.  The heap's mapping stays. */
static symheap_result_t teardown_heap(symheap_comm_t c,
                                      struct symheap_window *w, int keep) {
  count_out(c, w);
  if (w->views > 0)
    return SYMHEAP_SUCCESS;
  symheap__rdma_deregister(c, &w->rdma_own); /* before the memory can go */
  struct symheap_window *b = w->block;       /* a view: the block it is in */
  symheap__heap_release(c, w);
  symheap_result_t r = symheap__map_release(c, w->map, 0);
  symheap__window_free(w);
  if (b && --b->views == 0 && b->released) {
    symheap_result_t rb = symheap__window_teardown(c, b, keep);
    if (r == SYMHEAP_SUCCESS)
      r = rb;
  }
  return r;
}

symheap_result_t symheap__window_teardown(symheap_comm_t c,
                                          struct symheap_window *w, int keep) {
  if (w->heap)
    return teardown_heap(c, w, keep);
  symheap_result_t first = symheap__mc_teardown(c, w);
  /* symheap_free's (or comm destroy's) window of symheap_malloc memory:
   * the memory goes with the mapping's last view. */
  if (w->owns_alloc && !keep)
    w->map->free_alloc = 1;
  symheap_result_t r = symheap__map_release(c, w->map, keep);
  if (first == SYMHEAP_SUCCESS)
    first = r;
  count_out(c, w);
  if (w == c->pad) { /* never counted as a window */
    c->stats.windows_live++;
    c->stats.bytes_registered += w->size;
    c->pad = NULL;
  }
  symheap__window_free(w);
  return first;
}

/* Collective.  `freeing`: symheap_free, which also frees the memory. */
static symheap_result_t release_impl(symheap_comm_t c, symheap_window_t h,
                                     int freeing, const char *fn) {
  symheap_result_t r = symheap__comm_enter(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* The handle names a live window, of this comm: O(1), and a released
   * handle is refused even where its window's memory was reused. */
  struct symheap_window *p = symheap__window_get(h, fn);
  /* Peers' notices of freed allocations prune the mapping cache; a heap
   * block never enters it, so its release (the heap's fast path) leaves
   * them for later and makes no system call. */
  if (!p || !p->heap)
    symheap__fdx_drain(c);
  if (!p)
    r = SYMHEAP_ERR_INVALID_ARG; /* the message is the lookup's */
  else if (p->comm != c)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                       "%s: window %p belongs to another comm", fn, (void *)h);
  else if (freeing && !p->owns_alloc)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                       "%s: the window was registered over caller memory; "
                       "use symheap_window_deregister",
                       fn);
  else if (p->heap) /* no device call: allowed during capture */
    r = symheap__heap_prepare_free(c);
  else
    r = symheap__capture_check(c, fn);
  int differ;
  uint64_t id0, idp;
  /* The heap's fast path: every release agrees over one channel. */
  r = symheap__agree_equal_fast(c, r, r == SYMHEAP_SUCCESS ? p->id : UINT64_MAX,
                                &differ, &id0, &idp);
  if (r == SYMHEAP_SUCCESS && differ >= 0)
    r = symheap__error(SYMHEAP_ERR_MISMATCH,
                       "%s: ranks disagree: rank 0 releases window %llu, "
                       "rank %d window %llu",
                       fn, (unsigned long long)id0, differ,
                       (unsigned long long)idp);
  if (r != SYMHEAP_SUCCESS)
    return r;
  symheap__window_unlink(c, p);
  symheap__slot_release(c, p);
  if (!freeing)
    p->owns_alloc = 0; /* deregistering a symheap_malloc window keeps memory */
  r = symheap__window_teardown(c, p, !freeing);
  return r == SYMHEAP_SUCCESS ? r : symheap__error_context(r, "%s", fn);
}

SYMHEAP__EXPORT symheap_result_t symheap_window_deregister(symheap_comm_t c,
                                                           symheap_window_t w) {
  SYMHEAP__CLAIMED(c, "symheap_window_deregister",
                   release_impl(c, w, 0, "symheap_window_deregister"));
}

SYMHEAP__EXPORT symheap_result_t symheap_free(symheap_comm_t c,
                                              symheap_window_t w) {
  SYMHEAP__CLAIMED(c, "symheap_free", release_impl(c, w, 1, "symheap_free"));
}

/* The window calls: symheap_malloc (the heap first, else an allocation of
 * its own, registered), symheap_window_register, and their releases,
 * symheap_free and symheap_window_deregister.  Each runs claimed, as the
 * one call in progress on its comm. */
#include <stdint.h>

#include "comm/agree.h"
#include "comm/net.h"
#include "mem/heap.h"
#include "proxy.h"
#include "win/window.h"

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

static symheap_result_t malloc_one(symheap_comm_t c, size_t size,
                                   unsigned flags, symheap_window_t *win) {
  symheap_result_t r = symheap__comm_enter(c, "symheap_malloc");
  if (r != SYMHEAP_SUCCESS)
    return r;
  r = symheap__malloc_args(c, size, flags, win);
  /* The heap first: every rank agrees whether it serves this call. */
  int done = 0;
  r = symheap__heap_malloc(c, r, size, flags, win, &done);
  if (!done && r == SYMHEAP_SUCCESS)
    r = symheap__malloc_registered(c, r, size, flags, win);
  return r == SYMHEAP_SUCCESS ? r : symheap__error_context(r, "symheap_malloc");
}

SYMHEAP__EXPORT symheap_result_t symheap_malloc(symheap_comm_t c, size_t size,
                                                unsigned flags,
                                                symheap_window_t *win) {
  SYMHEAP__CLAIMED(c, "symheap_malloc", malloc_one(c, size, flags, win));
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
    symheap__comm_drain(c);
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
  /* This rank's one-sided operations complete before it agrees: once every
   * rank has agreed, nothing is in flight to the memory (or the key) about
   * to go, so no operation meets a stale key at its target. */
  if (r == SYMHEAP_SUCCESS && c->netc)
    r = symheap__net_quiet(c, fn);
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
  /* The device proxy issues no entry on the window while it goes. */
  symheap__proxy_lock(c);
  symheap__window_unlink(c, p);
  symheap__slot_release(c, p);
  if (!freeing)
    p->owns_alloc = 0; /* deregistering a symheap_malloc window keeps memory */
  r = symheap__window_teardown(c, p, !freeing);
  symheap__proxy_unlock(c);
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

/* Windows: making one of an allocation of its own, and teardown.  A window
 * is a view holding a reference on a mapping (mem/mapobj.c), which decides
 * at its last reference whether it is kept or unmapped, calling back here
 * through the hooks every registration's mapping is given.  The public
 * calls are api/window_api.c's; registration's phases are in register.c,
 * flat mappings in mem/mapping.c, the heap's windows in heap_window.c,
 * the live list in window_access.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mapping.h"
#include "window.h"

static symheap_result_t close_ipc(symheap_comm_t c, void **peer) {
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

/* A mapping's end, as its maker (register.c) has it torn down. */
static void map_last_view(symheap_comm_t c, symheap__map_t *m) {
  symheap__rdma_deregister(c, &m->rdma);
}

static symheap_result_t map_unmap(symheap_comm_t c, symheap__map_t *m) {
  if (m->kind == SYMHEAP__MAP_VENDOR)
    return symheap__winpath_deregister(c, m->vendor_handle);
  if (m->kind == SYMHEAP__MAP_IPC)
    return close_ipc(c, m->peer);
  return m->len ? symheap__unmap_peers(c, m->base, m->stride, m->len,
                                       c->nranks)
                : SYMHEAP_SUCCESS;
}

const symheap__map_hooks_t symheap__window_map_hooks = {map_last_view,
                                                        map_unmap, NULL};

void symheap__window_free(struct symheap_window *w) {
  if (w)
    free(w->peer);
  free(w);
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

/* The heap's windows: a symheap_malloc the heap serves (one agreement, a
 * block of the arena, no device call unless the heap grows), a window
 * registered over part of a heap block (a view of it), and a block given
 * back.  The heap itself (reservation, chunks, agreements) is
 * mem/heap.c. */
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "mem/heap.h"
#include "window.h"

static symheap_result_t window_new(symheap_comm_t c,
                                   struct symheap_window **out) {
  struct symheap_window *w = calloc(1, sizeof *w);
  if (w && !(w->peer = calloc((size_t)c->nranks, sizeof(void *)))) {
    free(w);
    w = NULL;
  }
  *out = w;
  return w ? SYMHEAP_SUCCESS
           : symheap__error(SYMHEAP_ERR_NO_MEMORY, "symheap_malloc: no memory");
}


/* The window's place in the heap; then, collective, its RDMA registration
 * (`region`: one to share instead, the block's when the window is all of
 * it, like every re-registration of a range). */
static symheap_result_t view_of(symheap_comm_t c, struct symheap_window *w,
                                size_t off, symheap__rdma_t *region) {
  symheap__heap_t *h = c->heap;
  size_t stride = (size_t)h->arena.size;
  w->comm = c;
  w->flat = 1;
  w->heap = 1;
  w->map = h->map;
  w->rdma = region ? region : &w->rdma_own;
  w->reserve = h->base;
  w->stride = stride;
  w->head = off;
  w->user_ptr = h->base + (size_t)c->rank * stride + off;
  w->slot = -1;
  for (int p = 0; p < c->nranks; p++)
    w->peer[p] = c->reach[p] ? h->base + (size_t)p * stride + off : NULL;
  symheap_result_t r = region ? SYMHEAP_SUCCESS : symheap__rdma_register(c, w);
  if (r == SYMHEAP_SUCCESS)
    symheap__map_hold(h->map);
  return r;
}

/* A window made: in the comm's lists and counts. */
static void window_link(symheap_comm_t c, struct symheap_window *w) {
  w->id = c->next_window_id++;
  w->slot = symheap__slot_take(c);
  symheap__live_add(c, w);
  c->stats.windows_live++;
  c->stats.bytes_registered += w->size;
}

/* The live block holding [off, off + size), or NULL. */
static struct symheap_window *block_of(symheap_comm_t c, size_t off,
                                       size_t size) {
  for (struct symheap_window *x = c->windows; x; x = x->next)
    if (x->heap && x->heap_len && off >= x->head &&
        off + size <= x->head + x->heap_len)
      return x;
  return NULL;
}

symheap_result_t symheap__heap_view(symheap_comm_t c, struct symheap_window *w,
                                    size_t off) {
  /* The blocks are the same on every rank (agreed), so every rank takes
   * the same branch. */
  struct symheap_window *b = block_of(c, off, w->size);
  symheap_result_t r =
      w->flags ? symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                                "multicast windows over heap memory are not "
                                "offered: symheap_malloc with "
                                "SYMHEAP_WINDOW_MULTICAST makes its own")
      : !b     ? symheap__error(SYMHEAP_ERR_INVALID_ARG,
                                "[%p, +%zu) is heap memory but not inside one "
                                    "live heap allocation",
                                (void *)w->user_ptr, w->size)
               : view_of(c, w, off,
                     b->head == off && b->size == w->size ? b->rdma : NULL);
  if (r != SYMHEAP_SUCCESS)
    return r;
  w->block = b;
  b->views++;
  window_link(c, w);
  SYMHEAP_TRACE("window %llu: a view of %zu bytes at heap offset %zu",
                (unsigned long long)w->id, w->size, off);
  return SYMHEAP_SUCCESS;
}

/* After every rank agreed on the block (and its chunks are committed). */
static symheap_result_t window_make(symheap_comm_t c, struct symheap_window *w,
                                    size_t size, uint64_t off, uint64_t len) {
  symheap__heap_t *h = c->heap;
  (void)symheap__arena_take(&h->arena, off, len); /* room made beforehand */
  w->size = size;
  w->heap_len = len;
  w->owns_alloc = 1;
  symheap_result_t r = view_of(c, w, (size_t)off, NULL); /* collective */
  if (r != SYMHEAP_SUCCESS) {
    (void)symheap__arena_give(&h->arena, off, len);
    return r;
  }
  h->seq++;
  c->stats.heap_used += len;
  c->stats.heap_allocations++;
  window_link(c, w);
  SYMHEAP_TRACE("heap window %llu: %zu bytes at offset %llu",
                (unsigned long long)w->id, size, (unsigned long long)off);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__heap_malloc(symheap_comm_t c, symheap_result_t pre,
                                      size_t size, unsigned flags,
                                      symheap_window_t *out, int *done) {
  symheap__heap_rec_t me;
  memset(&me, 0, sizeof me);
  me.size = size;
  me.flags = flags;
  symheap_result_t r = pre;
  if (r == SYMHEAP_SUCCESS)
    r = symheap__heap_state(c);
  uint64_t len = symheap__arena_round(size);
  struct symheap_window *w = NULL;
  int created = 0;
  if (r == SYMHEAP_SUCCESS && c->heap_state > 0 && flags == 0 && len &&
      size <= c->heap_threshold) {
    me.route = SYMHEAP__ROUTE_HEAP;
    created = !c->heap;
    if (!c->heap && (r = symheap__heap_create(c)) != SYMHEAP_SUCCESS) {
      /* A reservation the user asked for fails the call, saying why (every
       * rank, through the agreement); the default's falls back to a
       * registration per allocation, out loud. */
      if (!symheap__cfg_raw("SYMHEAP_HEAP_RESERVE")) {
        SYMHEAP_WARN("no heap: %s; symheap_malloc registers each allocation "
                     "(set SYMHEAP_HEAP_RESERVE lower, or SYMHEAP_HEAP=0)",
                     symheap__error_peek());
        symheap__error_clear();
        r = SYMHEAP_SUCCESS;
        me.route = SYMHEAP__ROUTE_NO_HEAP;
      }
    }
    if (me.route == SYMHEAP__ROUTE_HEAP && r == SYMHEAP_SUCCESS)
      me.route = symheap__heap_plan(c, len, &me, &r);
    if (me.route == SYMHEAP__ROUTE_HEAP && r == SYMHEAP_SUCCESS)
      r = window_new(c, &w);
  }
  const symheap__heap_rec_t *all;
  r = symheap__heap_agree(c, r, "symheap_malloc", &me, &all);
  uint64_t route =
      r == SYMHEAP_SUCCESS ? symheap__heap_route(c, all) : SYMHEAP__ROUTE_HEAP;
  *done = route == SYMHEAP__ROUTE_HEAP;
  if (route == SYMHEAP__ROUTE_NO_HEAP) { /* for good, on every rank */
    c->heap_state = -1;
    if (c->heap && c->heap->arena.allocations == 0)
      symheap__heap_destroy(c);
  }
  if (r == SYMHEAP_SUCCESS && route == SYMHEAP__ROUTE_HEAP && me.count)
    r = symheap__heap_commit(c, (uint32_t)me.first, (uint32_t)me.count);
  if (r == SYMHEAP_SUCCESS && route == SYMHEAP__ROUTE_HEAP) {
    r = window_make(c, w, size, me.off, len);
    /* A failure after growing gives the new chunks back, on every rank:
     * window_make's last step was an agreement. */
    if (me.count)
      symheap__heap_commit_end(c, (uint32_t)me.first, (uint32_t)me.count,
                               r == SYMHEAP_SUCCESS);
  }
  if (r != SYMHEAP_SUCCESS || route != SYMHEAP__ROUTE_HEAP) {
    if (w)
      free(w->peer);
    free(w);
    symheap__heap_undo_create(c, created && r != SYMHEAP_SUCCESS);
    return r;
  }
  *out = w->handle;
  return SYMHEAP_SUCCESS;
}

void symheap__heap_release(symheap_comm_t c, struct symheap_window *w) {
  symheap__heap_t *h = c->heap;
  if (!h || !w->heap_len) /* a view: the block is its owner's */
    return;
  if (symheap__arena_give(&h->arena, (uint64_t)w->head, w->heap_len))
    SYMHEAP_WARN("heap: block at offset %zu could not be given back (no "
                 "memory); its %llu bytes stay used",
                 w->head, (unsigned long long)w->heap_len);
  else {
    c->stats.heap_used -= w->heap_len;
    c->stats.heap_allocations--;
  }
  h->seq++;
}

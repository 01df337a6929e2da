/* The heap's own calls: accounting, reserving ahead, trimming. */
#include <string.h>

#include "comm/net.h"
#include "mem/heap.h"

SYMHEAP__EXPORT symheap_result_t
symheap_heap_get_info(symheap_comm_t c, symheap_heap_info_t *info) {
  if (symheap__comm_check(c, "symheap_heap_get_info") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!info)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_heap_get_info: NULL argument");
  symheap_result_t r = symheap__heap_state(c);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "symheap_heap_get_info");
  symheap_heap_info_t in;
  memset(&in, 0, sizeof in);
  in.struct_size = sizeof in;
  in.enabled = c->heap_state > 0;
  in.chunk_size = c->heap_chunk;
  in.threshold = c->heap_threshold;
  symheap__heap_t *h = c->heap;
  if (h) {
    in.reserved = h->arena.size;
    in.committed = (uint64_t)h->arena.ncommitted * h->arena.chunk;
    in.used = h->arena.used;
    in.largest_free = symheap__arena_largest(&h->arena);
    in.allocations = h->arena.allocations;
    in.chunks = h->arena.ncommitted;
  }
  return symheap__copy_sized(info, &in, sizeof in, "symheap_heap_get_info");
}

/* Local, before the agreement: the heap exists (or why not). */
static symheap_result_t heap_ready(symheap_comm_t c, const char *fn) {
  symheap_result_t r = symheap__heap_state(c);
  if (r == SYMHEAP_SUCCESS && c->heap_state < 0)
    r = symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                       "%s: the comm has no heap (SYMHEAP_HEAP=0, a device "
                       "adaptor without VMM, a vendor window path, or a "
                       "reservation that failed)",
                       fn);
  if (r == SYMHEAP_SUCCESS && !c->heap)
    r = symheap__heap_create(c);
  return r;
}

static symheap_result_t heap_reserve_one(symheap_comm_t c, size_t bytes) {
  const char *fn = "symheap_heap_reserve";
  symheap_result_t r = symheap__comm_enter(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  symheap__heap_rec_t me;
  memset(&me, 0, sizeof me);
  me.size = bytes;
  me.route = SYMHEAP__ROUTE_HEAP;
  uint64_t len = symheap__arena_round(bytes ? bytes : 1);
  int created = !c->heap;
  r = heap_ready(c, fn);
  if (r == SYMHEAP_SUCCESS && !len)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: %zu bytes is too large",
                       fn, bytes);
  symheap__heap_t *h = c->heap;
  uint32_t first = 0, count = 0;
  if (r == SYMHEAP_SUCCESS && symheap__arena_largest(&h->arena) < len &&
      symheap__arena_plan(&h->arena, len, &me.off, &first, &count) != 0)
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY,
                       "%s: %zu bytes do not fit in the heap's reservation "
                       "of %llu bytes per rank (SYMHEAP_HEAP_RESERVE)",
                       fn, bytes, (unsigned long long)h->arena.size);
  if (r == SYMHEAP_SUCCESS && symheap__arena_room(&h->arena, count + 2))
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "%s: no memory", fn);
  if (r == SYMHEAP_SUCCESS && count &&
      (r = c->dev.ops.capture_check(c->dev_ctx)) != SYMHEAP_SUCCESS)
    r = symheap__error_context(r, "%s: committing heap chunks", fn);
  me.first = first;
  me.count = count;
  const symheap__heap_rec_t *all;
  r = symheap__heap_agree(c, r, fn, &me, &all);
  if (r == SYMHEAP_SUCCESS && count) {
    r = symheap__heap_commit(c, first, count);
    if (r == SYMHEAP_SUCCESS)
      symheap__heap_commit_end(c, first, count, 1);
  }
  if (r == SYMHEAP_SUCCESS)
    h->seq++;
  symheap__heap_undo_create(c, created && r != SYMHEAP_SUCCESS);
  return r == SYMHEAP_SUCCESS ? r : symheap__error_context(r, "%s", fn);
}

SYMHEAP__EXPORT symheap_result_t symheap_heap_reserve(symheap_comm_t c,
                                                      size_t bytes) {
  SYMHEAP__CLAIMED(c, "symheap_heap_reserve", heap_reserve_one(c, bytes));
}

static symheap_result_t heap_trim_one(symheap_comm_t c) {
  const char *fn = "symheap_heap_trim";
  symheap_result_t r = symheap__comm_enter(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  symheap__heap_rec_t me;
  memset(&me, 0, sizeof me);
  me.route = SYMHEAP__ROUTE_HEAP;
  r = symheap__heap_state(c);
  symheap__heap_t *h = c->heap;
  /* Idle chunks, compared: the same on every rank unless the heaps
   * diverged. */
  for (uint32_t i = 0; h && r == SYMHEAP_SUCCESS && i < h->arena.nchunks; i++)
    if (symheap__arena_chunk_idle(&h->arena, i)) {
      me.first = me.count ? me.first : i;
      me.count++;
      me.off = me.off * 31 + i; /* which ones, not only how many */
    }
  if (r == SYMHEAP_SUCCESS && me.count)
    r = symheap__capture_check(c, fn);
  /* Nothing in flight to the chunks about to be deregistered (as free). */
  if (r == SYMHEAP_SUCCESS && me.count && c->netc)
    r = symheap__net_quiet(c, fn);
  const symheap__heap_rec_t *all;
  r = symheap__heap_agree(c, r, fn, &me, &all);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (h)
    h->seq++;
  if (me.count)
    SYMHEAP_INFO("heap: trimming %llu idle chunk(s)",
                 (unsigned long long)me.count);
  r = symheap__heap_trim_local(c);
  return r == SYMHEAP_SUCCESS ? r : symheap__error_context(r, "%s", fn);
}

SYMHEAP__EXPORT symheap_result_t symheap_heap_trim(symheap_comm_t c) {
  SYMHEAP__CLAIMED(c, "symheap_heap_trim", heap_trim_one(c));
}

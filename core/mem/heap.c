/* The symmetric heap: made at the comm's first symheap_malloc that wants it,
 * grown by whole chunks through the collective mapping path (mapping.c),
 * carved by a deterministic allocator (heap_arena.c).  An allocation that
 * fits costs one agreement and no device call; one that does not commits
 * chunks after the ones in use, so live allocations never move. */
#include <stdlib.h>
#include <string.h>

#include "comm/agree.h"
#include "heap.h"
#include "heap_config.h"
#include "mapping.h"
#include "net_heap.h"

_Static_assert(sizeof(symheap__heap_rec_t) <= sizeof(symheap_shareable_t),
               "heap records live in the comm's handle scratch");

/* Whether the device adaptor's chunks are this host's memory: the CPU
 * maps them (the host adaptor), where a GPU's are the device's own. */
static int host_memory(symheap_comm_t c) {
  return (c->caps.caps & SYMHEAP_CAP_HOST_ACCESS) != 0;
}

symheap_result_t symheap__heap_vars_check(symheap_comm_t c) {
  symheap__heap_cfg_t cfg;
  return symheap__heap_config(c->caps.granularity, host_memory(c), &cfg);
}

/* Local: read the variables once per comm. */
symheap_result_t symheap__heap_state(symheap_comm_t c) {
  if (c->heap_state)
    return SYMHEAP_SUCCESS;
  symheap__heap_cfg_t cfg;
  symheap_result_t r =
      symheap__heap_config(c->caps.granularity, host_memory(c), &cfg);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* Chunks are physical memory mapped into a reservation (VMM), by symheap
   * itself: not on a per-peer IPC adaptor, and not where a vendor window
   * path maps windows (its windows must be the vendor's).  The same on
   * every rank: all were agreed at comm init. */
  int usable = (c->caps.caps & SYMHEAP_CAP_VMM) && !c->winpath;
  if (cfg.on && !usable)
    SYMHEAP_INFO("heap: off (%s); symheap_malloc registers each allocation",
                 c->winpath ? "a vendor window path maps windows"
                          : "the device adaptor has no VMM");
  c->heap_state = cfg.on && usable ? 1 : -1;
  c->heap_reserve = cfg.reserve;
  c->heap_chunk = cfg.chunk;
  c->heap_threshold = cfg.threshold;
  return SYMHEAP_SUCCESS;
}

static void heap_free_struct(symheap__heap_t *h) {
  if (!h)
    return;
  symheap__arena_fini(&h->arena);
  free(h->handle);
  free(h->fresh);
  free(h);
}

/* The reservation's mapping is the heap's: at comm destroy the heap tears
 * it down, its chunks first. */
static void heap_map_clear(symheap_comm_t c, symheap__map_t *m) {
  if (c->heap && c->heap->map == m)
    symheap__heap_destroy(c);
  else
    symheap__map_drop(c, m);
}
static const symheap__map_hooks_t heap_map_hooks = {NULL, NULL,
                                                    heap_map_clear};

/* Local: the reservation, address space only. */
symheap_result_t symheap__heap_create(symheap_comm_t c) {
  symheap__heap_t *h = calloc(1, sizeof *h);
  if (!h || symheap__arena_init(&h->arena, c->heap_reserve, c->heap_chunk)) {
    heap_free_struct(h);
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "heap: no memory");
  }
  h->handle = calloc(h->arena.nchunks, sizeof *h->handle);
  h->fresh = calloc(h->arena.nchunks, 1);
  if (!h->handle || !h->fresh) {
    heap_free_struct(h);
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "heap: no memory");
  }
  char var[96];
  symheap__heap_var_text("SYMHEAP_HEAP_RESERVE", var, sizeof var);
  if (c->heap_reserve > SIZE_MAX / (size_t)c->nranks) {
    heap_free_struct(h);
    return symheap__error(SYMHEAP_ERR_NO_MEMORY,
                          "%s cannot be reserved for the heap: %d ranks x "
                          "%llu bytes do not fit in the address space",
                          var, c->nranks, (unsigned long long)c->heap_reserve);
  }
  size_t total = (size_t)c->heap_reserve * (size_t)c->nranks;
  void *va = NULL;
  symheap_result_t r = symheap__va_reserve(&c->dev.ops, c->dev_ctx, total,
                                           c->caps.granularity, &va);
  if (r != SYMHEAP_SUCCESS) {
    heap_free_struct(h);
    return symheap__error_context(r,
                                  "%s cannot be reserved for the heap (%zu "
                                  "bytes of address space for %d rank%s)",
                                  var, total, c->nranks,
                                  c->nranks == 1 ? "" : "s");
  }
  symheap__map_t *m = symheap__map_new(c, 0, &heap_map_hooks);
  if (!m) {
    (void)c->dev.ops.va_free(c->dev_ctx, va, total);
    heap_free_struct(h);
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "heap: no memory");
  }
  m->kind = SYMHEAP__MAP_HEAP; /* it owns the reservation, heap.c the chunks */
  m->base = va;
  m->stride = (size_t)c->heap_reserve;
  m->reserved = total;
  h->map = m;
  h->base = va;
  h->threshold = c->heap_threshold;
  c->stats.va_reserved += total;
  c->stats.heap_reserved = c->heap_reserve;
  c->heap = h;
  SYMHEAP_INFO("heap: %llu bytes per rank reserved at %p, chunks of %llu",
               (unsigned long long)c->heap_reserve, va,
               (unsigned long long)c->heap_chunk);
  return SYMHEAP_SUCCESS;
}

/* Local: unmap chunk i on every rank's place and release its memory. */
static symheap_result_t chunk_release(symheap_comm_t c, uint32_t i) {
  symheap__heap_t *h = c->heap;
  size_t ch = (size_t)h->arena.chunk;
  symheap__net_heap_release(c, i); /* before the memory can go */
  symheap_result_t r = symheap__unmap_peers(
      c, h->base + (size_t)i * ch, (size_t)h->arena.size, ch, c->nranks);
  symheap_result_t r2 = c->dev.ops.mem_release(c->dev_ctx, h->handle[i]);
  h->handle[i] = 0;
  c->stats.descriptors_held--;
  c->stats.heap_committed -= ch;
  (void)symheap__arena_uncommit(&h->arena, i);
  return r != SYMHEAP_SUCCESS ? r : r2;
}

symheap_result_t symheap__heap_commit(symheap_comm_t c, uint32_t first,
                                      uint32_t count) {
  symheap__heap_t *h = c->heap;
  size_t ch = (size_t)h->arena.chunk;
  symheap_result_t r = SYMHEAP_SUCCESS;
  uint64_t t0 = symheap__now_ns();
  uint32_t made = 0;
  for (uint32_t i = first; i < first + count && r == SYMHEAP_SUCCESS; i++) {
    if (h->arena.committed[i])
      continue;
    symheap_mem_handle_t mh = 0;
    r = c->dev.ops.mem_create(c->dev_ctx, ch, &mh);
    if (r != SYMHEAP_SUCCESS)
      r = symheap__error_context(r, "heap: making a chunk of %zu bytes", ch);
    char *at = h->base + (size_t)i * ch;
    r = symheap__map_peers(c, r, NULL, mh, &at, 0, (size_t)h->arena.size, ch,
                           0);
    if (r != SYMHEAP_SUCCESS) {
      if (mh)
        SYMHEAP__KEEP_ERROR((void)c->dev.ops.mem_release(c->dev_ctx, mh));
      break;
    }
    h->handle[i] = mh;
    h->fresh[i] = 1;
    made++;
    c->stats.descriptors_held++;
    c->stats.heap_committed += ch;
    (void)symheap__arena_commit(&h->arena, i); /* room made beforehand */
  }
  if (r == SYMHEAP_SUCCESS && c->netc) /* collective: chunks' net regions */
    r = symheap__net_heap_commit(c, first, count);
  /* Every rank saw the same agreements: all undo, or none. */
  if (r != SYMHEAP_SUCCESS)
    symheap__heap_commit_end(c, first, count, 0);
  if (r == SYMHEAP_SUCCESS && made)
    SYMHEAP_INFO("heap: grew by %u chunk%s of %zu bytes in %.3f ms (%u "
                 "committed)",
                 made, made == 1 ? "" : "s", ch, (symheap__now_ns() - t0) / 1e6,
                 h->arena.ncommitted);
  return r;
}

void symheap__heap_commit_end(symheap_comm_t c, uint32_t first, uint32_t count,
                              int keep) {
  symheap__heap_t *h = c->heap;
  for (uint32_t i = first; i < first + count; i++) {
    if (h->fresh[i] && !keep)
      SYMHEAP__KEEP_ERROR((void)chunk_release(c, i));
    h->fresh[i] = 0;
  }
}

symheap_result_t symheap__heap_trim_local(symheap_comm_t c) {
  symheap__heap_t *h = c->heap;
  symheap_result_t first = SYMHEAP_SUCCESS;
  for (uint32_t i = 0; h && i < h->arena.nchunks; i++)
    if (symheap__arena_chunk_idle(&h->arena, i))
      SYMHEAP_KEEP_FIRST(first, chunk_release(c, i));
  return first;
}

void symheap__heap_destroy(symheap_comm_t c) {
  symheap__heap_t *h = c->heap;
  if (!h)
    return;
  for (uint32_t i = 0; i < h->arena.nchunks; i++)
    if (h->arena.committed[i]) {
      if (!symheap__arena_chunk_idle(&h->arena, i))
        SYMHEAP_WARN("comm destroy: heap chunk %u still held allocations", i);
      /* Make it idle: the windows are gone, whatever the arena says. */
      h->arena.committed[i] = 0;
      h->arena.ncommitted--;
      size_t ch = (size_t)h->arena.chunk;
      symheap__net_heap_release(c, i);
      (void)symheap__unmap_peers(c, h->base + (size_t)i * ch,
                                 (size_t)h->arena.size, ch, c->nranks);
      (void)c->dev.ops.mem_release(c->dev_ctx, h->handle[i]);
      c->stats.descriptors_held--;
      c->stats.heap_committed -= ch;
    }
  symheap__map_drop(c, h->map); /* the reservation: every view is gone */
  c->stats.heap_reserved = 0;
  c->stats.heap_used = 0;
  c->stats.heap_allocations = 0;
  heap_free_struct(h);
  c->heap = NULL;
}

/* Local, before the agreement: where this rank's heap would put `len`
 * bytes, and which chunks it would commit first. */
uint64_t symheap__heap_plan(symheap_comm_t c, uint64_t len,
                           symheap__heap_rec_t *me, symheap_result_t *r) {
  symheap__heap_t *h = c->heap;
  uint32_t first = 0, count = 0;
  if (symheap__arena_fit(&h->arena, len, &me->off) == 0)
    ; /* fits in committed memory: no device call */
  else if (symheap__arena_plan(&h->arena, len, &me->off, &first, &count) != 0)
    return SYMHEAP__ROUTE_FULL;
  me->first = first;
  me->count = count;
  /* The arena never needs memory after the agreement. */
  if (symheap__arena_room(&h->arena, 2 + count)) {
    *r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "heap: no memory");
    return SYMHEAP__ROUTE_HEAP;
  }
  if (count) {
    symheap_result_t rc = c->dev.ops.capture_check(c->dev_ctx);
    char why[SYMHEAP_ERROR_MAX / 2];
    /* The adaptor's words, copied: the new message is written over them. */
    snprintf(why, sizeof why, "%s", symheap__error_peek());
    if (rc != SYMHEAP_SUCCESS)
      *r = symheap__error(rc,
                          "the heap must grow by %u chunk(s) of %llu bytes "
                          "for %llu bytes, and growing is not allowed during "
                          "graph capture: call symheap_heap_reserve before "
                          "capturing (%s)",
                          count, (unsigned long long)h->arena.chunk,
                          (unsigned long long)len, why);
  }
  return SYMHEAP__ROUTE_HEAP;
}

/* After the agreement: MISMATCH naming the first field that differs. */
static symheap_result_t compare(symheap_comm_t c, const char *fn,
                                const symheap__heap_rec_t *all) {
  for (int p = 1; p < c->nranks; p++) {
    const symheap__heap_rec_t *x = &all[0], *y = &all[p];
    if (x->size != y->size || x->flags != y->flags)
      return symheap__error(
          SYMHEAP_ERR_MISMATCH,
          "%s: ranks disagree: rank 0 asks for %llu bytes "
          "with flags 0x%llx, rank %d for %llu bytes with "
          "flags 0x%llx",
          fn, (unsigned long long)x->size, (unsigned long long)x->flags, p,
          (unsigned long long)y->size, (unsigned long long)y->flags);
    if ((x->route == SYMHEAP__ROUTE_REGISTER) !=
            (y->route == SYMHEAP__ROUTE_REGISTER) ||
        x->reserve != y->reserve || x->chunk != y->chunk ||
        x->threshold != y->threshold)
      return symheap__error(
          SYMHEAP_ERR_MISMATCH,
          "%s: ranks disagree on the heap: rank 0 %s it "
          "(reserve %llu, chunk %llu, threshold %llu), rank %d %s it "
          "(reserve %llu, chunk %llu, threshold %llu); SYMHEAP_HEAP, "
          "SYMHEAP_HEAP_RESERVE, SYMHEAP_HEAP_CHUNK and "
          "SYMHEAP_HEAP_THRESHOLD must be the same on every "
          "rank",
          fn, x->route ? "uses" : "does not use",
          (unsigned long long)x->reserve, (unsigned long long)x->chunk,
          (unsigned long long)x->threshold, p,
          y->route ? "uses" : "does not use", (unsigned long long)y->reserve,
          (unsigned long long)y->chunk, (unsigned long long)y->threshold);
  }
  for (int p = 1; p < c->nranks; p++) {
    const symheap__heap_rec_t *x = &all[0], *y = &all[p];
    if (x->route != SYMHEAP__ROUTE_HEAP || y->route != SYMHEAP__ROUTE_HEAP)
      continue;
    if (x->seq != y->seq || x->off != y->off || x->first != y->first ||
        x->count != y->count)
      return symheap__error(
          SYMHEAP_ERR_MISMATCH,
          "%s: the ranks' heaps differ (their earlier heap "
          "calls did): rank 0 is at heap operation %llu and "
          "places the block at offset %llu, rank %d at "
          "operation %llu and offset %llu",
          fn, (unsigned long long)x->seq, (unsigned long long)x->off, p,
          (unsigned long long)y->seq, (unsigned long long)y->off);
  }
  return SYMHEAP_SUCCESS;
}

/* The agreed route: a rank without a heap, or a full heap anywhere, sends
 * every rank to the registration path. */
uint64_t symheap__heap_route(symheap_comm_t c, const symheap__heap_rec_t *all) {
  uint64_t route = SYMHEAP__ROUTE_HEAP;
  for (int p = 0; p < c->nranks; p++)
    if (all[p].route != SYMHEAP__ROUTE_HEAP)
      route = all[p].route;
  return route;
}

symheap_result_t symheap__heap_agree(symheap_comm_t c, symheap_result_t r,
                                     const char *fn, symheap__heap_rec_t *me,
                                     const symheap__heap_rec_t **allp) {
  symheap__heap_rec_t *all = (symheap__heap_rec_t *)(void *)c->scratch_sh;
  me->seq = c->heap ? c->heap->seq : 0;
  me->reserve = c->heap_reserve;
  me->chunk = c->heap_chunk;
  me->threshold = c->heap_threshold;
  r = symheap__agree_fast(c, r, me, sizeof *me, all);
  if (r == SYMHEAP_SUCCESS)
    r = compare(c, fn, all);
  *allp = all;
  return r;
}

int symheap__heap_locate(symheap_comm_t c, const void *ptr, size_t *off,
                         uint64_t *part) {
  symheap__heap_t *h = c->heap;
  if (!h)
    return 0;
  const char *mine = h->base + (size_t)c->rank * (size_t)h->arena.size;
  if ((const char *)ptr < mine || (const char *)ptr >= mine + h->arena.size)
    return 0;
  *off = (size_t)((const char *)ptr - mine);
  *part = h->arena.size;
  return 1;
}

void symheap__heap_undo_create(symheap_comm_t c, int created) {
  /* A failed call changes nothing: not even the reservation it made. */
  if (created && c->heap && c->heap->arena.allocations == 0 &&
      c->heap->arena.ncommitted == 0)
    symheap__heap_destroy(c);
}

symheap_result_t symheap__heap_prepare_free(symheap_comm_t c) {
  if (c->heap && symheap__arena_room(&c->heap->arena, 1))
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "heap: no memory");
  return SYMHEAP_SUCCESS;
}

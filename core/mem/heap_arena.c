/* The heap's allocator: a sorted list of free extents of committed memory,
 * first fit.  Deterministic by construction (no clock, no address, no
 * randomness), which is what lets every rank compute the same offset. */
#include <stdlib.h>
#include <string.h>

#include "heap_arena.h"

int symheap__arena_init(symheap__arena_t *a, uint64_t size, uint64_t chunk) {
  memset(a, 0, sizeof *a);
  a->size = size;
  a->chunk = chunk;
  a->nchunks = (uint32_t)(size / chunk);
  a->committed = calloc(a->nchunks ? a->nchunks : 1, 1);
  a->cap = 16;
  a->free = malloc(a->cap * sizeof *a->free);
  if (!a->committed || !a->free) {
    symheap__arena_fini(a);
    return -1;
  }
  return 0;
}

void symheap__arena_fini(symheap__arena_t *a) {
  free(a->committed);
  free(a->free);
  memset(a, 0, sizeof *a);
}

uint64_t symheap__arena_round(uint64_t size) {
  if (size == 0 || size > UINT64_MAX - SYMHEAP__HEAP_ALIGN)
    return 0;
  return (size + SYMHEAP__HEAP_ALIGN - 1) / SYMHEAP__HEAP_ALIGN *
         SYMHEAP__HEAP_ALIGN;
}

int symheap__arena_fit(const symheap__arena_t *a, uint64_t len, uint64_t *off) {
  for (size_t i = 0; i < a->nfree; i++)
    if (a->free[i].len >= len) {
      *off = a->free[i].off;
      return 0;
    }
  return -1;
}

uint64_t symheap__arena_largest(const symheap__arena_t *a) {
  uint64_t best = 0;
  for (size_t i = 0; i < a->nfree; i++)
    if (a->free[i].len > best)
      best = a->free[i].len;
  return best;
}

/* Index of the first free extent whose end is past off. */
static size_t lower(const symheap__arena_t *a, uint64_t off) {
  size_t lo = 0, hi = a->nfree;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (a->free[mid].off + a->free[mid].len <= off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int symheap__arena_room(symheap__arena_t *a, size_t extra) {
  if (a->nfree + extra <= a->cap)
    return 0;
  size_t cap = a->cap * 2 + extra;
  symheap__extent_t *f = realloc(a->free, cap * sizeof *f);
  if (!f)
    return -1;
  a->free = f;
  a->cap = cap;
  return 0;
}

int symheap__arena_plan(const symheap__arena_t *a, uint64_t len, uint64_t *off,
                        uint32_t *first, uint32_t *count) {
  /* Walk what could hold memory in offset order: free extents (in committed
   * chunks) and uncommitted chunks; they never overlap.  A run of them that
   * touch end to end is one candidate place. */
  uint64_t run_start = 0, run_end = 0;
  size_t f = 0;
  uint32_t c = 0;
  for (;;) {
    while (c < a->nchunks && a->committed[c])
      c++;
    uint64_t coff = c < a->nchunks ? (uint64_t)c * a->chunk : UINT64_MAX;
    uint64_t foff = f < a->nfree ? a->free[f].off : UINT64_MAX;
    if (coff == UINT64_MAX && foff == UINT64_MAX)
      return -1;
    uint64_t s, e;
    if (foff < coff) {
      s = foff;
      e = foff + a->free[f++].len;
    } else {
      s = coff;
      e = coff + a->chunk;
      c++;
    }
    if (s != run_end || run_end == run_start)
      run_start = s;
    run_end = e;
    if (run_end - run_start >= len)
      break;
  }
  *off = run_start;
  uint32_t lo = (uint32_t)(run_start / a->chunk);
  uint32_t hi = (uint32_t)((run_start + len + a->chunk - 1) / a->chunk);
  *first = hi;
  *count = 0;
  for (uint32_t i = lo; i < hi; i++)
    if (!a->committed[i]) {
      if (*count == 0)
        *first = i;
      *count = i - *first + 1;
    }
  return 0;
}

int symheap__arena_take(symheap__arena_t *a, uint64_t off, uint64_t len) {
  size_t i = lower(a, off);
  if (i >= a->nfree || a->free[i].off > off ||
      a->free[i].off + a->free[i].len < off + len)
    return -1;
  symheap__extent_t *e = &a->free[i];
  uint64_t end = e->off + e->len;
  if (e->off == off && end == off + len) {
    memmove(e, e + 1, (a->nfree - i - 1) * sizeof *e);
    a->nfree--;
  } else if (e->off == off) {
    e->off += len;
    e->len -= len;
  } else if (end == off + len) {
    e->len -= len;
  } else { /* split in two */
    if (symheap__arena_room(a, 1))
      return -1;
    e = &a->free[i];
    memmove(e + 2, e + 1, (a->nfree - i - 1) * sizeof *e);
    a->nfree++;
    e[1].off = off + len;
    e[1].len = end - (off + len);
    e->len = off - e->off;
  }
  a->used += len;
  a->allocations++;
  return 0;
}

/* Insert [off, off + len) into the free list, coalescing. */
static int insert_free(symheap__arena_t *a, uint64_t off, uint64_t len) {
  size_t i = lower(a, off);
  int join_prev = i > 0 && a->free[i - 1].off + a->free[i - 1].len == off;
  int join_next = i < a->nfree && a->free[i].off == off + len;
  if (join_prev && join_next) {
    a->free[i - 1].len += len + a->free[i].len;
    memmove(&a->free[i], &a->free[i + 1], (a->nfree - i - 1) * sizeof *a->free);
    a->nfree--;
  } else if (join_prev) {
    a->free[i - 1].len += len;
  } else if (join_next) {
    a->free[i].off = off;
    a->free[i].len += len;
  } else {
    if (symheap__arena_room(a, 1))
      return -1;
    memmove(&a->free[i + 1], &a->free[i], (a->nfree - i) * sizeof *a->free);
    a->free[i].off = off;
    a->free[i].len = len;
    a->nfree++;
  }
  return 0;
}

int symheap__arena_give(symheap__arena_t *a, uint64_t off, uint64_t len) {
  if (insert_free(a, off, len))
    return -1;
  a->used -= len;
  a->allocations--;
  return 0;
}

int symheap__arena_commit(symheap__arena_t *a, uint32_t i) {
  if (i >= a->nchunks || a->committed[i] ||
      insert_free(a, (uint64_t)i * a->chunk, a->chunk))
    return -1;
  a->committed[i] = 1;
  a->ncommitted++;
  return 0;
}

int symheap__arena_chunk_idle(const symheap__arena_t *a, uint32_t i) {
  if (i >= a->nchunks || !a->committed[i])
    return 0;
  uint64_t off = (uint64_t)i * a->chunk;
  size_t k = lower(a, off);
  return k < a->nfree && a->free[k].off <= off &&
         a->free[k].off + a->free[k].len >= off + a->chunk;
}

int symheap__arena_uncommit(symheap__arena_t *a, uint32_t i) {
  if (!symheap__arena_chunk_idle(a, i))
    return -1;
  /* Taking the chunk's range out of the free list is a take that is not an
   * allocation. */
  if (symheap__arena_take(a, (uint64_t)i * a->chunk, a->chunk))
    return -1;
  a->used -= a->chunk;
  a->allocations--;
  a->committed[i] = 0;
  a->ncommitted--;
  return 0;
}

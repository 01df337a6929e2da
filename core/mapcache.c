/* Kept mappings.  Building a flat mapping is mostly cuMemSetAccess on GPUs
 * (about a millisecond per rank for small windows, ten per GiB, and the
 * driver serialises it across processes), so a deregistered window's mapping
 * is kept and handed to the next registration of the same memory.
 *
 * Correctness does not rest on the ranks' caches agreeing: a registration
 * reuses a mapping only when every rank offers one made by the same earlier
 * registration (the same epoch) of the same allocations, which the argument
 * exchange checks.  Allocation ids are never reused, so a mapping of freed
 * memory can never match.  What the cache costs is memory: a kept mapping
 * holds a peer's memory until that peer's FREED notice is read here (at this
 * rank's next registration, deregistration or free) or the mapping is
 * evicted; symheap_comm_get_stats reports kept mappings. */
#include <stdlib.h>
#include <string.h>

#include "comm.h"

symheap__mapping_t *symheap__cache_find(symheap_comm_t c, symheap__alloc_t *a,
                                        size_t offset, size_t size) {
  for (symheap__mapping_t *m = c->cache; m; m = m->next)
    if (m->alloc == a && m->offset == offset && m->size == size)
      return m;
  return NULL;
}

void symheap__cache_take(symheap_comm_t c, symheap__mapping_t *m) {
  for (symheap__mapping_t **pp = &c->cache; *pp; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      break;
    }
  m->alloc->windows--;
  c->stats.mappings_cached--;
}

void symheap__cache_destroy(symheap_comm_t c, symheap__mapping_t *m) {
  SYMHEAP__KEEP_ERROR(
      (void)symheap__unmap_flat(c, m->reserve, m->stride, c->nranks));
  free(m->ids);
  free(m);
}

static void drop(symheap_comm_t c, symheap__mapping_t *m) {
  symheap__cache_take(c, m);
  symheap__cache_destroy(c, m);
}

void symheap__cache_put(symheap_comm_t c, struct symheap_window *w) {
  symheap__mapping_t *m = calloc(1, sizeof *m);
  if (!m)
    return; /* the caller unmaps instead */
  m->alloc = w->alloc;
  m->offset = (size_t)(w->user_ptr - w->alloc->ptr);
  m->size = w->size;
  m->head = w->head;
  m->stride = w->stride;
  m->reserve = w->reserve;
  m->epoch = w->epoch;
  m->ids = w->ids;
  m->last_use = ++c->cache_clock;
  w->reserve = NULL;
  w->ids = NULL;
  /* One mapping per window of an allocation: a newer one replaces it. */
  symheap__mapping_t *old =
      symheap__cache_find(c, m->alloc, m->offset, m->size);
  if (old)
    drop(c, old);
  m->alloc->windows++; /* keeps symheap_mem_free honest: it drops us first */
  m->next = c->cache;
  c->cache = m;
  c->stats.mappings_cached++;
  int n = 0;
  for (symheap__mapping_t *p = c->cache; p; p = p->next)
    n++;
  while (n-- > c->cache_max) {
    symheap__mapping_t *lru = c->cache;
    for (symheap__mapping_t *p = c->cache; p; p = p->next)
      if (p->last_use < lru->last_use)
        lru = p;
    drop(c, lru);
  }
}

void symheap__cache_drop_alloc(symheap_comm_t c, symheap__alloc_t *a) {
  symheap__mapping_t *m = c->cache;
  while (m) {
    symheap__mapping_t *next = m->next;
    if (m->alloc == a)
      drop(c, m);
    m = next;
  }
}

void symheap__cache_drop_peer(symheap_comm_t c, int peer, uint64_t id) {
  symheap__mapping_t *m = c->cache;
  while (m) {
    symheap__mapping_t *next = m->next;
    if (m->ids[peer] == id)
      drop(c, m);
    m = next;
  }
}

void symheap__cache_clear(symheap_comm_t c) {
  while (c->cache)
    drop(c, c->cache);
}

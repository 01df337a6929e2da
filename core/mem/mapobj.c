/* The mapping object: one owner for every mapping of every rank's memory
 * that outlives the window handles using it.  Windows are views: a
 * registration's mapping has one view, or several when the same live
 * range is registered again (a refcounted handle, never a second mapping);
 * the heap's reservation has one per heap window, and a reference of the
 * heap's own; a kept mapping has none.
 *
 * Kept mappings (SYMHEAP_WINDOW_CACHE).  Building a flat mapping is mostly
 * cuMemSetAccess on GPUs (about a millisecond per rank for small windows,
 * ten per GiB, and the driver serialises it across processes), so at its
 * last release a registration's mapping is kept and handed to the next
 * registration of the same memory.  Correctness does not rest on the
 * ranks' caches agreeing: a registration reuses a mapping only when every
 * rank offers one made by the same earlier registration (the same epoch)
 * of the same allocations, which the argument exchange checks.  Allocation
 * ids are never reused, so a mapping of freed memory can never match.  What
 * the cache costs is memory: a kept mapping holds a peer's memory until
 * that peer's FREED notice is read here (at this rank's next registration,
 * deregistration or free) or the mapping is evicted (least recently used
 * first); symheap_comm_get_stats reports kept mappings. */
#include <stdlib.h>
#include <string.h>

#include "mapping.h"
#include "mem.h"

symheap__map_t *symheap__map_new(symheap_comm_t c, int peers,
                                 const symheap__map_hooks_t *hooks) {
  symheap__map_t *m = calloc(1, sizeof *m);
  if (m && peers && !(m->peer = calloc((size_t)c->nranks, sizeof *m->peer))) {
    free(m);
    return NULL;
  }
  if (!m)
    return NULL;
  m->refs = 1;
  m->hooks = hooks;
  m->next = c->maps;
  c->maps = m;
  return m;
}

static void unlink_map(symheap_comm_t c, symheap__map_t *m) {
  for (symheap__map_t **pp = &c->maps; *pp; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      return;
    }
}

void symheap__map_hold(symheap__map_t *m) { m->refs++; }

/* Unmap and free a mapping no view holds; the memory too when the last
 * view was symheap_free's. */
static symheap_result_t destroy(symheap_comm_t c, symheap__map_t *m) {
  symheap_result_t first = SYMHEAP_SUCCESS;
  unlink_map(c, m);
  if (m->kept)
    c->stats.mappings_cached--;
  if (m->hooks && m->hooks->unmap)
    first = m->hooks->unmap(c, m);
  else if (m->len)
    first = symheap__unmap_peers(c, m->base, m->stride, m->len, c->nranks);
  if (m->reserved) {
    SYMHEAP_KEEP_FIRST(first, c->dev.ops.va_free(c->dev_ctx, m->base, m->reserved));
    c->stats.va_reserved -= m->reserved;
  }
  if (m->handle) {
    SYMHEAP_KEEP_FIRST(first, c->dev.ops.mem_release(c->dev_ctx, m->handle));
    c->stats.descriptors_held--;
  }
  symheap__alloc_t *a = m->alloc;
  int free_alloc = m->free_alloc;
  if (a)
    a->windows--;
  free(m->peer);
  free(m->ids);
  free(m);
  if (a && free_alloc)
    SYMHEAP_KEEP_FIRST(first, symheap__map_free_alloc(c, a));
  return first;
}

void symheap__map_drop(symheap_comm_t c, symheap__map_t *m) {
  SYMHEAP__KEEP_ERROR((void)destroy(c, m));
}

symheap__map_t *symheap__map_kept(symheap_comm_t c, symheap__alloc_t *a,
                                  const void *ptr, size_t size) {
  for (symheap__map_t *m = c->maps; m; m = m->next)
    if (m->kept && m->alloc == a && m->local == ptr && m->size == size)
      return m;
  return NULL;
}

symheap__map_t *symheap__map_shared(symheap_comm_t c, const void *ptr,
                                    size_t size) {
  for (symheap__map_t *m = c->maps; m; m = m->next)
    if (m->refs > 0 && m->kind != SYMHEAP__MAP_HEAP && m->flags == 0 &&
        m->local == ptr && m->size == size)
      return m;
  return NULL;
}

void symheap__map_unkeep(symheap_comm_t c, symheap__map_t *m) {
  m->kept = 0;
  m->refs = 1;
  c->stats.mappings_cached--;
}

/* Whether a mapping without views may wait for a later registration. */
static int can_keep(symheap_comm_t c, const symheap__map_t *m) {
  return m->kind == SYMHEAP__MAP_FLAT && m->ids && m->alloc && m->flags == 0 &&
         !m->free_alloc && c->cache_max > 0;
}

/* Into the cache: one kept mapping per range (a newer one replaces it),
 * at most cache_max, the least recently used evicted. */
static void keep(symheap_comm_t c, symheap__map_t *m) {
  symheap__map_t *old = symheap__map_kept(c, m->alloc, m->local, m->size);
  if (old)
    symheap__map_drop(c, old);
  m->kept = 1;
  m->last_use = ++c->cache_clock;
  c->stats.mappings_cached++;
  while (c->stats.mappings_cached > (uint64_t)c->cache_max) {
    symheap__map_t *lru = NULL;
    for (symheap__map_t *p = c->maps; p; p = p->next)
      if (p->kept && (!lru || p->last_use < lru->last_use))
        lru = p;
    symheap__map_drop(c, lru);
  }
}

symheap_result_t symheap__map_release(symheap_comm_t c, symheap__map_t *m,
                                      int keep_it) {
  if (--m->refs > 0)
    return SYMHEAP_SUCCESS;
  if (m->hooks && m->hooks->last_view)
    m->hooks->last_view(c, m); /* the RDMA region, before the memory goes */
  if (keep_it && can_keep(c, m)) {
    keep(c, m);
    return SYMHEAP_SUCCESS;
  }
  return destroy(c, m);
}

void symheap__map_drop_alloc(symheap_comm_t c, symheap__alloc_t *a) {
  symheap__map_t *m = c->maps;
  while (m) {
    symheap__map_t *next = m->next;
    if (m->kept && m->alloc == a)
      symheap__map_drop(c, m);
    m = next;
  }
}

void symheap__map_drop_peer(symheap_comm_t c, int peer, uint64_t id) {
  symheap__map_t *m = c->maps;
  while (m) {
    symheap__map_t *next = m->next;
    if (m->kept && m->ids[peer] == id)
      symheap__map_drop(c, m);
    m = next;
  }
}

void symheap__map_on_freed(void *comm, int peer, uint64_t id) {
  symheap__map_drop_peer(comm, peer, id);
}

symheap_result_t symheap__map_free_alloc(symheap_comm_t c, symheap__alloc_t *a) {
  symheap__map_drop_alloc(c, a);
  return symheap__alloc_free(c, a);
}

void symheap__mem_close(symheap_comm_t c) {
  while (c->maps) {
    symheap__map_t *m = c->maps;
    if (m->refs > 0 && m->kind != SYMHEAP__MAP_HEAP)
      SYMHEAP_WARN("comm destroy: a mapping still had %d view(s)", m->refs);
    if (m->hooks && m->hooks->clear)
      m->hooks->clear(c, m); /* its owner's teardown; it goes from the list */
    else
      symheap__map_drop(c, m);
  }
  while (c->allocs) {
    SYMHEAP_WARN("comm destroy: allocation %p (%zu bytes) was never freed",
                 (void *)c->allocs->ptr, c->allocs->size);
    c->allocs->windows = 0;
    (void)symheap__alloc_free(c, c->allocs);
  }
}

/* Windows: collective registration over the flat VA (or per-peer IPC
 * mappings, window_ipc.c), reuse of kept mappings (mapcache.c), and
 * deregistration.  Accessors are in window_access.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "mapping.h"
#include "window.h"

/* What each rank registers, compared across ranks. */
typedef struct {
  uint64_t size;
  uint64_t offset;     /* of ptr inside its allocation */
  uint64_t alloc_size; /* bytes of the allocation */
  uint64_t granularity;
  uint64_t alloc_id;     /* symheap allocation id, 0 for other memory */
  uint64_t cached_epoch; /* epoch of a kept mapping offered, or UINT64_MAX */
  uint64_t share_id;     /* id of a live window of the same range, or
                            UINT64_MAX */
  uint32_t flags;
  uint32_t flat; /* 1: VMM memory, flat VA; 0: per-peer IPC */
  uint32_t heap; /* 1: memory of the comm's heap (a view, no mapping) */
  uint32_t pad;
} reg_args_t;

static symheap_result_t unmap_flat(symheap_comm_t c, struct symheap_window *w,
                                   int mapped) {
  symheap_result_t r = symheap__unmap_flat(c, w->reserve, w->stride, mapped);
  w->reserve = NULL;
  return r;
}

/* Find the memory behind ptr: ours, the adaptor's (VMM), or IPC-only. */
static symheap_result_t locate(symheap_comm_t c, struct symheap_window *w,
                               reg_args_t *a) {
  char *ptr = w->user_ptr;
  symheap__alloc_t *al = symheap__alloc_find(c, ptr);
  size_t heap_off;
  if (symheap__heap_locate(c, ptr, &heap_off, &a->alloc_size)) {
    w->heap = 1; /* already mapped everywhere: the window is a view */
    a->heap = 1;
    a->offset = heap_off;
    a->flat = 1;
  } else if (al) {
    w->alloc = al;
    a->alloc_id = al->id;
    a->offset = (uint64_t)(ptr - al->ptr);
    a->alloc_size = al->size;
    a->flat = 1;
  } else {
    void *base = NULL;
    size_t asz = 0;
    symheap_result_t r =
        c->dev.has_mem_retain
            ? c->dev.ops.mem_retain(c->dev_ctx, ptr, &w->local, &base, &asz)
            : SYMHEAP_ERR_UNSUPPORTED;
    if (r == SYMHEAP_SUCCESS) {
      c->stats.descriptors_held++;
      a->offset = (uint64_t)(ptr - (char *)base);
      a->alloc_size = asz;
      a->flat = 1;
    } else if (c->winpath.name) {
      /* The vendor decides what it can register. */
      a->offset = 0;
      a->alloc_size = w->size;
      a->flat = 1;
    } else if (c->dev.has_ipc) {
      a->offset = 0;
      a->alloc_size = w->size;
      a->flat = 0;
      if (c->nranks > SYMHEAP_DEVICE_MAX_PEERS)
        return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                              "%p is not VMM memory and the per-peer fallback "
                              "is limited to %d ranks",
                              (void *)ptr, SYMHEAP_DEVICE_MAX_PEERS);
    } else {
      return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                            "%p is not memory this comm can register: allocate "
                            "it with symheap_mem_alloc (device adaptor '%s')",
                            (void *)ptr, c->dev.ops.name);
    }
  }
  if (a->offset + w->size > a->alloc_size || a->offset + w->size < a->offset)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "[%p, +%zu) extends past the end of its allocation "
                          "(%llu bytes from offset %llu)",
                          (void *)ptr, w->size,
                          (unsigned long long)(a->alloc_size - a->offset),
                          (unsigned long long)a->offset);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t check_args(symheap_comm_t c, const reg_args_t *all) {
  for (int p = 1; p < c->nranks; p++) {
    const reg_args_t *x = &all[0], *y = &all[p];
    if (x->size != y->size || x->flags != y->flags)
      return symheap__error(SYMHEAP_ERR_MISMATCH,
                            "ranks disagree: rank 0 registers %llu bytes with "
                            "flags 0x%x, rank %d %llu bytes with flags 0x%x",
                            (unsigned long long)x->size, x->flags, p,
                            (unsigned long long)y->size, y->flags);
    if (x->heap != y->heap)
      return symheap__error(SYMHEAP_ERR_MISMATCH,
                            "ranks disagree: rank %d's memory is %s the "
                            "comm's heap and rank 0's is %s",
                            p, y->heap ? "in" : "not in",
                            x->heap ? "in it" : "not");
    if (x->flat != y->flat)
      return symheap__error(SYMHEAP_ERR_MISMATCH,
                            "ranks disagree: rank %d's memory is %s and rank "
                            "0's is %s; every rank must register the same kind "
                            "of memory",
                            p, y->flat ? "VMM" : "not VMM",
                            x->flat ? "VMM" : "not VMM");
    if (x->offset != y->offset)
      return symheap__error(SYMHEAP_ERR_MISMATCH,
                            "ranks disagree: the window starts %llu bytes into "
                            "rank 0's allocation and %llu bytes into rank %d's",
                            (unsigned long long)x->offset,
                            (unsigned long long)y->offset, p);
  }
  return SYMHEAP_SUCCESS;
}

/* Close the peers' IPC mappings of a per-peer window. */
static symheap_result_t close_ipc(symheap_comm_t c, struct symheap_window *w) {
  symheap_result_t first = SYMHEAP_SUCCESS;
  for (int p = 0; p < c->nranks; p++)
    if (p != c->rank && w->peer[p]) {
      symheap_result_t r = c->dev.ops.ipc_close(c->dev_ctx, w->peer[p]);
      if (r != SYMHEAP_SUCCESS && first == SYMHEAP_SUCCESS)
        first = r;
      w->peer[p] = NULL;
    }
  return first;
}

static void window_free(struct symheap_window *w) {
  if (w) {
    free(w->peer);
    free(w->ids);
  }
  free(w);
}

/* After the argument exchange: may this registration reuse a kept mapping?
 * Only if every rank offers one from the same earlier registration. */
static symheap__mapping_t *cache_match(symheap_comm_t c, const reg_args_t *all,
                                       symheap__mapping_t *offered) {
  int hit = offered != NULL;
  for (int p = 0; p < c->nranks && hit; p++)
    hit = all[p].cached_epoch == all[0].cached_epoch &&
          all[p].cached_epoch != UINT64_MAX;
  if (hit)
    return offered;
  if (offered) { /* stale on some rank: it cannot serve this registration */
    symheap__cache_take(c, offered);
    symheap__cache_destroy(c, offered);
  }
  return NULL;
}

/* A live window (not a sharer) over exactly [ptr, ptr+size) without
 * multicast: registering the range again can share its mapping. */
static struct symheap_window *share_candidate(symheap_comm_t c, void *ptr,
                                              size_t size) {
  for (struct symheap_window *x = c->windows; x; x = x->next) {
    struct symheap_window *o = x->share ? x->share : x;
    if (o->user_ptr == ptr && o->size == size && o->flags == 0)
      return o;
  }
  return NULL;
}

/* Every rank offered the same live window: a new handle over its mapping. */
static symheap_result_t share_register(symheap_comm_t c,
                                       struct symheap_window *w,
                                       struct symheap_window *owner,
                                       symheap_window_t *out) {
  if (w->local) { /* locate() retained a handle the owner already holds */
    (void)c->dev.ops.mem_release(c->dev_ctx, w->local);
    c->stats.descriptors_held--;
    w->local = 0;
  }
  w->flat = owner->flat;
  w->reserve = owner->reserve;
  w->stride = owner->stride;
  w->head = owner->head;
  w->epoch = owner->epoch;
  w->alloc = owner->alloc;
  memcpy(w->peer, owner->peer, (size_t)c->nranks * sizeof *w->peer);
  w->share = owner;
  owner->sharers++;
  w->id = c->next_window_id++;
  w->slot = symheap__slot_take(c);
  if (w->alloc)
    w->alloc->windows++;
  w->next = c->windows;
  c->windows = w;
  symheap__live_add(w);
  c->stats.windows_live++;
  c->stats.bytes_registered += w->size;
  SYMHEAP_TRACE("registered window %llu: %zu bytes at %p, sharing window "
                "%llu's mapping (%d sharers)",
                (unsigned long long)w->id, w->size, (void *)w->user_ptr,
                (unsigned long long)owner->id, owner->sharers);
  *out = w;
  return SYMHEAP_SUCCESS;
}

/* Collective.  `pre` is a failure the caller already had on this rank; it is
 * still carried into the first agreement so that every rank fails alike. */
static symheap_result_t register_impl(symheap_comm_t c, void *ptr, size_t size,
                                      unsigned flags, symheap_result_t pre,
                                      int owns_alloc, symheap_window_t *out) {
  struct symheap_window *w = calloc(1, sizeof *w);
  if (w)
    w->slot = -1;
  reg_args_t a, *all = calloc((size_t)c->nranks, sizeof *all);
  memset(&a, 0, sizeof a);
  symheap_result_t r = pre;
  if (r == SYMHEAP_SUCCESS) {
    if (!out)
      r = symheap__error(SYMHEAP_ERR_INVALID_ARG, "win is NULL");
    else if (!ptr)
      r = symheap__error(SYMHEAP_ERR_INVALID_ARG, "ptr is NULL");
    else if (size == 0)
      r = symheap__error(SYMHEAP_ERR_INVALID_ARG, "size is zero");
    else if (flags & ~SYMHEAP_WINDOW_FLAGS_ALL)
      r = symheap__error(SYMHEAP_ERR_INVALID_ARG, "unknown flags 0x%x",
                         flags & ~SYMHEAP_WINDOW_FLAGS_ALL);
    else if (!w || !all ||
             !(w->peer = calloc((size_t)c->nranks, sizeof(void *))))
      r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "register: no memory");
    else if ((flags & SYMHEAP_WINDOW_MULTICAST) &&
             (r = symheap__mc_check(c)) != SYMHEAP_SUCCESS)
      ;
    else if ((flags & SYMHEAP_WINDOW_MULTICAST) && c->winpath.name)
      r = symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                         "multicast windows are not offered on the window "
                         "path '%s' (SYMHEAP_WINDOW_PATH)",
                         c->winpath.name);
    else if ((r = symheap__capture_check(c, "register")) != SYMHEAP_SUCCESS)
      ;
    else {
      w->comm = c;
      w->user_ptr = ptr;
      w->size = size;
      w->flags = flags;
      r = locate(c, w, &a);
    }
  }
  a.share_id = UINT64_MAX;
  struct symheap_window *owner = NULL;
  if (r == SYMHEAP_SUCCESS && flags == 0 &&
      (owner = share_candidate(c, ptr, size)))
    a.share_id = owner->id;
  a.size = size;
  a.flags = flags;
  a.granularity = c->caps.granularity;
  a.cached_epoch = UINT64_MAX;
  symheap__mapping_t *offered = NULL;
  if (r == SYMHEAP_SUCCESS && w && w->alloc && flags == 0 && c->cache_max > 0 &&
      !c->winpath.name) {
    symheap__fdx_drain(c); /* peers' frees first: fewer stale offers */
    offered = symheap__cache_find(c, w->alloc, a.offset, size);
    if (offered)
      a.cached_epoch = offered->epoch;
  }
  r = symheap__agree(c, r, 0, &a, sizeof a, all);
  if (r == SYMHEAP_SUCCESS)
    r = check_args(c, all);
  if (r == SYMHEAP_SUCCESS && owner) {
    int same = 1;
    for (int p = 0; p < c->nranks && same; p++)
      same = all[p].share_id == a.share_id;
    if (same) {
      free(all);
      return share_register(c, w, owner, out);
    }
  }
  size_t map_off = 0;
  /* A vendor window path maps by itself: no stride of ours to fit. */
  if (r == SYMHEAP_SUCCESS && a.flat && !c->winpath.name) {
    /* Every rank maps the same window of every allocation, so one stride
     * serves all; it must fit in everyone's allocation. */
    size_t gran = 0;
    for (int p = 0; p < c->nranks; p++)
      if (all[p].granularity > gran)
        gran = all[p].granularity;
    if (c->caps.caps & SYMHEAP_CAP_MAP_PARTIAL) {
      map_off = a.offset & ~(gran - 1);
      w->head = a.offset - map_off;
      w->stride = symheap__round_up(w->head + size, gran);
    } else {
      /* The adaptor maps whole allocations only: map all of each, and the
       * window sits inside; one stride must then fit every rank's. */
      map_off = 0;
      w->head = a.offset;
      w->stride = symheap__round_up(a.alloc_size, gran);
      for (int p = 1; p < c->nranks && r == SYMHEAP_SUCCESS; p++)
        if (all[p].alloc_size != all[0].alloc_size)
          r = symheap__error(SYMHEAP_ERR_MISMATCH,
                             "ranks disagree: rank 0's memory is an "
                             "allocation of %llu bytes and rank %d's of %llu; "
                             "device adaptor '%s' maps whole allocations only, "
                             "so they must be the same size",
                             (unsigned long long)all[0].alloc_size, p,
                             (unsigned long long)all[p].alloc_size,
                             c->dev.ops.name);
    }
    for (int p = 0; p < c->nranks && r == SYMHEAP_SUCCESS; p++)
      if (map_off + w->stride > all[p].alloc_size)
        r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                           "the window's mapping [%zu, %zu) does not fit in "
                           "rank %d's allocation of %llu bytes",
                           map_off, map_off + w->stride, p,
                           (unsigned long long)all[p].alloc_size);
  }
  symheap__mapping_t *reuse = NULL;
  if (r == SYMHEAP_SUCCESS && a.flat) {
    /* A vendor's mappings are the vendor's: never kept. */
    int cacheable = flags == 0 && !c->winpath.name;
    for (int p = 0; p < c->nranks && cacheable; p++)
      cacheable = all[p].alloc_id != 0;
    if (cacheable && (w->ids = calloc((unsigned)c->nranks, sizeof *w->ids)))
      for (int p = 0; p < c->nranks; p++)
        w->ids[p] = all[p].alloc_id;
    reuse = cache_match(c, all, offered);
  }
  /* On failure a kept mapping stays kept: nothing about it changed. */
  free(all);
  if (r != SYMHEAP_SUCCESS)
    goto fail;
  if (w->heap) {
    if ((r = symheap__heap_view(c, w, (size_t)a.offset)) != SYMHEAP_SUCCESS)
      goto fail;
    *out = w;
    return SYMHEAP_SUCCESS;
  }
  w->flat = (int)a.flat;
  symheap_mem_handle_t local = w->alloc ? w->alloc->handle : w->local;
  if (reuse) {
    /* Every rank holds the mapping this registration would build. */
    symheap__cache_take(c, reuse);
    w->reserve = reuse->reserve;
    w->epoch = reuse->epoch;
    free(reuse->ids);
    free(reuse);
  } else {
    if (c->winpath.name) {
      r = symheap__winpath_register(c, w);
      w->flat = 1;
    } else {
      r = w->flat ? symheap__map_flat(c, w, local, map_off)
                  : symheap__map_ipc(c, w);
    }
    if (r != SYMHEAP_SUCCESS)
      goto fail;
    w->epoch = c->next_window_id;
    if (w->alloc)
      w->alloc->exported = 1;
  }
  if (w->flat)
    for (int p = 0; p < c->nranks; p++)
      w->peer[p] =
          c->reach[p] ? w->reserve + (size_t)p * w->stride + w->head : NULL;
  if (flags & SYMHEAP_WINDOW_MULTICAST) {
    r = w->flat ? symheap__mc_setup(c, w, local, map_off,
                                    (size_t)a.alloc_size - map_off)
                : symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                                 "multicast needs VMM memory, not the per-peer "
                                 "IPC fallback");
    if (!w->flat)
      r = symheap__agree(c, r, 0, NULL, 0, NULL);
    if (r != SYMHEAP_SUCCESS) {
      SYMHEAP__KEEP_ERROR((void)unmap_flat(c, w, c->nranks));
      goto fail;
    }
  }
  r = symheap__rdma_register(c, w);
  if (r != SYMHEAP_SUCCESS) {
    SYMHEAP__KEEP_ERROR((void)symheap__mc_teardown(c, w));
    if (w->vendor)
      SYMHEAP__KEEP_ERROR((void)symheap__winpath_deregister(c, w));
    else if (w->flat)
      SYMHEAP__KEEP_ERROR((void)unmap_flat(c, w, c->nranks));
    else
      SYMHEAP__KEEP_ERROR(close_ipc(c, w));
    goto fail;
  }
  w->id = c->next_window_id++;
  w->owns_alloc = owns_alloc;
  w->slot = symheap__slot_take(c);
  if (w->alloc)
    w->alloc->windows++;
  w->next = c->windows;
  c->windows = w;
  symheap__live_add(w);
  c->stats.windows_live++;
  c->stats.bytes_registered += size;
  SYMHEAP_TRACE("registered window %llu: %zu bytes at %p, %s, stride %zu",
                (unsigned long long)w->id, size, ptr,
                w->flat ? "flat VA" : "per-peer IPC", w->stride);
  *out = w;
  return SYMHEAP_SUCCESS;
fail:
  if (w && w->local) {
    (void)c->dev.ops.mem_release(c->dev_ctx, w->local);
    c->stats.descriptors_held--;
  }
  window_free(w);
  return r;
}

SYMHEAP__EXPORT symheap_result_t
symheap_window_register(symheap_comm_t c, void *ptr, size_t size,
                        unsigned flags, symheap_window_t *win) {
  symheap_result_t r = symheap__comm_enter(c, "symheap_window_register");
  if (r != SYMHEAP_SUCCESS)
    return r;
  r = register_impl(c, ptr, size, flags, SYMHEAP_SUCCESS, 0, win);
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "symheap_window_register");
}

/* symheap_malloc's checks, carried into the first agreement. */
static symheap_result_t malloc_args(symheap_comm_t c, size_t size,
                                    unsigned flags, symheap_window_t *win) {
  if (!win)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "win is NULL");
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
    r = symheap_mem_alloc(c, alloc, &ptr);
  }
  r = register_impl(c, ptr, size, flags, r, 1, win);
  if (r != SYMHEAP_SUCCESS && ptr)
    SYMHEAP__KEEP_ERROR((void)symheap_mem_free(c, ptr));
  return r;
}

symheap_result_t symheap__malloc_registered(symheap_comm_t c, size_t size,
                                            unsigned flags,
                                            symheap_window_t *win) {
  return malloc_registered(c, malloc_args(c, size, flags, win), size, flags,
                           win);
}

SYMHEAP__EXPORT symheap_result_t symheap_malloc(symheap_comm_t c, size_t size,
                                                unsigned flags,
                                                symheap_window_t *win) {
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

symheap_result_t symheap__window_teardown(symheap_comm_t c,
                                          struct symheap_window *w,
                                          int may_cache) {
  const symheap_device_ops *ops = &c->dev.ops;
  if (w->share) { /* a sharer: the handle goes, the mapping is the owner's */
    struct symheap_window *o = w->share;
    if (w->alloc)
      w->alloc->windows--;
    c->stats.windows_live--;
    c->stats.bytes_registered -= w->size;
    window_free(w);
    if (--o->sharers == 0 && o->released)
      return symheap__window_teardown(c, o, may_cache);
    return SYMHEAP_SUCCESS;
  }
  if (w->sharers > 0) { /* the owner's handle goes; sharers keep the rest */
    if (!w->released) {
      w->released = 1;
      c->stats.windows_live--;
      c->stats.bytes_registered -= w->size;
    }
    return SYMHEAP_SUCCESS;
  }
  symheap__rdma_deregister(c, w); /* before the memory can go */
  if (w->heap) { /* the block goes back; the heap's mapping stays */
    symheap__heap_release(c, w);
    if (!w->released) { /* else counted out when its handle went */
      c->stats.windows_live--;
      c->stats.bytes_registered -= w->size;
    }
    window_free(w);
    return SYMHEAP_SUCCESS;
  }
  symheap_result_t first = symheap__mc_teardown(c, w), r;
  /* w->ids is set only for windows of symheap allocations on every rank and
   * without multicast: the mappings a later registration can reuse. */
  if (w->flat && may_cache && w->ids && !w->owns_alloc && c->cache_max > 0)
    symheap__cache_put(c, w); /* takes the mapping, or leaves it if it can't */
  if (w->vendor) {
    r = symheap__winpath_deregister(c, w);
    if (first == SYMHEAP_SUCCESS)
      first = r;
  } else if (w->flat && w->reserve) {
    r = unmap_flat(c, w, c->nranks);
    if (first == SYMHEAP_SUCCESS)
      first = r;
  } else if (!w->flat) {
    r = close_ipc(c, w);
    if (first == SYMHEAP_SUCCESS)
      first = r;
  }
  if (w->local) {
    r = ops->mem_release(c->dev_ctx, w->local);
    if (r != SYMHEAP_SUCCESS && first == SYMHEAP_SUCCESS)
      first = r;
    c->stats.descriptors_held--;
  }
  if (w->alloc)
    w->alloc->windows--;
  if (!w->released) { /* else counted out when its handle went */
    c->stats.windows_live--;
    c->stats.bytes_registered -= w->size;
  }
  symheap__alloc_t *alloc = w->owns_alloc ? w->alloc : NULL;
  if (w == c->pad) { /* never counted as a window */
    c->stats.windows_live++;
    c->stats.bytes_registered += w->size;
    c->pad = NULL;
  }
  window_free(w);
  if (alloc) {
    r = symheap__alloc_free(c, alloc);
    if (r != SYMHEAP_SUCCESS && first == SYMHEAP_SUCCESS)
      first = r;
  }
  return first;
}

/* Collective.  `freeing`: symheap_free, which also frees the memory. */
static symheap_result_t release_impl(symheap_comm_t c, symheap_window_t w,
                                     int freeing, const char *fn) {
  symheap_result_t r = symheap__comm_enter(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  symheap__fdx_drain(c);
  struct symheap_window *p = c->windows;
  while (p && p != w)
    p = p->next;
  if (!p)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                       "%s: unknown window %p (already released, or of "
                       "another comm)",
                       fn, (void *)w);
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
  return release_impl(c, w, 0, "symheap_window_deregister");
}

SYMHEAP__EXPORT symheap_result_t symheap_free(symheap_comm_t c,
                                              symheap_window_t w) {
  return release_impl(c, w, 1, "symheap_free");
}

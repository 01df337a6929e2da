/* Registration of a window, in named phases: check this rank's arguments
 * and find its memory, and make the mapping object a new mapping would fill
 * (check), offer what could be shared or reused (offer), agree, fit one
 * stride to every rank's memory (layout), reuse or build the mapping (map),
 * multicast and RDMA (extras), and enter the window in the comm (link).  A
 * live mapping of the same range every rank offered gets one more view
 * instead (share), and heap memory a view of the heap's.  Every fallible
 * phase ends in an agreement, so the ranks go on together or undo
 * together. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/agree.h"
#include "mem/heap.h"
#include "mem/mapping.h"
#include "window.h"

/* Local: the new mapping of `kind` that mem/mapping.c, window_ipc.c or the
 * window path made for w becomes m (the mapping object owns it from here;
 * ids: every rank's allocation id, which m keeps). */
static void map_adopt(symheap_comm_t c, struct symheap_window *w,
                      symheap__map_t *m, int kind, uint64_t *ids) {
  m->kind = kind;
  m->flags = w->flags;
  m->base = w->reserve;
  m->stride = w->stride;
  m->head = w->head;
  if (kind == SYMHEAP__MAP_FLAT) { /* mapping.c reserved and mapped it */
    m->len = w->stride;
    m->reserved = w->stride * (size_t)c->nranks;
  }
  if (kind == SYMHEAP__MAP_IPC)
    memcpy(m->peer, w->peer, (size_t)c->nranks * sizeof *m->peer);
  m->local = w->user_ptr;
  m->size = w->size;
  m->alloc = w->alloc;
  if (m->alloc)
    m->alloc->windows++; /* symheap_mem_free refuses while mapped */
  m->handle = w->local;
  w->local = 0;
  m->ids = ids;
  m->epoch = c->next_window_id;
}

/* Local: w becomes a view of all of m (its reference already counted). */
static void map_view(symheap_comm_t c, struct symheap_window *w,
                     symheap__map_t *m) {
  w->map = m;
  w->rdma = &m->rdma;
  w->alloc = m->alloc;
  w->flat = m->kind != SYMHEAP__MAP_IPC;
  w->reserve = m->base;
  w->stride = m->stride;
  w->head = m->head;
  for (int p = 0; p < c->nranks; p++)
    w->peer[p] = m->kind == SYMHEAP__MAP_IPC ? m->peer[p]
                 : c->reach[p] ? m->base + (size_t)p * m->stride + m->head
                               : NULL;
}

/* Collective: reserve nranks * w->stride and map the window's memory there
 * (mem/mapping.c), into w->reserve. */
static symheap_result_t map_flat(symheap_comm_t c, struct symheap_window *w,
                                 symheap_mem_handle_t local, size_t map_off) {
  return symheap__map_peers(c, SYMHEAP_SUCCESS, w->alloc, local, &w->reserve,
                            w->stride * (size_t)c->nranks, w->stride, w->stride,
                            map_off);
}

/* What each rank registers, compared across ranks. */
typedef struct {
  uint64_t size;
  uint64_t offset;     /* of ptr inside its allocation */
  uint64_t alloc_size; /* bytes of the allocation */
  uint64_t granularity;
  uint64_t alloc_id;     /* symheap allocation id, 0 for other memory */
  uint64_t cached_epoch; /* epoch of a kept mapping offered, or UINT64_MAX */
  uint64_t share_id;     /* epoch of a live mapping of the same range, or
                            UINT64_MAX */
  uint32_t flags;
  uint32_t flat; /* 1: VMM memory, flat VA; 0: per-peer IPC */
  uint32_t heap; /* 1: memory of the comm's heap (a view, no mapping) */
  uint32_t pad;
} reg_args_t;

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
    } else if (c->winpath) {
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

/* After the argument exchange: may this registration reuse a kept mapping?
 * Only if every rank offers one from the same earlier registration. */
static symheap__map_t *cache_match(symheap_comm_t c, const reg_args_t *all,
                                   symheap__map_t *offered) {
  int hit = offered != NULL;
  for (int p = 0; p < c->nranks && hit; p++)
    hit = all[p].cached_epoch == all[0].cached_epoch &&
          all[p].cached_epoch != UINT64_MAX;
  if (hit)
    return offered;
  if (offered) /* stale on some rank: it cannot serve this registration */
    symheap__map_drop(c, offered);
  return NULL;
}

/* Phase link (local): the window joins the comm. */
static void reg_link(symheap_comm_t c, struct symheap_window *w,
                     int owns_alloc) {
  w->id = c->next_window_id++;
  w->owns_alloc = owns_alloc;
  w->slot = symheap__slot_take(c);
  symheap__live_add(c, w);
  c->stats.windows_live++;
  c->stats.bytes_registered += w->size;
}

/* Every rank offered the same live mapping: a new view of it. */
static symheap_result_t share_register(symheap_comm_t c,
                                       struct symheap_window *w,
                                       symheap__map_t *m,
                                       symheap_window_t *out) {
  if (w->local) { /* locate() retained a handle the mapping already holds */
    (void)c->dev.ops.mem_release(c->dev_ctx, w->local);
    c->stats.descriptors_held--;
    w->local = 0;
  }
  symheap__map_hold(m);
  map_view(c, w, m);
  reg_link(c, w, 0);
  SYMHEAP_TRACE("registered window %llu: %zu bytes at %p, sharing mapping "
                "%llu (%d views)",
                (unsigned long long)w->id, w->size, (void *)w->user_ptr,
                (unsigned long long)m->epoch, m->refs);
  *out = w->handle;
  return SYMHEAP_SUCCESS;
}

/* One registration in progress: what the phases hand each other. */
typedef struct {
  struct symheap_window *w;
  reg_args_t a;            /* this rank's arguments */
  reg_args_t *all;         /* every rank's, after the agreement */
  symheap__map_t *owner;   /* a live mapping of the same range */
  symheap__map_t *offered; /* a kept mapping of the same range */
  symheap__map_t *reuse;   /* one every rank offered: no mapping to make */
  symheap__map_t *m;       /* made beforehand, for a new mapping */
  uint64_t *ids;           /* every rank's allocation id, if it can be kept */
  size_t map_off;          /* where the mapping starts in the memory */
} reg_t;

/* Phase check (local): the arguments, and the memory behind ptr. */
static symheap_result_t reg_check(symheap_comm_t c, reg_t *g, void *ptr,
                                  size_t size, unsigned flags,
                                  symheap_window_t *out) {
  struct symheap_window *w = g->w;
  if (!out)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "win is NULL");
  symheap_result_t room = symheap__handles_room();
  if (room != SYMHEAP_SUCCESS)
    return room;
  if (!ptr)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "ptr is NULL");
  if (size == 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "size is zero");
  if (flags & ~SYMHEAP_WINDOW_FLAGS_ALL)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "unknown flags 0x%x",
                          flags & ~SYMHEAP_WINDOW_FLAGS_ALL);
  if (!w || !g->all || !(w->peer = calloc((size_t)c->nranks, sizeof(void *))))
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "register: no memory");
  symheap_result_t r;
  if ((flags & SYMHEAP_WINDOW_MULTICAST) &&
      (r = symheap__mc_check(c)) != SYMHEAP_SUCCESS)
    return r;
  if ((flags & SYMHEAP_WINDOW_MULTICAST) && c->winpath)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "multicast windows are not offered on the window "
                          "path '%s' (SYMHEAP_WINDOW_PATH)",
                          c->winpath->name);
  if ((r = symheap__capture_check(c, "register")) != SYMHEAP_SUCCESS)
    return r;
  w->comm = c;
  w->user_ptr = ptr;
  w->size = size;
  w->flags = flags;
  r = locate(c, w, &g->a);
  /* The mapping object now, so that nothing after the collective steps
   * can fail on one rank only. */
  if (r == SYMHEAP_SUCCESS && !g->a.heap &&
      !(g->m = symheap__map_new(c, !g->a.flat, &symheap__window_map_hooks)))
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "register: no memory");
  return r;
}

/* Phase offer (local): a live mapping of the same range to share, a kept
 * one to reuse; the agreement decides whether every rank has one. */
static void reg_offer(symheap_comm_t c, reg_t *g, symheap_result_t r, void *ptr,
                      size_t size, unsigned flags) {
  reg_args_t *a = &g->a;
  a->share_id = UINT64_MAX;
  if (r == SYMHEAP_SUCCESS && flags == 0 && !a->heap &&
      (g->owner = symheap__map_shared(c, ptr, size)))
    a->share_id = g->owner->epoch;
  a->size = size;
  a->flags = flags;
  a->granularity = c->caps.granularity;
  a->cached_epoch = UINT64_MAX;
  if (r == SYMHEAP_SUCCESS && g->w->alloc && flags == 0 && c->cache_max > 0 &&
      !c->winpath) {
    symheap__comm_drain(c); /* peers' frees first: fewer stale offers */
    g->offered = symheap__map_kept(c, g->w->alloc, ptr, size);
    if (g->offered)
      a->cached_epoch = g->offered->epoch;
  }
}

/* Whether every rank offered the same live mapping (the same epoch). */
static int reg_shared(symheap_comm_t c, const reg_t *g) {
  int same = g->owner != NULL;
  for (int p = 0; p < c->nranks && same; p++)
    same = g->all[p].share_id == g->a.share_id;
  return same;
}

/* Phase layout (agreed input): one stride that fits every rank's memory.
 * A vendor window path maps by itself: no stride of ours to fit. */
static symheap_result_t reg_layout(symheap_comm_t c, reg_t *g) {
  struct symheap_window *w = g->w;
  const reg_args_t *all = g->all;
  if (!g->a.flat || c->winpath)
    return SYMHEAP_SUCCESS;
  size_t gran = 0;
  for (int p = 0; p < c->nranks; p++)
    if (all[p].granularity > gran)
      gran = all[p].granularity;
  if (c->caps.caps & SYMHEAP_CAP_MAP_PARTIAL) {
    g->map_off = g->a.offset & ~(gran - 1);
    w->head = g->a.offset - g->map_off;
    w->stride = symheap__round_up(w->head + w->size, gran);
  } else {
    /* The adaptor maps whole allocations only: map all of each, and the
     * window sits inside; one stride must then fit every rank's. */
    g->map_off = 0;
    w->head = g->a.offset;
    w->stride = symheap__round_up(g->a.alloc_size, gran);
    for (int p = 1; p < c->nranks; p++)
      if (all[p].alloc_size != all[0].alloc_size)
        return symheap__error(SYMHEAP_ERR_MISMATCH,
                              "ranks disagree: rank 0's memory is an "
                              "allocation of %llu bytes and rank %d's of "
                              "%llu; device adaptor '%s' maps whole "
                              "allocations only, so they must be the same size",
                              (unsigned long long)all[0].alloc_size, p,
                              (unsigned long long)all[p].alloc_size,
                              c->dev.ops.name);
  }
  for (int p = 0; p < c->nranks; p++)
    if (g->map_off + w->stride > all[p].alloc_size)
      return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                            "the window's mapping [%zu, %zu) does not fit in "
                            "rank %d's allocation of %llu bytes",
                            g->map_off, g->map_off + w->stride, p,
                            (unsigned long long)all[p].alloc_size);
  return SYMHEAP_SUCCESS;
}

/* Still the layout phase: whether the mapping may be kept later (every
 * rank's memory is a symheap allocation), and whether a kept one serves
 * now.  A vendor's mappings are the vendor's: never kept. */
static void reg_reuse(symheap_comm_t c, reg_t *g) {
  struct symheap_window *w = g->w;
  if (!g->a.flat)
    return;
  int cacheable = w->flags == 0 && !c->winpath;
  for (int p = 0; p < c->nranks && cacheable; p++)
    cacheable = g->all[p].alloc_id != 0;
  if (cacheable && (g->ids = calloc((unsigned)c->nranks, sizeof *g->ids)))
    for (int p = 0; p < c->nranks; p++)
      g->ids[p] = g->all[p].alloc_id;
  g->reuse = cache_match(c, g->all, g->offered);
}

/* Phase map (collective): reuse the kept mapping every rank offered, or
 * have the vendor or mapping.c build one into the mapping object made
 * beforehand. */
static symheap_result_t reg_map(symheap_comm_t c, reg_t *g,
                                symheap_mem_handle_t local) {
  struct symheap_window *w = g->w;
  if (g->reuse) {
    symheap__map_unkeep(c, g->reuse);
    map_view(c, w, g->reuse);
    return SYMHEAP_SUCCESS;
  }
  symheap_result_t r;
  int kind = g->a.flat ? SYMHEAP__MAP_FLAT : SYMHEAP__MAP_IPC;
  void *vendor = NULL;
  if (c->winpath) {
    kind = SYMHEAP__MAP_VENDOR;
    r = symheap__winpath_register(c, w, &vendor);
  } else {
    r = g->a.flat ? map_flat(c, w, local, g->map_off)
                  : symheap__map_ipc(c, w);
  }
  if (r != SYMHEAP_SUCCESS)
    return r;
  map_adopt(c, w, g->m, kind, g->ids);
  g->m->vendor_handle = vendor;
  map_view(c, w, g->m);
  g->m = NULL;
  g->ids = NULL;
  if (w->alloc)
    w->alloc->exported = 1;
  return SYMHEAP_SUCCESS;
}

/* Undo phase map (local; every rank agreed to): the window's is the
 * mapping's one view. */
static void reg_unmap(symheap_comm_t c, struct symheap_window *w) {
  SYMHEAP__KEEP_ERROR((void)symheap__map_release(c, w->map, 0));
  w->map = NULL;
}

/* Phase extras (collective): multicast when asked, RDMA when the comm has
 * it; on failure both are undone, and the mapping with them. */
static symheap_result_t reg_extras(symheap_comm_t c, reg_t *g,
                                   symheap_mem_handle_t local) {
  struct symheap_window *w = g->w;
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (w->flags & SYMHEAP_WINDOW_MULTICAST) {
    r = w->flat ? symheap__mc_setup(c, w, local, g->map_off,
                                    (size_t)g->a.alloc_size - g->map_off)
                : symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                                 "multicast needs VMM memory, not the per-peer "
                                 "IPC fallback");
    if (!w->flat)
      r = symheap__agree(c, r, 0, NULL, 0, NULL);
    if (r != SYMHEAP_SUCCESS) {
      reg_unmap(c, w);
      return r;
    }
  }
  r = symheap__rdma_register(c, w);
  if (r != SYMHEAP_SUCCESS) {
    SYMHEAP__KEEP_ERROR((void)symheap__mc_teardown(c, w));
    reg_unmap(c, w);
  }
  return r;
}

/* After the agreement: the window over a new or kept mapping, or a view of
 * the heap's. */
static symheap_result_t reg_build(symheap_comm_t c, reg_t *g, int owns_alloc) {
  struct symheap_window *w = g->w;
  if (w->heap) /* the heap's mapping: a view */
    return symheap__heap_view(c, w, (size_t)g->a.offset);
  symheap_mem_handle_t local = w->alloc ? w->alloc->handle : w->local;
  symheap_result_t r = reg_map(c, g, local);
  if (r == SYMHEAP_SUCCESS)
    r = reg_extras(c, g, local);
  if (r != SYMHEAP_SUCCESS)
    return r;
  reg_link(c, w, owns_alloc);
  SYMHEAP_TRACE("registered window %llu: %zu bytes at %p, %s, stride %zu",
                (unsigned long long)w->id, w->size, (void *)w->user_ptr,
                w->flat ? "flat VA" : "per-peer IPC", w->stride);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__register(symheap_comm_t c, void *ptr, size_t size,
                                   unsigned flags, symheap_result_t pre,
                                   int owns_alloc, symheap_window_t *out) {
  reg_t g;
  memset(&g, 0, sizeof g);
  g.w = calloc(1, sizeof *g.w);
  if (g.w)
    g.w->slot = -1;
  g.all = calloc((size_t)c->nranks, sizeof *g.all);
  symheap_result_t r = pre;
  if (r == SYMHEAP_SUCCESS)
    r = reg_check(c, &g, ptr, size, flags, out);
  reg_offer(c, &g, r, ptr, size, flags);
  r = symheap__agree(c, r, 0, &g.a, sizeof g.a, g.all);
  if (r == SYMHEAP_SUCCESS)
    r = check_args(c, g.all);
  int shared = r == SYMHEAP_SUCCESS && reg_shared(c, &g);
  if (r == SYMHEAP_SUCCESS && !shared)
    r = reg_layout(c, &g);
  if (r == SYMHEAP_SUCCESS && !shared)
    reg_reuse(c, &g);
  /* On failure a kept mapping stays kept: nothing about it changed. */
  free(g.all);
  if (r == SYMHEAP_SUCCESS)
    r = shared ? share_register(c, g.w, g.owner, out)
               : reg_build(c, &g, owns_alloc);
  if (g.m) /* made beforehand, not needed or not filled */
    symheap__map_drop(c, g.m);
  free(g.ids);
  if (r == SYMHEAP_SUCCESS) {
    *out = g.w->handle;
    return SYMHEAP_SUCCESS;
  }
  if (g.w && g.w->local) {
    (void)c->dev.ops.mem_release(c->dev_ctx, g.w->local);
    c->stats.descriptors_held--;
  }
  symheap__window_free(g.w);
  return r;
}

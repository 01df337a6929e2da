/* Window handles as callers see them: the process-wide list of live
 * windows (so a stale or foreign handle is an error, not a crash) and the
 * local accessors. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

/* Window handles.  What a caller holds is not the window's address but a
 * handle: a slot of a process-wide table and the slot's generation, which
 * moves on when the window goes.  So a released handle is refused whatever
 * the allocator does with the memory, and every lookup is O(1) however many
 * windows are live.  The table grows in chunks of CHUNK_SLOTS, the first
 * static and touched at first use (so that it never shows up later as new
 * memory or mappings, e.g. ThreadSanitizer's shadow), the others made by
 * symheap__handles_room before a call agrees on anything. */
#define CHUNK_SLOTS 4096u
#define MAX_CHUNKS 256u
#define HEADROOM 1024u /* registrations of other threads in flight */
typedef struct {
  struct symheap_window *w;
  uint32_t gen;
  uint32_t next_free; /* index + 1 of the next free slot; 0: none */
} slot_t;

static pthread_mutex_t handle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t handle_once = PTHREAD_ONCE_INIT;
static slot_t first_chunk[CHUNK_SLOTS];
static slot_t *chunks[MAX_CHUNKS];
static uint32_t nchunks, slots_used, free_head;

static void handles_init(void) {
  memset(first_chunk, 0, sizeof first_chunk);
  chunks[0] = first_chunk;
  nchunks = 1;
}

static slot_t *slot_at(uint32_t i) {
  return &chunks[i / CHUNK_SLOTS][i % CHUNK_SLOTS];
}

/* Caller holds the lock.  Room for `extra` more slots beyond those used. */
static int grow_locked(uint32_t extra) {
  while (!free_head && slots_used + extra > nchunks * CHUNK_SLOTS) {
    slot_t *c = nchunks < MAX_CHUNKS ? calloc(CHUNK_SLOTS, sizeof *c) : NULL;
    if (!c)
      return -1;
    chunks[nchunks++] = c;
  }
  return 0;
}

symheap_result_t symheap__handles_room(void) {
  pthread_once(&handle_once, handles_init);
  pthread_mutex_lock(&handle_lock);
  int full = grow_locked(HEADROOM);
  pthread_mutex_unlock(&handle_lock);
  if (full)
    return symheap__error(SYMHEAP_ERR_NO_MEMORY,
                          "no room for another window handle (%u live at "
                          "most, or no memory for the table)",
                          MAX_CHUNKS * CHUNK_SLOTS - HEADROOM);
  return SYMHEAP_SUCCESS;
}

static symheap_window_t handle_of(uint32_t index, uint32_t gen) {
  return (symheap_window_t)(uintptr_t)(((uint64_t)gen << 32) | (index + 1));
}

/* symheap__handles_room ran before this call agreed on anything and left
 * HEADROOM slots; only that many other threads' registrations in flight at
 * once could use them up, and then the table grows here. */
static symheap_window_t handle_publish(struct symheap_window *w) {
  pthread_once(&handle_once, handles_init);
  pthread_mutex_lock(&handle_lock);
  symheap_window_t h = NULL;
  if (grow_locked(1) == 0) {
    uint32_t i = free_head ? free_head - 1 : slots_used++;
    slot_t *s = slot_at(i);
    if (free_head)
      free_head = s->next_free;
    s->w = w;
    h = handle_of(i, s->gen);
  }
  pthread_mutex_unlock(&handle_lock);
  return h;
}

static void handle_drop(symheap_window_t h) {
  uint64_t v = (uint64_t)(uintptr_t)h;
  uint32_t i = (uint32_t)v - 1;
  pthread_mutex_lock(&handle_lock);
  slot_t *s = slot_at(i);
  s->w = NULL;
  s->gen++;
  s->next_free = free_head;
  free_head = i + 1;
  pthread_mutex_unlock(&handle_lock);
}

struct symheap_window *symheap__window_get(symheap_window_t h, const char *fn) {
  uint64_t v = (uint64_t)(uintptr_t)h;
  uint32_t i = (uint32_t)v - 1, gen = (uint32_t)(v >> 32);
  struct symheap_window *w = NULL;
  if ((uint32_t)v != 0) {
    pthread_mutex_lock(&handle_lock);
    if (i < slots_used && slot_at(i)->gen == gen)
      w = slot_at(i)->w;
    pthread_mutex_unlock(&handle_lock);
  }
  if (!w)
    symheap__error(SYMHEAP_ERR_INVALID_ARG,
                   "%s: unknown window %p (never registered, or already "
                   "released)",
                   fn, (void *)h);
  return w;
}

void symheap__live_add(symheap_comm_t c, struct symheap_window *w) {
  w->prev = NULL;
  w->next = c->windows;
  if (c->windows)
    c->windows->prev = w;
  c->windows = w;
  w->handle = handle_publish(w);
}

void symheap__window_unlink(symheap_comm_t c, struct symheap_window *w) {
  if (w->prev)
    w->prev->next = w->next;
  else if (c->windows == w)
    c->windows = w->next;
  if (w->next)
    w->next->prev = w->prev;
  w->next = w->prev = NULL;
  if (w->handle) {
    handle_drop(w->handle);
    w->handle = NULL;
  }
}

/* Accessors: local, and safe on a stale handle. */
#define LIVE_OR_FAIL(h, fn)                                                    \
  struct symheap_window *w = symheap__window_get(h, fn);                       \
  if (!w)                                                                      \
  return SYMHEAP_ERR_INVALID_ARG

SYMHEAP__EXPORT symheap_result_t symheap_window_local_ptr(symheap_window_t h,
                                                          void **ptr) {
  LIVE_OR_FAIL(h, "symheap_window_local_ptr");
  if (!ptr)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_local_ptr: ptr is NULL");
  *ptr = w->user_ptr;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_peer_ptr(symheap_window_t h,
                                                         int peer, void **ptr) {
  LIVE_OR_FAIL(h, "symheap_window_peer_ptr");
  if (!ptr || peer < 0 || peer >= w->comm->nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_peer_ptr: %s",
                          !ptr ? "ptr is NULL" : "peer is out of range");
  if (!w->comm->reach[peer])
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "symheap_window_peer_ptr: rank %d is on another host "
                          "and cannot be reached by load/store (see "
                          "symheap_window_peer_reach; symheap_put, "
                          "symheap_get and symheap_atomic reach it through "
                          "the net adaptor, SYMHEAP_NET)",
                          peer);
  *ptr = w->peer[peer];
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_flat_base(symheap_window_t h,
                                                          void **base,
                                                          size_t *stride) {
  LIVE_OR_FAIL(h, "symheap_window_flat_base");
  if (!base || !stride)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_flat_base: NULL output pointer");
  if (!w->flat)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "symheap_window_flat_base: the window uses per-peer "
                          "IPC mappings (its memory is not VMM memory); use "
                          "symheap_window_peer_ptr");
  *base = w->reserve + w->head;
  *stride = w->stride;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t
symheap_window_multicast_ptr(symheap_window_t h, void **ptr) {
  LIVE_OR_FAIL(h, "symheap_window_multicast_ptr");
  if (!ptr)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_multicast_ptr: ptr is NULL");
  if (!w->mc.mapped)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "symheap_window_multicast_ptr: the window has no "
                          "multicast object (register with "
                          "SYMHEAP_WINDOW_MULTICAST)");
  *ptr = (char *)w->mc.va + w->head;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_size(symheap_window_t h,
                                                     size_t *size) {
  LIVE_OR_FAIL(h, "symheap_window_size");
  if (!size)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_size: size is NULL");
  *size = w->size;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t
symheap_window_device_view(symheap_window_t h, symheap_device_window_t *v) {
  LIVE_OR_FAIL(h, "symheap_window_device_view");
  if (!v)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_device_view: view is NULL");
  memset(v, 0, sizeof *v);
  v->version = SYMHEAP_DEVICE_WINDOW_VERSION;
  v->struct_size = sizeof *v;
  v->size = w->size;
  v->rank = w->comm->rank;
  v->nranks = w->comm->nranks;
  if (w->flat) {
    v->flags |= SYMHEAP_VIEW_FLAT;
    v->flat_base = w->reserve + w->head;
    v->stride = w->stride;
  }
  if (w->mc.mapped) {
    v->flags |= SYMHEAP_VIEW_MULTICAST;
    v->multicast_base = (char *)w->mc.va + w->head;
  }
  symheap_comm_t c = w->comm;
  if (c->pad_ready) {
    v->flags |= SYMHEAP_VIEW_PAD;
    v->pad_base = c->pad->reserve + c->pad->head;
    v->pad_stride = c->pad->stride;
  }
  if (w->slot >= 0) {
    __atomic_store_n(&w->view_taken, 1, __ATOMIC_RELAXED);
    v->flags |= SYMHEAP_VIEW_SIGNALS;
    v->signal_count = SYMHEAP_SLOT_SIGNALS;
    v->signal_offset =
        SYMHEAP_PAD_SLOTS_OFFSET + (uint64_t)w->slot * SYMHEAP_PAD_SLOT_BYTES;
  }
  for (int p = 0; p < SYMHEAP_DEVICE_MAX_PEERS; p++)
    v->world_ranks[p] = p < c->nranks ? c->world[p] : -1;
  for (int p = 0; p < c->nranks && p < SYMHEAP_DEVICE_MAX_PEERS; p++)
    v->peer_ptrs[p] = w->peer[p];
  v->local_rank = c->local_rank;
  v->local_nranks = c->local_nranks;
  if (c->local_nranks != c->nranks) {
    v->flags |= SYMHEAP_VIEW_PARTIAL;
    for (int p = 0; p < c->nranks && p < 64; p++)
      if (c->reach[p])
        v->reachable |= 1ull << p;
  }
  symheap__rdma_view(w, v);
  return SYMHEAP_SUCCESS;
}

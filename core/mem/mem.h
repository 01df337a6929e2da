/* The memory floor: allocations of the device's memory (alloc.c) and the
 * mapping objects that map every rank's memory and outlive the windows
 * viewing them (mapobj.c; mapping.h maps, heap.h is the heap). */
#ifndef SYMHEAP_MEM_H
#define SYMHEAP_MEM_H

#include "comm/comm.h"

typedef struct symheap__alloc {
  struct symheap__alloc *next;
  char *ptr;
  size_t size; /* rounded to the granularity */
  symheap_mem_handle_t handle;
  uint64_t id;   /* unique in the comm on this rank, never reused */
  int windows;   /* mappings of it, live or kept (mapobj.c) */
  int exported;  /* peers may hold mappings of it */
  int export_fd; /* kept exported descriptor (-1: none).  CUDA makes an
                    export and the peers' imports of it far cheaper while
                    one exported descriptor stays open */
} symheap__alloc_t;

/* One rank's RDMA registration of a range: its memory region and every
 * rank's key (win/rdma.c fills it), or nothing (mr and keys NULL). */
typedef struct {
  uint64_t addr;
  uint32_t rkey;
  uint32_t pad;
} symheap__rdma_key_t;
typedef struct {
  void *mr;
  uint32_t lkey;
  symheap__rdma_key_t *keys; /* nranks, or NULL */
  struct symheap__netreg *netreg; /* the net adaptor's region (comm/net.h) */
} symheap__rdma_t;

/* What a mapping is made of (its hooks tear each kind down its own way). */
enum {
  SYMHEAP__MAP_FLAT = 1, /* symheap's own flat range (mapping.c) */
  SYMHEAP__MAP_HEAP,     /* the heap's reservation; heap.c maps its chunks */
  SYMHEAP__MAP_IPC,      /* per-peer legacy IPC mappings (win/window_ipc.c) */
  SYMHEAP__MAP_VENDOR,   /* a vendor window path's range (win/) */
};

struct symheap__map;
/* What the mapping's maker does at its end, given at symheap__map_new: the
 * only way this floor calls up.  Each member may be NULL. */
typedef struct {
  /* At the last view, before the memory can go (the RDMA region). */
  void (*last_view)(symheap_comm_t c, struct symheap__map *m);
  /* Unmap what the mapping's kind mapped (NULL: the flat unmapping of
   * mapping.c). */
  symheap_result_t (*unmap)(symheap_comm_t c, struct symheap__map *m);
  /* At comm destroy, in place of dropping it: the owner tears it down (the
   * heap releases its chunks first). */
  void (*clear)(symheap_comm_t c, struct symheap__map *m);
} symheap__map_hooks_t;

/* A mapping of every rank's memory that outlives the window handles using
 * it (mapobj.c; docs/architecture.md).  Windows are views onto one: a
 * registration's mapping has one view, or several when the same range is
 * registered again; the heap's has one per heap window; a kept mapping has
 * none and waits in the cache for the next registration of its range. */
typedef struct symheap__map {
  struct symheap__map *next; /* the comm's list: live, kept and the heap's */
  const symheap__map_hooks_t *hooks; /* its maker's, given at creation */
  int kind;                  /* SYMHEAP__MAP_* */
  int refs;                  /* window views using it */
  int kept;                  /* refs 0, kept for reuse (the cache) */
  int free_alloc;            /* the last view was symheap_free's: the
                                memory goes with the mapping */
  unsigned flags;            /* the registration's: only 0 is shared or kept */
  char *base;                /* rank p's part at base + p * stride */
  size_t stride, head;       /* head: the range's start in each part */
  size_t len;                /* bytes per rank mapped here (the heap: 0, its
                                chunks are heap.c's) */
  size_t reserved;           /* VA reserved here for it (0: not ours) */
  char *local;               /* this rank's [local, local + size): the */
  size_t size;               /* range, what re-registration looks for */
  void **peer;               /* IPC: nranks peer addresses, else NULL */
  void *vendor_handle;       /* SYMHEAP__MAP_VENDOR */
  symheap__alloc_t *alloc;   /* the local memory, when a symheap allocation */
  symheap_mem_handle_t handle; /* retained handle of foreign memory, or 0 */
  symheap__rdma_t rdma;        /* the range's RDMA region, while it has views */
  uint64_t epoch;    /* id of the window that made the mapping: the same on
                        every rank, so equal epochs mean equal mappings */
  uint64_t *ids;     /* every rank's allocation id (can be kept), or NULL */
  uint64_t last_use; /* for eviction */
} symheap__map_t;

/* alloc.c: local allocations of the device's memory. */
symheap__alloc_t *symheap__alloc_find(symheap_comm_t c, const void *ptr);
/* symheap_mem_alloc without the public checks, for the library's own use
 * (free: symheap__map_free_alloc). */
symheap_result_t symheap__mem_alloc(symheap_comm_t c, size_t size,
                                    void **ptr);
/* Local: the allocation goes (its kept mappings must be gone: see
 * symheap__map_free_alloc). */
symheap_result_t symheap__alloc_free(symheap_comm_t c, symheap__alloc_t *a);

/* mapobj.c: the comm's mappings.  Every window is a view holding one
 * reference; the heap holds one on its reservation's mapping. */
/* An empty mapping with one reference, in the comm's list (`peers`: room
 * for nranks peer addresses); its maker's hooks. */
symheap__map_t *symheap__map_new(symheap_comm_t c, int peers,
                                 const symheap__map_hooks_t *hooks);
/* Local: one more view of m. */
void symheap__map_hold(symheap__map_t *m);
/* Local, in release order (agreed): drop one reference.  At the last one
 * the mapping is kept (keep, and it can be) or torn down. */
symheap_result_t symheap__map_release(symheap_comm_t c, symheap__map_t *m,
                                      int keep);
/* A live mapping of exactly [ptr, ptr + size) that a re-registration can
 * share (flags 0, not the heap's), or NULL. */
symheap__map_t *symheap__map_shared(symheap_comm_t c, const void *ptr,
                                    size_t size);
/* A kept mapping of exactly [ptr, ptr + size) of allocation a, or NULL. */
symheap__map_t *symheap__map_kept(symheap_comm_t c, symheap__alloc_t *a,
                                  const void *ptr, size_t size);
/* Local: a kept mapping serves a registration again (one reference). */
void symheap__map_unkeep(symheap_comm_t c, symheap__map_t *m);
/* Local: tear down a mapping that no view holds (kept, or never viewed). */
void symheap__map_drop(symheap_comm_t c, symheap__map_t *m);
/* Drop every kept mapping of local allocation a, or of peer's allocation
 * id (its FREED notice: the fdx hook). */
void symheap__map_drop_alloc(symheap_comm_t c, symheap__alloc_t *a);
void symheap__map_drop_peer(symheap_comm_t c, int peer, uint64_t id);
/* The fdx's on_freed hook: arg is the comm. */
void symheap__map_on_freed(void *comm, int peer, uint64_t id);
/* Local: allocation a goes, with its kept mappings. */
symheap_result_t symheap__map_free_alloc(symheap_comm_t c, symheap__alloc_t *a);
/* Local, at comm destroy once every window is gone: tear down every
 * mapping left (kept ones, the heap's), then every allocation (with a
 * warning). */
void symheap__mem_close(symheap_comm_t c);

#endif

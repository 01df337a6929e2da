/* The communicator and window structures, shared by the core's files. */
#ifndef SYMHEAP_COMM_H
#define SYMHEAP_COMM_H

#include <sys/types.h>

#include "registry.h"

#define SYMHEAP__AGREE_MAX 256
/* Longest host identity (SYMHEAP_HOST_ID), with its terminating NUL. */
#define SYMHEAP__HOST_ID_MAX 96
/* The size of one agreement record (agree.c). */
#define SYMHEAP__AGREE_REC (256 + SYMHEAP__AGREE_MAX)
/* Bytes of host memory per rank for agreements over shared memory
 * (agree_shm.c): two slots. */
#define SYMHEAP__AGREE_SHM_BYTES 4096

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
 * rank's key (rdma.c), or nothing (mr and keys NULL). */
typedef struct {
  uint64_t addr;
  uint32_t rkey;
  uint32_t pad;
} symheap__rdma_key_t;
typedef struct {
  void *mr;
  uint32_t lkey;
  symheap__rdma_key_t *keys; /* nranks, or NULL */
  struct symheap__netreg *netreg; /* the net adaptor's region (net.h) */
} symheap__rdma_t;

/* What a mapping is made of (mapobj.c tears each kind down its own way). */
enum {
  SYMHEAP__MAP_FLAT = 1, /* symheap's own flat range (mapping.c) */
  SYMHEAP__MAP_HEAP,     /* the heap's reservation; heap.c maps its chunks */
  SYMHEAP__MAP_IPC,      /* per-peer legacy IPC mappings (window_ipc.c) */
  SYMHEAP__MAP_VENDOR,   /* a vendor window path's range (window_vendor.c) */
};

/* A mapping of every rank's memory that outlives the window handles using
 * it (mapobj.c; docs/architecture.md).  Windows are views onto one: a
 * registration's mapping has one view, or several when the same range is
 * registered again; the heap's has one per heap window; a kept mapping has
 * none and waits in the cache for the next registration of its range. */
typedef struct symheap__map {
  struct symheap__map *next; /* the comm's list: live, kept and the heap's */
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

/* The multicast part of a window. */
typedef struct {
  symheap_mem_handle_t handle;
  void *va;
  size_t size;
  int bound, mapped;
} symheap__mc_t;

/* A vendor window path (SYMHEAP_WINDOW_PATH=nccl|ccl; window_vendor.c). */
typedef struct {
  const char *name; /* "nccl", or the ccl adaptor's name; NULL: none */
  symheap_result_t (*reg)(void *ctx, void *ptr, size_t size,
                          symheap_vendor_window_t *out);
  symheap_result_t (*dereg)(void *ctx, void *handle);
  void (*close)(void *ctx); /* NULL when ctx is not the path's own */
  void *ctx;
} symheap__winpath_t;

struct symheap_window {
  struct symheap_window *next, *prev; /* in the comm's list */
  symheap_window_t handle;            /* what the caller holds (handles.c) */
  symheap_comm_t comm;
  uint64_t id; /* same on every rank: registrations are collective */
  char *user_ptr;
  size_t size;
  unsigned flags;
  int flat; /* 1: flat VA; 0: per-peer IPC mappings */
  /* The view: the mapping it holds a reference on (mapobj.c), and where the
   * window lies in it.  reserve and stride are the mapping's, copied for
   * the accessors; the window never unmaps them. */
  symheap__map_t *map;
  char *reserve; /* flat mode: rank p's part at reserve + p * stride */
  size_t stride;
  size_t head; /* window start inside each rank's part */
  /* the local memory behind it */
  symheap__alloc_t *alloc;    /* NULL for foreign memory */
  symheap_mem_handle_t local; /* while registering: a retained handle of
                                 foreign memory, which the mapping takes */
  int owns_alloc;             /* made by symheap_malloc */
  void **peer;                /* nranks peer addresses of the window start */
  symheap__mc_t mc;
  int slot;       /* signal slot in the comm pad, or -1 */
  int view_taken; /* a device view was handed out: device code may have
                     touched the slot, so it is cleared when the window goes */
  /* RDMA (rdma.c): the region the window is reached by, or NULL: the
   * mapping's (every view of a registration shares it), or for a heap
   * window its own (rdma_own). */
  symheap__rdma_t *rdma;
  symheap__rdma_t rdma_own;
  /* A heap window (heap.c): [head, head + heap_len) of the comm's heap,
   * its mapping the heap's.  A window registered over part of a heap block
   * is a view of the block (heap_len 0): `block` is that block, which counts
   * its `views` and stays allocated until the last goes; a block freed
   * while viewed is `released` (its handle gone). */
  int heap;
  uint64_t heap_len;
  struct symheap_window *block;
  int views;
  int released;
};

/* A live comm's magic; a destroyed one's struct is kept (never reused) with
 * SYMHEAP__COMM_DEAD, so a stale handle is an error, not a use of freed
 * memory. */
#define SYMHEAP__COMM_LIVE 0x53484d43u
#define SYMHEAP__COMM_DEAD 0x44454144u
struct symheap_comm {
  uint32_t magic;
  int busy;            /* a public call is in progress (comm.c, claim) */
  const char *busy_fn; /* which one, for the other thread's message */
  struct symheap_comm *retired_next; /* once destroyed (comm.c) */
  int rank, nranks;
  /* The node-local team: ranks with this rank's host identity.  Only they
   * map each other's memory (reach[p] is 1 for them, this rank included);
   * the flat range keeps every rank's place, unmapped for the others. */
  int local_rank, local_nranks, nhosts;
  unsigned char *reach;
  symheap_ccl_ops ccl;
  void *ccl_ctx;
  int ccl_owned;
  symheap__device_table_t dev;
  void *dev_ctx;
  symheap_device_caps_t caps;
  int *peer_fd; /* descriptor-exchange mesh; -1 for self */
  unsigned char token[16];
  int sock_abstract;
  char sock_dir[64];
  int timeout_ms;
  /* The deadline of the collective call in progress: every wait inside one
   * call (exchanges, agreements) shares it, so a silent peer costs the
   * call SYMHEAP_TIMEOUT_MS once, not once per step.  Set on entry. */
  int64_t call_deadline_ms;
  const char *mc_disabled_by; /* NULL when multicast may be used */
  symheap_result_t broken;    /* SYMHEAP_SUCCESS while healthy */
  char broken_why[512];
  pid_t pid; /* the process that made it (fork detection) */
  /* Forks this process had seen when it made the comm (forks.c). */
  unsigned forks_at_init;
  struct symheap_window *windows;
  symheap__alloc_t *allocs;
  uint64_t next_window_id;
  uint64_t next_alloc_id;
  struct symheap_window *pad; /* the comm's own window, made at init */
  int pad_ready;              /* cleared on every rank: views may carry it */
  /* Signal slots of the pad in use (SYMHEAP_PAD_SLOTS bits).  Windows come
   * and go in the same order on every rank, so every rank gives a window
   * the same slot without exchanging anything. */
  uint64_t slot_used[(SYMHEAP_PAD_SLOTS + 63) / 64];
  symheap__map_t *maps; /* every mapping: live, kept, the heap's (mapobj.c) */
  int cache_max;        /* SYMHEAP_WINDOW_CACHE: kept mappings at most */
  uint64_t cache_clock;
  symheap_comm_stats_t stats;
  uint64_t *mapped_from; /* nranks: bytes of rank p's memory mapped here */
  /* Made at setup so that the protocol never needs memory it may not get:
   * a rank out of memory still takes its part in every exchange. */
  char *agree_buf;                 /* (nranks + 1) agreement records */
  int *scratch_fds;                /* nranks */
  symheap_shareable_t *scratch_sh; /* nranks */
  int *world;                      /* nranks: job-wide rank of each rank */
  struct symheap__ibv *net;        /* RDMA registration, or NULL (net_why) */
  struct symheap__netc *netc;      /* the net adaptor (net.h), or NULL */
  symheap__winpath_t winpath;      /* name NULL: symheap's own flat VA */
  char net_why[256];
  /* The symmetric heap (heap.c), made at the first symheap_malloc that
   * wants it.  heap_state: 0 variables not read yet, 1 on, -1 off
   * (SYMHEAP_HEAP=0, or the reservation failed on some rank). */
  struct symheap__heap *heap;
  int heap_state;
  /* Agreements over shared memory (agree_shm.c): every rank's area
   * (nranks pointers), or NULL where the ccl carries them. */
  char **agree_shm;
  uint64_t agree_shm_seq;
  /* How this rank waits (agree_shm.c): agreements left that sleep without
   * yielding first, since a yield lately lost the core; and that count's
   * next value, doubled each time a yield is slow again. */
  uint32_t agree_no_yield, agree_backoff;
  uint64_t heap_reserve, heap_chunk, heap_threshold;
};

/* comm.c */
/* This host's identity ("name/boot id"), or SYMHEAP_HOST_ID's value. */
symheap_result_t symheap__host_identity(char *out, size_t len);
/* A new comm from an already created ccl context (owned: fini on destroy);
 * the comm is not yet split from anything (world ranks are its own). */
symheap_result_t symheap__comm_setup(symheap_comm_t *out,
                                     const symheap_ccl_ops *ops, void *ctx,
                                     int owned, int timeout_ms,
                                     int64_t deadline_ms);
/* The device adaptor may refuse while a graph capture is in progress. */
symheap_result_t symheap__capture_check(symheap_comm_t c, const char *fn);
/* Enter a public call: checks the comm, tags log lines with the rank. */
symheap_result_t symheap__comm_enter(symheap_comm_t c, const char *fn);
/* Copy our struct into a caller-sized one (its struct_size first): no more
 * than either size; INVALID_ARG when struct_size is unset. */
symheap_result_t symheap__copy_sized(void *dst, const void *src, size_t ours,
                                     const char *what);
/* The ccl allgather; a failure breaks the comm for good. */
/* Every public call that uses the comm's channels runs as the one call in
 * progress on it: a second thread's call fails at once, saying what the
 * caller did, instead of interleaving messages and blaming a peer. */
symheap_result_t symheap__comm_claim(symheap_comm_t c, const char *fn);
void symheap__comm_unclaim(symheap_comm_t c);
/* The body of such a public call: `call` runs claimed, its result returned. */
#define SYMHEAP__CLAIMED(c, fn, call)                                          \
  do {                                                                         \
    symheap_result_t claimed_r_ = symheap__comm_claim(c, fn);                  \
    if (claimed_r_ == SYMHEAP_SUCCESS) {                                       \
      claimed_r_ = (call);                                                     \
      symheap__comm_unclaim(c);                                                \
    }                                                                          \
    return claimed_r_;                                                         \
  } while (0)
/* A live comm, or INVALID_ARG naming fn (NULL, destroyed, or not a comm). */
symheap_result_t symheap__comm_check(symheap_comm_t c, const char *fn);
/* Which variable turns multicast off (SYMHEAP_DISABLE_MULTICAST=1,
 * NCCL_NVLS_ENABLE=0), or NULL; an error for a malformed value. */
symheap_result_t symheap__multicast_disabled_by(const char **by);
/* Mark the comm broken by r (the thread's message says why, and is
 * logged): later collectives refuse with it.  Returns r. */
symheap_result_t symheap__comm_break(symheap_comm_t c, symheap_result_t r);
/* Milliseconds left of the current call's deadline (at least 1). */
int symheap__call_remaining_ms(symheap_comm_t c);
/* The current call's deadline as an absolute symheap__now_ms() time. */
int64_t symheap__call_deadline(symheap_comm_t c);
symheap_result_t symheap__comm_allgather(symheap_comm_t c, const void *in,
                                         void *out, size_t bytes);

/* ccl_env.c: whether symheap_comm_init_env joins through MPI (and why),
 * and the join itself. */
typedef enum {
  SYMHEAP__CCL_LOCAL,  /* symheap-run's variables, the socket bootstrap */
  SYMHEAP__CCL_MPI,    /* libsymheap-ccl-mpi.so over MPI_COMM_WORLD */
  SYMHEAP__CCL_PLUGIN, /* a loaded plugin's ccl, through its open */
} symheap__ccl_kind_t;
/* How symheap_comm_init_env joins (SYMHEAP_CCL and the launcher's
 * variables); *why says how it was decided, *plugin is the ccl for
 * SYMHEAP__CCL_PLUGIN. */
symheap__ccl_kind_t symheap__ccl_env_choice(symheap_result_t *r,
                                            const char **why,
                                            const symheap_ccl_ops **plugin);
symheap_result_t symheap__comm_init_plugin_ccl(symheap_comm_t *comm,
                                               const symheap_ccl_ops *ops);
symheap_result_t symheap__comm_init_mpi_world(symheap_comm_t *comm,
                                              const char *why);

/* agree.c: every fallible step ends here, so no rank goes on alone.
 * Payloads are at most SYMHEAP__AGREE_MAX bytes; every rank passes the same
 * len whatever happened to it (payload may be NULL: zeros are sent), and
 * `all` may be NULL when the caller has nowhere to put the results.
 * Exchanges each rank's status (and `len` payload bytes into `all`, which
 * may be NULL when len is 0).  Returns SUCCESS only if every rank succeeded;
 * otherwise every rank returns the code of the failure that caused the
 * others, with its rank and message.  `caused_by_peer` marks a local failure
 * that is only a consequence of a peer's (a missing handle). */
symheap_result_t symheap__agree(symheap_comm_t c, symheap_result_t local,
                                int caused_by_peer, const void *payload,
                                size_t len, void *all);

/* symheap__agree over shared memory where the comm can (agree_shm.c),
 * else the ccl: for the heap's fast path.  Every rank must choose the same
 * channel, so callers use it for every call of one kind. */
symheap_result_t symheap__agree_fast(symheap_comm_t c, symheap_result_t local,
                                     const void *payload, size_t len,
                                     void *all);
symheap_result_t symheap__agree_equal_fast(symheap_comm_t c,
                                           symheap_result_t local,
                                           uint64_t value, int *differ,
                                           uint64_t *v0, uint64_t *vp);
/* agree_shm.c: collective, at comm init after the descriptor mesh: shared
 * memory for agreements where every rank is on this host and the mesh
 * exists; off on every rank if any rank cannot have it (not a failure). */
symheap_result_t symheap__agree_shm_setup(symheap_comm_t c);
void symheap__agree_shm_close(symheap_comm_t c);
symheap_result_t symheap__agree_shm_allgather(symheap_comm_t c, const void *in,
                                              void *out, size_t bytes);
/* comm_shm.c: symheap_comm_barrier and small symheap_comm_allgather over
 * the same shared memory, where every rank is on this host and the comm
 * runs on symheap's own bootstrap (the same answer on every rank). */
int symheap__collectives_by_shm(symheap_comm_t c);
symheap_result_t symheap__barrier_shm(symheap_comm_t c);
/* The allgather's size check (local failure r, every rank's size compared:
 * *differ the first rank that differs from rank 0, or -1), carrying the
 * data too where it is small: *carried then, and out is filled. */
symheap_result_t symheap__allgather_size_shm(symheap_comm_t c,
                                             symheap_result_t r, const void *in,
                                             void *out, size_t bytes,
                                             int *carried, int *differ,
                                             uint64_t *b0, uint64_t *bp);
/* forks.c: record the fork count at comm init; whether this process is a
 * fork of the one that made the comm (a system call only after a fork). */
void symheap__forks_watch(symheap_comm_t c);
int symheap__in_forked_child(symheap_comm_t c);

/* symheap__agree, and whether every rank passed the same value: if not,
 * *differ is the first rank whose value (*vp) differs from rank 0's (*v0),
 * else -1.  The caller words the MISMATCH. */
symheap_result_t symheap__agree_equal(symheap_comm_t c, symheap_result_t local,
                                      uint64_t value, int *differ, uint64_t *v0,
                                      uint64_t *vp);

/* fdx.c: the descriptor-exchange mesh among local ranks. */
symheap_result_t symheap__fdx_setup(symheap_comm_t c);
void symheap__fdx_close(symheap_comm_t c);
/* Send my_fd (or nothing, when -1) to every peer; fds[p] receives peer p's
 * descriptor or -1.  fds[rank] is left -1.  Never keeps my_fd.  Returns
 * SYMHEAP_ERR_SYSTEM with the streams in step when this process ran out of
 * descriptors; any other failure leaves the streams unusable (the caller
 * agrees with the others first, then breaks the comm). */
symheap_result_t symheap__fdx_allgather(symheap_comm_t c, int my_fd, int *fds);

/* Tell every peer that allocation `id` of this rank is gone, so they drop
 * mappings of it they keep (best effort, never blocks). */
void symheap__fdx_send_freed(symheap_comm_t c, uint64_t id);
/* Read the peers' notices that have arrived, without blocking. */
void symheap__fdx_drain(symheap_comm_t c);

/* alloc.c */
symheap__alloc_t *symheap__alloc_find(symheap_comm_t c, const void *ptr);
symheap_result_t symheap__alloc_free(symheap_comm_t c, symheap__alloc_t *a);

/* pad.c */
/* Collective, at comm init: the comm's own window, SYMHEAP_PAD_BYTES per
 * rank (layout in symheap_device.h), cleared on every rank before it returns.
 * Device signals and the collectives' state live there.  Keeping a mapping of
 * every peer's memory alive also keeps the driver's peer mappings warm: on
 * H200 it takes a later registration's cuMemSetAccess from about 1.9 ms to
 * 0.1 ms (bench/vmm_costs.c measures it). */
symheap_result_t symheap__pad_create(symheap_comm_t c);
/* Local: the window's signal slot, or -1 when none is free or the pad is not
 * usable. */
int symheap__slot_take(symheap_comm_t c);
/* Local, after every rank agreed to release w: clear and free its slot. */
void symheap__slot_release(symheap_comm_t c, struct symheap_window *w);

/* window.c */
/* Collective: symheap_malloc without the heap (symheap_mem_alloc +
 * registration), for the comm's pad. */
symheap_result_t symheap__malloc_registered(symheap_comm_t c, size_t size,
                                            unsigned flags,
                                            symheap_window_t *win);
/* Local: the view goes, and its reference on the mapping.  keep: the
 * mapping may be kept for a later registration of the same memory
 * (deregistration); 0: it goes at its last view, with a symheap_malloc
 * window's memory (free, comm destroy). */
symheap_result_t symheap__window_teardown(symheap_comm_t c,
                                          struct symheap_window *w, int keep);
/* window_ipc.c: collective; per-peer IPC mappings into w->peer, all or
 * nothing. */
symheap_result_t symheap__map_ipc(symheap_comm_t c, struct symheap_window *w);

/* rdma.c */
/* Collective, at comm init after the pad: open the RDMA device when
 * SYMHEAP_NET asks (agreed: on for every rank or for none). */
symheap_result_t symheap__rdma_setup(symheap_comm_t c);
void symheap__rdma_close(symheap_comm_t c);
/* Collective, after the window is mapped: register this rank's copy into
 * w->rdma (its mapping's region, or a heap window's own) and exchange keys
 * (nothing without RDMA).  Undoes itself on failure. */
symheap_result_t symheap__rdma_register(symheap_comm_t c,
                                        struct symheap_window *w);
/* Local: the region goes (nothing when there is none). */
void symheap__rdma_deregister(symheap_comm_t c, symheap__rdma_t *x);
void symheap__rdma_view(const struct symheap_window *w,
                        symheap_device_window_t *v);

/* window_vendor.c */
/* Collective, at comm init: SYMHEAP_WINDOW_PATH decides; a path named but
 * unusable fails the init on every rank, saying why. */
symheap_result_t symheap__winpath_setup(symheap_comm_t c);
void symheap__winpath_close(symheap_comm_t c);
/* Collective: the window registered by the vendor, agreed (w's reserve,
 * stride and head describe the vendor's range; *handle is the vendor's);
 * undone on failure. */
symheap_result_t symheap__winpath_register(symheap_comm_t c,
                                           struct symheap_window *w,
                                           void **handle);
/* Local, in deregistration order (collective for the vendor). */
symheap_result_t symheap__winpath_deregister(symheap_comm_t c, void *handle);

/* window_access.c: the process-wide list of live windows. */
/* SUCCESS for a live window handle; else INVALID_ARG naming fn. */
/* The live window a caller's handle names, or NULL with INVALID_ARG naming
 * `fn` (a released handle stays invalid whatever memory is reused). */
struct symheap_window *symheap__window_get(symheap_window_t h, const char *fn);
/* Room for one more window handle (a local check, before agreeing). */
symheap_result_t symheap__handles_room(void);
/* Into the comm's list, and a handle for the caller (w->handle). */
void symheap__live_add(symheap_comm_t c, struct symheap_window *w);
/* Out of the comm's list and the live list. */
void symheap__window_unlink(symheap_comm_t c, struct symheap_window *w);

#endif

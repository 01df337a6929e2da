/* symheap: a vendor-neutral symmetric-memory library.
 *
 * Every rank of a job contributes a buffer of the same size; symheap maps all
 * of them into every rank's address space as one flat virtual range (peer p's
 * copy sits at base + p * stride) and hands kernels a device-side view.
 *
 * Conventions: every function returns a symheap_result_t; on failure,
 * symheap_last_error() gives this thread's detailed message.  Bad input is
 * refused before anything changes, and a failure half way undoes what the call
 * had done.  Calls marked "collective" must be made by every rank of the comm
 * in the same order; their arguments are compared across ranks.
 */
#ifndef SYMHEAP_H
#define SYMHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "symheap_device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SYMHEAP_VERSION_MAJOR 0
#define SYMHEAP_VERSION_MINOR 1
#define SYMHEAP_VERSION_PATCH 0

/* One X-macro holds every result code and its text, so they cannot drift. */
#define SYMHEAP_RESULT_MAP(X)                                                  \
  X(SYMHEAP_SUCCESS, "success")                                                \
  X(SYMHEAP_ERR_INVALID_ARG, "invalid argument")                               \
  X(SYMHEAP_ERR_MISMATCH, "ranks disagree on the arguments of a collective")   \
  X(SYMHEAP_ERR_UNSUPPORTED, "operation not supported by this backend")        \
  X(SYMHEAP_ERR_NO_MEMORY, "out of memory")                                    \
  X(SYMHEAP_ERR_SYSTEM, "operating-system call failed")                        \
  X(SYMHEAP_ERR_DEVICE, "device or driver call failed")                        \
  X(SYMHEAP_ERR_TIMEOUT, "timed out waiting for a peer")                       \
  X(SYMHEAP_ERR_REMOTE, "a peer rank failed or disappeared")                   \
  X(SYMHEAP_ERR_PLUGIN, "plugin or adaptor refused")                           \
  X(SYMHEAP_ERR_INTERNAL, "internal error")

typedef enum {
#define SYMHEAP_X_ENUM(name, text) name,
  SYMHEAP_RESULT_MAP(SYMHEAP_X_ENUM)
#undef SYMHEAP_X_ENUM
      SYMHEAP_RESULT_COUNT_
} symheap_result_t;

typedef struct symheap_comm *symheap_comm_t;
typedef struct symheap_window *symheap_window_t;

/* Opaque job identity: made once by symheap_get_unique_id and handed to every
 * rank (symheap-run passes it in the environment). */
typedef struct {
  unsigned char bytes[128];
} symheap_unique_id_t;

#define SYMHEAP_WINDOW_DEFAULT 0u
/* Request a multicast object; UNSUPPORTED if none can be had. */
#define SYMHEAP_WINDOW_MULTICAST 1u
#define SYMHEAP_WINDOW_FLAGS_ALL (SYMHEAP_WINDOW_MULTICAST)

/* Text of a result code; never NULL. */
const char *symheap_strerror(symheap_result_t r);
/* Detail of this thread's last failure; "" if none.  Valid until the next
 * symheap call on this thread. */
const char *symheap_last_error(void);
symheap_result_t symheap_get_version(int *major, int *minor, int *patch);

symheap_result_t symheap_get_unique_id(symheap_unique_id_t *id);
/* Collective over nranks ranks that share one id.  Blocks until every rank has
 * joined, at most SYMHEAP_TIMEOUT_MS. */
symheap_result_t symheap_comm_init(symheap_comm_t *comm, int nranks,
                                   const symheap_unique_id_t *id, int rank);
/* Rank, size and id from the environment symheap-run sets (SYMHEAP_RANK,
 * SYMHEAP_NRANKS, SYMHEAP_UNIQUE_ID); under an MPI launcher (mpirun) it
 * joins MPI_COMM_WORLD through libsymheap-ccl-mpi.so instead (SYMHEAP_CCL
 * chooses; docs/embedding.md). */
symheap_result_t symheap_comm_init_env(symheap_comm_t *comm);
/* Collective over the ranks of a collective runtime the caller already has
 * (a collective library embedding symheap, MPI, ...): `ops` supplies rank,
 * size and allgather (required) and barrier (optional); every call gets
 * `ctx`.  symheap copies the table.  With ops->fini set, ctx is symheap's
 * from the call on (fini(ctx) runs at symheap_comm_destroy, or when this
 * call fails); with fini NULL the caller owns ctx and keeps it alive until
 * symheap_comm_destroy.  A table with another ABI version or without a
 * required member is refused with SYMHEAP_ERR_PLUGIN naming it.  Ranks may
 * span hosts: each host's ranks map each other's memory
 * (symheap_comm_local_ranks).  docs/embedding.md; for MPI, symheap_mpi.h. */
struct symheap_ccl_ops;
symheap_result_t symheap_comm_init_ccl(symheap_comm_t *comm,
                                       const struct symheap_ccl_ops *ops,
                                       void *ctx);
/* Collective over an NCCL communicator the caller already has (an ncclComm_t,
 * passed as void * so that this header needs no NCCL; NCCL 2.28 or newer,
 * loaded with dlopen).  Call with that communicator's device current; the
 * cuda device adaptor then follows it.  Rank and size are NCCL's; setup
 * bytes travel by ncclAllGather on a private stream (bounded by
 * SYMHEAP_TIMEOUT_MS); with SYMHEAP_WINDOW_PATH=nccl (or ccl) windows are
 * that communicator's symmetric windows.  The communicator stays the
 * caller's: keep it alive until symheap_comm_destroy. */
symheap_result_t symheap_comm_init_nccl(symheap_comm_t *comm, void *nccl_comm);
/* Collective when the comm is healthy (a bounded barrier first, so no rank
 * tears down memory a peer still reads); local once the comm has failed.
 * Windows still registered are released with a warning. */
symheap_result_t symheap_comm_destroy(symheap_comm_t comm);
symheap_result_t symheap_comm_rank(symheap_comm_t comm, int *rank);
symheap_result_t symheap_comm_size(symheap_comm_t comm, int *nranks);
symheap_result_t symheap_comm_barrier(symheap_comm_t comm); /* collective */

/* Sub-communicators.  Collective over comm, like MPI_Comm_split: ranks that
 * pass the same color form a new comm, ordered by key, then by their rank in
 * comm; a rank passing SYMHEAP_COLOR_NONE joins none and gets NULL.  The new
 * comm is independent (its own bootstrap, pad and windows; destroy it with
 * symheap_comm_destroy) and uses the same device as comm. */
#define SYMHEAP_COLOR_NONE (-1)
symheap_result_t symheap_comm_split(symheap_comm_t comm, int color, int key,
                                    symheap_comm_t *newcomm);
/* Collective: the ranks of comm that share this rank's host (its identity:
 * SYMHEAP_HOST_ID when set, else host name and boot id), ordered by rank. */
symheap_result_t symheap_comm_split_local(symheap_comm_t comm,
                                          symheap_comm_t *newcomm);
/* The rank that `rank` of comm has in the job: in the comm that
 * symheap_comm_init made, from which comm was split (directly or not). */
symheap_result_t symheap_comm_world_rank(symheap_comm_t comm, int rank,
                                         int *world_rank);
/* The ranks of comm that share this rank's host (its node-local team, this
 * rank included), in rank order: the only ones whose window copies are
 * mapped here and reachable by load/store.  Writes at most max ranks and
 * sets *count to the team's size.  Hosts are told apart by host name and
 * boot id, or by SYMHEAP_HOST_ID. */
symheap_result_t symheap_comm_local_ranks(symheap_comm_t comm, int *ranks,
                                          int max, int *count);
/* Collective: every rank gives `bytes` bytes of host memory; out (nranks *
 * bytes) receives rank r's at r * bytes.  in and out must not overlap.
 * bytes may be up to SYMHEAP_ALLGATHER_MAX at any rank count (larger, or
 * unequal across ranks, is refused on every rank and the comm stays
 * usable).  The bootstrap's speed: for setup and small exchanges, not for
 * data. */
#define SYMHEAP_ALLGATHER_MAX (1u << 20)
symheap_result_t symheap_comm_allgather(symheap_comm_t comm, const void *in,
                                        void *out, size_t bytes);

/* What a comm runs on.  Set struct_size = sizeof(symheap_comm_info_t) (or use
 * SYMHEAP_COMM_INFO_INIT); the library writes no more than that. */
typedef struct {
  uint32_t struct_size;
  int32_t rank;
  int32_t nranks;
  int32_t local_rank;          /* index of this rank among those on its host */
  char device_adaptor[32];     /* "host", "cuda", ... */
  char ccl_adaptor[32];        /* "local", ... */
  size_t granularity;          /* mapping granularity of the device adaptor */
  int32_t multicast_available; /* supported by the adaptor and not disabled */
  int32_t timeout_ms;
  /* The device this rank uses, e.g. "NVIDIA H200 (device 1)". */
  char device[64];
  int32_t cpu_access; /* the CPU can load and store window memory directly */
  /* Flat mappings kept per rank after deregistration (SYMHEAP_WINDOW_CACHE;
   * 0 where the adaptor's handles are not descriptors: peers' frees could
   * not be heard of, so nothing is kept). */
  int32_t window_cache;
  /* The ranks sharing this rank's host (its node-local team, reachable by
   * load/store; symheap_comm_local_ranks lists them), and how many hosts
   * the comm spans. */
  int32_t local_nranks;
  int32_t nhosts;
  /* Who maps windows (SYMHEAP_WINDOW_PATH): "symheap" or "nccl". */
  char window_path[16];
} symheap_comm_info_t;
#define SYMHEAP_COMM_INFO_INIT                                                 \
  { sizeof(symheap_comm_info_t), 0, 0, 0, "", "", 0, 0, 0, "", 0, 0, 0, 0, "" }
symheap_result_t symheap_comm_get_info(symheap_comm_t comm,
                                       symheap_comm_info_t *info);

/* Resource accounting of one comm, so leaks are visible.  Caller-sized like
 * symheap_comm_info_t.  Every comm owns one small window of its own, the pad
 * (SYMHEAP_PAD_BYTES per rank in whole granules, made at init, kept until
 * destroy): it is not in windows_live or bytes_registered, but its memory
 * and mappings are in the other counts. */
typedef struct {
  uint32_t struct_size;
  uint64_t windows_live;
  uint64_t allocations_live;
  uint64_t bytes_allocated;  /* by symheap_mem_alloc, local */
  uint64_t bytes_registered; /* sum of window sizes, local */
  uint64_t va_reserved;      /* flat ranges and allocation ranges */
  uint64_t bytes_mapped;     /* every mapping made, peers' included */
  uint64_t descriptors_held; /* memory handles and exported descriptors
                                held (file descriptors on the host) */
  uint64_t multicast_objects;
  uint64_t mappings_cached; /* flat mappings kept after deregistration
                               (SYMHEAP_WINDOW_CACHE); in bytes_mapped too */
  /* The symmetric heap (docs/heap.md), per rank; its reservation, chunks
   * and chunk handles are in va_reserved, bytes_mapped and
   * descriptors_held too, and its windows in windows_live. */
  uint64_t heap_reserved;    /* address space reserved for this rank */
  uint64_t heap_committed;   /* memory committed (chunks x chunk size) */
  uint64_t heap_used;        /* bytes in live heap allocations, rounded */
  uint64_t heap_allocations; /* live heap allocations */
} symheap_comm_stats_t;
#define SYMHEAP_COMM_STATS_INIT                                                \
  { sizeof(symheap_comm_stats_t), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
symheap_result_t symheap_comm_get_stats(symheap_comm_t comm,
                                        symheap_comm_stats_t *stats);
/* Bytes of rank p's memory mapped in this process, into bytes[p] for every
 * rank of comm (nranks must be the comm's size).  Its own memory is counted
 * at its own rank (the allocation and its place in every flat range). */
symheap_result_t symheap_comm_get_mapped_per_peer(symheap_comm_t comm,
                                                  uint64_t *bytes, int nranks);

/* The comm's symmetric heap (docs/heap.md).  symheap_malloc carves windows
 * from it: an allocation that fits in committed memory costs one agreement
 * among the ranks and no device call (so it is allowed during CUDA-graph
 * capture); one that does not fit commits chunks first (collective, refused
 * during capture).  Caller-sized: set struct_size (SYMHEAP_HEAP_INFO_INIT).
 * All values are per rank and the same on every rank. */
typedef struct {
  uint32_t struct_size;  /* caller's sizeof; SYMHEAP_HEAP_INFO_INIT sets it */
  uint64_t reserved;     /* address space per rank reserved for the heap */
  uint64_t committed;    /* memory per rank backing the heap */
  uint64_t used;         /* bytes per rank in live heap allocations (rounded) */
  uint64_t largest_free; /* largest allocation that fits without growing */
  uint64_t allocations;  /* live heap allocations */
  uint64_t chunks;       /* physical chunks mapped */
  uint64_t chunk_size;   /* bytes per chunk (SYMHEAP_HEAP_CHUNK, rounded) */
  uint64_t threshold;    /* larger symheap_malloc calls bypass the heap */
  int32_t enabled;       /* 0: SYMHEAP_HEAP=0, or the heap could not be had */
} symheap_heap_info_t;
#define SYMHEAP_HEAP_INFO_INIT                                                 \
  { sizeof(symheap_heap_info_t), 0, 0, 0, 0, 0, 0, 0, 0, 0 }
/* Local.  Before the comm's first symheap_malloc nothing is reserved yet
 * (reserved 0) and enabled tells whether the heap will be used. */
symheap_result_t symheap_heap_get_info(symheap_comm_t comm,
                                       symheap_heap_info_t *info);
/* Collective: commit chunks until an allocation of `bytes` fits without
 * growing (e.g. before a CUDA-graph capture).  Every rank passes the same
 * bytes, else SYMHEAP_ERR_MISMATCH and nothing changes. */
symheap_result_t symheap_heap_reserve(symheap_comm_t comm, size_t bytes);
/* Collective: release every chunk that holds no live allocation.  Live
 * allocations never move.  Refused during graph capture. */
symheap_result_t symheap_heap_trim(symheap_comm_t comm);

/* Local: device memory that can later be registered in a window. */
symheap_result_t symheap_mem_alloc(symheap_comm_t comm, size_t size,
                                   void **ptr);
/* Local; refused while the memory is still registered in a window. */
symheap_result_t symheap_mem_free(symheap_comm_t comm, void *ptr);

/* Collective: map every rank's [ptr, ptr+size) into every rank.  ptr must lie
 * in memory from symheap_mem_alloc (or, on GPU backends, any memory the
 * adaptor can export); every rank passes the same size and flags, and the
 * same offset of ptr inside its allocation (else SYMHEAP_ERR_MISMATCH).
 * Registering a range that is already registered on the comm (same pointer,
 * size and flags on every rank, no multicast) returns a new handle sharing
 * the existing mapping; the mapping goes with the last handle.  A different
 * range of the same memory gets a mapping of that range only.
 * Refused (SYMHEAP_ERR_UNSUPPORTED, nothing changed) while the adaptor sees
 * a CUDA-graph capture in progress; so are the other calls that allocate,
 * map or unmap (symheap_malloc, symheap_mem_alloc/free, deregistration). */
symheap_result_t symheap_window_register(symheap_comm_t comm, void *ptr,
                                         size_t size, unsigned flags,
                                         symheap_window_t *win);
symheap_result_t
symheap_window_deregister(symheap_comm_t comm,
                          symheap_window_t win); /* collective */
/* Local: this rank lets go of a window that symheap_window_register made,
 * without its peers (for runtimes that free memory locally and in a
 * different order on each rank, such as PyTorch's symmetric memory; the
 * collective symheap_window_deregister stays the usual way).  This rank's
 * mappings of its peers' memory go (into the comm's cache, so registering
 * the same range again on every rank is the cheap cached re-registration);
 * each peer's mapping of this rank's memory stays until that peer releases
 * its own handle.  Peers still reading or writing this rank's memory: they
 * never fault, also after this rank's symheap_mem_free of it (the memory
 * lives while any rank maps it), but what they read or write there after
 * this rank stopped using it is nobody's data: ordering the last remote
 * access before the release (a barrier, a signal) is the caller's job.
 * The window's signal slot in the comm pad is not reused (slot numbers must
 * agree across ranks).  Refused (INVALID_ARG, nothing changed) for a window
 * from symheap_malloc or with SYMHEAP_WINDOW_MULTICAST, and during a
 * CUDA-graph capture (UNSUPPORTED). */
symheap_result_t symheap_window_release_local(symheap_comm_t comm,
                                              symheap_window_t win);
/* Collective: a window of `size` bytes on every rank, from the comm's
 * symmetric heap (docs/heap.md) unless SYMHEAP_HEAP=0, the size is above
 * SYMHEAP_HEAP_THRESHOLD, flags ask what the heap cannot serve (multicast)
 * or the heap is full: then symheap_mem_alloc + symheap_window_register.
 * Heap windows start on 256-byte boundaries.  symheap_window_deregister of a
 * heap window frees it like symheap_free. */
symheap_result_t symheap_malloc(symheap_comm_t comm, size_t size,
                                unsigned flags, symheap_window_t *win);
symheap_result_t symheap_free(symheap_comm_t comm,
                              symheap_window_t win); /* collective */

symheap_result_t symheap_window_local_ptr(symheap_window_t win, void **ptr);
symheap_result_t symheap_window_peer_ptr(symheap_window_t win, int peer,
                                         void **ptr);
/* peer_ptr is UNSUPPORTED for a rank on another host (not reachable by load
 * or store; see symheap_comm_local_ranks and symheap_window_rdma_key).
 * flat_base is UNSUPPORTED for a window that fell back to per-peer mappings;
 * on a comm spanning hosts, other hosts' places in the flat range are
 * reserved but not mapped (an access faults). */
symheap_result_t symheap_window_flat_base(symheap_window_t win, void **base,
                                          size_t *stride);
/* UNSUPPORTED unless the window was registered with SYMHEAP_WINDOW_MULTICAST.
 */
symheap_result_t symheap_window_multicast_ptr(symheap_window_t win, void **ptr);
symheap_result_t symheap_window_size(symheap_window_t win, size_t *size);
/* Local: the live window of comm whose local copy holds ptr, and ptr's
 * byte offset in it (O(log n) of the live windows; for bindings that take
 * arrays or tensors where the collectives take windows).  Where windows
 * nest (one registered over part of a heap block), the innermost: the one
 * whose copy starts last at or before ptr.  INVALID_ARG (*win NULL) when no
 * window of comm holds ptr; ptr one past a window's end is not in it. */
symheap_result_t symheap_window_find(symheap_comm_t comm, const void *ptr,
                                     symheap_window_t *win, size_t *offset);
symheap_result_t symheap_window_device_view(symheap_window_t win,
                                            symheap_device_window_t *view);

/* RDMA registration (SYMHEAP_NET; docs/windows.md).  When a comm spans
 * hosts and an RDMA device is usable (or SYMHEAP_NET=ibverbs), every window's
 * local copy is registered with libibverbs when the window is registered,
 * and the ranks exchange address and remote key; deregistration undoes it.
 * The regions live in the comm's protection domain: post work requests on
 * queue pairs of that domain.  Caller-sized like symheap_comm_info_t. */
typedef struct {
  uint32_t struct_size;
  int32_t enabled;   /* windows are registered for RDMA */
  char device[64];   /* e.g. "mlx5_0" */
  void *ibv_context; /* struct ibv_context *, or NULL */
  void *ibv_pd;      /* struct ibv_pd *, or NULL */
  char why_not[256]; /* when not enabled: why */
} symheap_rdma_info_t;
symheap_result_t symheap_comm_rdma_info(symheap_comm_t comm,
                                        symheap_rdma_info_t *info);
/* Where peer's copy of the window is registered: the remote address of its
 * first byte and the remote key.  UNSUPPORTED (saying why) for a window
 * without RDMA registration. */
symheap_result_t symheap_window_rdma_key(symheap_window_t win, int peer,
                                         uint64_t *addr, uint32_t *rkey);
/* The local key of this rank's memory region over the window. */
symheap_result_t symheap_window_rdma_lkey(symheap_window_t win, uint32_t *lkey);

/* --- One-sided access (docs/network.md) -------------------------------------
 * Location-transparent: a peer on this host is reached by load/store through
 * the flat VA (the window's memory must be CPU-accessible), a peer on
 * another host through the comm's net adaptor (SYMHEAP_NET).  Offsets are
 * from the start of the peer's copy of the window; [offset, offset+len)
 * outside the window is SYMHEAP_ERR_INVALID_ARG before anything is sent.
 * Not collective; a comm's one-sided calls are made by one thread at a time,
 * like its other calls.  Every wait progresses the net adaptor and is
 * bounded by SYMHEAP_TIMEOUT_MS.
 *
 * put returns with src reusable; put_nbi leaves src in use until quiet.
 * get returns with dst filled; get_nbi fills dst by quiet.  fence orders
 * this rank's puts, atomics and signals to each peer; quiet completes them
 * all (visible at their targets). */
symheap_result_t symheap_put(symheap_window_t win, int peer, size_t offset,
                             const void *src, size_t len);
symheap_result_t symheap_put_nbi(symheap_window_t win, int peer, size_t offset,
                                 const void *src, size_t len);
symheap_result_t symheap_get(symheap_window_t win, int peer, size_t offset,
                             void *dst, size_t len);
symheap_result_t symheap_get_nbi(symheap_window_t win, int peer, size_t offset,
                                 void *dst, size_t len);
symheap_result_t symheap_fence(symheap_comm_t comm);
symheap_result_t symheap_quiet(symheap_comm_t comm);

/* Atomics on 4- or 8-byte words (size), aligned to their size.  One
 * atomicity domain per window: on a comm that spans hosts, every atomic on a
 * window goes through the net adaptor, this host's peers and this rank
 * included, so atomics of different ranks never race; plain stores to the
 * same word do race with them.  result receives the old value for the
 * fetching forms (NULL allowed for the others); compare is read by CSWAP
 * only.  Blocking: returns once the result is known (non-fetching forms
 * return once issued and complete by quiet). */
typedef enum {
  SYMHEAP_AMO_FETCH = 0,
  SYMHEAP_AMO_SET = 1,
  SYMHEAP_AMO_ADD = 2,
  SYMHEAP_AMO_FETCH_ADD = 3,
  SYMHEAP_AMO_SWAP = 4,
  SYMHEAP_AMO_CSWAP = 5,
  SYMHEAP_AMO_AND = 6,
  SYMHEAP_AMO_OR = 7,
  SYMHEAP_AMO_XOR = 8,
} symheap_amo_t;
symheap_result_t symheap_atomic(symheap_window_t win, int peer, size_t offset,
                                symheap_amo_t op, size_t size,
                                const void *operand, const void *compare,
                                void *result);

/* Put len bytes to peer, then update the 8-byte signal word at sig_offset of
 * peer's copy of sig_win (SYMHEAP_AMO_SET or SYMHEAP_AMO_ADD): the data is
 * visible at the peer before the signal.  src is reusable on return. */
symheap_result_t symheap_put_signal(symheap_window_t win, int peer,
                                    size_t offset, const void *src, size_t len,
                                    symheap_window_t sig_win,
                                    size_t sig_offset, uint64_t value,
                                    symheap_amo_t sig_op);
typedef enum {
  SYMHEAP_CMP_EQ = 0,
  SYMHEAP_CMP_NE = 1,
  SYMHEAP_CMP_GT = 2,
  SYMHEAP_CMP_GE = 3,
  SYMHEAP_CMP_LT = 4,
  SYMHEAP_CMP_LE = 5,
} symheap_cmp_t;
/* Wait until this rank's 8-byte word at offset of win compares true with
 * value; *observed (NULL allowed) gets the word's value.  Progresses the
 * net adaptors while it waits (spinning while they have work, asleep on
 * their wait descriptors while they are idle: docs/network-onesided.md);
 * SYMHEAP_ERR_TIMEOUT after timeout_ms (< 0: SYMHEAP_TIMEOUT_MS; 0: one
 * look and one progress turn). */
symheap_result_t symheap_signal_wait_until(symheap_window_t win, size_t offset,
                                           symheap_cmp_t cmp, uint64_t value,
                                           uint64_t *observed, int timeout_ms);

/* A wait on a condition of the caller's own (a 1-, 2- or 4-byte word,
 * several words, a lock it retries), with the turns
 * symheap_signal_wait_until takes.  The caller zeroes a
 * symheap_wait_state_t (= {0}), then loops: while its condition is
 * false, one symheap_comm_wait_turn.  A turn progresses the net adaptors;
 * while they have work it returns at once (spinning, the CPU yielded now
 * and then); once they are idle it sleeps on their wait descriptors (a
 * peer's operation wakes it), after a first short spin (and, where no
 * descriptor can wake it, some yields).  An adaptor without wait
 * descriptors cannot say whether it has work: there, after 1 ms, a turn
 * naps 20-100 us.  A store by a peer of this host wakes no sleep: a sleep
 * lasts a sixteenth of the time the wait has taken so far (20 us to
 * 20 ms), so such a store is seen within about 6% of the wait.
 * No timeout: the caller bounds its loop.  INVALID_ARG for a comm that is
 * not live or a NULL state (the state unchanged). */
typedef struct {
  uint64_t since_ns; /* 0: a new wait (the first turn sets it) */
  uint32_t turns;    /* turns taken */
  int32_t woke;      /* the last sleep ended on an engine's descriptor */
  uint64_t kicks;    /* the core's mark of what its last sleep saw */
  uint64_t reserved[1]; /* zero: room to grow without changing the size */
} symheap_wait_state_t;
symheap_result_t symheap_comm_wait_turn(symheap_comm_t comm,
                                        symheap_wait_state_t *state);

/* The device host proxy (docs/device-api.md, "Remote peers"): kernels
 * reach other hosts' ranks by descriptors that a thread of the comm issues
 * through the net adaptor.  SUCCESS, or the first failure of a proxied
 * operation since the comm was made, with its message (kernels see the
 * same code from symheap_dev_proxy_quiet). */
symheap_result_t symheap_comm_proxy_check(symheap_comm_t comm);

/* Whether a kernel of this rank gave up waiting for a peer (a collective of
 * libsymheap_cuda, symheap_dev_barrier, symheap_dev_wait_signal): kernels
 * wait at most SYMHEAP_TIMEOUT_MS for a peer's flag, then record why in the
 * comm's device status and return (docs/device-api.md, "Bounded waits").
 * SUCCESS, or SYMHEAP_ERR_TIMEOUT saying which wait, peer and block, at
 * every call after a kernel gave up (whatever else broke the comm first);
 * the comm is then broken (every later collective call, and
 * symheap_window_device_view, fails too): destroy it.  UNSUPPORTED, naming
 * host_alloc, where the device adaptor keeps no device status (no
 * host_alloc) yet the comm's views carry a pad: a give-up could not be
 * seen.  Local, one host load: call it after synchronising the stream.
 * Every collective call and symheap_window_device_view check too. */
symheap_result_t symheap_comm_device_check(symheap_comm_t comm);

/* How this rank reaches peer's copy of a window. */
#define SYMHEAP_REACH_LOAD_STORE 1 /* same host: peer_ptr, kernels, memcpy */
#define SYMHEAP_REACH_NET 2        /* another host: the net adaptor */
symheap_result_t symheap_window_peer_reach(symheap_window_t win, int peer,
                                           int *reach);

/* --- Introspection (symheap-info) ------------------------------------------
 * What this library can use here, without a comm.  The first of these calls
 * admits the built-in adaptors (which declare their variables); the ones
 * that list plugins or adaptors load what SYMHEAP_PLUGIN names first, as the
 * first comm init does.  Structs are caller-sized: set struct_size. */

/* Load the plugins SYMHEAP_PLUGIN names (once per process; later calls
 * repeat the outcome, naming the file that failed). */
symheap_result_t symheap_plugins_load(void);

/* One variable symheap reads: the core's, then each adaptor's and plugin's
 * (the order symheap-info -e lists them in). */
#define SYMHEAP_VAR_TEXT 0
#define SYMHEAP_VAR_INT 1
#define SYMHEAP_VAR_BOOL 2 /* 0 or 1 */
#define SYMHEAP_VAR_CHOICE 3
typedef struct {
  uint32_t struct_size;
  uint32_t type;       /* SYMHEAP_VAR_* */
  const char *name;    /* e.g. "SYMHEAP_TIMEOUT_MS" */
  const char *owner;   /* "core", or the adaptor or plugin that declared it */
  const char *def;     /* the default as text; NULL: unset by default */
  const char *choices; /* SYMHEAP_VAR_CHOICE: "a|b|c" */
  long min, max;       /* SYMHEAP_VAR_INT */
  const char *help;
  const char *value; /* as the environment sets it, or NULL */
} symheap_var_info_t;
symheap_result_t symheap_var_count(int *count);
/* Variable i, 0 <= i < count. */
symheap_result_t symheap_var_get(int i, symheap_var_info_t *info);
/* Every variable that is set, validated: the first malformed one fails,
 * named (as a comm init would). */
symheap_result_t symheap_vars_check(void);

/* A device adaptor this process knows (built in, registered, or a plugin's),
 * probed: whether it can run here and, when it can, what one rank's
 * instance of it reports (symheap_adaptor.h: symheap_device_caps_t). */
typedef struct {
  uint32_t struct_size;
  int32_t available; /* it can run here */
  char name[32];     /* what SYMHEAP_DEVICE=<name> selects */
  char why[256];     /* when not available: why */
  int32_t has_multicast, has_ipc; /* it implements multicast, IPC fallback */
  int32_t caps_known;             /* the capabilities below were read */
  char caps_why[256];             /* when not: why */
  char device[64];
  uint32_t caps;         /* SYMHEAP_CAP_* bits */
  uint32_t handle_kinds; /* (1u << symheap_handle_kind_t) bits */
  uint64_t granularity, recommended_granularity, multicast_granularity;
} symheap_device_adaptor_info_t;
symheap_result_t symheap_device_adaptor_count(int *count);
symheap_result_t symheap_device_adaptor_get(int i,
                                            symheap_device_adaptor_info_t *info);
/* The device adaptor a comm would take now (SYMHEAP_DEVICE), and why. */
symheap_result_t symheap_device_adaptor_choice(char *name, size_t name_len,
                                               char *why, size_t why_len);

/* A plugin SYMHEAP_PLUGIN loaded. */
typedef struct {
  uint32_t struct_size;
  uint32_t abi_major, abi_minor;
  char name[64];
  char path[512];
  char device[32];       /* the device adaptor it provides, or "" */
  char ccl[32];          /* the ccl adaptor it provides, or "" */
  int32_t ccl_joins;     /* that ccl joins a job (SYMHEAP_CCL=<its name>) */
  char hooks_target[32]; /* "" without hooks; "*": whichever adaptor */
  char hooked[256];      /* the operations its hooks override, comma-separated */
} symheap_plugin_info_t;
symheap_result_t symheap_plugin_count(int *count);
symheap_result_t symheap_plugin_get(int i, symheap_plugin_info_t *info);

/* How symheap_comm_init_env would join now: "local", "mpi" or a plugin's
 * ccl, and why. */
symheap_result_t symheap_ccl_env_choice(char *name, size_t name_len, char *why,
                                        size_t why_len);
/* Where the MPI ccl adaptor (libsymheap-ccl-mpi.so) is; when it is nowhere,
 * the error says where it was looked for. */
symheap_result_t symheap_ccl_mpi_path(char *path, size_t len);
/* Which window path a comm would take (SYMHEAP_WINDOW_PATH): "symheap",
 * "nccl" or "ccl". */
symheap_result_t symheap_window_path(char *name, size_t len);
/* Which variable turns multicast off (*by: "SYMHEAP_DISABLE_MULTICAST=1",
 * "NCCL_NVLS_ENABLE=0"), or NULL when multicast is allowed. */
symheap_result_t symheap_multicast_disabled_by(const char **by);

/* RDMA registration as a comm spanning hosts would have it: the net
 * adaptor opens the device the variables name, and closes it again. */
#define SYMHEAP_NET_AUTO 0
#define SYMHEAP_NET_ALWAYS 1 /* SYMHEAP_NET=ibverbs */
#define SYMHEAP_NET_NONE 2
#define SYMHEAP_NET_ADAPTOR 3 /* SYMHEAP_NET=<a net adaptor's name> */
typedef struct {
  uint32_t struct_size;
  int32_t mode;      /* SYMHEAP_NET_* */
  int32_t available; /* a device could be opened here */
  char adaptor[32];  /* the net adaptor, e.g. "ibverbs" */
  char device[64];   /* e.g. "mlx5_0" */
  char why_not[256]; /* when not available: why */
} symheap_net_info_t;
symheap_result_t symheap_net_probe(symheap_net_info_t *info);

/* A net adaptor this process knows (built in, registered, or a plugin's):
 * whether it can run here, and the providers its engine offers here
 * (SYMHEAP_NET=<name>, SYMHEAP_NET_PROVIDER; docs/network.md). */
typedef struct {
  uint32_t struct_size;
  int32_t available;    /* it can run here */
  char name[32];        /* what SYMHEAP_NET=<name> selects */
  char why[256];        /* when not available: why (the package to install) */
  char providers[1024]; /* when available: its providers, comma-separated */
} symheap_net_adaptor_info_t;
symheap_result_t symheap_net_adaptor_count(int *count);
symheap_result_t symheap_net_adaptor_get(int i,
                                         symheap_net_adaptor_info_t *info);

#ifdef __cplusplus
}
#endif
#endif /* SYMHEAP_H */

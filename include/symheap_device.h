/* The device-side window view: a plain struct that kernels take by value.
 *
 * It is plain C with no dependency on any runtime, so the same definition
 * serves host code, CUDA and HIP.  Peer p's copy of the window is at
 * flat_base + p * stride when SYMHEAP_VIEW_FLAT is set; otherwise (the
 * asymmetric fallback, e.g. legacy CUDA IPC) at peer_ptrs[p].
 *
 * Every comm also owns a small symmetric "pad" (made at comm init, zeroed
 * before any rank can use it, always on the flat VA).  Its layout is fixed
 * here because kernels address it directly: the collectives' control words,
 * their low-latency buffers, and one signal slot per live window.  The
 * CUDA functions that use it are in kernels/symheap_device.cuh.
 */
#ifndef SYMHEAP_DEVICE_H
#define SYMHEAP_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define SYMHEAP_DEVICE_INLINE __host__ __device__ static inline
#else
#define SYMHEAP_DEVICE_INLINE static inline
#endif

/* 2: the comm pad, the window's signal slot and the world ranks joined the
 * view.  3: the node-local team (which ranks load/store reaches) and the
 * ranks' RDMA keys. */
#define SYMHEAP_DEVICE_WINDOW_VERSION 3
/* The per-peer table is carried inline so the view needs no memory of its own
 * on the device; windows wider than this need the flat VA. */
#define SYMHEAP_DEVICE_MAX_PEERS 32

/* View flags. */
#define SYMHEAP_VIEW_FLAT 0x1u      /* flat_base/stride are valid */
#define SYMHEAP_VIEW_MULTICAST 0x2u /* multicast_base is valid */
#define SYMHEAP_VIEW_PAD 0x4u       /* pad_base/pad_stride are valid */
#define SYMHEAP_VIEW_SIGNALS 0x8u   /* the window owns a signal slot */
/* Some ranks are on other hosts: only those in `reachable` can be loaded
 * from or stored to (their places in the flat range are unmapped). */
#define SYMHEAP_VIEW_PARTIAL 0x10u
#define SYMHEAP_VIEW_RDMA 0x20u /* rdma_addr/rdma_rkey are valid */

/* Layout of each rank's part of the comm pad (bytes from its start). */
#define SYMHEAP_PAD_COLL_OFFSET 0u /* collectives: counters and flags */
#define SYMHEAP_PAD_COLL_BYTES (64u << 10)
#define SYMHEAP_PAD_LL_OFFSET (64u << 10) /* collectives: LL buffers */
/* 8 MiB: the LL all-reduce carries SYMHEAP_PAD_LL_BYTES / (4 * nranks)
 * bytes in one crossing, 1 MiB at 2 ranks. */
#define SYMHEAP_PAD_LL_BYTES (8u << 20)
#define SYMHEAP_PAD_SLOTS_OFFSET (SYMHEAP_PAD_LL_OFFSET + SYMHEAP_PAD_LL_BYTES)
/* One slot per live window, given out in registration order; windows
 * registered while all are taken have no SYMHEAP_VIEW_SIGNALS. */
#define SYMHEAP_PAD_SLOTS 128u
#define SYMHEAP_PAD_SLOT_BYTES 8192u
#define SYMHEAP_PAD_BYTES                                                      \
  (SYMHEAP_PAD_SLOTS_OFFSET + SYMHEAP_PAD_SLOTS * SYMHEAP_PAD_SLOT_BYTES)

/* Inside a slot: user signals (64-bit words any rank may set on any rank),
 * then the state of the device barrier (symheap_dev_barrier). */
#define SYMHEAP_SLOT_SIGNALS 512u /* uint64_t signals at slot offset 0 */
#define SYMHEAP_SLOT_BARRIER_OFFSET 4096u
#define SYMHEAP_BARRIER_CHANNELS 8u /* independent barriers per window */

typedef struct symheap_device_window {
  uint32_t version;     /* SYMHEAP_DEVICE_WINDOW_VERSION */
  uint32_t struct_size; /* sizeof(symheap_device_window_t) of the library */
  void *flat_base;      /* rank 0's copy; NULL without SYMHEAP_VIEW_FLAT */
  uint64_t stride;      /* bytes between consecutive ranks' copies */
  uint64_t size;        /* usable bytes of each rank's copy */
  int32_t rank;
  int32_t nranks;
  uint32_t flags;        /* SYMHEAP_VIEW_* */
  uint32_t signal_count; /* user signals in the slot; 0 without a slot */
  void *multicast_base;  /* NULL without SYMHEAP_VIEW_MULTICAST */
  /* The comm pad: rank p's part at pad_base + p * pad_stride. */
  void *pad_base;
  uint64_t pad_stride;
  uint64_t signal_offset; /* the window's slot inside each rank's pad part */
  /* Peer addresses; filled in both modes for the first
   * SYMHEAP_DEVICE_MAX_PEERS ranks. */
  void *peer_ptrs[SYMHEAP_DEVICE_MAX_PEERS];
  /* The job-wide rank of each rank of the window's comm (its rank in the
   * comm symheap_comm_init made); -1 past nranks. */
  int32_t world_ranks[SYMHEAP_DEVICE_MAX_PEERS];
  /* The node-local team: the ranks sharing this rank's host, which the
   * flat range maps (all of them without SYMHEAP_VIEW_PARTIAL).  local_rank
   * is this rank's index among them. */
  int32_t local_rank;
  int32_t local_nranks;
  /* With SYMHEAP_VIEW_PARTIAL, bit p is set when rank p (p < 64) is in the
   * team; ranks past 63: ask the host (symheap_comm_local_ranks). */
  uint64_t reachable;
  /* With SYMHEAP_VIEW_RDMA, where each of the first SYMHEAP_DEVICE_MAX_PEERS
   * ranks registered its copy for RDMA: the remote address and key that an
   * RDMA write or read to that rank's window start uses. */
  uint64_t rdma_addr[SYMHEAP_DEVICE_MAX_PEERS];
  uint32_t rdma_rkey[SYMHEAP_DEVICE_MAX_PEERS];
  uint64_t reserved[4]; /* room to grow without changing the size */
} symheap_device_window_t;

/* Whether peer's copy can be loaded from and stored to. */
SYMHEAP_DEVICE_INLINE int
symheap_device_reachable(const symheap_device_window_t *w, int peer) {
  if (!(w->flags & SYMHEAP_VIEW_PARTIAL))
    return 1;
  return peer >= 0 && peer < 64 && ((w->reachable >> peer) & 1u);
}

/* Address of byte `offset` of peer's copy.  No bounds check: kernels are hot.
 * Only for reachable peers (symheap_device_reachable). */
SYMHEAP_DEVICE_INLINE void *
symheap_device_peer_ptr(const symheap_device_window_t *w, int peer,
                        size_t offset) {
  char *p = (w->flags & SYMHEAP_VIEW_FLAT)
                ? (char *)w->flat_base + (uint64_t)peer * w->stride
                : (char *)w->peer_ptrs[peer];
  return p + offset;
}

SYMHEAP_DEVICE_INLINE void *
symheap_device_local_ptr(const symheap_device_window_t *w, size_t offset) {
  return symheap_device_peer_ptr(w, w->rank, offset);
}

SYMHEAP_DEVICE_INLINE void *
symheap_device_multicast_ptr(const symheap_device_window_t *w, size_t offset) {
  return (w->flags & SYMHEAP_VIEW_MULTICAST)
             ? (void *)((char *)w->multicast_base + offset)
             : (void *)0;
}

/* Byte `offset` of peer's part of the comm pad. */
SYMHEAP_DEVICE_INLINE void *
symheap_device_pad_ptr(const symheap_device_window_t *w, int peer,
                       size_t offset) {
  return (char *)w->pad_base + (uint64_t)peer * w->pad_stride + offset;
}

/* Signal `index` of the window's slot on `peer` (NULL without a slot). */
SYMHEAP_DEVICE_INLINE uint64_t *
symheap_device_signal_ptr(const symheap_device_window_t *w, int peer,
                          unsigned index) {
  return (w->flags & SYMHEAP_VIEW_SIGNALS)
             ? (uint64_t *)symheap_device_pad_ptr(w, peer, w->signal_offset) +
                   index
             : (uint64_t *)0;
}

#endif /* SYMHEAP_DEVICE_H */

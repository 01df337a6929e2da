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
 * ranks' RDMA keys.  The host proxy's fields (proxy_ring, proxy_window) took
 * two of the reserved words, which were zero before: no new version, a
 * reader tests SYMHEAP_VIEW_PROXY. */
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
/* Ranks not in `reachable` are reached through the comm's host proxy
 * (proxy_ring): put / put_signal / signal by descriptor, docs/device-api.md. */
#define SYMHEAP_VIEW_PROXY 0x40u
/* status and timeout_ns are valid: kernels that wait for peers give up
 * after timeout_ns and record why in *status (symheap_device_status_t). */
#define SYMHEAP_VIEW_STATUS 0x80u

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

/* The last 256 bytes of the collectives' region belong to the host proxy:
 * its ticket counter (this rank's, device memory), which producers advance
 * with an atomic add to reserve a ring entry. */
#define SYMHEAP_PAD_PROXY_OFFSET                                               \
  (SYMHEAP_PAD_COLL_OFFSET + SYMHEAP_PAD_COLL_BYTES - 256u)

/* A 32-bit word of this rank's pad that the first kernel thread to give up
 * waiting for a peer sets to 1 (an atomic on its own device memory), so
 * that every other waiter of this rank gives up at its next clock check
 * instead of waiting a timeout of its own (symheap_device_status_t).  Only
 * through a view with SYMHEAP_VIEW_STATUS: without one nothing would tell
 * the host, and every later wait would give up unseen.  In the proxy's
 * 256 bytes, which use only the first 8. */
#define SYMHEAP_PAD_GAVE_UP_OFFSET (SYMHEAP_PAD_PROXY_OFFSET + 64u)

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
  /* With SYMHEAP_VIEW_PROXY: the comm's proxy ring (device address of
   * host-pinned memory, symheap_proxy_ring_t) and the name of this window
   * that descriptors carry. */
  void *proxy_ring;
  uint64_t proxy_window;
  /* With SYMHEAP_VIEW_STATUS: the comm's device status (device address of
   * host-pinned memory, symheap_device_status_t) and how long a kernel may
   * wait for a peer (the comm's SYMHEAP_TIMEOUT_MS, in ns).  These took the
   * last two reserved words, zero in older views, which the kernels rely
   * on: timeout_ns 0 means the default 30 s and status NULL records
   * nothing (docs/device-api.md, "Without a status"). */
  void *status;
  uint64_t timeout_ns;
} symheap_device_window_t;

/* --- Waits that give up (docs/device-api.md, "Bounded waits") ------------
 * Every kernel wait for a peer's flag is bounded: after a view's timeout_ns
 * the waiting thread claims this rank's gave-up word in the pad
 * (SYMHEAP_PAD_GAVE_UP_OFFSET, an atomic compare-and-swap, so only the
 * first failure is recorded), writes the comm's status (the error, what it
 * waited for), sets `done` last (release, system scope) and gives up; the
 * kernel returns without writing results it does not have.  The host (the
 * core) sees `done` at the comm's next call (symheap_comm_device_check, any
 * collective call, symheap_window_device_view) and breaks the comm with
 * SYMHEAP_ERR_TIMEOUT and a message built from these fields.  The status is
 * host memory mapped into the device: one per comm and process. */
#define SYMHEAP_WAIT_BARRIER 1     /* the collectives' barrier (block flags) */
#define SYMHEAP_WAIT_LL 2          /* the LL all-reduce/reduce-scatter data */
#define SYMHEAP_WAIT_PUSH 3        /* the push all-reduce's block flags */
#define SYMHEAP_WAIT_LL128 4       /* the LL128 all-reduce's line flags */
#define SYMHEAP_WAIT_BCAST_PIPE 5  /* the pipelined broadcast's progress */
#define SYMHEAP_WAIT_A2A_READY 6   /* all-to-all: a peer entering the call */
#define SYMHEAP_WAIT_A2A_DATA 7    /* all-to-all: a peer's data sent */
#define SYMHEAP_WAIT_CE_FLAG 8     /* a copy-engine path's flag (kernel) */
#define SYMHEAP_WAIT_DEV_BARRIER 9 /* symheap_dev_barrier */
#define SYMHEAP_WAIT_DEV_SIGNAL 10 /* symheap_dev_wait_signal */

typedef struct symheap_device_status {
  uint32_t code;   /* 0, or the first failure's symheap_result_t (claimed) */
  uint32_t wait;   /* SYMHEAP_WAIT_* */
  int32_t peer;    /* the rank waited for (-1: none, symheap_dev_wait_signal) */
  int32_t block;   /* blockIdx.x of the thread that gave up */
  uint64_t want;   /* the flag value it waited for */
  uint64_t seen;   /* what it read last */
  uint64_t waited_ns; /* how long it waited */
  uint32_t done;   /* 1 once the fields above are written (last, release) */
  uint32_t pad_;
  uint64_t reserved[4]; /* zero: room to grow without changing the size */
} symheap_device_status_t;

/* How a kernel reaches a peer (symheap_device_reach). */
#define SYMHEAP_DEVICE_REACH_NONE 0       /* neither: an error to address */
#define SYMHEAP_DEVICE_REACH_LOAD_STORE 1 /* peer_ptr, stores, atomics */
#define SYMHEAP_DEVICE_REACH_PROXY 2      /* descriptors to the host proxy */

/* --- The host proxy's ring (docs/device-api.md, "Remote peers") ----------
 * Host-pinned memory mapped into the device.  Producers (kernels, one thread
 * per operation) take a ticket t from the pad's counter
 * (SYMHEAP_PAD_PROXY_OFFSET, an atomic add), wait until t - consumed <
 * entries, write entry t % entries, a system fence, then its seq = t + 1
 * (release).  The proxy thread reads entries in ticket order, waiting for
 * each seq, issues the operation, advances `consumed`; once the ring is
 * empty and the net adaptor's quiet returned, it sets `completed` to the
 * tickets done, so a device quiet waits for completed >= the counter. */
#define SYMHEAP_PROXY_RING_VERSION 1u
#define SYMHEAP_PROXY_ENTRIES 256u /* a power of two */
#define SYMHEAP_PROXY_OP_PUT 1u
#define SYMHEAP_PROXY_OP_PUT_SIGNAL 2u
#define SYMHEAP_PROXY_OP_SIGNAL 3u
#define SYMHEAP_PROXY_SIG_SET 0u /* the signal word becomes value */
#define SYMHEAP_PROXY_SIG_ADD 1u /* value is added to it */

typedef struct symheap_proxy_desc {
  uint64_t seq;      /* ticket + 1 once the rest is written (last, release) */
  uint32_t op;       /* SYMHEAP_PROXY_OP_* */
  int32_t peer;      /* the target rank in the window's comm */
  uint64_t window;   /* the view's proxy_window */
  uint64_t offset;   /* bytes into peer's copy of the window */
  uint64_t src;      /* device address of the data (PUT, PUT_SIGNAL) */
  uint64_t len;      /* bytes */
  uint32_t sig_index; /* signal of the window's slot on peer */
  uint32_t sig_op;    /* SYMHEAP_PROXY_SIG_* */
  uint64_t sig_value;
} symheap_proxy_desc_t;

typedef struct symheap_proxy_ring {
  uint32_t version; /* SYMHEAP_PROXY_RING_VERSION */
  uint32_t entries; /* SYMHEAP_PROXY_ENTRIES */
  uint64_t timeout_ns; /* how long a device wait may last (SYMHEAP_TIMEOUT_MS) */
  /* Written by the proxy thread only; the device reads them volatile. */
  uint64_t consumed;  /* tickets taken out of the ring (their entries free) */
  uint64_t completed; /* tickets complete at their targets */
  uint64_t error;     /* 0, or the symheap_result_t of the first failure */
  uint64_t error_ticket; /* its ticket */
  uint64_t stopped;      /* 1: the proxy is gone; nothing more is taken */
  uint64_t pad_[9];      /* the entries start on a 128-byte line */
  symheap_proxy_desc_t desc[SYMHEAP_PROXY_ENTRIES];
} symheap_proxy_ring_t;

/* Whether peer is load/store reachable, reached through the proxy, or
 * neither. */
SYMHEAP_DEVICE_INLINE int symheap_device_reach(const symheap_device_window_t *w,
                                               int peer) {
  if (peer < 0 || peer >= w->nranks)
    return SYMHEAP_DEVICE_REACH_NONE;
  if (!(w->flags & SYMHEAP_VIEW_PARTIAL) ||
      (peer < 64 && ((w->reachable >> peer) & 1u)))
    return SYMHEAP_DEVICE_REACH_LOAD_STORE;
  return (w->flags & SYMHEAP_VIEW_PROXY) ? SYMHEAP_DEVICE_REACH_PROXY
                                         : SYMHEAP_DEVICE_REACH_NONE;
}

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

/* Device-side symheap for CUDA kernel authors: signals, put/get and a block
 * barrier over every rank of a window, taking symheap_device_window_t by
 * value (symheap_window_device_view fills it on the host).
 *
 * Memory ordering.  Peers are other GPUs (or other processes on this one),
 * so every ordering below is at system scope:
 *  - a signal store or add is a release: the calling thread's earlier writes
 *    (and, after __syncthreads(), its block's) are visible to whoever
 *    observes the signal with an acquire;
 *  - a signal wait is an acquire: reads after it see what the signaller wrote
 *    before signalling.
 * put/get themselves are plain weak stores and loads: order them with a
 * signal (symheap_dev_put_signal does) or with symheap_dev_barrier.
 *
 * Works in both window modes (flat VA and per-peer pointers); signals and the
 * barrier need SYMHEAP_VIEW_SIGNALS (the window got a slot of the comm pad).
 * Signal indices [0, nranks) are the per-sender signals of put_signal /
 * wait_signal_from; the rest (up to signal_count) are free for the caller.
 */
#ifndef SYMHEAP_DEVICE_CUH
#define SYMHEAP_DEVICE_CUH

#include <stdint.h>
#include <stdio.h>

#include "symheap.h"
#include "symheap_device.h"

#define SYMHEAP_DEV static __device__ __forceinline__

/* --- system-scope primitives -------------------------------------------- */
SYMHEAP_DEV void symheap_dev_st_release(uint64_t *p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}
SYMHEAP_DEV uint64_t symheap_dev_ld_acquire(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];"
               : "=l"(v)
               : "l"(p)
               : "memory");
  return v;
}
SYMHEAP_DEV uint64_t symheap_dev_add_release(uint64_t *p, uint64_t v) {
  uint64_t old;
  asm volatile("atom.release.sys.global.add.u64 %0, [%1], %2;"
               : "=l"(old)
               : "l"(p), "l"(v)
               : "memory");
  return old;
}

/* --- bounded waits (symheap_device.h, "Waits that give up") ------------
 * A wait polls its flag as before; only once the flag was seen not ready
 * does it count, and every kSpinCheck + 1 polls it reads %globaltimer (the
 * first read starts its clock) and this rank's gave-up word.  So a flag
 * that is ready costs nothing more, and a wait costs a register increment
 * per poll.  Over the timeout (or another thread of this rank gave up
 * already), the thread records why and the kernel returns. */
SYMHEAP_DEV uint64_t symheap_dev__now_ns(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#define SYMHEAP_DEV_SPIN_CHECK 1023u
/* Used where a view carries no timeout (no SYMHEAP_VIEW_STATUS): the
 * default SYMHEAP_TIMEOUT_MS. */
#define SYMHEAP_DEV_DEFAULT_TIMEOUT_NS 30000000000ull

/* One waiting thread's clock. */
struct symheap_dev_wait_t {
  uint64_t start;
  uint32_t polls;
};

SYMHEAP_DEV uint32_t *symheap_dev__gave_up_word(char *own_pad) {
  return (uint32_t *)(own_pad + SYMHEAP_PAD_GAVE_UP_OFFSET);
}
SYMHEAP_DEV uint64_t symheap_dev__timeout(uint64_t timeout_ns) {
  return timeout_ns ? timeout_ns : SYMHEAP_DEV_DEFAULT_TIMEOUT_NS;
}
/* The clock check (every SYMHEAP_DEV_SPIN_CHECK + 1 polls): true when the
 * wait must give up.  own_pad: this rank's part of the comm pad. */
SYMHEAP_DEV bool symheap_dev__wait_check(symheap_dev_wait_t &c, char *own_pad,
                                         uint64_t timeout_ns) {
  if (*(volatile uint32_t *)symheap_dev__gave_up_word(own_pad))
    return true;
  uint64_t now = symheap_dev__now_ns();
  if (c.start == 0) {
    c.start = now ? now : 1;
    return false;
  }
  return now - c.start > symheap_dev__timeout(timeout_ns);
}
/* After a poll that found the flag not ready: true when the wait must give
 * up (one thread's wait; a warp that waits as one uses wait_check). */
SYMHEAP_DEV bool symheap_dev__wait_over(symheap_dev_wait_t &c, char *own_pad,
                                        uint64_t timeout_ns) {
  return (++c.polls & SYMHEAP_DEV_SPIN_CHECK) == 0 &&
         symheap_dev__wait_check(c, own_pad, timeout_ns);
}
/* The thread gives up: the first of this rank (the gave-up word) records
 * why in the comm's status (symheap_device_status_t; `done` last, after a
 * system fence), which the host reports as SYMHEAP_ERR_TIMEOUT.  Without a
 * status (a view without SYMHEAP_VIEW_STATUS: a device adaptor without
 * host_alloc, or an older library) nothing on the host could read the
 * gave-up word, so it is left alone: each wait gives up after its own
 * timeout and tells only its caller (symheap_dev_barrier's result, a
 * signal below the value wanted); libsymheap_cuda's collectives refuse
 * such views.  No printf, whose call would weigh on every kernel. */
SYMHEAP_DEV void symheap_dev__gave_up(const symheap_dev_wait_t &c,
                                      char *own_pad, void *status,
                                      uint32_t wait, int peer, uint64_t want,
                                      uint64_t seen) {
  volatile symheap_device_status_t *s =
      (volatile symheap_device_status_t *)status;
  if (!s)
    return;
  if (atomicCAS(symheap_dev__gave_up_word(own_pad), 0u, 1u) != 0u)
    return; /* recorded already, by this rank's first to give up */
  uint64_t now = symheap_dev__now_ns();
  s->code = SYMHEAP_ERR_TIMEOUT;
  s->wait = wait;
  s->peer = peer;
  s->block = (int32_t)blockIdx.x;
  s->want = want;
  s->seen = seen;
  s->waited_ns = c.start && now > c.start ? now - c.start : 0;
  __threadfence_system();
  s->done = 1;
}

/* --- signals (one thread) ------------------------------------------------ */
/* Set signal `index` of `peer`'s slot to value (release). */
SYMHEAP_DEV void symheap_dev_signal_set(const symheap_device_window_t &w,
                                        int peer, unsigned index,
                                        uint64_t value) {
  symheap_dev_st_release(symheap_device_signal_ptr(&w, peer, index), value);
}
/* Add to signal `index` of `peer`'s slot (release); returns the old value. */
SYMHEAP_DEV uint64_t symheap_dev_signal_add(const symheap_device_window_t &w,
                                            int peer, unsigned index,
                                            uint64_t value) {
  return symheap_dev_add_release(symheap_device_signal_ptr(&w, peer, index),
                                 value);
}
/* The bounded signal wait; `peer` is what a give-up records (-1: none). */
SYMHEAP_DEV uint64_t symheap_dev__wait_signal(const symheap_device_window_t &w,
                                              unsigned index, uint64_t value,
                                              int peer) {
  const uint64_t *p = symheap_device_signal_ptr(&w, w.rank, index);
  uint64_t v;
  symheap_dev_wait_t c = {0, 0};
  char *own = (char *)symheap_device_pad_ptr(&w, w.rank, 0);
  while ((v = symheap_dev_ld_acquire(p)) < value)
    if (symheap_dev__wait_over(c, own, w.timeout_ns)) {
      symheap_dev__gave_up(c, own, w.status, SYMHEAP_WAIT_DEV_SIGNAL, peer,
                           value, v);
      break;
    }
  return v;
}
/* Wait until this rank's signal `index` is at least `value` (acquire);
 * returns what it read.  Signals only grow unless the caller resets them, so
 * "at least" lets a waiter that is late see a later value and go on.
 * Bounded by the view's timeout_ns (the comm's SYMHEAP_TIMEOUT_MS): a value
 * below `value` returned means it gave up, which the comm's status records
 * with no peer (-1: any rank may set any signal; symheap_comm_device_check);
 * symheap_dev_wait_signal_for takes a timeout of its own and returns
 * SYMHEAP_ERR_TIMEOUT. */
SYMHEAP_DEV uint64_t symheap_dev_wait_signal(const symheap_device_window_t &w,
                                             unsigned index, uint64_t value) {
  return symheap_dev__wait_signal(w, index, value, -1);
}
/* Wait for what `peer` sent with symheap_dev_put_signal(..., value); a
 * give-up records peer. */
SYMHEAP_DEV uint64_t symheap_dev_wait_signal_from(
    const symheap_device_window_t &w, int peer, uint64_t value) {
  return symheap_dev__wait_signal(w, (unsigned)peer, value, peer);
}

/* --- put / get (every thread of the block calls them) ------------------- */
SYMHEAP_DEV void symheap_dev__copy_block(char *dst, const char *src,
                                         size_t bytes) {
  size_t i = threadIdx.x;
  if ((((uintptr_t)dst | (uintptr_t)src) & 15) == 0) {
    size_t nv = bytes / 16;
    for (; i < nv; i += blockDim.x)
      ((uint4 *)dst)[i] = ((const uint4 *)src)[i];
    i = nv * 16 + threadIdx.x;
  }
  for (; i < bytes; i += blockDim.x)
    dst[i] = src[i];
}
/* Copy bytes from local src into `peer`'s copy at offset (weak stores). */
SYMHEAP_DEV void symheap_dev_put(const symheap_device_window_t &w, int peer,
                                 size_t offset, const void *src, size_t bytes) {
  symheap_dev__copy_block((char *)symheap_device_peer_ptr(&w, peer, offset),
                          (const char *)src, bytes);
}
/* Copy bytes from `peer`'s copy at offset into local dst (weak loads). */
SYMHEAP_DEV void symheap_dev_get(void *dst, const symheap_device_window_t &w,
                                 int peer, size_t offset, size_t bytes) {
  symheap_dev__copy_block(
      (char *)dst, (const char *)symheap_device_peer_ptr(&w, peer, offset),
      bytes);
}
/* put, then (once every thread's stores are issued) set `peer`'s signal
 * [this rank] to value with release, so a peer that waits for it with
 * symheap_dev_wait_signal_from(w, this rank, value) sees the data. */
SYMHEAP_DEV void symheap_dev_put_signal(const symheap_device_window_t &w,
                                        int peer, size_t offset,
                                        const void *src, size_t bytes,
                                        uint64_t value) {
  symheap_dev_put(w, peer, offset, src, bytes);
  __syncthreads();
  if (threadIdx.x == 0)
    symheap_dev_signal_set(w, peer, (unsigned)w.rank, value);
}

/* --- barrier (every thread of the block calls it) ----------------------- */
/* Slot layout after SYMHEAP_SLOT_BARRIER_OFFSET: a local epoch per channel,
 * then flags[channel][sender]. */
SYMHEAP_DEV uint64_t *
symheap_dev__barrier_words(const symheap_device_window_t &w, int rank) {
  return (uint64_t *)symheap_device_pad_ptr(
      &w, rank, w.signal_offset + SYMHEAP_SLOT_BARRIER_OFFSET);
}
/* Every rank's block that calls this with the same channel meets here: on
 * return, everything any of them wrote before the barrier (to any rank) is
 * visible to all of them.  One block per channel at a time on each rank;
 * channel < SYMHEAP_BARRIER_CHANNELS; nranks <= 32.  The epochs live in the
 * pad and only grow, so the barrier needs no reset and holds across kernel
 * launches and CUDA-graph replays.  Returns 0, or SYMHEAP_ERR_TIMEOUT on
 * every thread when a peer did not arrive within the view's timeout_ns
 * (the comm's status says which; the comm is broken). */
SYMHEAP_DEV int symheap_dev_barrier(const symheap_device_window_t &w,
                                    unsigned channel) {
  __shared__ uint64_t epoch;
  uint64_t *mine = symheap_dev__barrier_words(w, w.rank);
  __syncthreads();
  if (threadIdx.x == 0) {
    epoch = mine[channel] + 1;
    mine[channel] = epoch;
  }
  __syncthreads();
  int p = (int)threadIdx.x, gave_up = 0;
  if (p < w.nranks && p != w.rank) {
    uint64_t *theirs = symheap_dev__barrier_words(w, p);
    size_t slot = SYMHEAP_BARRIER_CHANNELS + channel * (size_t)w.nranks;
    symheap_dev_st_release(theirs + slot + w.rank, epoch);
    uint64_t v;
    symheap_dev_wait_t c = {0, 0};
    char *own = (char *)symheap_device_pad_ptr(&w, w.rank, 0);
    while ((v = symheap_dev_ld_acquire(mine + slot + p)) < epoch)
      if (symheap_dev__wait_over(c, own, w.timeout_ns)) {
        symheap_dev__gave_up(c, own, w.status, SYMHEAP_WAIT_DEV_BARRIER, p,
                             epoch, v);
        gave_up = 1;
        break;
      }
  }
  return __syncthreads_or(gave_up) ? SYMHEAP_ERR_TIMEOUT : 0;
}

/* --- any rank: load/store where it reaches, else the host proxy -------
 * (docs/device-api.md, "Remote peers").  A peer on another host
 * (symheap_device_reach == SYMHEAP_DEVICE_REACH_PROXY) is reached by a
 * descriptor in the comm's proxy ring, which a host thread issues through
 * the net adaptor, staging the data through host-pinned memory.  So:
 *  - src must stay unchanged until symheap_dev_quiet returns (as an nbi
 *    put's); for a load/store peer the copy is done on return;
 *  - results are SYMHEAP_SUCCESS or an error code (thread 0 of the block,
 *    or the calling thread): UNSUPPORTED for a peer neither reaches,
 *    TIMEOUT when the ring stays full for the ring's timeout
 *    (SYMHEAP_TIMEOUT_MS; the ring is then unusable until the comm goes),
 *    REMOTE when the proxy has stopped (comm destroyed).  Each error is also
 *    printed once by the thread that met it. */
SYMHEAP_DEV int symheap_dev__proxy_err(int code, const char *what, int peer) {
  printf("symheap device: rank-%d %s (error %d)\n", peer, what, code);
  return code;
}
/* One thread: a descriptor into the ring (ticket, room, entry, system
 * fence, seq with release), as test/test_proxy.c does on the CPU. */
SYMHEAP_DEV int symheap_dev_proxy_post(const symheap_device_window_t &w,
                                       uint32_t op, int peer, size_t offset,
                                       const void *src, size_t bytes,
                                       unsigned sig_index, uint32_t sig_op,
                                       uint64_t value) {
  symheap_proxy_ring_t *ring = (symheap_proxy_ring_t *)w.proxy_ring;
  if (!(w.flags & SYMHEAP_VIEW_PROXY) || !ring)
    return symheap_dev__proxy_err(SYMHEAP_ERR_UNSUPPORTED,
                                  "is on another host and the view has no "
                                  "proxy",
                                  peer);
  uint64_t *ctr = (uint64_t *)symheap_device_pad_ptr(&w, w.rank,
                                                     SYMHEAP_PAD_PROXY_OFFSET);
  uint64_t t = atomicAdd((unsigned long long *)ctr, 1ull);
  const uint64_t entries = *(volatile uint32_t *)&ring->entries;
  const uint64_t timeout = *(volatile uint64_t *)&ring->timeout_ns;
  uint64_t start = symheap_dev__now_ns();
  while (t - symheap_dev_ld_acquire(&ring->consumed) >= entries) {
    if (symheap_dev_ld_acquire(&ring->stopped))
      break;
    if (symheap_dev__now_ns() - start > timeout)
      return symheap_dev__proxy_err(SYMHEAP_ERR_TIMEOUT,
                                    "proxy ring full for the timeout", peer);
    __nanosleep(256);
  }
  if (symheap_dev_ld_acquire(&ring->stopped))
    return symheap_dev__proxy_err(SYMHEAP_ERR_REMOTE, "proxy has stopped", peer);
  volatile symheap_proxy_desc_t *d = &ring->desc[t % entries];
  d->op = op;
  d->peer = peer;
  d->window = w.proxy_window;
  d->offset = offset;
  d->src = (uint64_t)(uintptr_t)src;
  d->len = bytes;
  d->sig_index = sig_index;
  d->sig_op = sig_op;
  d->sig_value = value;
  __threadfence_system();
  symheap_dev_st_release((uint64_t *)&d->seq, t + 1);
  return 0;
}
/* put from every thread of the block: stores where peer is reachable,
 * else (after __syncthreads, so src is written) thread 0's descriptor. */
SYMHEAP_DEV int symheap_dev_put_any(const symheap_device_window_t &w,
                                    int peer, size_t offset, const void *src,
                                    size_t bytes) {
  int reach = symheap_device_reach(&w, peer);
  if (reach == SYMHEAP_DEVICE_REACH_LOAD_STORE) {
    symheap_dev_put(w, peer, offset, src, bytes);
    return 0;
  }
  __syncthreads();
  if (threadIdx.x != 0)
    return 0;
  return reach == SYMHEAP_DEVICE_REACH_PROXY
             ? symheap_dev_proxy_post(w, SYMHEAP_PROXY_OP_PUT, peer, offset,
                                      src, bytes, 0, 0, 0)
             : symheap_dev__proxy_err(SYMHEAP_ERR_INVALID_ARG, "is not a rank of the window", peer);
}
/* put_signal from every thread of the block: peer's signal [this rank]
 * becomes value once the data is visible there, whichever way it goes. */
SYMHEAP_DEV int symheap_dev_put_signal_any(const symheap_device_window_t &w,
                                           int peer, size_t offset,
                                           const void *src, size_t bytes,
                                           uint64_t value) {
  int reach = symheap_device_reach(&w, peer);
  if (reach == SYMHEAP_DEVICE_REACH_LOAD_STORE) {
    symheap_dev_put_signal(w, peer, offset, src, bytes, value);
    return 0;
  }
  __syncthreads();
  if (threadIdx.x != 0)
    return 0;
  return reach == SYMHEAP_DEVICE_REACH_PROXY
             ? symheap_dev_proxy_post(w, SYMHEAP_PROXY_OP_PUT_SIGNAL, peer,
                                      offset, src, bytes, (unsigned)w.rank,
                                      SYMHEAP_PROXY_SIG_SET, value)
             : symheap_dev__proxy_err(SYMHEAP_ERR_INVALID_ARG, "is not a rank of the window", peer);
}
/* One thread: set (SYMHEAP_PROXY_SIG_SET) or add to peer's signal `index`;
 * ordered after this thread's earlier put_any / put_signal_any to peer. */
SYMHEAP_DEV int symheap_dev_signal_any(const symheap_device_window_t &w,
                                       int peer, unsigned index,
                                       uint64_t value, uint32_t sig_op) {
  int reach = symheap_device_reach(&w, peer);
  if (reach == SYMHEAP_DEVICE_REACH_LOAD_STORE) {
    if (sig_op == SYMHEAP_PROXY_SIG_ADD)
      (void)symheap_dev_signal_add(w, peer, index, value);
    else
      symheap_dev_signal_set(w, peer, index, value);
    return 0;
  }
  return reach == SYMHEAP_DEVICE_REACH_PROXY
             ? symheap_dev_proxy_post(w, SYMHEAP_PROXY_OP_SIGNAL, peer, 0,
                                      (const void *)0, 0, index, sig_op, value)
             : symheap_dev__proxy_err(SYMHEAP_ERR_INVALID_ARG, "is not a rank of the window", peer);
}
/* One thread: every proxied operation this rank's kernels posted before
 * it is complete at its target, and their sources free again.  Returns the
 * proxy's first error (sticky) or TIMEOUT.  Cheap without a proxy. */
SYMHEAP_DEV int symheap_dev_quiet(const symheap_device_window_t &w) {
  symheap_proxy_ring_t *ring = (symheap_proxy_ring_t *)w.proxy_ring;
  if (!(w.flags & SYMHEAP_VIEW_PROXY) || !ring) {
    __threadfence_system();
    return 0;
  }
  uint64_t *ctr = (uint64_t *)symheap_device_pad_ptr(&w, w.rank,
                                                     SYMHEAP_PAD_PROXY_OFFSET);
  uint64_t upto = atomicAdd((unsigned long long *)ctr, 0ull);
  const uint64_t timeout = *(volatile uint64_t *)&ring->timeout_ns;
  uint64_t start = symheap_dev__now_ns();
  while (symheap_dev_ld_acquire(&ring->completed) < upto) {
    if (symheap_dev__now_ns() - start > timeout)
      return symheap_dev__proxy_err(SYMHEAP_ERR_TIMEOUT, "proxy quiet timed out", w.rank);
    __nanosleep(256);
  }
  return (int)symheap_dev_ld_acquire(&ring->error);
}
/* wait_signal bounded: SYMHEAP_SUCCESS once this rank's signal `index` is
 * at least value (acquire; *got what it read), TIMEOUT after timeout_ns. */
SYMHEAP_DEV int symheap_dev_wait_signal_for(const symheap_device_window_t &w,
                                            unsigned index, uint64_t value,
                                            uint64_t timeout_ns,
                                            uint64_t *got) {
  const uint64_t *p = symheap_device_signal_ptr(&w, w.rank, index);
  uint64_t start = symheap_dev__now_ns(), v;
  while ((v = symheap_dev_ld_acquire(p)) < value) {
    if (symheap_dev__now_ns() - start > timeout_ns) {
      *got = v;
      return symheap_dev__proxy_err(SYMHEAP_ERR_TIMEOUT, "signal wait timed out", w.rank);
    }
  }
  *got = v;
  return 0;
}

#endif /* SYMHEAP_DEVICE_CUH */

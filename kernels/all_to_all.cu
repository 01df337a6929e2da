/* All-to-all and all-to-all-v: stores straight into the peers' outputs.
 *
 * Every block reads the call's epoch (xepoch + 1, local).  Block 0 tells
 * every rank "I am in this call" (xready[me] = epoch on each rank, release),
 * for all-to-all-v after writing its row of send counts into every rank's
 * xmatrix (with its output capacity): so once a rank has every xready, it
 * knows every rank's counts and capacity (and computes the same offsets and
 * the same validity as everyone) and
 * every output is free to write (its owner has started the call).  Blocks
 * then copy their share of one peer's data into that peer's output.  The
 * last block to finish (a counter in the pad) sets xdata[me] = epoch on
 * every rank, one signal per peer, waits for everyone's, writes the received
 * counts back, and advances xepoch.  The matrix a sender overwrites in the
 * next call has been read by then: every block reads it before counting
 * itself done, and the next call's row needs this call's xdata.
 * All blocks of the grid must be resident at once (block 0's ready flag is
 * awaited by the others): the grid never exceeds the launch limit. */
#include "coll_common.cuh"
#include "coll_launch.h"

namespace symheap_coll {

__device__ __forceinline__ uint64_t *xword(const view_t &w, int rank,
                                           size_t off) {
  return (uint64_t *)symheap_device_pad_ptr(&w, rank,
                                            SYMHEAP_PAD_COLL_OFFSET + off);
}

/* Thread p (< n) of block 0: this rank's send counts, or all SIZE_MAX when
 * any send leaves the input, into p's xmatrix row [me]. */
__device__ void publish_row(const view_t &w, const a2a_args_t &x, int p) {
  const int n = w.nranks;
  bool ok = true;
  size_t sum = 0;
  for (int q = 0; q < n; q++) {
    size_t c = x.send_counts[q];
    size_t o = x.send_offsets ? x.send_offsets[q] : sum;
    if (c > x.in_cap || o > x.in_cap - c)
      ok = false;
    /* saturates past in_cap (a window is far below SIZE_MAX elements) */
    sum = (c > x.in_cap || sum > x.in_cap - c) ? x.in_cap + 1 : sum + c;
  }
  if (!x.send_offsets && sum > x.in_cap)
    ok = false;
  volatile uint64_t *row = xword(w, p, kXMatrix) + (size_t)w.rank * kXRow;
  for (int q = 0; q < n; q++)
    row[q] = ok ? (uint64_t)x.send_counts[q] : ~0ull;
  row[kMaxRanks] = x.out_cap;
}

template <bool V>
__global__ void __launch_bounds__(512)
    all_to_all(view_t in, size_t in_off, view_t out, size_t out_off,
               a2a_args_t x, int bpp) {
  const int n = in.nranks, rank = in.rank, t = (int)threadIdx.x;
  __shared__ uint64_t e_s;
  __shared__ uint64_t M[V ? kMaxRanks : 1][kXRow];
  __shared__ int bad_s, last_s;
  if (t == 0) {
    e_s = *(volatile uint64_t *)xword(in, rank, kXEpoch) + 1;
    bad_s = 0;
  }
  __syncthreads();
  const uint64_t e = e_s;
  if (blockIdx.x == 0 && t < n) {
    if (V)
      publish_row(in, x, t);
    symheap_dev_st_release(xword(in, t, kXReady) + rank, e);
  }
  int gave_up = 0;
  if (t < n) {
    uint64_t v;
    symheap_dev_wait_t c = {0, 0};
    while ((v = symheap_dev_ld_acquire(xword(in, rank, kXReady) + t)) < e)
      if (symheap_dev__wait_over(c, own_pad(in), in.timeout_ns)) {
        symheap_dev__gave_up(c, own_pad(in), in.status,
                             SYMHEAP_WAIT_A2A_READY, t, e, v);
        gave_up = 1;
        break;
      }
  }
  if (__syncthreads_or(gave_up))
    return; /* a peer is missing: nothing is sent */
  if (V) {
    const volatile uint64_t *m = xword(in, rank, kXMatrix);
    for (int i = t; i < n * kXRow; i += blockDim.x)
      M[i / kXRow][i % kXRow] = m[i];
    __syncthreads();
    if (t < n) { /* receiver t's total against its capacity; validity */
      uint64_t total = 0;
      int bad = 0;
      for (int s = 0; s < n; s++) {
        bad |= M[s][t] == ~0ull;
        total += bad ? 0 : M[s][t];
        bad |= total > M[t][kMaxRanks];
      }
      if (bad)
        atomicOr(&bad_s, 1);
    }
    __syncthreads();
  }
  const int p = (rank + (int)blockIdx.x / bpp) % n, j = (int)blockIdx.x % bpp;
  size_t cnt, src, dst;
  if (V) {
    cnt = M[rank][p];
    src = 0;
    dst = 0;
    for (int q = 0; q < p; q++)
      src += M[rank][q];
    if (x.send_offsets)
      src = x.send_offsets[p];
    for (int s = 0; s < rank; s++)
      dst += M[s][p];
  } else {
    cnt = x.uniform;
    src = (size_t)p * x.uniform;
    dst = (size_t)rank * x.uniform;
  }
  if (!bad_s && cnt) {
    size_t bytes = cnt * x.elem;
    size_t chunk = ((bytes + bpp - 1) / bpp + 15) & ~(size_t)15;
    size_t b0 = min(bytes, (size_t)j * chunk), b1 = min(bytes, b0 + chunk);
    const char *s =
        (const char *)symheap_device_local_ptr(&in, in_off + src * x.elem) + b0;
    char *d =
        (char *)symheap_device_peer_ptr(&out, p, out_off + dst * x.elem) + b0;
    symheap_dev__copy_block(d, s, b1 - b0);
  }
  __threadfence_system();
  __syncthreads();
  if (t == 0)
    last_s = atomicAdd((unsigned long long *)xword(in, rank, kXCount), 1ull) ==
             gridDim.x - 1;
  __syncthreads();
  if (!last_s)
    return;
  __threadfence_system();
  if (t < n) {
    symheap_dev_st_release(xword(in, t, kXData) + rank, e);
    uint64_t v;
    symheap_dev_wait_t c = {0, 0};
    while ((v = symheap_dev_ld_acquire(xword(in, rank, kXData) + t)) < e)
      if (symheap_dev__wait_over(c, own_pad(in), in.timeout_ns)) {
        symheap_dev__gave_up(c, own_pad(in), in.status, SYMHEAP_WAIT_A2A_DATA,
                             t, e, v);
        gave_up = 1; /* t's receive count is not known: left as it was */
        break;
      }
    if (V && !gave_up) {
      size_t off = 0;
      for (int s = 0; s < t; s++)
        off += M[s][rank];
      x.recv_counts[t] = bad_s ? SIZE_MAX : (size_t)M[t][rank];
      if (x.recv_offsets)
        x.recv_offsets[t] = bad_s ? SIZE_MAX : off;
    }
  }
  __syncthreads();
  if (t == 0) {
    *(volatile uint64_t *)xword(in, rank, kXCount) = 0;
    *(volatile uint64_t *)xword(in, rank, kXEpoch) = e;
  }
}

cudaError_t launch_all_to_all(const launch_t &a, const a2a_args_t &x) {
  const int n = a.in.nranks;
  int bpp = a.max_blocks / n;
  if (!x.send_counts) { /* equal counts: about 64 KiB per block */
    size_t want = (x.uniform * x.elem + (64u << 10) - 1) / (64u << 10);
    bpp = (size_t)bpp < want ? bpp : (int)want;
  }
  bpp = bpp < 1 ? 1 : bpp;
  if (x.send_counts)
    all_to_all<true><<<n * bpp, 512, 0, a.stream>>>(a.in, a.in_off, a.out,
                                                    a.out_off, x, bpp);
  else
    all_to_all<false><<<n * bpp, 512, 0, a.stream>>>(a.in, a.in_off, a.out,
                                                     a.out_off, x, bpp);
  return cudaGetLastError();
}

const void *anchor_all_to_all() { return (const void *)all_to_all<true>; }

} // namespace symheap_coll

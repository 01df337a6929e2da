/* All-gather, broadcast and peer copies.
 *
 * all_gather: barrier (every output is free to overwrite), each rank stores
 * its block into every rank's output, barrier (every block has landed).
 * broadcast: barrier (root's input is written, every output is free), each
 * rank loads root's input into its own output, barrier (root may reuse its
 * input).  Every rank reads all of root's input, so root's outgoing links
 * carry n - 1 copies: right for small buffers (one hop), slow for large.
 * broadcast_scatter: the same barriers; between them each rank but root
 * loads its 1/(n-1) part of root's input and stores it into every rank's
 * output.  Root's outgoing links then carry the buffer once in all, which
 * is the least a broadcast can send; root stores nothing (a first version
 * gave root a part of its own too: its links then carried its reads and
 * its stores, 1.4x NCCL's time at 16 MiB on 4 x H100).
 * broadcast_scatter_pipe: the same parts, but root stores them (stores
 *   cross a link faster than loads come back over it): root's block b
 *   pushes slice b of every part to that part's rank in steps, and after
 *   each step raises that rank's progress flag for channel b; the rank's
 *   block b waits for each step's flag and stores the step into every other
 *   rank's output.  So the forwarding of step k runs under the push of step
 *   k + 1, and the time nears one crossing instead of two.
 * copy: a plain SM copy; through a peer's mapping it is a put or a get. */
#include "coll_common.cuh"
#include "coll_launch.h"

namespace symheap_coll {

template <typename W>
__global__ void __launch_bounds__(1024)
    all_gather(view_t in, size_t in_off, view_t out, size_t out_off,
               size_t words) {
  const int n = in.nranks, rank = in.rank;
  const W *src = (const W *)symheap_device_local_ptr(&in, in_off);
  const size_t mine = out_off + (size_t)rank * words * sizeof(W);
  const size_t chunk = (words + gridDim.x - 1) / gridDim.x;
  const size_t c0 = min(words, (size_t)blockIdx.x * chunk);
  const size_t c1 = min(words, c0 + chunk);
  if (!barrier(in))
    return;
  for (size_t i = c0 + threadIdx.x; i < c1; i += blockDim.x) {
    W v = src[i];
    for (int k = 0; k < n; k++)
      ((W *)symheap_device_peer_ptr(&out, (rank + k) % n, mine))[i] = v;
  }
  (void)barrier(in); /* the kernel ends here either way */
}

cudaError_t launch_all_gather(const launch_t &a) {
  int threads = 1024;
  if (a.aligned) {
    size_t words = a.count / 16;
    size_t b = (words + threads - 1) / threads;
    int grid = b < 1 ? 1 : b > (size_t)a.max_blocks ? a.max_blocks : (int)b;
    all_gather<uint4><<<grid, threads, 0, a.stream>>>(a.in, a.in_off, a.out,
                                                      a.out_off, words);
  } else {
    size_t b = (a.count + threads - 1) / threads;
    int grid = b < 1 ? 1 : b > (size_t)a.max_blocks ? a.max_blocks : (int)b;
    all_gather<unsigned char><<<grid, threads, 0, a.stream>>>(
        a.in, a.in_off, a.out, a.out_off, a.count);
  }
  return cudaGetLastError();
}

template <typename W>
__global__ void __launch_bounds__(1024)
    broadcast(view_t in, size_t in_off, view_t out, size_t out_off,
              size_t words, int root) {
  const W *src = (const W *)symheap_device_peer_ptr(&in, root, in_off);
  W *dst = (W *)symheap_device_local_ptr(&out, out_off);
  const size_t chunk = (words + gridDim.x - 1) / gridDim.x;
  const size_t c0 = min(words, (size_t)blockIdx.x * chunk);
  const size_t c1 = min(words, c0 + chunk);
  if (!barrier(in))
    return;
  if ((const void *)src != (const void *)dst)
    for (size_t i = c0 + threadIdx.x; i < c1; i += blockDim.x)
      dst[i] = src[i];
  (void)barrier(in); /* the kernel ends here either way */
}

cudaError_t launch_broadcast(const launch_t &a, int root) {
  int threads = 1024;
  size_t words = a.aligned ? a.count / 16 : a.count;
  size_t b = (words + threads - 1) / threads;
  int grid = b < 1 ? 1 : b > (size_t)a.max_blocks ? a.max_blocks : (int)b;
  if (a.aligned)
    broadcast<uint4><<<grid, threads, 0, a.stream>>>(a.in, a.in_off, a.out,
                                                     a.out_off, words, root);
  else
    broadcast<unsigned char><<<grid, threads, 0, a.stream>>>(
        a.in, a.in_off, a.out, a.out_off, words, root);
  return cudaGetLastError();
}

/* UNR loads of root's part in flight per thread before the stores to every
 * rank: a peer's memory is a microsecond away.  skip_root: root's input is
 * its output (in place), so its output holds the buffer already.  One rank
 * alone copies its input itself. */
template <typename W, int UNR>
__global__ void __launch_bounds__(1024)
    broadcast_scatter(view_t in, size_t in_off, view_t out, size_t out_off,
                      size_t words, int root, int skip_root) {
  const int n = in.nranks, rank = in.rank;
  const int parts = n > 1 ? n - 1 : 1;
  const int mine = n > 1 ? (rank - root - 1 + n) % n : 0; /* root: n - 1 */
  const size_t part = (words + parts - 1) / parts;
  const size_t p0 = mine < parts ? min(words, (size_t)mine * part) : words;
  const size_t p1 = min(words, p0 + part);
  const W *src = (const W *)symheap_device_peer_ptr(&in, root, in_off);
  const size_t st = (size_t)gridDim.x * blockDim.x;
  size_t i = p0 + (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (!barrier(in))
    return;
  for (; i + (UNR - 1) * st < p1; i += UNR * st) {
    W v[UNR];
#pragma unroll
    for (int j = 0; j < UNR; j++)
      v[j] = src[i + j * st];
    for (int k = 0; k < n; k++) {
      const int peer = (rank + k) % n;
      if (skip_root && peer == root)
        continue;
      W *dst = (W *)symheap_device_peer_ptr(&out, peer, out_off);
#pragma unroll
      for (int j = 0; j < UNR; j++)
        dst[i + j * st] = v[j];
    }
  }
  for (; i < p1; i += st) {
    const W v = src[i];
    for (int k = 0; k < n; k++) {
      const int peer = (rank + k) % n;
      if (!(skip_root && peer == root))
        ((W *)symheap_device_peer_ptr(&out, peer, out_off))[i] = v;
    }
  }
  (void)barrier(in); /* the kernel ends here either way */
}

cudaError_t launch_broadcast_scatter(const launch_t &a, int root,
                                     bool skip_root) {
  const int threads = 1024, n = a.in.nranks;
  const size_t words = a.aligned ? a.count / 16 : a.count;
  const size_t part = (words + (n > 1 ? n - 2 : 0)) / (n > 1 ? n - 1 : 1);
  size_t b = (part + threads - 1) / threads;
  int grid = b < 1 ? 1 : b > (size_t)a.max_blocks ? a.max_blocks : (int)b;
  if (a.aligned)
    broadcast_scatter<uint4, 4><<<grid, threads, 0, a.stream>>>(
        a.in, a.in_off, a.out, a.out_off, words, root, skip_root);
  else
    broadcast_scatter<unsigned char, 1><<<grid, threads, 0, a.stream>>>(
        a.in, a.in_off, a.out, a.out_off, words, root, skip_root);
  return cudaGetLastError();
}

__device__ __forceinline__ uint64_t *push_flag(const view_t &w, int rank) {
  return (uint64_t *)symheap_device_pad_ptr(&w, rank,
                                            SYMHEAP_PAD_COLL_OFFSET + kPush) +
         blockIdx.x;
}

/* Words [i0, i1) of src into every rank of `to` (a bit per rank) at out,
 * UNR loads in flight per thread before the stores.  `cg`: src was
 * written by a peer during this kernel, so its loads skip L1. */
template <typename W, int UNR>
__device__ __forceinline__ void push_words(const W *src, const view_t &out,
                                           size_t out_off, uint32_t to,
                                           size_t i0, size_t i1, bool cg) {
  for (size_t i = i0 + threadIdx.x; i < i1; i += (size_t)UNR * blockDim.x) {
    W v[UNR];
#pragma unroll
    for (int j = 0; j < UNR; j++)
      if (i + (size_t)j * blockDim.x < i1)
        v[j] = cg ? __ldcg(src + i + (size_t)j * blockDim.x)
                  : src[i + (size_t)j * blockDim.x];
    for (int p = 0; p < out.nranks; p++) {
      if (!(to >> p & 1))
        continue;
      W *dst = (W *)symheap_device_peer_ptr(&out, p, out_off);
#pragma unroll
      for (int j = 0; j < UNR; j++)
        if (i + (size_t)j * blockDim.x < i1)
          dst[i + (size_t)j * blockDim.x] = v[j];
    }
  }
}

/* step: words per step of one block's slice of a part (the host sizes it
 * so a slice takes several steps). */
template <typename W, int UNR>
__global__ void __launch_bounds__(1024)
    broadcast_scatter_pipe(view_t in, size_t in_off, view_t out, size_t out_off,
                           size_t words, int root, int skip_root, size_t step) {
  const int n = in.nranks, rank = in.rank, parts = n - 1;
  const size_t part = (words + parts - 1) / parts;
  const size_t slice = (part + gridDim.x - 1) / gridDim.x;
  const size_t s0 = min(part, (size_t)blockIdx.x * slice);
  const size_t s1 = min(part, s0 + slice);
  if (!barrier(in))
    return;
  const uint64_t e = *(volatile uint64_t *)(epochs(in) + blockIdx.x) << 32;
  if (rank == root) {
    const W *src = (const W *)symheap_device_local_ptr(&in, in_off);
    uint64_t k = 0;
    for (size_t o = s0; o < s1; o += step) {
      for (int p = 0; p < parts; p++) {
        const size_t base = (size_t)p * part;
        push_words<W, UNR>(src, out, out_off, 1u << ((root + 1 + p) % n),
                           min(words, base + o),
                           min(words, base + min(s1, o + step)), false);
      }
      __syncthreads(); /* the block's stores of this step come first */
      k++;
      if ((int)threadIdx.x < parts) {
        __threadfence_system();
        symheap_dev_st_release(push_flag(in, (root + 1 + (int)threadIdx.x) % n),
                               e + k);
      }
    }
  } else {
    const int mine = (rank - root - 1 + n) % n;
    const size_t base = (size_t)mine * part;
    const W *own = (const W *)symheap_device_local_ptr(&out, out_off);
    uint32_t to = 0;
    for (int p = 0; p < n; p++)
      if (p != rank && !(skip_root && p == root))
        to |= 1u << p;
    uint64_t k = 0;
    for (size_t o = s0; to && o < s1;
         o += step) { /* to == 0: 2 ranks, in place */
      k++;
      int gave_up = 0;
      if (threadIdx.x == 0) {
        uint64_t v;
        symheap_dev_wait_t c = {0, 0};
        while ((v = symheap_dev_ld_acquire(push_flag(in, rank))) < e + k)
          if (symheap_dev__wait_over(c, own_pad(in), in.timeout_ns)) {
            symheap_dev__gave_up(c, own_pad(in), in.status,
                                 SYMHEAP_WAIT_BCAST_PIPE, root, e + k, v);
            gave_up = 1;
            break;
          }
      }
      if (__syncthreads_or(gave_up))
        return; /* root is missing: forward nothing more */
      push_words<W, UNR>(own, out, out_off, to, min(words, base + o),
                         min(words, base + min(s1, o + step)), true);
    }
  }
  (void)barrier(in); /* the kernel ends here either way */
}

cudaError_t launch_broadcast_scatter_pipe(const launch_t &a, int root,
                                          bool skip_root) {
  const int n = a.in.nranks;
  if (n < 2) /* one rank: the plain scatter copies its input itself */
    return launch_broadcast_scatter(a, root, skip_root);
  const size_t words = a.aligned ? a.count / 16 : a.count;
  const size_t part = (words + n - 2) / (n - 1);
  /* A block's slice in about 32 steps, a step a multiple of the block:
   * the first step's push and the last one's forwarding are not overlapped
   * (with about 8, on 4 x H100, 256 MiB took 956 us, scatter's 983, and
   * 16 MiB 93 against scatter's 77). */
  const int threads = 512;
  size_t b = (part + threads - 1) / threads;
  int grid = b < 1 ? 1 : b > (size_t)a.max_blocks ? a.max_blocks : (int)b;
  size_t slice = (part + grid - 1) / grid;
  size_t step = (slice / 32 + threads - 1) / threads * threads;
  const size_t most = (size_t)threads * (a.aligned ? 4 : 1);
  step = step < (size_t)threads ? threads : step > most ? most : step;
  if (a.aligned)
    broadcast_scatter_pipe<uint4, 4><<<grid, threads, 0, a.stream>>>(
        a.in, a.in_off, a.out, a.out_off, words, root, skip_root, step);
  else
    broadcast_scatter_pipe<unsigned char, 1><<<grid, threads, 0, a.stream>>>(
        a.in, a.in_off, a.out, a.out_off, words, root, skip_root, step);
  return cudaGetLastError();
}

/* UNR 16-byte loads in flight per thread before their stores: a peer's
 * memory is a microsecond away, so bandwidth needs many loads outstanding. */
template <int UNR>
__global__ void __launch_bounds__(1024)
    copy16(uint4 *dst, const uint4 *src, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t st = (size_t)gridDim.x * blockDim.x;
  for (; i + (UNR - 1) * st < n; i += UNR * st) {
    uint4 v[UNR];
#pragma unroll
    for (int j = 0; j < UNR; j++)
      v[j] = src[i + j * st];
#pragma unroll
    for (int j = 0; j < UNR; j++)
      dst[i + j * st] = v[j];
  }
  for (; i < n; i += st)
    dst[i] = src[i];
}

__global__ void copy1(unsigned char *dst, const unsigned char *src, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

cudaError_t launch_copy(void *dst, const void *src, size_t bytes, int blocks,
                        cudaStream_t stream, int threads, int unroll) {
  threads = threads ? threads : kCopyThreads;
  unroll = unroll ? unroll : kCopyUnroll;
  if ((((uintptr_t)dst | (uintptr_t)src | bytes) & 15) == 0) {
    size_t n = bytes / 16;
    size_t b = (n + threads - 1) / threads;
    int grid = b < 1 ? 1 : b > (size_t)blocks ? blocks : (int)b;
    uint4 *d = (uint4 *)dst;
    const uint4 *s = (const uint4 *)src;
    if (unroll == 1)
      copy16<1><<<grid, threads, 0, stream>>>(d, s, n);
    else if (unroll == 2)
      copy16<2><<<grid, threads, 0, stream>>>(d, s, n);
    else if (unroll == 8)
      copy16<8><<<grid, threads, 0, stream>>>(d, s, n);
    else
      copy16<4><<<grid, threads, 0, stream>>>(d, s, n);
  } else {
    size_t b = (bytes + threads - 1) / threads;
    int grid = b < 1 ? 1 : b > (size_t)blocks ? blocks : (int)b;
    copy1<<<grid, threads, 0, stream>>>((unsigned char *)dst,
                                        (const unsigned char *)src, bytes);
  }
  return cudaGetLastError();
}

const void *anchor_all_gather() { return (const void *)copy1; }

} // namespace symheap_coll

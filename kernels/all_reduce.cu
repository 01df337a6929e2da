/* All-reduce kernels over symmetric windows.
 *
 * ll_one_shot: small sizes.  Each rank stores its input into every peer's
 *   LL buffer (in the comm pad) as 16-byte lines {data, flag, data, flag},
 *   the flag being the block's epoch; each rank polls its own buffer until
 *   the flags match and reduces.  No barrier: one NVLink crossing.  Buffers
 *   alternate by epoch parity; a rank can only be one epoch ahead of a peer's
 *   reads (it needs the peer's data of the epoch before to finish), so the
 *   buffer it writes is never the one the peer still reads.
 * one_shot: barrier, every rank reads every input and reduces, barrier (so
 *   nobody overwrites an input a peer still reads).
 * two_shot: barrier, rank r reduces shard r and stores it into every rank's
 *   output, barrier.  Each shard is written by one rank only, so in-place
 *   works and every rank ends with the same bits.
 * Ranks are always reduced in rank order, in float32. */
#include "coll_common.cuh"
#include "coll_launch.h"

namespace symheap_coll {

/* What the LL kernel needs, and no more: small kernel parameters launch
 * faster, and at a few microseconds per call that shows. */
struct ll_args_t {
  const char *src;
  char *dst;
  char *pad_base;
  uint64_t pad_stride;
  int rank, nranks;
  size_t count, units_per_block;
  /* 0: all-reduce (every peer is sent the same input); else reduce-scatter:
   * peer p is sent the count elements at src + p * peer_stride. */
  size_t peer_stride;
  void *status; /* the comm's device status (view.status) */
  uint64_t timeout_ns; /* how long a wait for a peer may last */
};

template <int DT, int OP>
__global__ void __launch_bounds__(kLLThreads) ll_one_shot(ll_args_t a) {
  pdl_wait(); /* launched with PDL: the previous kernel's memory first */
  typedef unit<DT, 8> U;
  const int rank = a.rank, n = a.nranks, b = blockIdx.x;
  const size_t count = a.count;
  const size_t nunits = (count + U::E - 1) / U::E;
  const size_t u0 = (size_t)b * a.units_per_block;
  const size_t u1 = min(nunits, u0 + a.units_per_block);
  const char *src = a.src;
  char *dst = a.dst;
  const size_t ps = a.peer_stride;
  const bool al_in = (((uintptr_t)src | ps) & 7) == 0;
  const bool al_out = ((uintptr_t)dst & 7) == 0;
  /* The first input load overlaps the epoch's: both are memory latency. */
  typename U::bits v0;
  v0.w = make_uint2(0, 0);
  if (ps == 0 && u0 + threadIdx.x < u1)
    v0 = U::load(src, u0 + threadIdx.x, count, al_in);
  __shared__ uint64_t epoch;
  uint64_t *ep = (uint64_t *)(a.pad_base + (size_t)rank * a.pad_stride +
                              SYMHEAP_PAD_COLL_OFFSET) +
                 b;
  if (threadIdx.x == 0) {
    epoch = *ep + 1;
    *ep = epoch;
  }
  __syncthreads();
  const uint64_t e = epoch;
  const uint32_t fl = (uint32_t)e;
  const size_t area = ll_area_bytes(n);
  const size_t base = SYMHEAP_PAD_LL_OFFSET +
                      ((size_t)b * 2 + (size_t)(e & 1)) * (size_t)n * area;

  for (size_t u = u0 + threadIdx.x; u < u1; u += blockDim.x) {
    typename U::bits v;
    if (ps == 0)
      v = u == u0 + threadIdx.x ? v0 : U::load(src, u, count, al_in);
    for (int k = 1; k < n; k++) {
      int p = (rank + k) % n;
      if (ps)
        v = U::load(src + (size_t)p * ps, u, count, al_in);
      st_volatile((uint4 *)(a.pad_base + (size_t)p * a.pad_stride + base +
                            (size_t)rank * area + (u - u0) * 16),
                  make_uint4(v.w.x, fl, v.w.y, fl));
    }
  }
  const char *mine = a.pad_base + (size_t)rank * a.pad_stride + base;
  for (size_t u = u0 + threadIdx.x; u < u1; u += blockDim.x) {
    float acc[U::E];
    for (int s = 0; s < n; s++) {
      typename U::bits x;
      if (s == rank) {
        x = U::load(src + (size_t)rank * ps, u, count, al_in);
      } else {
        const uint4 *from =
            (const uint4 *)(mine + (size_t)s * area + (u - u0) * 16);
        uint4 l = ld_volatile(from);
        if (l.y != fl || l.w != fl) { /* not here yet: wait, bounded */
          symheap_dev_wait_t c = {0, 0};
          char *own = a.pad_base + (size_t)rank * a.pad_stride;
          do {
            if (symheap_dev__wait_over(c, own, a.timeout_ns)) {
              /* this unit and the thread's later ones stay unwritten */
              symheap_dev__gave_up(c, own, a.status, SYMHEAP_WAIT_LL, s, fl,
                                   l.y);
              return;
            }
            l = ld_volatile(from);
          } while (l.y != fl || l.w != fl);
        }
        x.w = make_uint2(l.x, l.z);
      }
      U::template accumulate<OP>(acc, x, s == 0);
    }
    U::store(dst, u, count, al_out, U::pack(acc));
  }
}

template <int DT, int OP, int NR>
__global__ void __launch_bounds__(1024)
    one_shot(view_t in, size_t in_off, view_t out, size_t out_off, size_t count,
             bool aligned) {
  typedef unit<DT, 16> U;
  const size_t nunits = (count + U::E - 1) / U::E;
  char *dst = (char *)symheap_device_local_ptr(&out, out_off);
  if (!barrier(in))
    return;
  for (size_t u = (size_t)blockIdx.x * blockDim.x + threadIdx.x; u < nunits;
       u += (size_t)gridDim.x * blockDim.x) {
    float acc[U::E];
    gather_reduce<DT, OP, NR>(in, in_off, u, count, aligned, acc);
    U::store(dst, u, count, aligned, U::pack(acc));
  }
  (void)barrier(in); /* the kernel ends here either way */
}

/* U: units each thread moves per step, all loads issued before any use. */
template <int DT, int OP, int NR, int U>
__global__ void __launch_bounds__(1024)
    two_shot(view_t in, size_t in_off, view_t out, size_t out_off, size_t count,
             bool aligned) {
  typedef unit<DT, 16> UT;
  const int n = NR ? NR : in.nranks, rank = in.rank;
  const size_t nunits = (count + UT::E - 1) / UT::E;
  const size_t shard = (nunits + n - 1) / n;
  const size_t s0 = min(nunits, (size_t)rank * shard);
  const size_t s1 = min(nunits, s0 + shard);
  const size_t chunk = (s1 - s0 + gridDim.x - 1) / gridDim.x;
  const size_t c0 = min(s1, s0 + (size_t)blockIdx.x * chunk);
  const size_t c1 = min(s1, c0 + chunk);
  if (!barrier(in))
    return;
  for (size_t u = c0 + threadIdx.x; u < c1; u += (size_t)U * blockDim.x) {
    float acc[U][UT::E];
#pragma unroll
    for (int j = 0; j < U; j++)
      if (u + (size_t)j * blockDim.x < c1)
        gather_reduce<DT, OP, NR>(in, in_off, u + (size_t)j * blockDim.x, count,
                                  aligned, acc[j]);
#pragma unroll
    for (int j = 0; j < U; j++) {
      size_t uj = u + (size_t)j * blockDim.x;
      if (uj >= c1)
        break;
      typename UT::bits r = UT::pack(acc[j]);
      for (int k = 0; k < n; k++)
        UT::store(symheap_device_peer_ptr(&out, (rank + k) % n, out_off), uj,
                  count, aligned, r);
    }
  }
  (void)barrier(in); /* the kernel ends here either way */
}

/* --- launchers ----------------------------------------------------------- */
cudaError_t launch_ll_one_shot(const launch_t &a) {
  size_t unit_elems = 8 / elem_size(a.dtype);
  size_t nunits = (a.count + unit_elems - 1) / unit_elems;
  size_t per_block = ll_area_bytes(a.in.nranks) / 16;
  int blocks = (int)((nunits + kLLThreads - 1) / kLLThreads);
  blocks = blocks < 1 ? 1 : blocks > kLLBlocks ? kLLBlocks : blocks;
  size_t upb = (nunits + blocks - 1) / blocks;
  if (upb > per_block)
    return cudaErrorInvalidValue; /* the caller checked ll_capacity */
  ll_args_t la;
  la.src = (const char *)symheap_device_local_ptr(&a.in, a.in_off);
  la.dst = (char *)symheap_device_local_ptr(&a.out, a.out_off);
  la.pad_base = (char *)a.in.pad_base;
  la.pad_stride = a.in.pad_stride;
  la.rank = a.in.rank;
  la.nranks = a.in.nranks;
  la.count = a.count;
  la.units_per_block = upb;
  la.peer_stride = a.peer_stride;
  la.status = a.in.status;
  la.timeout_ns = a.in.timeout_ns;
#define F(D, O) launch_pdl(ll_one_shot<D, O>, blocks, kLLThreads, a.stream, la)
  SYMHEAP_DISPATCH_DT_OP(a.dtype, a.op, F)
#undef F
  return cudaGetLastError();
}

/* NR: ranks known at compile time (2, 4, 8) so the loads of every rank are
 * issued before any is used; 0 for any other count. */
#define SYMHEAP_DISPATCH_NR(K, D, O, grid, threads, a)                         \
  switch ((a).in.nranks) {                                                     \
  case 2:                                                                      \
    K(D, O, 2)<<<grid, threads, 0, (a).stream>>>(                              \
        (a).in, (a).in_off, (a).out, (a).out_off, (a).count, (a).aligned);     \
    break;                                                                     \
  case 4:                                                                      \
    K(D, O, 4)<<<grid, threads, 0, (a).stream>>>(                              \
        (a).in, (a).in_off, (a).out, (a).out_off, (a).count, (a).aligned);     \
    break;                                                                     \
  case 8:                                                                      \
    K(D, O, 8)<<<grid, threads, 0, (a).stream>>>(                              \
        (a).in, (a).in_off, (a).out, (a).out_off, (a).count, (a).aligned);     \
    break;                                                                     \
  default:                                                                     \
    K(D, O, 0)<<<grid, threads, 0, (a).stream>>>(                              \
        (a).in, (a).in_off, (a).out, (a).out_off, (a).count, (a).aligned);     \
  }

static int grid_for(size_t units, int threads, int max_blocks) {
  size_t b = (units + threads - 1) / threads;
  return b < 1 ? 1 : b > (size_t)max_blocks ? max_blocks : (int)b;
}

cudaError_t launch_one_shot(const launch_t &a) {
  size_t nunits = (a.count * elem_size(a.dtype) + 15) / 16;
  int threads = 512, grid = grid_for(nunits, threads, a.max_blocks);
#define ONE_SHOT(D, O, NR) one_shot<D, O, NR>
#define F(D, O) SYMHEAP_DISPATCH_NR(ONE_SHOT, D, O, grid, threads, a)
  SYMHEAP_DISPATCH_DT_OP(a.dtype, a.op, F)
#undef F
#undef ONE_SHOT
  return cudaGetLastError();
}

cudaError_t launch_two_shot(const launch_t &a) {
  size_t nunits = (a.count * elem_size(a.dtype) + 15) / 16;
  size_t shard = (nunits + a.in.nranks - 1) / a.in.nranks;
  /* A shard too small to fill every channel with full blocks is spread
   * over more, smaller blocks: more SMs issue peer loads at once. */
  int threads = a.threads ? a.threads
                : shard >= (size_t)a.max_blocks * kTwoShotThreads
                    ? kTwoShotThreads
                    : 256;
  int grid = grid_for(shard, threads, a.max_blocks);
  /* Other unrolls only where the tuning probe asks (bench/coll_sweep.cu). */
  if (a.unroll && a.unroll != kTwoShotUnroll && a.dtype == SYMHEAP_BFLOAT16 &&
      a.op == SYMHEAP_OP_SUM && a.in.nranks == 2) {
    if (a.unroll == 1)
      two_shot<SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM, 2, 1>
          <<<grid, threads, 0, a.stream>>>(a.in, a.in_off, a.out, a.out_off,
                                           a.count, a.aligned);
    else
      two_shot<SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM, 2, 2>
          <<<grid, threads, 0, a.stream>>>(a.in, a.in_off, a.out, a.out_off,
                                           a.count, a.aligned);
    return cudaGetLastError();
  }
#define TWO_SHOT(D, O, NR) two_shot<D, O, NR, kTwoShotUnroll>
#define F(D, O) SYMHEAP_DISPATCH_NR(TWO_SHOT, D, O, grid, threads, a)
  SYMHEAP_DISPATCH_DT_OP(a.dtype, a.op, F)
#undef F
#undef TWO_SHOT
  return cudaGetLastError();
}

const void *anchor_all_reduce() {
  return (const void *)ll_one_shot<SYMHEAP_FLOAT32, SYMHEAP_OP_SUM>;
}

} // namespace symheap_coll

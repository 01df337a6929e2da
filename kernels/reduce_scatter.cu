/* Reduce-scatter kernels.
 *
 * LL (one crossing): the all-reduce's LL kernel with a peer stride: rank r
 *   stores block p of its input into p's LL buffer and reduces what it is
 *   sent for block r (all_reduce.cu).
 * reduce_scatter (pipelined): barrier, each rank loads its block from every
 *   rank (UNR units per thread in flight before any is reduced), reduces in
 *   rank order into its own output, and (unless the caller orders input
 *   reuse otherwise) a second barrier so no rank overwrites an input a peer
 *   still loads.  It is also the first half of the copy-engine all-reduce.
 * Ranks are reduced in rank order, in float32, as the all-reduce does, so a
 * block of the reduce-scatter is bitwise the same block of the all-reduce. */
#include "coll_common.cuh"
#include "coll_launch.h"

namespace symheap_coll {

template <int DT, int OP, int NR, int UNR>
__global__ void __launch_bounds__(1024)
    reduce_scatter(view_t in, size_t in_off, view_t out, size_t out_off,
                   size_t len, bool aligned, bool barrier_before,
                   bool barrier_after) {
  typedef unit<DT, 16> UT;
  const size_t nunits = (len + UT::E - 1) / UT::E;
  const size_t chunk = (nunits + gridDim.x - 1) / gridDim.x;
  const size_t c0 = min(nunits, (size_t)blockIdx.x * chunk);
  const size_t c1 = min(nunits, c0 + chunk);
  char *dst = (char *)symheap_device_local_ptr(&out, out_off);
  if (barrier_before && !barrier(in))
    return;
  for (size_t u = c0 + threadIdx.x; u < c1; u += (size_t)UNR * blockDim.x) {
    float acc[UNR][UT::E];
#pragma unroll
    for (int j = 0; j < UNR; j++)
      if (u + (size_t)j * blockDim.x < c1)
        gather_reduce<DT, OP, NR>(in, in_off, u + (size_t)j * blockDim.x, len,
                                  aligned, acc[j]);
#pragma unroll
    for (int j = 0; j < UNR; j++) {
      size_t uj = u + (size_t)j * blockDim.x;
      if (uj >= c1)
        break;
      UT::store(dst, uj, len, aligned, UT::pack(acc[j]));
    }
  }
  if (barrier_after)
    (void)barrier(in); /* the kernel's end either way */
}

cudaError_t launch_ll_reduce_scatter(const launch_t &a) {
  launch_t b = a;
  b.peer_stride = a.count * elem_size(a.dtype);
  return launch_ll_one_shot(b);
}

#define RS_LAUNCH(D, O, NR)                                                    \
  reduce_scatter<D, O, NR, kTwoShotUnroll><<<grid, threads, 0, a.stream>>>(    \
      a.in, in_off, a.out, out_off, r.len, a.aligned, r.barrier_before,        \
      r.barrier_after)
#define RS_NR(D, O)                                                            \
  switch (a.in.nranks) {                                                       \
  case 2:                                                                      \
    RS_LAUNCH(D, O, 2);                                                        \
    break;                                                                     \
  case 4:                                                                      \
    RS_LAUNCH(D, O, 4);                                                        \
    break;                                                                     \
  case 8:                                                                      \
    RS_LAUNCH(D, O, 8);                                                        \
    break;                                                                     \
  default:                                                                     \
    RS_LAUNCH(D, O, 0);                                                        \
  }

cudaError_t launch_reduce_scatter(const launch_t &a, const rs_args_t &r) {
  const size_t es = elem_size(a.dtype);
  const size_t in_off = a.in_off + r.first * es;
  const size_t out_off = a.out_off + r.out_first * es;
  /* Every rank launches the same grid (the barrier pairs blocks by index). */
  size_t nunits = (r.grid_len * es + 15) / 16;
  int threads =
      nunits >= (size_t)a.max_blocks * kTwoShotThreads ? kTwoShotThreads : 256;
  size_t b = (nunits + threads - 1) / threads;
  int grid = b < 1 ? 1 : b > (size_t)a.max_blocks ? a.max_blocks : (int)b;
  SYMHEAP_DISPATCH_DT_OP(a.dtype, a.op, RS_NR)
  return cudaGetLastError();
}

const void *anchor_reduce_scatter() {
  return (const void *)
      reduce_scatter<SYMHEAP_FLOAT32, SYMHEAP_OP_SUM, 2, kTwoShotUnroll>;
}

} // namespace symheap_coll

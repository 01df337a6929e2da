/* Between api.cu (checks, choice of algorithm) and the kernels' files.
 * Private to kernels/. */
#ifndef SYMHEAP_COLL_LAUNCH_H
#define SYMHEAP_COLL_LAUNCH_H

#include <cuda_runtime.h>

#include "symheap_cuda.h"

namespace symheap_coll {

struct launch_t {
  symheap_device_window_t in, out;
  size_t in_off, out_off;
  size_t count; /* elements (all-reduce) or bytes (all-gather, copy) */
  int dtype, op;
  bool aligned;       /* every buffer the kernel touches is 16-byte aligned */
  int max_blocks;     /* <= kMaxChannels */
  int threads;        /* per block; 0: the default */
  int unroll;         /* two-shot units per thread and step; 0: the default */
  int sharing;        /* ranks of the comm on this GPU (1: one per GPU) */
  size_t peer_stride; /* LL: 0 all-reduce, else reduce-scatter's block */
  cudaStream_t stream;
};

/* Reduce-scatter and the all-reduce's first half: rank r reduces, in rank
 * order, elements [first, first + len) of every rank's input (at in_off)
 * into its own output at out_off + out_first elements. */
struct rs_args_t {
  size_t first, len, out_first;
  size_t grid_len;    /* sizes the grid: the same on every rank */
  bool barrier_after; /* false: the caller orders input reuse otherwise */
  bool barrier_before = true; /* false: an earlier kernel of the same call
                                 met every rank (pipelined rs+ce) */
};
/* All-to-all(v): see all_to_all.cu. */
struct a2a_args_t {
  size_t elem;    /* bytes per element */
  size_t uniform; /* all_to_all: elements per peer; 0 with vcounts */
  const size_t *send_counts, *send_offsets; /* device, nranks each */
  size_t *recv_counts, *recv_offsets;       /* device, nranks each */
  size_t in_cap, out_cap;                   /* elements from in_off / out_off */
};

inline size_t elem_size(int dtype) { return dtype == SYMHEAP_FLOAT32 ? 4 : 2; }

cudaError_t launch_ll_one_shot(const launch_t &a);
cudaError_t launch_one_shot(const launch_t &a);
cudaError_t launch_two_shot(const launch_t &a);
/* The push all-reduce (all_reduce_push.cu), one- or two-shot: push_fits
 * says whether it can run a (2, 4 or 8 ranks, and the size fits the LL
 * area's staging); the same answer on every rank given the same call. */
bool push_fits(const launch_t &a, bool two_shot);
cudaError_t launch_push(const launch_t &a, bool two_shot);
/* The LL128 one-shot (all_reduce_push.cu): the same staging, the flags in
 * the data's lines; ll128_fits as push_fits. */
bool ll128_fits(const launch_t &a);
cudaError_t launch_ll128(const launch_t &a);
cudaError_t launch_all_gather(const launch_t &a);
/* LL reduce-scatter: rank p's block of each input goes to p's LL buffer. */
cudaError_t launch_ll_reduce_scatter(const launch_t &a);
cudaError_t launch_reduce_scatter(const launch_t &a, const rs_args_t &r);
cudaError_t launch_all_to_all(const launch_t &a, const a2a_args_t &x);
cudaError_t launch_broadcast(const launch_t &a, int root);
/* root's input in n - 1 parts, each rank but root storing its part into
 * every output. */
cudaError_t launch_broadcast_scatter(const launch_t &a, int root,
                                     bool skip_root);
/* The same parts, root pushing them in steps that their ranks forward as
 * they land (all_gather.cu). */
cudaError_t launch_broadcast_scatter_pipe(const launch_t &a, int root,
                                          bool skip_root);
/* Launch defaults, chosen with bench/coll_sweep.cu on 2x H200. */
constexpr int kTwoShotThreads = 1024;
constexpr int kTwoShotUnroll = 4;
constexpr int kCopyThreads = 1024;
constexpr int kCopyUnroll = 8;
constexpr int kCopyBlocksPerSM = 2;

/* Plain device copy (SM loads and stores); threads/unroll 0: defaults. */
cudaError_t launch_copy(void *dst, const void *src, size_t bytes, int blocks,
                        cudaStream_t stream, int threads = 0, int unroll = 0);

/* One kernel of each file of kernels (a module each, as nvcc builds without
 * -rdc); preload.cu loads every kernel of each module.  A new file of
 * kernels adds its anchor here and in module_anchors (test/shell_checks.sh
 * checks that each has one). */
const void *anchor_all_gather();
const void *anchor_all_reduce();
const void *anchor_all_reduce_push();
const void *anchor_all_to_all();
const void *anchor_copy_engine();
const void *anchor_reduce_scatter();
inline const void *const *module_anchors(int *n) {
  static const void *const a[] = {
      anchor_all_gather(),  anchor_all_reduce(),     anchor_all_reduce_push(),
      anchor_all_to_all(),  anchor_copy_engine(),    anchor_reduce_scatter()};
  *n = (int)(sizeof a / sizeof a[0]);
  return a;
}

} // namespace symheap_coll

#endif

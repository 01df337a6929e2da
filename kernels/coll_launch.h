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
  bool aligned;   /* every buffer the kernel touches is 16-byte aligned */
  int max_blocks; /* <= kMaxChannels */
  int threads;    /* per block; 0: the default */
  int unroll;     /* two-shot units per thread and step; 0: the default */
  cudaStream_t stream;
};

inline size_t elem_size(int dtype) { return dtype == SYMHEAP_FLOAT32 ? 4 : 2; }

cudaError_t launch_ll_one_shot(const launch_t &a);
cudaError_t launch_one_shot(const launch_t &a);
cudaError_t launch_two_shot(const launch_t &a);
cudaError_t launch_all_gather(const launch_t &a);
/* Launch defaults, chosen with bench/coll_sweep.cu on 2x H200. */
constexpr int kTwoShotThreads = 1024;
constexpr int kTwoShotUnroll = 4;
constexpr int kCopyThreads = 1024;
constexpr int kCopyUnroll = 8;
constexpr int kCopyBlocksPerSM = 2;

/* Plain device copy (SM loads and stores); threads/unroll 0: defaults. */
cudaError_t launch_copy(void *dst, const void *src, size_t bytes, int blocks,
                        cudaStream_t stream, int threads = 0, int unroll = 0);

} // namespace symheap_coll

#endif

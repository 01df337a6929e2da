// The SYMHEAP backend's barrier, put_signal and wait_signal: the protocol of
// PyTorch's other backends, so its ops (which sync on the same pads from
// their own kernels) and these calls interoperate.  A signal is a uint32 at
// pads[owner] + world * channel + sender: the sender swaps it 0 -> 1, the
// owner swaps it back 1 -> 0 (so a pad is all zero after every completed
// sync).  Each wait gives up after timeout_ms and traps (the stream then
// reports an error instead of hanging).
#include <cuda_runtime.h>
#include <cstdint>

#include "signal.h"

namespace symheap_torch {
namespace {

__device__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ bool swap_bounded(uint32_t* addr, uint32_t from, uint32_t to,
                             size_t timeout_ms) {
  const uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ull;
  while (atomicCAS_system(addr, from, to) != from) {
    if (timeout_ms && now_ns() > end) return false;
  }
  return true;
}

__device__ void put(uint32_t** pads, int rank, int world, int dst, int ch,
                    size_t timeout_ms) {
  __threadfence_system();  // the sender's writes before its signal
  if (!swap_bounded(pads[dst] + world * ch + rank, 0, 1, timeout_ms))
    __trap();
}

__device__ void wait(uint32_t** pads, int rank, int world, int src, int ch,
                     size_t timeout_ms) {
  if (!swap_bounded(pads[rank] + world * ch + src, 1, 0, timeout_ms))
    __trap();
  __threadfence_system();  // the sender's writes visible after the wait
}

__global__ void barrier_kernel(uint32_t** pads, int rank, int world, int ch,
                               size_t timeout_ms) {
  int peer = threadIdx.x;
  if (peer >= world || peer == rank) return;
  put(pads, rank, world, peer, ch, timeout_ms);
  wait(pads, rank, world, peer, ch, timeout_ms);
}

__global__ void put_kernel(uint32_t** pads, int rank, int world, int dst,
                           int ch, size_t timeout_ms) {
  put(pads, rank, world, dst, ch, timeout_ms);
}

__global__ void wait_kernel(uint32_t** pads, int rank, int world, int src,
                            int ch, size_t timeout_ms) {
  wait(pads, rank, world, src, ch, timeout_ms);
}

}  // namespace

void launch_barrier(uint32_t** pads, int rank, int world, int channel,
                    size_t timeout_ms, cudaStream_t s) {
  int threads = (world + 31) / 32 * 32;
  barrier_kernel<<<1, threads, 0, s>>>(pads, rank, world, channel,
                                       timeout_ms);
}

void launch_put_signal(uint32_t** pads, int rank, int world, int dst,
                       int channel, size_t timeout_ms, cudaStream_t s) {
  put_kernel<<<1, 1, 0, s>>>(pads, rank, world, dst, channel, timeout_ms);
}

void launch_wait_signal(uint32_t** pads, int rank, int world, int src,
                        int channel, size_t timeout_ms, cudaStream_t s) {
  wait_kernel<<<1, 1, 0, s>>>(pads, rank, world, src, channel, timeout_ms);
}

}  // namespace symheap_torch

// The SYMHEAP backend's device-side sync primitives (signal.cu); no torch
// headers, so nvcc compiles signal.cu quickly.
#pragma once

#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>

namespace symheap_torch {

// Device side of the synchronisation primitives (signal.cu).
void launch_barrier(uint32_t** pads, int rank, int world, int channel,
                    size_t timeout_ms, cudaStream_t s);
void launch_put_signal(uint32_t** pads, int rank, int world, int dst,
                       int channel, size_t timeout_ms, cudaStream_t s);
void launch_wait_signal(uint32_t** pads, int rank, int world, int src,
                        int channel, size_t timeout_ms, cudaStream_t s);

}  // namespace symheap_torch

// Stand-in for c10's device guard (torch_stub/README.md): one device.
#pragma once
#include <cuda_runtime.h>
namespace c10 {
namespace cuda {
struct CUDAGuard {
  explicit CUDAGuard(int) {}
};
} // namespace cuda
} // namespace c10

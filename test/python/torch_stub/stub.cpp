// The stand-ins' definitions (torch_stub/README.md): CUDA calls on host
// memory, the backend registry keeping the allocator, and stub_* entries that
// drive it as PyTorch does, for test_torch_stub.py through ctypes.
#include "symm_mem.hpp" // bindings/python/symheap/torch: the real one
#include <c10/cuda/CUDAStream.h>
#include <cstring>
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind,
                            cudaStream_t) {
  std::memcpy(d, s, n);
  return 0;
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) {
  std::memcpy(d, s, n);
  return 0;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t) {
  std::memset(p, v, n);
  return 0;
}
cudaError_t cudaFree(void *) { return 0; }
cudaError_t cudaGetDevice(int *d) {
  *d = 0;
  return 0;
}
cudaError_t cudaDeviceSynchronize() { return 0; }
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus *s) {
  *s = cudaStreamCaptureStatusNone;
  return 0;
}
const char *cudaGetErrorString(cudaError_t) { return "stub"; }
namespace c10 {
namespace cuda {
CUDAStream getCurrentCUDAStream() { return {}; }
} // namespace cuda
} // namespace c10
namespace symheap_torch {
void launch_barrier(uint32_t **, int, int, int, size_t, cudaStream_t) {}
void launch_put_signal(uint32_t **, int, int, int, int, size_t, cudaStream_t) {}
void launch_wait_signal(uint32_t **, int, int, int, int, size_t, cudaStream_t) {
}
} // namespace symheap_torch
using namespace c10d::symmetric_memory;
static c10::intrusive_ptr<SymmetricMemoryAllocator> g_alloc;
static c10::intrusive_ptr<SymmetricMemory> g_last;
namespace c10d {
namespace symmetric_memory {
void register_availability(const std::string &,
                           c10::intrusive_ptr<SymmetricMemoryAllocator> a) {
  g_alloc = a;
}
GroupInfo &get_group_info(const std::string &n) {
  throw c10::Error(
      "get_group_info: no group info associated with the group name " + n);
}
} // namespace symmetric_memory
} // namespace c10d
extern "C" __attribute__((visibility("default"))) void *stub_alloc(size_t n,
                                                                   int dev) {
  try {
    return g_alloc->alloc(n, dev, std::nullopt);
  } catch (std::exception &e) {
    fprintf(stderr, "stub_alloc: %s\n", e.what());
    return nullptr;
  }
}
extern "C" __attribute__((visibility("default"))) int stub_rendezvous(void *p) {
  try {
    g_last = g_alloc->rendezvous(p, std::string("0"));
    return 0;
  } catch (std::exception &e) {
    fprintf(stderr, "stub_rendezvous: %s\n", e.what());
    return 1;
  }
}
extern "C" __attribute__((visibility("default"))) void stub_free(void *p) {
  g_last.reset();
  g_alloc->free(p);
}
// Rank peer's buffer (0) or signal pad (1) address in the last rendezvous's
// handle, and the same from its device table (here host memory).
extern "C" __attribute__((visibility("default"))) void *
stub_peer(int peer, int pad, int from_table) {
  auto *h = dynamic_cast<symheap_torch::SymheapSymmetricMemory *>(g_last.get());
  if (!h)
    return nullptr;
  if (from_table)
    return (pad ? h->get_signal_pad_ptrs_dev()
                : h->get_buffer_ptrs_dev())[peer];
  return (pad ? h->get_signal_pad_ptrs() : h->get_buffer_ptrs())[peer];
}

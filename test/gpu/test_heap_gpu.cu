// GPU tests of the symmetric heap (docs/heap.md) on the cuda adaptor:
// kernels writing peers' copies of heap windows through the device view, the
// CUDA collectives (libsymheap_cuda.so) on heap windows, and symheap_malloc
// inside a real cudaStreamBeginCapture: an allocation that fits succeeds and
// its window is used by the captured kernel and stays valid at replay; one
// that would grow the heap is refused, naming symheap_heap_reserve.  Ranks
// as processes (symheap-run -n N) or threads (--threads N).  Without a GPU:
// a SKIP line, exit 0.  Run with SYMHEAP_DISABLE_MULTICAST=1.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "../harness.h"
#include "gpu_suite.cuh"
#include "symheap_cuda.h"
#include "symheap_cuda_load.h"

static char tag[32];

__host__ __device__ static inline uint32_t val(int writer, uint32_t i) {
  return (uint32_t)writer * 1000003u + i * 7u + 1u;
}

// Rank r writes its values into rank (r + 1) % n's copy.
__global__ void write_next(symheap_device_window_t v, uint32_t count) {
  int next = (v.rank + 1) % v.nranks;
  uint32_t *dst = (uint32_t *)symheap_device_peer_ptr(&v, next, 0);
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += gridDim.x * blockDim.x)
    dst[i] = val(v.rank, i);
}

__global__ void fill_local(uint32_t *p, uint32_t count, uint32_t base) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += gridDim.x * blockDim.x)
    p[i] = base + i;
}

static void sync_all(th_ctx_t *c) {
  CUDA_OK(cudaDeviceSynchronize());
  CHECK_OK(symheap_comm_barrier(c->comm));
}

static void case_peer_writes(th_ctx_t *c) {
  const uint32_t count = (1u << 20) / 4 + 13;
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, count * 4u, 0, &w));
  symheap_heap_info_t h = SYMHEAP_HEAP_INFO_INIT;
  CHECK_OK(symheap_heap_get_info(c->comm, &h));
  CHECK(h.enabled && h.allocations == 1, "heap: enabled %d allocations %llu",
        h.enabled, (unsigned long long)h.allocations);
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  sync_all(c);
  write_next<<<64, 256>>>(v, count);
  sync_all(c);
  void *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, &mine));
  std::vector<uint32_t> got(count);
  CUDA_OK(cudaMemcpy(got.data(), mine, count * 4u, cudaMemcpyDeviceToHost));
  int prev = (c->rank + c->n - 1) % c->n;
  for (uint32_t i = 0; i < count; i++)
    if (got[i] != val(prev, i)) {
      CHECK(0, "element %u is %u, expected %u from rank %d", i, got[i],
            val(prev, i), prev);
      break;
    }
  sync_all(c);
  CHECK_OK(symheap_free(c->comm, w));
}

static void case_collectives(th_ctx_t *c) {
  const size_t count = 4096 + 7;
  symheap_window_t a, g;
  CHECK_OK(symheap_malloc(c->comm, count * sizeof(float), 0, &a));
  CHECK_OK(symheap_malloc(c->comm, 1024 * (size_t)c->n, 0, &g));
  float *ap = NULL;
  unsigned char *gp = NULL;
  CHECK_OK(symheap_window_local_ptr(a, (void **)&ap));
  CHECK_OK(symheap_window_local_ptr(g, (void **)&gp));
  std::vector<float> in(count, (float)(c->rank + 1));
  CUDA_OK(
      cudaMemcpy(ap, in.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(gp + 1024 * (size_t)c->rank, c->rank + 1, 1024));
  sync_all(c);
  // Not the legacy stream: ranks sharing a GPU are refused it (thread-ranks
  // would queue behind each other there).
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  symheap_stream_t ss = (symheap_stream_t)st;
  CHECK_OK(symheap_cuda_all_reduce(a, 0, a, 0, count, SYMHEAP_FLOAT32,
                                   SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO, ss));
  CHECK_OK(symheap_cuda_all_gather(g, 1024 * (size_t)c->rank, g, 0, 1024, ss));
  CUDA_OK(cudaStreamSynchronize(st));
  CUDA_OK(cudaStreamDestroy(st));
  sync_all(c);
  std::vector<float> out(count);
  CUDA_OK(cudaMemcpy(out.data(), ap, count * sizeof(float),
                     cudaMemcpyDeviceToHost));
  float want = (float)(c->n * (c->n + 1) / 2);
  for (size_t i = 0; i < count; i++)
    if (out[i] != want) {
      CHECK(0, "all-reduce on a heap window: element %zu is %g, expected %g", i,
            out[i], want);
      break;
    }
  std::vector<unsigned char> gg(1024 * (size_t)c->n);
  CUDA_OK(cudaMemcpy(gg.data(), gp, gg.size(), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < gg.size(); i++)
    if (gg[i] != (unsigned char)(i / 1024 + 1)) {
      CHECK(0, "all-gather on a heap window: byte %zu is %u", i, gg[i]);
      break;
    }
  sync_all(c);
  CHECK_OK(symheap_free(c->comm, g));
  CHECK_OK(symheap_free(c->comm, a));
}

static void case_capture(th_ctx_t *c) {
  const uint32_t count = 1u << 16;
  symheap_heap_info_t h = SYMHEAP_HEAP_INFO_INIT;
  CHECK_OK(symheap_heap_reserve(c->comm, count * 4u));
  CHECK_OK(symheap_heap_get_info(c->comm, &h));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s)); // blocking: the adaptor sees its capture
  sync_all(c);
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  symheap_window_t w = NULL, big = NULL;
  symheap_result_t r = symheap_malloc(c->comm, count * 4u, 0, &w);
  CHECK(r == SYMHEAP_SUCCESS, "malloc that fits, during capture: %s (%s)",
        symheap_strerror(r), symheap_last_error());
  uint32_t *p = NULL;
  if (w) {
    CHECK_OK(symheap_window_local_ptr(w, (void **)&p));
    fill_local<<<32, 256, 0, s>>>(p, count, 77u + (uint32_t)c->rank);
  }
  r = symheap_malloc(c->comm, (size_t)h.committed + (64u << 20), 0, &big);
  CHECK(r == SYMHEAP_ERR_UNSUPPORTED &&
            strstr(symheap_last_error(), "symheap_heap_reserve"),
        "growth during capture: %s (%s)", symheap_strerror(r),
        symheap_last_error());
  cudaGraph_t graph;
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 3; rep++) {
    CUDA_OK(cudaMemsetAsync(p, 0, count * 4u, s));
    CUDA_OK(cudaGraphLaunch(exec, s));
  }
  CUDA_OK(cudaStreamSynchronize(s));
  std::vector<uint32_t> got(count);
  CUDA_OK(cudaMemcpy(got.data(), p, count * 4u, cudaMemcpyDeviceToHost));
  for (uint32_t i = 0; i < count; i++)
    if (got[i] != 77u + (uint32_t)c->rank + i) {
      CHECK(0, "replayed graph: element %u is %u", i, got[i]);
      break;
    }
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(s));
  sync_all(c);
  if (w)
    CHECK_OK(symheap_free(c->comm, w));
}

static const gpu_case_t cases[] = {
    {"peer_writes", case_peer_writes},
    {"collectives", case_collectives},
    {"graph_capture", case_capture},
};

static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  gpu_rank_begin(c, (const void *)fill_local);
  gpu_run_cases(c, tag, cases, sizeof cases / sizeof cases[0]);
}

int main(int argc, char **argv) {
  int status;
  if (!gpu_start("heap_gpu", "the heap's GPU tests", &status))
    return status;
  return th_main(argc, argv, "heap_gpu_", tag, sizeof tag, &gpu_threads,
                 run_cases, NULL);
}

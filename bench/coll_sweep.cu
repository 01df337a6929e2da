// Tuning probe for the CUDA collectives' launch parameters (not part of the
// library): times peer put/get and the two-shot all-reduce over a grid of
// block counts, threads and unrolls, every rank at once, and prints each
// configuration's bandwidth, best first.  The defaults in
// kernels/coll_launch.h come from its output.
//   make coll-sweep && symheap-run -n 2 build/bin/coll-sweep
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#include "coll_launch.h"
#include "symheap.h"

#define CHECK_PROG "coll-sweep"
#include "../tools/cuda_check.h"

static symheap_comm_t comm;
static int nranks;
static cudaStream_t st;

__global__ void fill(unsigned *p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = 0x3f803f80u ^ (unsigned)(i * 2654435761u) & 0x007f007fu;
}

// Candidate copy shapes, tried here before any goes into the library.
// blocked: block b copies its own contiguous UNR * blockDim vectors (a grid
// as large as the data, as PyTorch's elementwise copy does).
template <int UNR>
__global__ void copy_blocked(uint4 *dst, const uint4 *src, size_t n) {
  size_t base = (size_t)blockIdx.x * blockDim.x * UNR + threadIdx.x;
  uint4 v[UNR];
#pragma unroll
  for (int j = 0; j < UNR; j++)
    if (base + j * blockDim.x < n)
      v[j] = src[base + j * blockDim.x];
#pragma unroll
  for (int j = 0; j < UNR; j++)
    if (base + j * blockDim.x < n)
      dst[base + j * blockDim.x] = v[j];
}
// chunked: persistent blocks, each over one contiguous chunk of the data.
template <int UNR>
__global__ void copy_chunked(uint4 *dst, const uint4 *src, size_t n) {
  size_t chunk = (n + gridDim.x - 1) / gridDim.x;
  size_t c0 = min(n, blockIdx.x * chunk), c1 = min(n, c0 + chunk);
  for (size_t i = c0 + threadIdx.x; i < c1; i += (size_t)UNR * blockDim.x) {
    uint4 v[UNR];
#pragma unroll
    for (int j = 0; j < UNR; j++)
      if (i + j * blockDim.x < c1)
        v[j] = src[i + j * blockDim.x];
#pragma unroll
    for (int j = 0; j < UNR; j++)
      if (i + j * blockDim.x < c1)
        dst[i + j * blockDim.x] = v[j];
  }
}

template <typename F> static double time_us(F fn, int iters) {
  for (int i = 0; i < 2; i++)
    CU(fn());
  cudaEvent_t a, b;
  CU(cudaEventCreate(&a));
  CU(cudaEventCreate(&b));
  std::vector<double> r;
  for (int k = 0; k < 3; k++) {
    CU(cudaStreamSynchronize(st));
    SH(symheap_comm_barrier(comm));
    CU(cudaEventRecord(a, st));
    for (int i = 0; i < iters; i++)
      CU(fn());
    CU(cudaEventRecord(b, st));
    CU(cudaEventSynchronize(b));
    float ms;
    CU(cudaEventElapsedTime(&ms, a, b));
    r.push_back(ms * 1e3 / iters);
  }
  std::sort(r.begin(), r.end());
  double med = r[1];
  std::vector<double> all((size_t)nranks);
  SH(symheap_comm_allgather(comm, &med, all.data(), sizeof med));
  return *std::max_element(all.begin(), all.end());
}

struct row {
  double gbps;
  char what[96];
};

static void report(std::vector<row> &rows, int rank, int top) {
  std::sort(rows.begin(), rows.end(),
            [](const row &x, const row &y) { return x.gbps > y.gbps; });
  for (int i = 0; i < (int)rows.size() && i < top; i++)
    if (rank == 0)
      printf("  %7.1f GB/s  %s\n", rows[i].gbps, rows[i].what);
  rows.clear();
}

int main() {
  int ndev = 0, rank;
  CU(cudaGetDeviceCount(&ndev));
  const char *lr = getenv("SYMHEAP_LOCAL_RANK");
  CU(cudaSetDevice((lr ? atoi(lr) : 0) % ndev));
  setenv("SYMHEAP_DEVICE", "cuda", 0);
  SH(symheap_comm_init_env(&comm));
  SH(symheap_comm_rank(comm, &rank));
  SH(symheap_comm_size(comm, &nranks));
  int dev, sms;
  CU(cudaGetDevice(&dev));
  CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const size_t G = 1u << 30;
  symheap_window_t w;
  SH(symheap_malloc(comm, 2 * G, 0, &w));
  char *local;
  SH(symheap_window_local_ptr(w, (void **)&local));
  fill<<<1024, 256, 0, st>>>((unsigned *)local, 2 * G / 4);
  void *buf;
  CU(cudaMalloc(&buf, G));
  CU(cudaMemcpy(buf, local, G, cudaMemcpyDeviceToDevice));
  int peer = (rank + 1) % nranks;
  char *remote;
  SH(symheap_window_peer_ptr(w, peer, (void **)&remote));
  std::vector<row> rows;
  const int threads[] = {256, 512, 1024};
  for (int dir = 0; dir < 2; dir++) {
    if (rank == 0)
      printf("%s 1 GiB, every rank at once, best first:\n",
             dir ? "get (peer -> local)" : "put (local -> peer)");
    for (int t : threads)
      for (int bps : {1, 2, 4, 8})
        for (int u : {1, 2, 4, 8}) {
          if (t * bps > 2048)
            continue;
          double us = time_us(
              [&] {
                return dir ? symheap_coll::launch_copy(buf, remote, G,
                                                       bps * sms, st, t, u)
                           : symheap_coll::launch_copy(remote, buf, G,
                                                       bps * sms, st, t, u);
              },
              8);
          row r;
          r.gbps = G / (us * 1e-6) / 1e9;
          snprintf(r.what, sizeof r.what, "threads %d, blocks %d/SM, unroll %d",
                   t, bps, u);
          rows.push_back(r);
        }
    report(rows, rank, 8);
    if (rank == 0)
      printf("  other shapes:\n");
    size_t nv = G / 16;
    uint4 *d = (uint4 *)(dir ? buf : remote),
          *s = (uint4 *)(dir ? remote : buf);
    for (int t : {128, 256, 512})
      for (int u : {2, 4, 8}) {
        size_t blocks = (nv + (size_t)t * u - 1) / ((size_t)t * u);
        double us = time_us(
            [&] {
              if (u == 2)
                copy_blocked<2><<<blocks, t, 0, st>>>(d, s, nv);
              else if (u == 4)
                copy_blocked<4><<<blocks, t, 0, st>>>(d, s, nv);
              else
                copy_blocked<8><<<blocks, t, 0, st>>>(d, s, nv);
              return cudaGetLastError();
            },
            8);
        row r;
        r.gbps = G / (us * 1e-6) / 1e9;
        snprintf(r.what, sizeof r.what, "blocked: threads %d, unroll %d", t, u);
        rows.push_back(r);
      }
    for (int t : {512, 1024})
      for (int bps : {1, 2})
        for (int u : {2, 4}) {
          if (t * bps > 2048)
            continue;
          double us = time_us(
              [&] {
                if (u == 2)
                  copy_chunked<2><<<bps * sms, t, 0, st>>>(d, s, nv);
                else
                  copy_chunked<4><<<bps * sms, t, 0, st>>>(d, s, nv);
                return cudaGetLastError();
              },
              8);
          row r;
          r.gbps = G / (us * 1e-6) / 1e9;
          snprintf(r.what, sizeof r.what,
                   "chunked: threads %d, blocks %d/SM, unroll %d", t, bps, u);
          rows.push_back(r);
        }
    report(rows, rank, 6);
    // one direction only: rank 0 copies, the others wait
    if (rank == 0)
      printf("  one rank only (rank 0 copies, link used one way):\n");
    {
      CU(cudaStreamSynchronize(st));
      SH(symheap_comm_barrier(comm));
      double us = 0;
      if (rank == 0) {
        cudaEvent_t a0, b0;
        CU(cudaEventCreate(&a0));
        CU(cudaEventCreate(&b0));
        CU(symheap_coll::launch_copy(d, s, G, 2 * sms, st, 1024, 8));
        CU(cudaEventRecord(a0, st));
        for (int i = 0; i < 8; i++)
          CU(symheap_coll::launch_copy(d, s, G, 2 * sms, st, 1024, 8));
        CU(cudaEventRecord(b0, st));
        CU(cudaEventSynchronize(b0));
        float ms;
        CU(cudaEventElapsedTime(&ms, a0, b0));
        us = ms * 1e3 / 8;
        printf("    %7.1f GB/s  threads 1024, blocks 2/SM, unroll 8\n",
               G / (us * 1e-6) / 1e9);
      }
      SH(symheap_comm_barrier(comm));
    }
  }
  symheap_coll::launch_t a = {};
  SH(symheap_window_device_view(w, &a.in));
  a.out = a.in;
  a.in_off = 0;
  a.out_off = G;
  a.dtype = SYMHEAP_BFLOAT16;
  a.op = SYMHEAP_OP_SUM;
  a.aligned = true;
  a.stream = st;
  for (size_t bytes : {(size_t)256 << 20, (size_t)16 << 20}) {
    a.count = bytes / 2;
    if (rank == 0)
      printf("two-shot all-reduce bf16 %zu MiB, bus bandwidth, best first:\n",
             bytes >> 20);
    for (int t : threads)
      for (int mb : {32, 64, 96, 128})
        for (int u : {1, 2, 4}) { // 4 is the default; 1, 2 are probe-only
          a.threads = t;
          a.max_blocks = mb;
          a.unroll = u;
          double us = time_us([&] { return symheap_coll::launch_two_shot(a); },
                              bytes > (64u << 20) ? 10 : 50);
          row r;
          r.gbps = 2.0 * (nranks - 1) / nranks * bytes / (us * 1e-6) / 1e9;
          snprintf(r.what, sizeof r.what,
                   "threads %d, blocks <= %d, unroll %d (%.1f us)", t, mb, u,
                   us);
          rows.push_back(r);
        }
    report(rows, rank, 8);
  }
  CU(cudaStreamSynchronize(st));
  SH(symheap_comm_barrier(comm));
  CU(cudaFree(buf));
  SH(symheap_free(comm, w));
  SH(symheap_comm_destroy(comm));
  return 0;
}

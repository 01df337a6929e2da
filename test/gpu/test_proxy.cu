// Device put_signal to a rank on another (pretend) host through the host
// proxy, on a GPU machine: ranks split into two hosts with SYMHEAP_HOST_ID
// (ranks 0..n/2-1, n/2..n-1), the net adaptor SYMHEAP_NET (default ofi,
// provider SYMHEAP_NET_PROVIDER, default tcp;ofi_rxm on loopback).  Each
// rank's kernel put_signals a device buffer to its partner (rank + n/2) % n
// and waits for the partner's; the receiver checks the data once the signal
// is there, on the device.  Then timed: us per put_signal round trip,
// 8 B - 1 MiB.  Processes only:
//   symheap-run -n 2 build/test/test_proxy_gpu
// Without a GPU: a SKIP line, exit 0.  Run with SYMHEAP_DISABLE_MULTICAST=1.
// A provider without FI_HMEM (tcp;ofi_rxm on the lent machines) makes every
// rank's window and pad staged (docs/network.md, "Staging"): the partner's
// data lands in a pinned host shadow and its progress copies it into GPU
// memory before the signal, so the same checks cover that path
// (bench/gpu_proxy.sh runs it with SYMHEAP_NET_HMEM=0 and checks the log).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_suite.cuh"
#include "symheap_device.cuh"

static char tag[64] = "proxy_gpu";
#define MAX_BYTES (1u << 20)

__device__ unsigned char pat(int from, uint64_t round, size_t i) {
  return (unsigned char)(from * 31 + round * 13 + i * 7 + 1);
}

// One block.  rounds x (fill src, put_signal to peer, wait for from's
// signal, check what from sent).  status[0]: first error code, status[1]:
// wrong bytes seen, status[2]: the round that failed.
__global__ void ping(symheap_device_window_t w, int peer, int from,
                     unsigned char *src, size_t bytes, int rounds,
                     uint64_t base, int check, int *status) {
  __shared__ int err;
  if (threadIdx.x == 0)
    err = 0;
  __syncthreads();
  for (int r = 1; r <= rounds && !err; r++) {
    uint64_t round = base + r;
    for (size_t i = threadIdx.x; i < bytes; i += blockDim.x)
      src[i] = pat(w.rank, round, i);
    __syncthreads();
    // The partner may be a round ahead: rounds alternate halves.
    size_t at = (round & 1) * (size_t)MAX_BYTES;
    int e = symheap_dev_put_signal_any(w, peer, at, src, bytes, round);
    if (threadIdx.x == 0) {
      uint64_t got = 0;
      if (!e)
        e = symheap_dev_wait_signal_for(w, (unsigned)from, round,
                                        20000000000ull, &got);
      // src is reused next round: the proxy must have read it.
      if (!e)
        e = symheap_dev_quiet(w);
      if (e) {
        err = e;
        status[0] = e;
        status[2] = r;
      }
    }
    __syncthreads();
    if (check && !err) {
      const unsigned char *m =
          (const unsigned char *)symheap_device_local_ptr(&w, at);
      int bad = 0;
      for (size_t i = threadIdx.x; i < bytes; i += blockDim.x)
        bad += m[i] != pat(from, round, i);
      if (bad) {
        atomicAdd(&status[1], bad);
        atomicCAS(&status[2], 0, r);
      }
    }
    __syncthreads();
  }
}

struct env_t {
  cudaStream_t s; // non-blocking: see run_ping
  symheap_window_t w;
  symheap_device_window_t v;
  unsigned char *src;
  int *status;
  int peer;
  uint64_t base;
};

static bool run_ping(th_ctx_t *c, env_t *e, size_t bytes, int rounds,
                     int check, double *us) {
  CUDA_OK(cudaMemset(e->status, 0, 3 * sizeof(int)));
  CHECK_OK(symheap_comm_barrier(c->comm));
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  // A non-blocking stream: the net provider's copies into this GPU's memory
  // (FI_HMEM: cudaMemcpy on the legacy stream) would otherwise queue
  // behind the kernel that waits for them.
  CUDA_OK(cudaEventRecord(a, e->s));
  ping<<<1, 256, 0, e->s>>>(e->v, e->peer, e->peer, e->src, bytes, rounds,
                            e->base, check, e->status);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaEventRecord(b, e->s));
  CUDA_OK(cudaEventSynchronize(b));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, a, b));
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  e->base += (uint64_t)rounds;
  int st[3] = {0, 0, 0};
  CUDA_OK(cudaMemcpy(st, e->status, sizeof st, cudaMemcpyDeviceToHost));
  CHECK(st[0] == 0, "%zu B: device error %d (%s) in round %d; proxy: %s",
        bytes, st[0], symheap_strerror((symheap_result_t)st[0]), st[2],
        symheap_comm_proxy_check(c->comm) == SYMHEAP_SUCCESS
            ? "no error"
            : symheap_last_error());
  CHECK(st[1] == 0, "%zu B: %d bytes wrong once signalled (round %d)", bytes,
        st[1], st[2]);
  CHECK_OK(symheap_comm_proxy_check(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
  *us = ms * 1000.0 / rounds;
  return st[0] == 0 && st[1] == 0;
}

static void run(th_ctx_t *c, void *arg) {
  (void)arg;
  env_t e = {};
  e.peer = (c->rank + c->n / 2) % c->n;
  th_begin(tag, "setup", c->rank);
  symheap_result_t r = symheap_malloc(c->comm, 2 * MAX_BYTES, 0, &e.w);
  if (r == SYMHEAP_ERR_UNSUPPORTED &&
      strstr(symheap_last_error(), "cannot register device memory")) {
    if (c->rank == 0)
      printf("SKIP %s: the net provider cannot register GPU memory "
             "(FI_HMEM): %s\n",
             tag, symheap_last_error());
    th_end();
    return;
  }
  CHECK_OK(r);
  CUDA_OK(cudaStreamCreateWithFlags(&e.s, cudaStreamNonBlocking));
  if (e.w)
    CHECK_OK(symheap_window_device_view(e.w, &e.v));
  CUDA_OK(cudaMalloc(&e.src, MAX_BYTES));
  CUDA_OK(cudaMalloc(&e.status, 3 * sizeof(int)));
  bool ok = e.w && e.src && e.status;
  for (int p = 0; ok && p < c->n; p++) {
    int want = p / (c->n / 2) == c->rank / (c->n / 2)
                   ? SYMHEAP_DEVICE_REACH_LOAD_STORE
                   : SYMHEAP_DEVICE_REACH_PROXY;
    CHECK(symheap_device_reach(&e.v, p) == want,
          "reach of rank %d: %d, want %d (view flags %#x)", p,
          symheap_device_reach(&e.v, p), want, e.v.flags);
  }
  ok = ok && (e.v.flags & SYMHEAP_VIEW_PROXY);
  CHECK(ok, "the view has no proxy (flags %#x): see the log", e.v.flags);
  th_end();
  static const size_t sizes[] = {8, 64, 1024, 4096, 16384, 65536, 262144,
                                 1u << 20};
  th_begin(tag, "put_signal_checked", c->rank);
  double us;
  for (size_t i = 0; ok && i < sizeof sizes / sizeof *sizes; i++)
    ok = run_ping(c, &e, sizes[i], 20, 1, &us);
  th_end();
  th_begin(tag, "put_signal_timed", c->rank);
  for (size_t i = 0; ok && i < sizeof sizes / sizeof *sizes; i++) {
    int rounds = sizes[i] >= (256u << 10) ? 50 : 200;
    ok = run_ping(c, &e, sizes[i], 5, 0, &us); // warm-up
    ok = ok && run_ping(c, &e, sizes[i], rounds, 0, &us);
    if (ok && c->rank == 0)
      printf("TIME proxy put_signal %8zu B: %9.2f us per round trip, "
             "%9.2f us one way\n",
             sizes[i], us, us / 2);
  }
  th_end();
  th_begin(tag, "free", c->rank);
  CUDA_OK(cudaFree(e.src));
  CUDA_OK(cudaFree(e.status));
  CUDA_OK(cudaStreamDestroy(e.s));
  if (e.w)
    CHECK_OK(symheap_free(c->comm, e.w));
  th_end();
}

int main(int argc, char **argv) {
  int status = 0;
  if (!gpu_start("proxy_gpu", "device put_signal through the host proxy",
                 &status))
    return status;
  const char *rk = getenv("SYMHEAP_RANK"), *nr = getenv("SYMHEAP_NRANKS");
  if (!rk || !nr || atoi(nr) < 2 || atoi(nr) % 2) {
    printf("FAIL proxy_gpu/env: run under symheap-run with an even number of "
           "ranks\n");
    return 1;
  }
  int rank = atoi(rk), n = atoi(nr);
  char host[32];
  snprintf(host, sizeof host, "gpuhost-%d", rank / (n / 2));
  setenv("SYMHEAP_HOST_ID", host, 1);
  setenv("SYMHEAP_NET", "ofi", 0);
  setenv("SYMHEAP_NET_PROVIDER", "tcp;ofi_rxm", 0);
  setenv("SYMHEAP_NET_HMEM", "1", 0);
  setenv("SYMHEAP_DEVICE_PROXY", "on", 0);
  return th_main(argc, argv, "proxy_gpu_", tag, sizeof tag, &gpu_threads, run,
                 NULL);
}

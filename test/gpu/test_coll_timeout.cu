// GPU test of the collectives' bounded waits (symheap_device.h, "Waits that
// give up"): rank 1 does not join an all-reduce (an all-to-all, a kernel's
// symheap_dev_barrier); rank 0's kernel gives up
// after SYMHEAP_TIMEOUT_MS (2000 ms here unless set), its stream sync
// returns within the timeout + 1 s, its output is left as it was, and
// symheap_comm_device_check then says SYMHEAP_ERR_TIMEOUT naming rank 1; the
// comm is broken (the next call refuses at once) and can be destroyed.  One
// case per all-reduce algorithm, each on a comm split off the suite's (which
// stays whole: the barrier after each case proves it), then all-to-all
// and symheap_dev_barrier (which returns SYMHEAP_ERR_TIMEOUT).  2 ranks, as
// processes (symheap-run -n 2) or threads (--threads 2).  Without a GPU: a
// SKIP line.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_suite.cuh"
#include "symheap_cuda.h"
#include "symheap_device.cuh"

static char tag[32];
static long timeout_ms;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Bytes of buf that are not `v`.
__global__ void count_not(const unsigned char *buf, size_t n, unsigned char v,
                          unsigned long long *bad) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    if (buf[i] != v)
      atomicAdd(bad, 1ull);
}

// What a case runs: an all-reduce (one algorithm), a uniform all-to-all
// (the kernel: main sets SYMHEAP_ALL_TO_ALL_ALGO=sm, since the copy-engine
// path's stream waits are not bounded), or symheap_dev_barrier in a kernel
// of this file.
typedef enum { OP_ALL_REDUCE, OP_ALL_TO_ALL, OP_DEV_BARRIER } op_t;

static const size_t kOut = 16u << 20; // where outputs go in the window

// symheap_dev_barrier on channel 0; thread 0 writes its result.
__global__ void dev_barrier(symheap_device_window_t w, int *result) {
  int r = symheap_dev_barrier(w, 0);
  if (threadIdx.x == 0)
    *result = r;
}

// Enqueue the case's call on s (count: all-reduce elements, all-to-all
// bytes per rank; *dres: the device barrier's result).
static symheap_result_t launch(op_t op, symheap_window_t w, size_t count,
                               symheap_algo_t algo, cudaStream_t s, int *dres) {
  switch (op) {
  case OP_ALL_REDUCE:
    return symheap_cuda_all_reduce(w, 0, w, kOut, count, SYMHEAP_FLOAT32,
                                   SYMHEAP_OP_SUM, algo, (symheap_stream_t)s);
  case OP_ALL_TO_ALL:
    return symheap_cuda_all_to_all(w, 0, w, kOut, count, (symheap_stream_t)s);
  case OP_DEV_BARRIER: {
    symheap_device_window_t v;
    symheap_result_t r = symheap_window_device_view(w, &v);
    if (r != SYMHEAP_SUCCESS)
      return r;
    if (!(v.flags & SYMHEAP_VIEW_SIGNALS) || !(v.flags & SYMHEAP_VIEW_STATUS))
      return SYMHEAP_ERR_UNSUPPORTED;
    dev_barrier<<<1, 64, 0, s>>>(v, dres);
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? SYMHEAP_SUCCESS : SYMHEAP_ERR_DEVICE;
  }
  }
  return SYMHEAP_ERR_INTERNAL;
}

// Output bytes the call writes on this rank (2 ranks).
static size_t out_bytes(op_t op, size_t count) {
  return op == OP_ALL_REDUCE ? count * 4 : op == OP_ALL_TO_ALL ? count * 2 : 0;
}

// What the status's message names besides rank 1.
static const char *wait_named(op_t op) {
  return op == OP_ALL_REDUCE   ? "rank 1"
         : op == OP_ALL_TO_ALL ? "all-to-all"
                               : "symheap_dev_barrier";
}

// Rank 0's side: the call is accepted (it only enqueues), the kernel gives
// up in time, the output is untouched (the device barrier says TIMEOUT),
// and the comm is broken.
static void lonely_rank(symheap_comm_t sub, symheap_window_t w, char *local,
                        op_t op, size_t count, symheap_algo_t algo,
                        cudaStream_t s) {
  const size_t bytes = out_bytes(op, count);
  unsigned long long *bad, h = 0;
  int *dres, hres = -1;
  CUDA_OK(cudaMalloc(&bad, sizeof *bad));
  CUDA_OK(cudaMalloc(&dres, sizeof *dres));
  if (bytes)
    CUDA_OK(cudaMemsetAsync(local + kOut, 0xab, bytes, s));
  CUDA_OK(cudaMemsetAsync(bad, 0, sizeof *bad, s));
  CUDA_OK(cudaMemsetAsync(dres, 0xff, sizeof *dres, s));
  CUDA_OK(cudaStreamSynchronize(s));
  double t0 = now_ms();
  CHECK_OK(launch(op, w, count, algo, s, dres));
  cudaError_t e = cudaStreamSynchronize(s);
  double took = now_ms() - t0;
  CHECK(e == cudaSuccess, "the stream after a kernel gave up: %s",
        cudaGetErrorString(e));
  CHECK(took >= timeout_ms * 0.9 && took <= timeout_ms + 1000.0,
        "op %d algo %d: the kernel ended after %.0f ms (timeout %ld ms)",
        (int)op, (int)algo, took, timeout_ms);
  if (bytes)
    count_not<<<64, 256, 0, s>>>((const unsigned char *)local + kOut, bytes,
                                 0xab, bad);
  CUDA_OK(cudaMemcpyAsync(&h, bad, sizeof h, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaMemcpyAsync(&hres, dres, sizeof hres, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CHECK(h == 0, "op %d algo %d: %llu output bytes written without the peer's "
        "data", (int)op, (int)algo, h);
  if (op == OP_DEV_BARRIER)
    CHECK(hres == SYMHEAP_ERR_TIMEOUT, "symheap_dev_barrier returned %d",
          hres);
  CHECK_ERR(symheap_comm_device_check(sub), SYMHEAP_ERR_TIMEOUT);
  const char *m = symheap_last_error();
  CHECK(strstr(m, "gave up waiting for rank 1") && strstr(m, wait_named(op)) &&
            strstr(m, "destroy it"),
        "op %d algo %d: message: %s", (int)op, (int)algo, m);
  printf("  rank 0 (op %d algo %d, %.0f ms): %s\n", (int)op, (int)algo, took,
         m);
  // Again: the same error, not another cause's.
  CHECK_ERR(symheap_comm_device_check(sub), SYMHEAP_ERR_TIMEOUT);
  // Broken: the next call (its view, for the device barrier) refuses
  // before enqueuing anything.
  t0 = now_ms();
  CHECK_ERR(launch(op, w, count, algo, s, dres), SYMHEAP_ERR_TIMEOUT);
  CHECK(now_ms() - t0 < 100.0, "the refusal took %.0f ms", now_ms() - t0);
  CUDA_OK(cudaFree(bad));
  CUDA_OK(cudaFree(dres));
}

// One call with both ranks (the comm works), then one that rank 1 skips.
// Rank 1 waits out rank 0's timeout before the suite's barrier.
static void peer_missing(th_ctx_t *c, op_t op, size_t count,
                         symheap_algo_t algo) {
  symheap_comm_t sub = NULL;
  CHECK_OK(symheap_comm_split(c->comm, 0, c->rank, &sub));
  if (!sub)
    return;
  symheap_window_t w;
  char *local = NULL;
  int *dres = NULL, hres = -1;
  CHECK_OK(symheap_malloc(sub, 32u << 20, 0, &w));
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaMalloc(&dres, sizeof *dres));
  CHECK_OK(launch(op, w, count, algo, s, dres));
  CUDA_OK(cudaMemcpyAsync(&hres, dres, sizeof hres, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  if (op == OP_DEV_BARRIER)
    CHECK(hres == 0, "symheap_dev_barrier with both ranks returned %d", hres);
  CUDA_OK(cudaFree(dres));
  CHECK_OK(symheap_comm_device_check(sub));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    lonely_rank(sub, w, local, op, count, algo, s);
  else
    usleep((useconds_t)(timeout_ms + 300) * 1000u);
  CUDA_OK(cudaStreamDestroy(s));
  // Rank 0's comm is broken (its destroy skips the final barrier); rank
  // 1's final barrier then fails, bounded, and it tears down anyway.  Rank
  // 0 waits for that (at most the timeout) before the suite's barrier.
  CHECK_OK(symheap_comm_destroy(sub));
  if (c->rank == 0)
    usleep((useconds_t)timeout_ms * 1000u);
}

static void all_reduce_missing(th_ctx_t *c, size_t count, symheap_algo_t a) {
  peer_missing(c, OP_ALL_REDUCE, count, a);
}
static void case_ll(th_ctx_t *c) {
  all_reduce_missing(c, 1000, SYMHEAP_ALGO_ONE_SHOT);
}
static void case_one_shot(th_ctx_t *c) {
  all_reduce_missing(c, 2u << 20, SYMHEAP_ALGO_ONE_SHOT); // past LL: barriers
}
static void case_two_shot(th_ctx_t *c) {
  all_reduce_missing(c, 1u << 20, SYMHEAP_ALGO_TWO_SHOT);
}
static void case_push(th_ctx_t *c) {
  all_reduce_missing(c, 65536, SYMHEAP_ALGO_ONE_SHOT_PUSH);
}
static void case_two_shot_push(th_ctx_t *c) {
  all_reduce_missing(c, 65536, SYMHEAP_ALGO_TWO_SHOT_PUSH);
}
static void case_ll128(th_ctx_t *c) {
  all_reduce_missing(c, 65536, SYMHEAP_ALGO_ONE_SHOT_LL128);
}
static void case_all_to_all(th_ctx_t *c) {
  peer_missing(c, OP_ALL_TO_ALL, 1u << 20, SYMHEAP_ALGO_AUTO);
}
static void case_dev_barrier(th_ctx_t *c) {
  peer_missing(c, OP_DEV_BARRIER, 0, SYMHEAP_ALGO_AUTO);
}

static const gpu_case_t cases[] = {
    {"ll_peer_missing_times_out", case_ll},
    {"one_shot_peer_missing_times_out", case_one_shot},
    {"two_shot_peer_missing_times_out", case_two_shot},
    {"push_peer_missing_times_out", case_push},
    {"two_shot_push_peer_missing_times_out", case_two_shot_push},
    {"ll128_peer_missing_times_out", case_ll128},
    {"all_to_all_peer_missing_times_out", case_all_to_all},
    {"dev_barrier_peer_missing_times_out", case_dev_barrier},
};

static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  if (c->n != 2) {
    CHECK(c->n == 2, "this test runs with 2 ranks, not %d", c->n);
    return;
  }
  gpu_rank_begin(c, (const void *)count_not);
  gpu_run_cases(c, tag, cases, sizeof cases / sizeof cases[0]);
}

int main(int argc, char **argv) {
  int status;
  if (!gpu_start("coll_timeout", "the collectives' timeout tests", &status))
    return status;
  // Short, so the test is: every rank of the job sets the same value.
  if (!getenv("SYMHEAP_TIMEOUT_MS"))
    setenv("SYMHEAP_TIMEOUT_MS", "2000", 1);
  timeout_ms = atol(getenv("SYMHEAP_TIMEOUT_MS"));
  // The all-to-all case needs the kernel (its waits are the bounded ones).
  setenv("SYMHEAP_ALL_TO_ALL_ALGO", "sm", 1);
  return th_main(argc, argv, "coll_timeout_", tag, sizeof tag, &gpu_threads,
                 run_cases, NULL);
}

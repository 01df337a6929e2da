// GPU test of the collectives' bounded waits (symheap_device.h, "Waits that
// give up"): rank 1 does not join an all-reduce; rank 0's kernel gives up
// after SYMHEAP_TIMEOUT_MS (2000 ms here unless set), its stream sync
// returns within the timeout + 1 s, its output is left as it was, and
// symheap_comm_device_check then says SYMHEAP_ERR_TIMEOUT naming rank 1; the
// comm is broken (the next call refuses at once) and can be destroyed.  One
// case per all-reduce algorithm, each on a comm split off the suite's (which
// stays whole: the barrier after each case proves it).  2 ranks, as
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

// Rank 0's side: the call is accepted (it only enqueues), the kernel gives
// up in time, the output is untouched, and the comm is broken.
static void lonely_rank(symheap_comm_t sub, symheap_window_t w, char *local,
                        size_t count, symheap_algo_t algo, cudaStream_t s) {
  const size_t bytes = count * 4, out = 16u << 20;
  unsigned long long *bad, h = 0;
  CUDA_OK(cudaMalloc(&bad, sizeof *bad));
  CUDA_OK(cudaMemsetAsync(local + out, 0xab, bytes, s));
  CUDA_OK(cudaMemsetAsync(bad, 0, sizeof *bad, s));
  CUDA_OK(cudaStreamSynchronize(s));
  double t0 = now_ms();
  CHECK_OK(symheap_cuda_all_reduce(w, 0, w, out, count, SYMHEAP_FLOAT32,
                                   SYMHEAP_OP_SUM, algo, (symheap_stream_t)s));
  cudaError_t e = cudaStreamSynchronize(s);
  double took = now_ms() - t0;
  CHECK(e == cudaSuccess, "the stream after a kernel gave up: %s",
        cudaGetErrorString(e));
  CHECK(took >= timeout_ms * 0.9 && took <= timeout_ms + 1000.0,
        "algo %d: the kernel ended after %.0f ms (timeout %ld ms)", (int)algo,
        took, timeout_ms);
  count_not<<<64, 256, 0, s>>>((const unsigned char *)local + out, bytes, 0xab,
                               bad);
  CUDA_OK(cudaMemcpyAsync(&h, bad, sizeof h, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CHECK(h == 0, "algo %d: %llu output bytes written without the peer's data",
        (int)algo, h);
  CHECK_ERR(symheap_comm_device_check(sub), SYMHEAP_ERR_TIMEOUT);
  const char *m = symheap_last_error();
  CHECK(strstr(m, "gave up waiting for rank 1") && strstr(m, "destroy it"),
        "algo %d: message: %s", (int)algo, m);
  printf("  rank 0 (algo %d, %.0f ms): %s\n", (int)algo, took, m);
  // Broken: the next call refuses before enqueuing anything.
  t0 = now_ms();
  CHECK_ERR(symheap_cuda_all_reduce(w, 0, w, out, count, SYMHEAP_FLOAT32,
                                    SYMHEAP_OP_SUM, algo, (symheap_stream_t)s),
            SYMHEAP_ERR_TIMEOUT);
  CHECK(now_ms() - t0 < 100.0, "the refusal took %.0f ms", now_ms() - t0);
  CUDA_OK(cudaFree(bad));
}

// One all-reduce with both ranks (the comm works), then one that rank 1
// skips.  Rank 1 waits out rank 0's timeout before the suite's barrier.
static void peer_missing(th_ctx_t *c, size_t count, symheap_algo_t algo) {
  symheap_comm_t sub = NULL;
  CHECK_OK(symheap_comm_split(c->comm, 0, c->rank, &sub));
  if (!sub)
    return;
  symheap_window_t w;
  char *local = NULL;
  CHECK_OK(symheap_malloc(sub, 32u << 20, 0, &w));
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_OK(symheap_cuda_all_reduce(w, 0, w, 16u << 20, count, SYMHEAP_FLOAT32,
                                   SYMHEAP_OP_SUM, algo, (symheap_stream_t)s));
  CUDA_OK(cudaStreamSynchronize(s));
  CHECK_OK(symheap_comm_device_check(sub));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    lonely_rank(sub, w, local, count, algo, s);
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

static void case_ll(th_ctx_t *c) { peer_missing(c, 1000, SYMHEAP_ALGO_ONE_SHOT); }
static void case_one_shot(th_ctx_t *c) {
  peer_missing(c, 2u << 20, SYMHEAP_ALGO_ONE_SHOT); // past LL: barriers
}
static void case_two_shot(th_ctx_t *c) {
  peer_missing(c, 1u << 20, SYMHEAP_ALGO_TWO_SHOT);
}
static void case_push(th_ctx_t *c) {
  peer_missing(c, 65536, SYMHEAP_ALGO_ONE_SHOT_PUSH);
}
static void case_two_shot_push(th_ctx_t *c) {
  peer_missing(c, 65536, SYMHEAP_ALGO_TWO_SHOT_PUSH);
}
static void case_ll128(th_ctx_t *c) {
  peer_missing(c, 65536, SYMHEAP_ALGO_ONE_SHOT_LL128);
}

static const gpu_case_t cases[] = {
    {"ll_peer_missing_times_out", case_ll},
    {"one_shot_peer_missing_times_out", case_one_shot},
    {"two_shot_peer_missing_times_out", case_two_shot},
    {"push_peer_missing_times_out", case_push},
    {"two_shot_push_peer_missing_times_out", case_two_shot_push},
    {"ll128_peer_missing_times_out", case_ll128},
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
  return th_main(argc, argv, "coll_timeout_", tag, sizeof tag, &gpu_threads,
                 run_cases, NULL);
}

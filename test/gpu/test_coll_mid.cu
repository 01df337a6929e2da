// GPU tests of the push all-reduces (SYMHEAP_ALGO_ONE_SHOT_PUSH,
// SYMHEAP_ALGO_TWO_SHOT_PUSH and SYMHEAP_ALGO_ONE_SHOT_LL128,
// kernels/all_reduce_push.cu): every count from
// 1 element to past what the staging holds (where two-shot runs instead),
// odd counts and offsets that are not 16-byte aligned, in place and not,
// each output checked bit for bit against float32 in rank order; thousands
// of back-to-back calls interleaved with the LL and barrier-framed kernels
// (which share the LL area and the channels' epochs) while ranks enter late
// in turn; and a CUDA graph of them replayed.  Ranks as processes
// (symheap-run) or threads (--threads N).  Without a GPU: a SKIP line.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "../harness.h"
#include "coll_testlib.cuh"
#include "symheap_cuda.h"
#include "symheap_cuda_load.h"

static char tag[32];

// Holds this rank back for about `ns` nanoseconds of GPU time, so that it
// enters the next collective late.
__global__ void spin(long long ns) {
  long long t0 = clock64();
  // ~1.7 GHz: cycles = ns * 1.7; a bound either way, not a measure
  while (clock64() - t0 < ns * 17 / 10)
    ;
}

// One all-reduce, checked on the device, bit for bit.
static void check_push(th_ctx_t *c, symheap_window_t w, char *local,
                       size_t in_off, size_t out_off, size_t count, int dt,
                       int op, symheap_algo_t algo, cudaStream_t s,
                       unsigned long long *bad) {
  uint64_t seed = shared_seed(c);
  size_t bytes = count * esize(dt);
  if (in_off != out_off)
    CUDA_OK(cudaMemsetAsync(local + out_off, 0xff, bytes, s));
  fill<<<256, 256, 0, s>>>(local + in_off, dt, count, seed, c->rank);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaMemsetAsync(bad, 0, sizeof *bad, s));
  CHECK_OK(symheap_cuda_all_reduce(w, in_off, w, out_off, count,
                                   (symheap_dtype_t)dt, (symheap_redop_t)op,
                                   algo, (symheap_stream_t)s));
  check_reduce<<<256, 256, 0, s>>>(local + out_off, dt, op, count, seed, c->n,
                                   bad);
  unsigned long long h = 0;
  CUDA_OK(cudaMemcpyAsync(&h, bad, sizeof h, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CHECK(h == 0, "%s %s algo %d count %zu in+%zu out+%zu: %llu wrong elements",
        dt_name(dt), op ? "max" : "sum", (int)algo, count, in_off, out_off, h);
}

static void case_counts(th_ctx_t *c) {
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 64u << 20, 0, &w));
  char *local = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned long long *bad;
  CUDA_OK(cudaMalloc(&bad, sizeof *bad));
  // to 6 MiB of bf16 / 12 MiB of f32: past the staging (two-shot runs)
  const size_t counts[] = {1,     2,      3,      7,          8,
                           9,     31,     33,     255,        1000,
                           4097,  65535,  131075, 262147,     (1u << 19) + 5,
                           1u << 19, (1u << 20) + 3, 3u << 20};
  const symheap_algo_t algos[] = {SYMHEAP_ALGO_ONE_SHOT_PUSH,
                                  SYMHEAP_ALGO_TWO_SHOT_PUSH,
                                  SYMHEAP_ALGO_ONE_SHOT_LL128};
  int runs = 0;
  for (int dt = 0; dt < 3; dt++)
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
      for (int a = 0; a < 3; a++) {
        size_t es = esize(dt);
        bool in_place = (k + (size_t)a) % 2 == 0;
        size_t in_off = in_place ? 0 : es * 3;
        size_t out_off = in_place ? 0 : (32u << 20) + es * 5;
        int op = (k % 3 == 2) ? SYMHEAP_OP_MAX : SYMHEAP_OP_SUM;
        check_push(c, w, local, in_off, out_off, counts[k], dt, op, algos[a], s,
                   bad);
        runs++;
      }
  if (c->rank == 0)
    printf("# %d push all-reduce checks\n", runs);
  CUDA_OK(cudaFree(bad));
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w));
}

// What one step of the interleaved loop runs.
struct step_t {
  size_t count;
  symheap_algo_t algo;
};
static const step_t kSteps[] = {
    {131072, SYMHEAP_ALGO_ONE_SHOT_PUSH}, // 256 KiB
    {2048, SYMHEAP_ALGO_ONE_SHOT},        // LL: the same regions
    {524291, SYMHEAP_ALGO_TWO_SHOT_PUSH}, // 1 MiB + 6 bytes
    {33, SYMHEAP_ALGO_TWO_SHOT},          // barrier-framed
    {1000, SYMHEAP_ALGO_ONE_SHOT_PUSH},   // one block
    {4097, SYMHEAP_ALGO_TWO_SHOT_PUSH},
    {600001, SYMHEAP_ALGO_ONE_SHOT_PUSH}, // many blocks, odd
    {65536, SYMHEAP_ALGO_ONE_SHOT},       // LL, every LL block
    {524288, SYMHEAP_ALGO_ONE_SHOT_LL128}, // 1 MiB: after raw push data
    {131075, SYMHEAP_ALGO_ONE_SHOT_PUSH},  // raw data over LL128 lines
    {77777, SYMHEAP_ALGO_ONE_SHOT_LL128},  // fewer blocks, odd tail
    {300001, SYMHEAP_ALGO_ONE_SHOT_LL128}, // back to back, both parities
};
static const int kNSteps = sizeof kSteps / sizeof kSteps[0];

// Back to back, no host synchronisation, in place, each result checked on
// the device; every 5th call one rank (in turn) enters ~30 us late.
static void case_interleaved(th_ctx_t *c) {
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 8u << 20, 0, &w));
  char *local = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned long long *bad;
  CUDA_OK(cudaMalloc(&bad, kNSteps * sizeof *bad));
  CUDA_OK(cudaMemset(bad, 0, kNSteps * sizeof *bad));
  uint64_t seed = shared_seed(c);
  const int iters = 3000;
  for (int it = 0; it < iters; it++) {
    int k = it % kNSteps;
    size_t n = kSteps[k].count;
    uint64_t sd = seed + (uint64_t)it;
    if (it % 5 == 0 && (it / 5) % c->n == c->rank)
      spin<<<1, 1, 0, s>>>(30000);
    fill<<<128, 256, 0, s>>>(local, SYMHEAP_BFLOAT16, n, sd, c->rank);
    symheap_result_t r =
        symheap_cuda_all_reduce(w, 0, w, 0, n, SYMHEAP_BFLOAT16,
                                SYMHEAP_OP_SUM, kSteps[k].algo,
                                (symheap_stream_t)s);
    if (r != SYMHEAP_SUCCESS) {
      CHECK_OK(r);
      break;
    }
    check_reduce<<<128, 256, 0, s>>>(local, SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
                                     n, sd, c->n, bad + k);
  }
  CUDA_OK(cudaStreamSynchronize(s));
  unsigned long long h[kNSteps];
  CUDA_OK(cudaMemcpy(h, bad, sizeof h, cudaMemcpyDeviceToHost));
  for (int k = 0; k < kNSteps; k++)
    CHECK(h[k] == 0,
          "%d interleaved all-reduces: step %d (algo %d, %zu elements): %llu "
          "wrong elements",
          iters, k, (int)kSteps[k].algo, kSteps[k].count, h[k]);
  CUDA_OK(cudaFree(bad));
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w));
}

// A graph of the interleaved steps (each on its own part of the window),
// replayed: the epochs and flags move on with every replay.
static void case_graph(th_ctx_t *c) {
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, (size_t)kNSteps * (2u << 20), 0, &w));
  char *local = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint64_t *seed;
  unsigned long long *bad;
  CUDA_OK(cudaMalloc(&seed, sizeof *seed));
  CUDA_OK(cudaMalloc(&bad, kNSteps * sizeof *bad));
  uint64_t s0 = shared_seed(c);
  CUDA_OK(cudaMemcpy(seed, &s0, sizeof s0, cudaMemcpyDefault));
  CUDA_OK(cudaMemset(bad, 0, kNSteps * sizeof *bad));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  bump<<<1, 1, 0, s>>>(seed);
  for (int k = 0; k < kNSteps; k++) {
    char *p = local + (size_t)k * (2u << 20);
    size_t n = kSteps[k].count;
    fill_dyn<<<128, 256, 0, s>>>(p, SYMHEAP_BFLOAT16, n, seed, c->rank);
    CHECK_OK(symheap_cuda_all_reduce(w, (size_t)k * (2u << 20), w,
                                     (size_t)k * (2u << 20), n,
                                     SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
                                     kSteps[k].algo, (symheap_stream_t)s));
    check_dyn<<<128, 256, 0, s>>>(p, SYMHEAP_BFLOAT16, n, seed, c->n, bad + k);
  }
  CUDA_OK(cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
  const int replays = 300;
  for (int i = 0; i < replays; i++) {
    if (i % 7 == 0 && (i / 7) % c->n == c->rank)
      spin<<<1, 1, 0, s>>>(30000);
    CUDA_OK(cudaGraphLaunch(ge, s));
  }
  CUDA_OK(cudaStreamSynchronize(s));
  unsigned long long h[kNSteps];
  uint64_t s1 = 0;
  CUDA_OK(cudaMemcpy(h, bad, sizeof h, cudaMemcpyDefault));
  CUDA_OK(cudaMemcpy(&s1, seed, sizeof s1, cudaMemcpyDefault));
  CHECK(s1 == s0 + replays, "the graph ran %llu times, not %d",
        (unsigned long long)(s1 - s0), replays);
  for (int k = 0; k < kNSteps; k++)
    CHECK(h[k] == 0, "%d graph replays: step %d (algo %d): %llu wrong",
          replays, k, (int)kSteps[k].algo, h[k]);
  CUDA_OK(cudaGraphExecDestroy(ge));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaFree(seed));
  CUDA_OK(cudaFree(bad));
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w));
}

static const gpu_case_t cases[] = {
    {"push_all_reduce_1_to_3M_elements", case_counts},
    {"push_interleaved_back_to_back_3000", case_interleaved},
    {"push_graph_replay_300", case_graph},
};

static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  gpu_rank_begin(c, (const void *)spin);
  gpu_run_cases(c, tag, cases, sizeof cases / sizeof cases[0]);
}

int main(int argc, char **argv) {
  int status;
  if (!gpu_start("coll_mid", "the push all-reduces' GPU tests", &status))
    return status;
  return th_main(argc, argv, "coll_mid_", tag, sizeof tag, &gpu_threads,
                 run_cases, NULL);
}

// What the GPU suites over libsymheap_cuda share (test_coll, test_coll_xfer,
// test_heap_gpu): the checks before anything runs, and one rank's run of a
// file's cases.  Used with th_main (../harness.h) for --threads N or one
// rank of a symheap-run job.
#ifndef SYMHEAP_TEST_GPU_SUITE_CUH
#define SYMHEAP_TEST_GPU_SUITE_CUH

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "symheap_cuda_load.h"

#define CUDA_OK(call)                                                          \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      th_fail(__FILE__, __LINE__, "%s: %s", #call, cudaGetErrorString(e_));    \
  } while (0)

typedef struct {
  const char *name;
  void (*fn)(th_ctx_t *);
} gpu_case_t;

static int gpu_threads; // th_main sets it: ranks are threads of this process

// True to go on: the cuda adaptor is selected and this process is on its
// local rank's device.  Else *status is the exit status: SKIP (0) without a
// CUDA device, FAIL (1) where multicast is not switched off.
static bool gpu_start(const char *suite, const char *what, int *status) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("SKIP %s: no CUDA device here (cudaGetDeviceCount found none); "
           "%s run on the GPU machine\n",
           suite, what);
    *status = 0;
    return false;
  }
  const char *mc = getenv("SYMHEAP_DISABLE_MULTICAST");
  if (!mc || strcmp(mc, "1") != 0) {
    printf("FAIL %s/refuse_to_run: set SYMHEAP_DISABLE_MULTICAST=1 (and "
           "NCCL_NVLS_ENABLE=0) on shared GPU machines\n",
           suite);
    *status = 1;
    return false;
  }
  setenv("SYMHEAP_DEVICE", "cuda", 1);
  const char *lr = getenv("SYMHEAP_LOCAL_RANK");
  cudaSetDevice((lr ? atoi(lr) : 0) % ndev);
  cudaFree(0);
  return true;
}

// A thread-rank takes its device; then the kernels of the file holding
// `kernel` are loaded (NULL: left to lazy loading), since thread-ranks share
// a context (symheap_cuda_load.h says why).
static void gpu_rank_begin(th_ctx_t *c, const void *kernel) {
  if (gpu_threads) {
    int ndev = 1;
    cudaGetDeviceCount(&ndev);
    CUDA_OK(cudaSetDevice(c->rank % ndev));
  }
  if (kernel)
    CHECK_OK(symheap_cuda_load_module(kernel));
}

// Every rank has loaded before any starts a case; a barrier after each case
// keeps the ranks in step.  SYMHEAP_TEST_ONLY=<name> runs one case.
static void gpu_run_cases(th_ctx_t *c, const char *tag, const gpu_case_t *cases,
                          size_t n) {
  CHECK_OK(symheap_comm_barrier(c->comm));
  const char *only = getenv("SYMHEAP_TEST_ONLY");
  for (size_t i = 0; i < n; i++) {
    if (only && strcmp(only, cases[i].name) != 0)
      continue;
    th_begin(tag, cases[i].name, c->rank);
    cases[i].fn(c);
    CHECK_OK(symheap_comm_barrier(c->comm));
    th_end();
  }
}

#endif

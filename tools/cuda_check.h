// The checks of the GPU tools and probes (tools/symheap-bench-cuda.cu,
// tools/symheap-tune.cu, bench/coll_sweep.cu): a failed symheap or CUDA
// call ends the program with one line naming the program (CHECK_PROG,
// defined before this is included), the call and why.
#ifndef SYMHEAP_TOOLS_CUDA_CHECK_H
#define SYMHEAP_TOOLS_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "symheap.h"

#ifndef CHECK_PROG
#error "define CHECK_PROG (the program's name) before including cuda_check.h"
#endif

#define SH(call)                                                               \
  do {                                                                         \
    symheap_result_t r_ = (call);                                              \
    if (r_ != SYMHEAP_SUCCESS) {                                               \
      fprintf(stderr, "%s: %s: %s: %s\n", CHECK_PROG, #call,                   \
              symheap_strerror(r_), symheap_last_error());                     \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)
#define CU(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s: %s: %s\n", CHECK_PROG, #call,                       \
              cudaGetErrorString(e_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#endif

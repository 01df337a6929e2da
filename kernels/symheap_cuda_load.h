/* Loading kernels ahead of their first launch, where ranks share one CUDA
 * context (threads of one process on one GPU).
 *
 * Since CUDA 12.2 a kernel is loaded at its first launch (lazy loading), and
 * a load waits for the context's running work.  A collective's kernel of one
 * thread-rank spins until its peer's kernel runs; if the peer thread
 * launches a kernel for the first time in between, the load waits for the
 * spinning kernel, the peer's collective never starts, and the GPU is stuck
 * (seen on an H100: bench/gpu_hang.sh; the CUDA programming guide's "Lazy
 * Loading" lists it among the potential hazards).  libsymheap_cuda loads
 * its own kernels at its first call in such a context
 * (symheap_cuda_preload); the caller's kernels are the caller's to load,
 * on every thread-rank before its first collective, then
 * symheap_comm_barrier:
 *
 *   symheap_cuda_load_module(my_kernel);   // every kernel of its .cu file
 *
 * or run with CUDA_MODULE_LOADING=EAGER.  Processes, or one GPU per rank,
 * need none of this.
 *
 * Header-only on purpose: kernel pointers mean something only to the CUDA
 * runtime they were registered with, and nvcc links the runtime statically
 * into each binary, so the lookup must be compiled into the caller's code.
 * Errors go to symheap_last_error() like the library's own. */
#ifndef SYMHEAP_CUDA_LOAD_H
#define SYMHEAP_CUDA_LOAD_H

#include <cuda.h>
#include <cuda_runtime.h>
#include <stdlib.h>

#include "symheap_adaptor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The driver's module calls (CUDA 12.4), found once per caller. */
typedef struct {
  CUresult (*func_module)(CUmodule *, CUfunction);
  CUresult (*count)(unsigned *, CUmodule);
  CUresult (*enumerate)(CUfunction *, unsigned, CUmodule);
  CUresult (*load)(CUfunction);
  CUresult (*mode)(CUmoduleLoadingMode *);
  int found; /* 1: all of them; -1: not all */
} symheap_cuda_loader_t;

static inline void *symheap_cuda__entry(const char *name, int version) {
  void *p = NULL;
  enum cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault,
                                       &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return NULL;
  }
  return p;
}

static inline const symheap_cuda_loader_t *symheap_cuda__loader(void) {
  static symheap_cuda_loader_t l; /* racing threads fill in the same values */
  if (!__atomic_load_n(&l.found, __ATOMIC_ACQUIRE)) {
    symheap_cuda_loader_t t;
    t.func_module = (CUresult(*)(CUmodule *, CUfunction))symheap_cuda__entry(
        "cuFuncGetModule", 11000);
    t.count = (CUresult(*)(unsigned *, CUmodule))symheap_cuda__entry(
        "cuModuleGetFunctionCount", 12040);
    t.enumerate =
        (CUresult(*)(CUfunction *, unsigned, CUmodule))symheap_cuda__entry(
            "cuModuleEnumerateFunctions", 12040);
    t.load = (CUresult(*)(CUfunction))symheap_cuda__entry("cuFuncLoad", 12040);
    t.mode = (CUresult(*)(CUmoduleLoadingMode *))symheap_cuda__entry(
        "cuModuleGetLoadingMode", 11070);
    t.found = t.func_module && t.count && t.enumerate && t.load ? 1 : -1;
    l.func_module = t.func_module;
    l.count = t.count;
    l.enumerate = t.enumerate;
    l.load = t.load;
    l.mode = t.mode;
    __atomic_store_n(&l.found, t.found, __ATOMIC_RELEASE);
  }
  return &l;
}

/* 1 when CUDA loads kernels at their first launch (the default). */
static inline int symheap_cuda_loading_is_lazy(void) {
  const symheap_cuda_loader_t *l = symheap_cuda__loader();
  CUmoduleLoadingMode m = CU_MODULE_EAGER_LOADING;
  return !l->mode || l->mode(&m) != CUDA_SUCCESS || m == CU_MODULE_LAZY_LOADING;
}

/* Loads, into the current context, every kernel of the module (the .cu
 * file, as nvcc builds without -rdc) that holds `kernel`.  Nothing to do
 * (SYMHEAP_SUCCESS) when loading is eager. */
static inline symheap_result_t symheap_cuda_load_module(const void *kernel) {
  const symheap_host_services_t *s = symheap_host_services();
  const char *fn = "symheap_cuda_load_module";
  if (!kernel)
    return s->error(SYMHEAP_ERR_INVALID_ARG, "%s: kernel is NULL", fn);
  if (!symheap_cuda_loading_is_lazy())
    return SYMHEAP_SUCCESS;
  const symheap_cuda_loader_t *l = symheap_cuda__loader();
  if (l->found != 1)
    return s->error(SYMHEAP_ERR_UNSUPPORTED,
                    "%s: this driver lacks cuModuleEnumerateFunctions or "
                    "cuFuncLoad (CUDA 12.4); run with "
                    "CUDA_MODULE_LOADING=EAGER instead",
                    fn);
  cudaFunction_t f;
  cudaError_t e = cudaGetFuncBySymbol(&f, kernel);
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* not the caller's next launch's error */
    return s->error(SYMHEAP_ERR_INVALID_ARG,
                    "%s: %p is not a kernel registered with this CUDA "
                    "runtime (%s)",
                    fn, kernel, cudaGetErrorString(e));
  }
  CUmodule m;
  unsigned n = 0, k;
  CUresult r = l->func_module(&m, (CUfunction)f);
  if (r == CUDA_SUCCESS)
    r = l->count(&n, m);
  if (r == CUDA_SUCCESS && n) {
    CUfunction *all = (CUfunction *)malloc(n * sizeof *all);
    if (!all)
      return s->error(SYMHEAP_ERR_NO_MEMORY, "%s: %u kernels", fn, n);
    r = l->enumerate(all, n, m);
    for (k = 0; r == CUDA_SUCCESS && k < n; k++)
      r = l->load(all[k]);
    free(all);
  }
  return r == CUDA_SUCCESS
             ? SYMHEAP_SUCCESS
             : s->error(SYMHEAP_ERR_DEVICE,
                        "%s: loading the module of %p failed (CUresult %d)", fn,
                        kernel, (int)r);
}

#ifdef __cplusplus
}
#endif

#endif

/* Kernels loaded before they can be needed, where ranks share a context.
 *
 * Since CUDA 12.2 the runtime loads a kernel at its first launch (lazy
 * loading), and loading waits for the context's running kernels.  Where
 * ranks are threads of one process on one GPU, they share its primary
 * context: rank 0's collective kernel spins until rank 1's is queued, while
 * rank 1's thread waits, in its first launch of some kernel, for rank 0's
 * kernel to end.  Nobody moves (seen on an H100 with test_coll_xfer
 * --threads 2: both threads inside a launch, no kernel finished).  The CUDA
 * programming guide's "Lazy Loading: potential hazards" describes it.
 *
 * So the first collective call in such a context loads every kernel of this
 * library, all modules of it, under one process-wide lock: any thread that
 * reaches a collective waits for that load before it queues anything, so no
 * collective kernel of ours runs while the load waits.  The user's own
 * kernels are the user's to load (symheap_cuda_preload with one kernel of
 * each .cu, then symheap_comm_barrier), or CUDA_MODULE_LOADING=EAGER. */
#include <cuda.h>
#include <pthread.h>

#include "coll_api.h"

namespace symheap_coll {

namespace {

struct loader_t {
  CUresult (*ctx_current)(CUcontext *);
  CUresult (*mode)(CUmoduleLoadingMode *);
  CUresult (*func_module)(CUmodule *, CUfunction);
  CUresult (*count)(unsigned *, CUmodule);
  CUresult (*enumerate)(CUfunction *, unsigned, CUmodule);
  CUresult (*load)(CUfunction);
  bool ok;
};

template <typename F> bool entry(const char *name, int version, F *out) {
  void *p = NULL;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault,
                                       &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  *out = (F)p;
  return true;
}

loader_t find_loader() {
  loader_t l = {};
  l.ok = entry("cuCtxGetCurrent", 4000, &l.ctx_current) &&
         entry("cuModuleGetLoadingMode", 11070, &l.mode) &&
         entry("cuFuncGetModule", 11000, &l.func_module) &&
         entry("cuModuleGetFunctionCount", 12040, &l.count) &&
         entry("cuModuleEnumerateFunctions", 12040, &l.enumerate) &&
         entry("cuFuncLoad", 12040, &l.load);
  return l;
}

const loader_t &loader() {
  static const loader_t l = find_loader(); /* thread-safe once */
  return l;
}

/* CUDA_MODULE_LOADING is read once, at the driver's initialisation. */
bool lazy() {
  static const bool on = [] {
    CUmoduleLoadingMode m = CU_MODULE_EAGER_LOADING;
    return !loader().mode || loader().mode(&m) != CUDA_SUCCESS ||
           m == CU_MODULE_LAZY_LOADING;
  }();
  return on;
}

symheap_result_t driver_fail(const char *fn, const char *what, CUresult r) {
  return fail(SYMHEAP_ERR_DEVICE, "%s: %s failed (CUresult %d)", fn, what,
              (int)r);
}

/* Every kernel of the module (one .cu file) that holds `kernel`. */
symheap_result_t load_module_of(const void *kernel, const char *fn) {
  const loader_t &l = loader();
  cudaFunction_t f;
  cudaError_t e = cudaGetFuncBySymbol(&f, kernel);
  if (e != cudaSuccess)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: %p is not a kernel of this process (%s)", fn, kernel,
                cudaGetErrorString(e));
  CUmodule m;
  unsigned n = 0;
  CUresult r = l.func_module(&m, (CUfunction)f);
  if (r != CUDA_SUCCESS)
    return driver_fail(fn, "cuFuncGetModule", r);
  if ((r = l.count(&n, m)) != CUDA_SUCCESS)
    return driver_fail(fn, "cuModuleGetFunctionCount", r);
  CUfunction fs[512];
  if (n > 512)
    n = 512; /* ours hold far fewer; a user's beyond 512 load at launch */
  if ((r = l.enumerate(fs, n, m)) != CUDA_SUCCESS)
    return driver_fail(fn, "cuModuleEnumerateFunctions", r);
  for (unsigned i = 0; i < n; i++)
    if ((r = l.load(fs[i])) != CUDA_SUCCESS)
      return driver_fail(fn, "cuFuncLoad", r);
  return SYMHEAP_SUCCESS;
}

symheap_result_t need_loader(const char *fn) {
  return loader().ok
             ? SYMHEAP_SUCCESS
             : fail(SYMHEAP_ERR_UNSUPPORTED,
                    "%s: ranks share this GPU's context and CUDA loads "
                    "kernels lazily, but this driver lacks "
                    "cuModuleEnumerateFunctions/cuFuncLoad (CUDA 12.4) to "
                    "load them ahead; run with CUDA_MODULE_LOADING=EAGER",
                    fn);
}

symheap_result_t load_library(const char *fn) {
  int n;
  const void *const *k = module_anchors(&n);
  symheap_result_t r = SYMHEAP_SUCCESS;
  for (int i = 0; i < n && r == SYMHEAP_SUCCESS; i++)
    r = load_module_of(k[i], fn);
  return r;
}

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
CUcontext loaded[64];
int nloaded;

} // namespace

symheap_result_t preload_shared(const char *fn) {
  if (!lazy())
    return SYMHEAP_SUCCESS;
  symheap_result_t r = need_loader(fn);
  CUcontext ctx = NULL;
  CUresult cr;
  if (r == SYMHEAP_SUCCESS && (cr = loader().ctx_current(&ctx)) != CUDA_SUCCESS)
    r = driver_fail(fn, "cuCtxGetCurrent", cr);
  static __thread CUcontext known; /* this thread's last, already loaded */
  if (r != SYMHEAP_SUCCESS || ctx == known)
    return r;
  pthread_mutex_lock(&lock);
  bool done = false;
  for (int i = 0; i < nloaded && !done; i++)
    done = loaded[i] == ctx;
  if (!done && (r = load_library(fn)) == SYMHEAP_SUCCESS &&
      nloaded < (int)(sizeof loaded / sizeof loaded[0]))
    loaded[nloaded++] = ctx; /* past 64 contexts: loaded again, harmless */
  pthread_mutex_unlock(&lock);
  if (r == SYMHEAP_SUCCESS)
    known = ctx;
  return r;
}

} // namespace symheap_coll

using namespace symheap_coll;

EXPORT symheap_result_t symheap_cuda_preload(const void *const *kernels,
                                             int n) {
  const char *fn = "symheap_cuda_preload";
  if (n < 0 || (n > 0 && !kernels))
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: %d kernels at %p", fn, n,
                (const void *)kernels);
  for (int i = 0; i < n; i++)
    if (!kernels[i])
      return fail(SYMHEAP_ERR_INVALID_ARG, "%s: kernels[%d] is NULL", fn, i);
  if (!lazy())
    return SYMHEAP_SUCCESS; /* CUDA_MODULE_LOADING=EAGER: all loaded */
  symheap_result_t r = need_loader(fn);
  if (r == SYMHEAP_SUCCESS)
    r = preload_shared(fn);
  for (int i = 0; i < n && r == SYMHEAP_SUCCESS; i++)
    r = load_module_of(kernels[i], fn);
  return r;
}

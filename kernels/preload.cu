/* This library's kernels loaded before any of them is queued, where ranks
 * share one CUDA context (symheap_cuda_load.h says why).
 *
 * The first call in such a context loads every kernel of every module of
 * the library under one process-wide lock.  A thread that reaches any call
 * meanwhile waits on the lock before it queues anything, so no collective
 * kernel of ours can be spinning while a load waits for the context. */
#include <pthread.h>

#include "coll_api.h"
#include "symheap_cuda_load.h"

namespace symheap_coll {

namespace {

symheap_result_t load_library() {
  int n;
  const void *const *k = module_anchors(&n);
  symheap_result_t r = SYMHEAP_SUCCESS;
  for (int i = 0; i < n && r == SYMHEAP_SUCCESS; i++)
    r = symheap_cuda_load_module(k[i]);
  return r;
}

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
CUcontext loaded[64];
int nloaded;

} // namespace

symheap_result_t preload_shared(const char *fn) {
  static const bool lazy = symheap_cuda_loading_is_lazy();
  if (!lazy)
    return SYMHEAP_SUCCESS;
  static __thread CUcontext known; /* this thread's last, already loaded */
  static CUresult (*const current)(CUcontext *) =
      (CUresult(*)(CUcontext *))symheap_cuda__entry("cuCtxGetCurrent", 4000);
  CUcontext ctx = NULL;
  int dev;
  cudaError_t e;
  if (!current || current(&ctx) != CUDA_SUCCESS)
    return fail(SYMHEAP_ERR_DEVICE, "%s: cuCtxGetCurrent failed", fn);
  /* Called before the runtime made a context current: make the device's
   * primary context current, as the first launch would. */
  if (!ctx && ((e = cudaGetDevice(&dev)) != cudaSuccess ||
               (e = cudaSetDevice(dev)) != cudaSuccess))
    return cuda_fail(fn, e);
  if (!ctx && (current(&ctx) != CUDA_SUCCESS || !ctx))
    return fail(SYMHEAP_ERR_DEVICE, "%s: no CUDA context", fn);
  if (ctx == known)
    return SYMHEAP_SUCCESS;
  pthread_mutex_lock(&lock);
  bool done = false;
  for (int i = 0; i < nloaded && !done; i++)
    done = loaded[i] == ctx;
  symheap_result_t r = done ? SYMHEAP_SUCCESS : load_library();
  if (!done && r == SYMHEAP_SUCCESS &&
      nloaded < (int)(sizeof loaded / sizeof loaded[0]))
    loaded[nloaded++] = ctx; /* past 64 contexts: loaded again, harmless */
  pthread_mutex_unlock(&lock);
  if (r != SYMHEAP_SUCCESS)
    return symheap_host_services()->error_context(
        r,
        "%s: loading libsymheap_cuda's kernels ahead (ranks share this "
        "GPU's context)",
        fn);
  known = ctx;
  return SYMHEAP_SUCCESS;
}

} // namespace symheap_coll

using namespace symheap_coll;

EXPORT symheap_result_t symheap_cuda_preload(void) {
  return preload_shared("symheap_cuda_preload");
}

/* Between the C API's files (api*.cu): argument checks, views, launch
 * limits, and the copy-engine paths.  Private to kernels/. */
#ifndef SYMHEAP_COLL_API_H
#define SYMHEAP_COLL_API_H

#include "coll_common.cuh"
#include "coll_launch.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace symheap_coll {

symheap_result_t fail(symheap_result_t r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
symheap_result_t cuda_fail(const char *what, cudaError_t e);
/* The view of w, checked: a pad, at most kMaxRanks ranks, one host. */
symheap_result_t get_view(symheap_window_t w, symheap_device_window_t *v,
                          const char *fn, const char *which);
/* Views of in and out, checked: one comm, extents. */
symheap_result_t views(symheap_window_t in, size_t in_off, symheap_window_t out,
                       size_t out_off, size_t in_bytes, size_t out_bytes,
                       const char *fn, launch_t *a);
/* The windows are device memory of this thread's device; max_blocks and
 * sharing.  a->stream must be set; `waits`: the call's kernels wait for
 * peers' (the legacy default stream is refused where ranks share a GPU). */
symheap_result_t device_ok(launch_t *a, const char *fn, bool waits = true);
/* Where ranks share the GPU: every kernel of this library loaded into the
 * current context, once per context, before any is queued (preload.cu). */
symheap_result_t preload_shared(const char *fn);
/* dtype, op and algo (up to max_algo) are known; count * blocks elements
 * do not overflow; offsets are whole elements. */
symheap_result_t reduce_args_ok(const char *fn, symheap_dtype_t dtype,
                                symheap_redop_t op, symheap_algo_t algo,
                                symheap_algo_t max_algo, size_t count,
                                size_t blocks, size_t in_offset,
                                size_t out_offset);
bool aligned16(const symheap_device_window_t &v, size_t off);
/* [a, a+na) and [b, b+nb) of this rank's memory overlap. */
inline bool overlaps(const void *a, size_t na, const void *b, size_t nb) {
  const char *x = (const char *)a, *y = (const char *)b;
  return na && nb && x < y + nb && y < x + na;
}

/* --- copy engine (copy_engine.cu) --------------------------------------- */
/* SYMHEAP_CUDA_ZERO_SM=1 in the environment (read once). */
bool zero_sm_env();
/* Bytes from which AUTO all-reduce takes SYMHEAP_ALGO_RS_COPY_ENGINE
 * (SYMHEAP_CUDA_CE_BYTES, default 64 MiB). */
size_t ce_threshold();
/* The driver's stream memory operations were found (the copy-engine paths
 * order their copies with them). */
bool ce_available();
symheap_result_t all_reduce_rs_ce(launch_t &a, const char *fn);
/* SYMHEAP_ALGO_RS_CE_PIPELINED (copy_engine.cu says how). */
symheap_result_t all_reduce_rs_ce_pipelined(launch_t &a, const char *fn);
symheap_result_t all_gather_ce(launch_t &a, const char *fn);
/* The uniform all-to-all, `bytes` per block, by the copy engines. */
symheap_result_t all_to_all_ce(launch_t &a, size_t bytes, const char *fn);
symheap_result_t broadcast_ce(launch_t &a, int root, const char *fn);
/* The copy engines' pipelined broadcast (ce_pipe, copy_engine.cu). */
symheap_result_t broadcast_ce_pipe(launch_t &a, int root, bool skip_root,
                                   const char *fn);

} // namespace symheap_coll

#endif

/* symheap's CUDA collectives (libsymheap_cuda.so): all-reduce, all-gather and
 * peer copies over registered windows, from plain C.
 *
 * Rules, as for NCCL communicators:
 *  - collectives are collective: every rank of the windows' comm makes the
 *    same calls, with the same arguments, in the same order;
 *  - collectives on one comm are ordered: issue them on one stream per rank
 *    (or order the streams); they share the comm pad's state;
 *  - input and output windows belong to the same comm; offsets are in bytes
 *    and multiples of the element size.
 * Nothing here waits on the host: every call only enqueues work on `stream`,
 * so it can be captured in a CUDA graph and replayed.  Errors are returned
 * before anything is enqueued; symheap_last_error() says why.
 *
 * Between two collectives nothing more is needed; before a rank reads a
 * window with its own kernels after a peer wrote it with put, order them
 * (a collective, symheap_comm_barrier after a stream sync, or signals).
 */
#ifndef SYMHEAP_CUDA_H
#define SYMHEAP_CUDA_H

#include <stddef.h>

#include "symheap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A cudaStream_t (CUstream), without the CUDA headers; NULL is the legacy
 * default stream. */
typedef struct CUstream_st *symheap_stream_t;

typedef enum {
  SYMHEAP_FLOAT32 = 0,
  SYMHEAP_BFLOAT16 = 1,
  SYMHEAP_FLOAT16 = 2,
} symheap_dtype_t;

typedef enum {
  SYMHEAP_OP_SUM = 0,
  SYMHEAP_OP_MAX = 1,
} symheap_redop_t;

typedef enum {
  SYMHEAP_ALGO_AUTO = 0,
  /* Every rank reads (or, small, is sent) every input and reduces it all:
   * least latency. */
  SYMHEAP_ALGO_ONE_SHOT = 1,
  /* Reduce-scatter then all-gather, fused: each rank reduces 1/n and writes
   * it to every rank; least traffic.  The output must be a window. */
  SYMHEAP_ALGO_TWO_SHOT = 2,
} symheap_algo_t;

/* out[out_offset..] = op over ranks of in[in_offset..], count elements.  In
 * place when in == out and the offsets are equal; other overlaps are
 * refused, and so is SYMHEAP_ALGO_ONE_SHOT in place above the LL capacity.
 * Every rank gets bitwise the same result (ranks are reduced in rank order,
 * in float32). */
symheap_result_t
symheap_cuda_all_reduce(symheap_window_t in, size_t in_offset,
                        symheap_window_t out, size_t out_offset, size_t count,
                        symheap_dtype_t dtype, symheap_redop_t op,
                        symheap_algo_t algo, symheap_stream_t stream);

/* What SYMHEAP_ALGO_AUTO does for this size on this window's comm: one-shot
 * (LL) up to SYMHEAP_PAD_LL_BYTES / (4 * nranks) bytes, two-shot above. */
symheap_result_t symheap_cuda_all_reduce_algo(symheap_window_t win,
                                              size_t count,
                                              symheap_dtype_t dtype,
                                              symheap_algo_t *algo);

/* Every rank's bytes at in[in_offset..] land at out[out_offset + r*bytes] on
 * every rank (rank r's block at index r).  In place when the input is this
 * rank's block of the output; other overlaps are refused. */
symheap_result_t symheap_cuda_all_gather(symheap_window_t in, size_t in_offset,
                                         symheap_window_t out,
                                         size_t out_offset, size_t bytes,
                                         symheap_stream_t stream);

/* One-sided copies through the peer's mapping (cudaMemcpyAsync on the
 * mapped addresses: the copy engines beat SM loads and stores over NVLink),
 * with no synchronisation with the peer: local device memory src into
 * peer's copy of win at offset, and peer's copy at offset into local dst. */
symheap_result_t symheap_cuda_put(symheap_window_t win, int peer, size_t offset,
                                  const void *src, size_t bytes,
                                  symheap_stream_t stream);
symheap_result_t symheap_cuda_get(void *dst, symheap_window_t win, int peer,
                                  size_t offset, size_t bytes,
                                  symheap_stream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* SYMHEAP_CUDA_H */

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
 * A kernel waits at most SYMHEAP_TIMEOUT_MS for a peer (one that died, or
 * skipped the call): it then records why and returns, leaving the output it
 * could not compute as it was.  The stream goes on; the comm's next call
 * (this API's calls, any collective of the comm, or
 * symheap_comm_device_check after a stream sync) returns
 * SYMHEAP_ERR_TIMEOUT naming the wait and the peer, and the comm is broken:
 * destroy it (docs/device-api.md, "Bounded waits").  The copy-engine
 * paths' stream memory waits take no timeout.
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
 * default stream.  Where ranks of a comm share one GPU (threads or
 * processes), the calls that wait for peers refuse the legacy default
 * stream: threads of one process would queue behind each other on it. */
typedef struct CUstream_st *symheap_stream_t;

/* Loads every kernel of libsymheap_cuda into this thread's current CUDA
 * context, once per context (later calls return at once).  The collectives
 * do it themselves at their first call where ranks of the comm share the
 * GPU; call it earlier to keep the load out of a timed or captured region.
 * Where ranks are threads sharing one GPU, your own kernels need loading
 * too: symheap_cuda_load.h says why and how. */
symheap_result_t symheap_cuda_preload(void);

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
  /* All-reduce only: reduce-scatter by SM loads, then all-gather by the copy
   * engines (cudaMemcpyAsync into peers' outputs, ordered by stream memory
   * operations on the comm pad).  AUTO takes it from SYMHEAP_CUDA_CE_BYTES
   * (default 64 MiB).  The output must be a window. */
  SYMHEAP_ALGO_RS_COPY_ENGINE = 3,
  /* All-reduce only, 2, 4 or 8 ranks: one-shot and two-shot that push
   * (store into peers' staging in the comm pad, one flag per block) instead
   * of loading from peers between two barriers: for mid sizes (about
   * 64 KiB to a few MiB).  Where the staging cannot hold the size (one-shot:
   * 4 MiB / (nranks - 1); two-shot: 4 MiB * nranks / (nranks - 1), about)
   * or at other rank counts, SYMHEAP_ALGO_TWO_SHOT runs instead. */
  SYMHEAP_ALGO_ONE_SHOT_PUSH = 4,
  SYMHEAP_ALGO_TWO_SHOT_PUSH = 5,
  /* All-reduce only: SYMHEAP_ALGO_RS_COPY_ENGINE in chunks, pipelined: the
   * copy engines all-gather chunk k (on a second stream, ordered by events,
   * so graph capture works) while the SMs reduce-scatter chunk k + 1.
   * Ranks that share a GPU take the unpipelined path.  The output must be a
   * window. */
  SYMHEAP_ALGO_RS_CE_PIPELINED = 6,
  /* All-reduce only, 2, 4 or 8 ranks: one-shot push whose flags travel in
   * the data (NCCL's LL128: 120 bytes of data and the flag in each 128-byte
   * line), so no fence and no flag round follow the data.  It relies on
   * NVLink GPUs (sm_80, sm_90) delivering each 128-byte line of a warp's
   * store whole, as NCCL's LL128 does; AUTO takes it only where the tuning
   * table names it.  Where the staging cannot hold the size (about
   * 3.75 MiB / (nranks - 1)) or at other rank counts, SYMHEAP_ALGO_TWO_SHOT
   * runs instead. */
  SYMHEAP_ALGO_ONE_SHOT_LL128 = 7,
} symheap_algo_t;

/* Per-call flags (all-gather, broadcast). */
enum {
  /* Only the copy engines move data and only stream memory operations order
   * it: no kernel, every SM left to the caller's work.  Also set for every
   * call by SYMHEAP_CUDA_ZERO_SM=1 in the environment. */
  SYMHEAP_CUDA_ZERO_SM = 0x1,
};

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

/* What SYMHEAP_ALGO_AUTO does for this size on this window's comm (not in
 * place): SYMHEAP_ALL_REDUCE_ALGO if set, else the row of this GPU's tuning
 * table (docs/tuning.md) for the rank count, topology and size, else the
 * thresholds: one-shot (LL) up to SYMHEAP_PAD_LL_BYTES / (4 * nranks) bytes
 * (1 MiB at 2 ranks), two-shot above, SYMHEAP_ALGO_RS_COPY_ENGINE from
 * SYMHEAP_CUDA_CE_BYTES.  Reduce-scatter, all-gather (SM or zero-SM) and
 * broadcast choose the same way (SYMHEAP_REDUCE_SCATTER_ALGO,
 * SYMHEAP_ALL_GATHER_ALGO, SYMHEAP_BROADCAST_ALGO). */
symheap_result_t symheap_cuda_all_reduce_algo(symheap_window_t win,
                                              size_t count,
                                              symheap_dtype_t dtype,
                                              symheap_algo_t *algo);

/* Every rank's bytes at in[in_offset..] land at out[out_offset + r*bytes] on
 * every rank (rank r's block at index r).  In place when the input is this
 * rank's block of the output; an input that is another whole block of the
 * output is copied to this rank's block first (the rule names no rank, so
 * ranks given the same offsets agree); other overlaps are refused. */
symheap_result_t symheap_cuda_all_gather(symheap_window_t in, size_t in_offset,
                                         symheap_window_t out,
                                         size_t out_offset, size_t bytes,
                                         symheap_stream_t stream);

/* all_gather with flags (SYMHEAP_CUDA_ZERO_SM). */
symheap_result_t symheap_cuda_all_gather_flags(
    symheap_window_t in, size_t in_offset, symheap_window_t out,
    size_t out_offset, size_t bytes, unsigned flags, symheap_stream_t stream);

/* out[out_offset..] (count elements) = op over ranks of rank r's block of
 * in: in[in_offset + r * count * elem ..], count elements, on rank r.  The
 * input holds nranks * count elements.  In place when the output is this
 * rank's block of the input; an output that is another whole block of the
 * input is reached through this rank's block (the rule names no rank, so
 * ranks given the same offsets agree); other overlaps are refused.  Every rank's
 * result is bitwise what the all-reduce gives for that block: ranks reduced
 * in rank order (0, 1, ..., n-1) in float32, rounded once to dtype.
 * SYMHEAP_ALGO_ONE_SHOT: each rank stores block p of its input into p's LL
 * buffer (one crossing, no barrier), up to symheap_cuda_all_reduce_algo's
 * LL capacity per block; SYMHEAP_ALGO_TWO_SHOT (pipelined): barrier, each
 * rank loads its block from every rank, several loads in flight per thread,
 * barrier.  AUTO: LL while it fits. */
symheap_result_t symheap_cuda_reduce_scatter(
    symheap_window_t in, size_t in_offset, symheap_window_t out,
    size_t out_offset, size_t count, symheap_dtype_t dtype, symheap_redop_t op,
    symheap_algo_t algo, symheap_stream_t stream);

/* Rank r's bytes of block p (in[in_offset + p * bytes ..]) land at
 * out[out_offset + r * bytes ..] on rank p: the blocks are stored straight
 * into the peers' outputs, then one signal per peer says they are there.
 * Input and output must not overlap. */
symheap_result_t symheap_cuda_all_to_all(symheap_window_t in, size_t in_offset,
                                         symheap_window_t out,
                                         size_t out_offset, size_t bytes,
                                         symheap_stream_t stream);

/* All-to-all with per-peer counts on the device (no host sync, so a MoE
 * layer can call it right after computing its routing, and it can be
 * captured in a graph).  Counts and offsets are in elements of elem_size
 * bytes, arrays of nranks size_t in device memory:
 *  - send_counts[p]: elements for rank p, from in[in_offset +
 *    send_offsets[p] * elem_size ..] (send_offsets NULL: packed in rank
 *    order, offsets the prefix sums of the counts);
 *  - on return recv_counts[s] = what rank s sent here and, unless NULL,
 *    recv_offsets[s] = where it starts: data lands packed in sender order at
 *    out[out_offset + recv_offsets[s] * elem_size ..];
 *  - in_capacity / out_capacity: elements usable from in_offset / out_offset
 *    (checked on the host against the windows).
 * If any rank's sends leave its input capacity or any rank would receive
 * more than out_capacity, no data moves on any rank and every rank's
 * recv_counts are all SIZE_MAX.  Input and output ranges must not overlap. */
symheap_result_t symheap_cuda_all_to_allv(
    symheap_window_t in, size_t in_offset, size_t in_capacity,
    symheap_window_t out, size_t out_offset, size_t out_capacity,
    size_t elem_size, const size_t *send_counts, const size_t *send_offsets,
    size_t *recv_counts, size_t *recv_offsets, symheap_stream_t stream);

/* root's bytes at in[in_offset..] land at out[out_offset..] on every rank
 * (in place on root when in and out are the same range; other overlaps are
 * refused).  flags: SYMHEAP_CUDA_ZERO_SM or 0. */
symheap_result_t symheap_cuda_broadcast(symheap_window_t in, size_t in_offset,
                                        symheap_window_t out, size_t out_offset,
                                        size_t bytes, int root, unsigned flags,
                                        symheap_stream_t stream);

/* Which tuning table AUTO uses on this thread's current device, as text
 * into buf (at most len bytes, NUL-terminated): "<path> (N rows, gpu ...,
 * topology ...)", "none: <path> absent; thresholds", or "bad table: <file>
 * line N: why".  The table is looked up at the first call on a device
 * (SYMHEAP_TUNING_FILE, else <libdir>/../share/symheap/tuning/<gpu>.tsv). */
symheap_result_t symheap_cuda_tuning_table(char *buf, size_t len);

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

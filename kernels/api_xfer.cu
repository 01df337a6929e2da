/* The C API of the collectives added after all-reduce and all-gather:
 * reduce-scatter, all-to-all(v) and broadcast.  As in api.cu: every check
 * answers before anything is enqueued, nothing waits on the host. */
#include "coll_api.h"
#include "tuning.h"

using namespace symheap_coll;

namespace {

/* Where this rank's bytes of in and out lie, for overlap checks. */
const char *local(const symheap_device_window_t &v, size_t off) {
  return (const char *)symheap_device_local_ptr(&v, off);
}

/* A device-accessible array of n size_t (its memory type is not queried
 * while the stream captures a graph). */
symheap_result_t device_array(const void *p, int n, bool capturing,
                              const char *fn, const char *what) {
  if (!p)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: %s is NULL", fn, what);
  if ((uintptr_t)p % sizeof(size_t))
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: %s at %p is not aligned to %zu bytes", fn, what, p,
                sizeof(size_t));
  if (capturing)
    return SYMHEAP_SUCCESS; /* no driver queries inside a capture */
  cudaPointerAttributes a;
  cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess || a.type == cudaMemoryTypeUnregistered) {
    (void)cudaGetLastError();
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: %s (%d entries at %p) is not memory the device can "
                "read: pass device, managed or registered host memory",
                fn, what, n, p);
  }
  return SYMHEAP_SUCCESS;
}

} // namespace

EXPORT symheap_result_t symheap_cuda_reduce_scatter(
    symheap_window_t in, size_t in_offset, symheap_window_t out,
    size_t out_offset, size_t count, symheap_dtype_t dtype, symheap_redop_t op,
    symheap_algo_t algo, symheap_stream_t stream) {
  const char *fn = "symheap_cuda_reduce_scatter";
  symheap_device_window_t v;
  symheap_result_t r = get_view(in, &v, fn, "input");
  if (r != SYMHEAP_SUCCESS)
    return r;
  const size_t n = (size_t)v.nranks;
  if ((r = reduce_args_ok(fn, dtype, op, algo, SYMHEAP_ALGO_TWO_SHOT, count, n,
                          in_offset, out_offset)) != SYMHEAP_SUCCESS)
    return r;
  const size_t es = elem_size(dtype), bytes = count * es;
  launch_t a;
  if ((r = views(in, in_offset, out, out_offset, n * bytes, bytes, fn, &a)) !=
      SYMHEAP_SUCCESS)
    return r;
  /* An output inside the input must be one whole block of it: the rule
   * names no rank, so ranks given the same arguments reach the same
   * verdict (it once accepted block 0 on rank 0 alone, which then waited
   * in the kernel for peers that had refused).  In place is this rank's
   * block, which only this rank reads (each rank reduces its own block);
   * another block k is reached through it (moved_to, below).  Any other
   * overlap is read by a peer while this rank writes it. */
  const char *li = local(a.in, in_offset), *lo = local(a.out, out_offset);
  const bool over = overlaps(li, n * bytes, lo, bytes);
  if (over && (lo < li || (size_t)(lo - li) % bytes != 0))
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: the output overlaps the input other than as one whole "
                "block of it (in_offset + k * count * element size; in place: "
                "k = rank)",
                fn);
  const size_t cap = ll_capacity(v.nranks);
  symheap_tune_choice_t choice;
  if (algo == SYMHEAP_ALGO_AUTO) {
    /* SYMHEAP_REDUCE_SCATTER_ALGO, the tuning table, or LL while it fits */
    symheap_tune_query_t q = {};
    q.nranks = v.nranks;
    q.bytes = bytes;
    q.ll_cap = cap;
    if ((r = tuned_choice(SYMHEAP_TUNE_REDUCE_SCATTER, &q, &choice)) !=
        SYMHEAP_SUCCESS)
      return r;
    algo = (symheap_algo_t)choice.algo;
  } else {
    launch_override(&choice);
  }
  if (algo == SYMHEAP_ALGO_ONE_SHOT && bytes > cap)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: one-shot (LL) carries up to %zu bytes per rank's block "
                "at %d ranks, not %zu; use SYMHEAP_ALGO_AUTO or "
                "SYMHEAP_ALGO_TWO_SHOT",
                fn, cap, v.nranks, bytes);
  a.stream = (cudaStream_t)stream;
  if ((r = device_ok(&a, fn)) != SYMHEAP_SUCCESS || count == 0)
    return r;
  a.count = count;
  a.dtype = dtype;
  a.op = op;
  apply_choice(choice, &a);
  /* The output is block k != rank of the input: reduce in place at this
   * rank's block (saved first), then move the result to block k and put
   * the block back.  Block k is read by rank k only, and no rank reads this
   * rank's input once its kernel is done (LL: each rank reads only its own
   * input; pipelined: its closing barrier). */
  char *mine = (char *)li + (size_t)v.rank * bytes, *moved_to = NULL;
  void *saved = NULL;
  cudaError_t e = cudaSuccess;
  if (over && lo != mine) {
    moved_to = (char *)lo;
    e = cudaMallocAsync(&saved, bytes, a.stream);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(saved, mine, bytes, cudaMemcpyDeviceToDevice,
                          a.stream);
    if (e != cudaSuccess) {
      if (saved)
        (void)cudaFreeAsync(saved, a.stream);
      return cuda_fail(fn, e);
    }
    a.out = a.in;
    a.out_off = out_offset = in_offset + (size_t)v.rank * bytes;
  }
  if (algo == SYMHEAP_ALGO_ONE_SHOT) {
    e = launch_ll_reduce_scatter(a);
  } else {
    rs_args_t rs;
    rs.first = (size_t)v.rank * count;
    rs.len = rs.grid_len = count;
    rs.out_first = 0;
    rs.barrier_after = true;
    a.aligned = aligned16(a.in, in_offset + rs.first * es) &&
                aligned16(a.out, out_offset);
    e = launch_reduce_scatter(a, rs);
  }
  if (moved_to) {
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(moved_to, mine, bytes, cudaMemcpyDeviceToDevice,
                          a.stream);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(mine, saved, bytes, cudaMemcpyDeviceToDevice,
                          a.stream);
    cudaError_t f = cudaFreeAsync(saved, a.stream);
    e = e == cudaSuccess ? f : e;
  }
  return e == cudaSuccess ? SYMHEAP_SUCCESS : cuda_fail(fn, e);
}

namespace {
symheap_result_t a2a(symheap_window_t in, size_t in_off, size_t in_bytes,
                     symheap_window_t out, size_t out_off, size_t out_bytes,
                     a2a_args_t &x, symheap_stream_t stream, const char *fn) {
  launch_t a;
  symheap_result_t r =
      views(in, in_off, out, out_off, in_bytes, out_bytes, fn, &a);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* Peers store into the output while this rank still sends its input. */
  if (overlaps(local(a.in, in_off), in_bytes, local(a.out, out_off), out_bytes))
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: the input [%zu, +%zu) and the output [%zu, +%zu) "
                "overlap; all-to-all cannot run in place",
                fn, in_off, in_bytes, out_off, out_bytes);
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (x.send_counts &&
      cudaStreamIsCapturing((cudaStream_t)stream, &cs) != cudaSuccess) {
    (void)cudaGetLastError();
    cs = cudaStreamCaptureStatusNone;
  }
  const bool cap = cs != cudaStreamCaptureStatusNone;
  const int n = a.in.nranks;
  if (x.send_counts &&
      ((r = device_array(x.send_counts, n, cap, fn, "send_counts")) !=
           SYMHEAP_SUCCESS ||
       (x.send_offsets &&
        (r = device_array(x.send_offsets, n, cap, fn, "send_offsets")) !=
            SYMHEAP_SUCCESS) ||
       (r = device_array(x.recv_counts, n, cap, fn, "recv_counts")) !=
           SYMHEAP_SUCCESS ||
       (x.recv_offsets &&
        (r = device_array(x.recv_offsets, n, cap, fn, "recv_offsets")) !=
            SYMHEAP_SUCCESS)))
    return r;
  a.stream = (cudaStream_t)stream;
  if ((r = device_ok(&a, fn)) != SYMHEAP_SUCCESS)
    return r;
  if (!x.send_counts && x.uniform == 0)
    return SYMHEAP_SUCCESS;
  if (!x.send_counts) {
    /* the uniform one: SYMHEAP_ALL_TO_ALL_ALGO or the table may take the
     * copy engines (all-to-all-v's counts are on the device: the kernel) */
    symheap_tune_query_t q = {};
    symheap_tune_choice_t choice = {};
    q.nranks = n;
    q.bytes = x.uniform;
    q.ce_ok = ce_available();
    if ((r = tuned_choice(SYMHEAP_TUNE_ALL_TO_ALL, &q, &choice)) !=
        SYMHEAP_SUCCESS)
      return r;
    if (choice.algo == SYMHEAP_TUNE_ZERO_SM)
      return all_to_all_ce(a, x.uniform, fn);
  }
  cudaError_t e = launch_all_to_all(a, x);
  return e == cudaSuccess ? SYMHEAP_SUCCESS : cuda_fail(fn, e);
}
} // namespace

EXPORT symheap_result_t symheap_cuda_all_to_all(symheap_window_t in,
                                                size_t in_offset,
                                                symheap_window_t out,
                                                size_t out_offset, size_t bytes,
                                                symheap_stream_t stream) {
  const char *fn = "symheap_cuda_all_to_all";
  symheap_device_window_t v;
  symheap_result_t r = get_view(in, &v, fn, "input");
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (bytes > SIZE_MAX / (size_t)v.nranks)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: %zu bytes per rank overflows", fn,
                bytes);
  a2a_args_t x = {};
  x.elem = 1;
  x.uniform = bytes;
  size_t total = bytes * (size_t)v.nranks;
  return a2a(in, in_offset, total, out, out_offset, total, x, stream, fn);
}

EXPORT symheap_result_t symheap_cuda_all_to_allv(
    symheap_window_t in, size_t in_offset, size_t in_capacity,
    symheap_window_t out, size_t out_offset, size_t out_capacity,
    size_t elem_size, const size_t *send_counts, const size_t *send_offsets,
    size_t *recv_counts, size_t *recv_offsets, symheap_stream_t stream) {
  const char *fn = "symheap_cuda_all_to_allv";
  if (elem_size == 0)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: elem_size is 0", fn);
  if (!send_counts || !recv_counts)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                !send_counts ? "send_counts" : "recv_counts");
  if (in_capacity > SIZE_MAX / elem_size || out_capacity > SIZE_MAX / elem_size)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: a capacity overflows", fn);
  if (in_offset % elem_size || out_offset % elem_size)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: offsets %zu and %zu must be multiples of elem_size %zu",
                fn, in_offset, out_offset, elem_size);
  a2a_args_t x = {};
  x.elem = elem_size;
  x.send_counts = send_counts;
  x.send_offsets = send_offsets;
  x.recv_counts = recv_counts;
  x.recv_offsets = recv_offsets;
  x.in_cap = in_capacity;
  x.out_cap = out_capacity;
  return a2a(in, in_offset, in_capacity * elem_size, out, out_offset,
             out_capacity * elem_size, x, stream, fn);
}

EXPORT symheap_result_t symheap_cuda_broadcast(symheap_window_t in,
                                               size_t in_offset,
                                               symheap_window_t out,
                                               size_t out_offset, size_t bytes,
                                               int root, unsigned flags,
                                               symheap_stream_t stream) {
  const char *fn = "symheap_cuda_broadcast";
  if (flags & ~(unsigned)SYMHEAP_CUDA_ZERO_SM)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: unknown flags 0x%x", fn, flags);
  launch_t a;
  symheap_result_t r =
      views(in, in_offset, out, out_offset, bytes, bytes, fn, &a);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (root < 0 || root >= a.in.nranks)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: root %d is not a rank of 0..%d",
                fn, root, a.in.nranks - 1);
  const char *li = local(a.in, in_offset), *lo = local(a.out, out_offset);
  if (overlaps(li, bytes, lo, bytes) && li != lo)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: input and output overlap without being the same range",
                fn);
  /* SM or zero-SM: the flag, SYMHEAP_CUDA_ZERO_SM, else
   * SYMHEAP_BROADCAST_ALGO or the tuning table (a bad one fails here). */
  bool zero_sm = (flags & SYMHEAP_CUDA_ZERO_SM) || zero_sm_env();
  symheap_tune_choice_t choice = {};
  if (!zero_sm) {
    symheap_tune_query_t q = {};
    q.nranks = a.in.nranks;
    q.bytes = bytes;
    q.ce_ok = ce_available();
    if ((r = tuned_choice(SYMHEAP_TUNE_BROADCAST, &q, &choice)) !=
        SYMHEAP_SUCCESS)
      return r;
    zero_sm = choice.algo == SYMHEAP_TUNE_ZERO_SM;
  }
  a.stream = (cudaStream_t)stream;
  if ((r = device_ok(&a, fn)) != SYMHEAP_SUCCESS || bytes == 0)
    return r;
  a.count = bytes;
  apply_choice(choice, &a);
  if (zero_sm)
    return broadcast_ce(a, root, fn);
  if (choice.algo == SYMHEAP_TUNE_CE_PIPE)
    return broadcast_ce_pipe(a, root, li == lo, fn);
  a.aligned = aligned16(a.in, in_offset) && aligned16(a.out, out_offset) &&
              bytes % 16 == 0;
  cudaError_t e = choice.algo == SYMHEAP_TUNE_SCATTER
                      ? launch_broadcast_scatter(a, root, li == lo)
                  : choice.algo == SYMHEAP_TUNE_SCATTER_PIPE
                      ? launch_broadcast_scatter_pipe(a, root, li == lo)
                      : launch_broadcast(a, root);
  return e == cudaSuccess ? SYMHEAP_SUCCESS : cuda_fail(fn, e);
}

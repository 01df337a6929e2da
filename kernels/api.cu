/* The C API of libsymheap_cuda.so: argument checks (before anything is
 * enqueued), the choice of algorithm, and the launch.  Nothing here waits on
 * the host or allocates, so every call can be captured in a CUDA graph. */
#include <stdarg.h>
#include <stdio.h>

#include "coll_api.h"
#include "symheap_adaptor.h"
#include "tuning.h"

namespace symheap_coll {

symheap_result_t fail(symheap_result_t r, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return symheap_host_services()->error(r, "%s", buf);
}

symheap_result_t cuda_fail(const char *what, cudaError_t e) {
  return fail(SYMHEAP_ERR_DEVICE, "%s: %s (%s)", what, cudaGetErrorName(e),
              cudaGetErrorString(e));
}

/* The device this thread launches on, and its SM count (cached per device). */
symheap_result_t current_device(int *dev, int *sms) {
  static int cached[64];
  cudaError_t e = cudaGetDevice(dev);
  if (e != cudaSuccess)
    return cuda_fail("cudaGetDevice", e);
  int d = *dev;
  if (d >= 0 && d < 64 && __atomic_load_n(&cached[d], __ATOMIC_RELAXED)) {
    *sms = cached[d];
    return SYMHEAP_SUCCESS;
  }
  e = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, d);
  if (e != cudaSuccess)
    return cuda_fail("cudaDeviceGetAttribute", e);
  if (d >= 0 && d < 64)
    __atomic_store_n(&cached[d], *sms, __ATOMIC_RELAXED);
  return SYMHEAP_SUCCESS;
}

/* A window's memory must be device memory of the device this thread
 * launches on (a host-backend window would fault in the kernel).  Also
 * counts the ranks whose copy is on this device: ranks sharing a GPU (two
 * processes, or threads of one process) need their kernels resident at once,
 * since each waits for the others'.  The answers for the last pad seen are
 * kept per thread: the checks cost driver calls. */
symheap_result_t check_memory(const symheap_device_window_t &v, int dev,
                              const char *fn, int *sharing) {
  static __thread const void *ok_pad;
  static __thread int ok_dev = -1, ok_sharing = 1;
  if (v.pad_base == ok_pad && dev == ok_dev) {
    *sharing = ok_sharing;
    return SYMHEAP_SUCCESS;
  }
  cudaPointerAttributes a;
  const void *p = symheap_device_local_ptr(&v, 0);
  cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* not sticky: clear it */
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: the window's memory at %p is not CUDA memory (%s); "
                "collectives need a comm on the cuda device adaptor",
                fn, p, cudaGetErrorString(e));
  }
  if (a.type != cudaMemoryTypeDevice)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: the window's memory at %p is not device memory; "
                "collectives need a comm on the cuda device adaptor",
                fn, p);
  if (a.device != dev)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: the window's memory is on device %d but this thread's "
                "current device is %d (cudaSetDevice first)",
                fn, a.device, dev);
  int n = 1;
  for (int r = 0; r < v.nranks; r++) {
    if (r == v.rank)
      continue;
    e = cudaPointerGetAttributes(&a, symheap_device_peer_ptr(&v, r, 0));
    if (e != cudaSuccess)
      (void)cudaGetLastError();
    else if (a.type == cudaMemoryTypeDevice && a.device == dev)
      n++;
  }
  ok_pad = v.pad_base;
  ok_dev = dev;
  ok_sharing = *sharing = n;
  return SYMHEAP_SUCCESS;
}

symheap_result_t get_view(symheap_window_t w, symheap_device_window_t *v,
                          const char *fn, const char *which) {
  symheap_result_t r = symheap_window_device_view(w, v);
  if (r != SYMHEAP_SUCCESS)
    return fail(r, "%s: %s window: %s", fn, which, symheap_last_error());
  if (!(v->flags & SYMHEAP_VIEW_PAD))
    return fail(SYMHEAP_ERR_UNSUPPORTED,
                "%s: the %s window's comm has no pad (its device adaptor "
                "cannot clear memory), so it has no collectives",
                fn, which);
  /* A kernel that gives up waiting for a peer must be able to say so. */
  if (!(v->flags & SYMHEAP_VIEW_STATUS))
    return fail(SYMHEAP_ERR_UNSUPPORTED,
                "%s: the %s window's comm has no device status "
                "(SYMHEAP_VIEW_STATUS): its device adaptor has no host_alloc "
                "(symheap_device_ops), so a kernel that gave up waiting for a "
                "peer could not say so; no collectives on it",
                fn, which);
  if (v->nranks > kMaxRanks)
    return fail(SYMHEAP_ERR_UNSUPPORTED,
                "%s: %d ranks; the collectives handle up to %d", fn, v->nranks,
                kMaxRanks);
  if (v->flags & SYMHEAP_VIEW_PARTIAL)
    return fail(SYMHEAP_ERR_UNSUPPORTED,
                "%s: the %s window's comm spans hosts (%d of its %d ranks are "
                "reachable by load/store); these collectives need every rank "
                "on one host: use a comm of symheap_comm_split_local",
                fn, which, v->local_nranks, v->nranks);
  return SYMHEAP_SUCCESS;
}

/* Views of in and out, checked: one comm, extents. */
symheap_result_t views(symheap_window_t in, size_t in_off, symheap_window_t out,
                       size_t out_off, size_t in_bytes, size_t out_bytes,
                       const char *fn, launch_t *a) {
  symheap_result_t r;
  if ((r = get_view(in, &a->in, fn, "input")) != SYMHEAP_SUCCESS ||
      (r = get_view(out, &a->out, fn, "output")) != SYMHEAP_SUCCESS)
    return r;
  if (a->in.pad_base != a->out.pad_base)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: the input and output windows belong to different comms",
                fn);
  if (in_off > a->in.size || in_bytes > a->in.size - in_off)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: input [%zu, +%zu) is outside the window of %llu bytes", fn,
                in_off, in_bytes, (unsigned long long)a->in.size);
  if (out_off > a->out.size || out_bytes > a->out.size - out_off)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: output [%zu, +%zu) is outside the window of %llu bytes",
                fn, out_off, out_bytes, (unsigned long long)a->out.size);
  a->in_off = in_off;
  a->out_off = out_off;
  a->threads = 0;
  a->unroll = 0;
  a->sharing = 1;
  a->peer_stride = 0;
  return SYMHEAP_SUCCESS;
}

/* The windows are device memory of this thread's device; launch limits.
 * a->stream must be set. */
symheap_result_t device_ok(launch_t *a, const char *fn, bool waits) {
  int dev, sms, shared = 1, shared_out = 1;
  symheap_result_t r;
  if ((r = current_device(&dev, &sms)) != SYMHEAP_SUCCESS ||
      (r = check_memory(a->in, dev, fn, &shared)) != SYMHEAP_SUCCESS ||
      (r = check_memory(a->out, dev, fn, &shared_out)) != SYMHEAP_SUCCESS)
    return r;
  if (waits && shared > 1 && (a->stream == 0 || a->stream == cudaStreamLegacy))
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: %d ranks of this comm share device %d, and the stream is "
                "the legacy default stream: ranks that are threads of one "
                "process would queue their kernels behind each other on it, "
                "and each waits for the other's; pass a stream made with "
                "cudaStreamCreateWithFlags(cudaStreamNonBlocking) (or "
                "cudaStreamPerThread)",
                fn, shared, dev);
  /* Ranks sharing the GPU split its SMs, so that all their blocks are
   * resident at once (a block fits one SM by itself). */
  int blocks = sms / shared;
  blocks = blocks < 1 ? 1 : blocks;
  a->max_blocks = blocks < kMaxChannels ? blocks : kMaxChannels;
  a->sharing = shared;
  return shared > 1 ? preload_shared(fn) : SYMHEAP_SUCCESS;
}

symheap_result_t prepare(symheap_window_t in, size_t in_off,
                         symheap_window_t out, size_t out_off, size_t in_bytes,
                         size_t out_bytes, const char *fn, launch_t *a) {
  symheap_result_t r =
      views(in, in_off, out, out_off, in_bytes, out_bytes, fn, a);
  /* a plain copy waits for no peer: any stream will do */
  return r == SYMHEAP_SUCCESS ? device_ok(a, fn, false) : r;
}

bool aligned16(const symheap_device_window_t &v, size_t off) {
  if (v.flags & SYMHEAP_VIEW_FLAT)
    return (((uintptr_t)v.flat_base | v.stride | off) & 15) == 0;
  uintptr_t all = off;
  for (int p = 0; p < v.nranks && p < SYMHEAP_DEVICE_MAX_PEERS; p++)
    all |= (uintptr_t)v.peer_ptrs[p];
  return (all & 15) == 0;
}

symheap_result_t reduce_args_ok(const char *fn, symheap_dtype_t dtype,
                                symheap_redop_t op, symheap_algo_t algo,
                                symheap_algo_t max_algo, size_t count,
                                size_t blocks, size_t in_offset,
                                size_t out_offset) {
  if ((unsigned)dtype > SYMHEAP_FLOAT16)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: unknown dtype %d", fn,
                (int)dtype);
  if ((unsigned)op > SYMHEAP_OP_MAX)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: unknown op %d", fn, (int)op);
  if ((unsigned)algo > (unsigned)max_algo)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: unknown algorithm %d", fn,
                (int)algo);
  size_t es = elem_size(dtype);
  if (count > SIZE_MAX / es / blocks)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: count %zu overflows", fn, count);
  if (in_offset % es || out_offset % es)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: offsets %zu and %zu must be multiples of the element "
                "size (%zu bytes)",
                fn, in_offset, out_offset, es);
  return SYMHEAP_SUCCESS;
}

/* AUTO's choice for an all-reduce of bytes at nranks (tuning.h): forced by
 * SYMHEAP_ALL_REDUCE_ALGO, else this GPU's tuning table, else the
 * thresholds: the LL path while it fits (no barrier, one crossing), the
 * copy engines for the all-gather half from ce_threshold(). */
symheap_result_t choose_all_reduce(int nranks, size_t bytes, bool in_place,
                                   symheap_tune_choice_t *c) {
  symheap_tune_query_t q = {};
  q.nranks = nranks;
  q.bytes = bytes;
  q.ll_cap = ll_capacity(nranks);
  q.ce_bytes = ce_threshold();
  q.ce_ok = ce_available();
  q.in_place = in_place;
  return tuned_choice(SYMHEAP_TUNE_ALL_REDUCE, &q, c);
}

} // namespace symheap_coll

using namespace symheap_coll;

EXPORT symheap_result_t symheap_cuda_all_reduce_algo(symheap_window_t win,
                                                     size_t count,
                                                     symheap_dtype_t dtype,
                                                     symheap_algo_t *algo) {
  const char *fn = "symheap_cuda_all_reduce_algo";
  symheap_device_window_t v;
  symheap_result_t r = get_view(win, &v, fn, "the");
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (!algo || (unsigned)dtype > SYMHEAP_FLOAT16)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: %s", fn,
                !algo ? "algo is NULL" : "unknown dtype");
  symheap_tune_choice_t c;
  r = choose_all_reduce(v.nranks, count * elem_size(dtype), false, &c);
  if (r == SYMHEAP_SUCCESS)
    *algo = (symheap_algo_t)c.algo;
  return r;
}

EXPORT symheap_result_t symheap_cuda_all_reduce(
    symheap_window_t in, size_t in_offset, symheap_window_t out,
    size_t out_offset, size_t count, symheap_dtype_t dtype, symheap_redop_t op,
    symheap_algo_t algo, symheap_stream_t stream) {
  const char *fn = "symheap_cuda_all_reduce";
  symheap_result_t r =
      reduce_args_ok(fn, dtype, op, algo, SYMHEAP_ALGO_ONE_SHOT_LL128, count,
                     1, in_offset, out_offset);
  if (r != SYMHEAP_SUCCESS)
    return r;
  size_t es = elem_size(dtype);
  launch_t a;
  size_t bytes = count * es;
  r = views(in, in_offset, out, out_offset, bytes, bytes, fn, &a);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* Peers read every rank's input while outputs are written: an output
   * that overlaps the input is only safe exactly in place, and only where
   * no rank overwrites what a peer still reads (LL copies inputs first,
   * two-shot writes shard r only after every rank has read it). */
  const char *li = (const char *)symheap_device_local_ptr(&a.in, in_offset);
  const char *lo = (const char *)symheap_device_local_ptr(&a.out, out_offset);
  bool overlap = bytes && li < lo + bytes && lo < li + bytes;
  if (overlap && li != lo)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: input and output overlap without being the same range; "
                "use the same offset (in place) or disjoint ranges",
                fn);
  symheap_tune_choice_t choice;
  if (algo == SYMHEAP_ALGO_AUTO) {
    if ((r = choose_all_reduce(a.in.nranks, bytes, overlap, &choice)) !=
        SYMHEAP_SUCCESS)
      return r;
    algo = (symheap_algo_t)choice.algo;
  } else {
    launch_override(&choice);
  }
  if (overlap && algo == SYMHEAP_ALGO_ONE_SHOT &&
      bytes > ll_capacity(a.in.nranks))
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: one-shot cannot run in place above %zu bytes (a rank "
                "would overwrite an input its peers still read); use "
                "SYMHEAP_ALGO_AUTO or SYMHEAP_ALGO_TWO_SHOT",
                fn, ll_capacity(a.in.nranks));
  a.stream = (cudaStream_t)stream;
  if ((r = device_ok(&a, fn)) != SYMHEAP_SUCCESS || count == 0)
    return r;
  a.count = count;
  a.dtype = dtype;
  a.op = op;
  a.aligned = aligned16(a.in, in_offset) && aligned16(a.out, out_offset);
  apply_choice(choice, &a);
  if (algo == SYMHEAP_ALGO_RS_COPY_ENGINE)
    return all_reduce_rs_ce(a, fn);
  if (algo == SYMHEAP_ALGO_RS_CE_PIPELINED)
    return all_reduce_rs_ce_pipelined(a, fn);
  cudaError_t e;
  if (algo == SYMHEAP_ALGO_ONE_SHOT_LL128) {
    if (ll128_fits(a))
      e = launch_ll128(a);
    else
      e = launch_two_shot(a); /* too big for the staging, or odd ranks */
  } else if (algo == SYMHEAP_ALGO_ONE_SHOT_PUSH ||
             algo == SYMHEAP_ALGO_TWO_SHOT_PUSH) {
    bool two = algo == SYMHEAP_ALGO_TWO_SHOT_PUSH;
    if (push_fits(a, two))
      e = launch_push(a, two);
    else
      e = launch_two_shot(a); /* too big for the staging, or odd ranks */
  } else if (algo == SYMHEAP_ALGO_TWO_SHOT)
    e = launch_two_shot(a);
  else if (bytes <= ll_capacity(a.in.nranks))
    e = launch_ll_one_shot(a);
  else
    e = launch_one_shot(a);
  return e == cudaSuccess ? SYMHEAP_SUCCESS : cuda_fail(fn, e);
}

EXPORT symheap_result_t symheap_cuda_all_gather(symheap_window_t in,
                                                size_t in_offset,
                                                symheap_window_t out,
                                                size_t out_offset, size_t bytes,
                                                symheap_stream_t stream) {
  return symheap_cuda_all_gather_flags(in, in_offset, out, out_offset, bytes, 0,
                                       stream);
}

EXPORT symheap_result_t symheap_cuda_all_gather_flags(
    symheap_window_t in, size_t in_offset, symheap_window_t out,
    size_t out_offset, size_t bytes, unsigned flags, symheap_stream_t stream) {
  const char *fn = "symheap_cuda_all_gather";
  if (flags & ~(unsigned)SYMHEAP_CUDA_ZERO_SM)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: unknown flags 0x%x", fn, flags);
  symheap_device_window_t v;
  symheap_result_t r = get_view(in, &v, fn, "input");
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (bytes > SIZE_MAX / (size_t)v.nranks)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: %zu bytes per rank overflows", fn,
                bytes);
  launch_t a;
  r = views(in, in_offset, out, out_offset, bytes, bytes * (size_t)v.nranks, fn,
            &a);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* An input inside the output must be one whole block of it.  The rule
   * names no rank, so ranks given the same arguments reach the same verdict
   * (it once accepted block 0 on rank 0 alone, which then waited in the
   * kernel for peers that had refused).  In place is this rank's block;
   * another block k is first copied to this rank's block (peers write
   * into block k only after the kernel's first barrier, which follows the
   * copy on this stream), then it runs in place.  Any other overlap is
   * overwritten by peers' blocks while it is being sent. */
  char *li = (char *)symheap_device_local_ptr(&a.in, in_offset);
  char *lo = (char *)symheap_device_local_ptr(&a.out, out_offset);
  size_t total = bytes * (size_t)v.nranks;
  bool over = bytes && li < lo + total && lo < li + bytes;
  if (over && (li < lo || (size_t)(li - lo) % bytes != 0))
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "%s: the input overlaps the output other than as one whole "
                "block of it (out_offset + k * bytes; in place: k = rank)",
                fn);
  /* SM or zero-SM: the flag, SYMHEAP_CUDA_ZERO_SM, else
   * SYMHEAP_ALL_GATHER_ALGO or the tuning table (a bad one fails here). */
  bool zero_sm = (flags & SYMHEAP_CUDA_ZERO_SM) || zero_sm_env();
  symheap_tune_choice_t choice = {};
  if (!zero_sm) {
    symheap_tune_query_t q = {};
    q.nranks = v.nranks;
    q.bytes = bytes;
    q.ce_ok = ce_available();
    if ((r = tuned_choice(SYMHEAP_TUNE_ALL_GATHER, &q, &choice)) !=
        SYMHEAP_SUCCESS)
      return r;
    zero_sm = choice.algo == SYMHEAP_TUNE_ZERO_SM;
  }
  a.stream = (cudaStream_t)stream;
  if ((r = device_ok(&a, fn)) != SYMHEAP_SUCCESS || bytes == 0)
    return r;
  apply_choice(choice, &a);
  char *mine = lo + (size_t)v.rank * bytes;
  if (over && li != mine) {
    cudaError_t ce = cudaMemcpyAsync(mine, li, bytes, cudaMemcpyDeviceToDevice,
                                     a.stream);
    if (ce != cudaSuccess)
      return cuda_fail(fn, ce);
    a.in = a.out;
    a.in_off = out_offset + (size_t)v.rank * bytes;
    in_offset = a.in_off;
  }
  a.count = bytes;
  if (zero_sm)
    return all_gather_ce(a, fn);
  a.aligned = aligned16(a.in, in_offset) && aligned16(a.out, out_offset) &&
              bytes % 16 == 0;
  cudaError_t e = launch_all_gather(a);
  return e == cudaSuccess ? SYMHEAP_SUCCESS : cuda_fail(fn, e);
}

namespace symheap_coll {
symheap_result_t copy(void *local, symheap_window_t win, int peer,
                      size_t offset, size_t bytes, symheap_stream_t stream,
                      bool put, const char *fn) {
  launch_t a;
  if (!local)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                put ? "src" : "dst");
  symheap_result_t r = get_view(win, &a.in, fn, "the");
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (peer < 0 || peer >= a.in.nranks)
    return fail(SYMHEAP_ERR_INVALID_ARG, "%s: peer %d is not a rank of 0..%d",
                fn, peer, a.in.nranks - 1);
  a.stream = (cudaStream_t)stream;
  r = prepare(win, offset, win, offset, bytes, bytes, fn, &a);
  if (r != SYMHEAP_SUCCESS || bytes == 0)
    return r;
  /* cudaMemcpyAsync through the mapping: on 2x H200 the copy engines move
   * 392 GB/s (write) and 374 GB/s (read) where SM loads and stores reach
   * 367 and 338 (symheap-bench --collectives measures both).  It is a
   * memcpy node under graph capture. */
  void *remote = symheap_device_peer_ptr(&a.in, peer, offset);
  cudaError_t e =
      cudaMemcpyAsync(put ? remote : local, put ? local : remote, bytes,
                      cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
  return e == cudaSuccess ? SYMHEAP_SUCCESS : cuda_fail(fn, e);
}
} // namespace symheap_coll

EXPORT symheap_result_t symheap_cuda_put(symheap_window_t win, int peer,
                                         size_t offset, const void *src,
                                         size_t bytes,
                                         symheap_stream_t stream) {
  return copy((void *)src, win, peer, offset, bytes, stream, true,
              "symheap_cuda_put");
}

EXPORT symheap_result_t symheap_cuda_get(void *dst, symheap_window_t win,
                                         int peer, size_t offset, size_t bytes,
                                         symheap_stream_t stream) {
  return copy(dst, win, peer, offset, bytes, stream, false, "symheap_cuda_get");
}

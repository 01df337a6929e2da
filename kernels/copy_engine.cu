/* The copy-engine paths: data moved by cudaMemcpyAsync on mapped peer
 * addresses, ordered by stream memory operations (cuStreamWriteValue32 /
 * cuStreamWaitValue32) on 32-bit flags of the comm pad, so ordering costs no
 * SM either.
 *
 * Flags (coll_common.cuh): ce_ready[sender] and ce_done[sender] on each
 * rank.  A rank sets a peer's flag to 1; the peer waits for 1 on its stream
 * and then resets it to 0.  Only constants are written, so a captured graph
 * replays correctly.  A flag cannot be set again before its reset: a rank
 * sets a peer's flag for the next call only after the peer's flag for this
 * call (which the peer sends after its reset) has reached it.  Where ranks
 * share one GPU (sharing > 1) the waits are one-thread kernels instead: see
 * ce_wait_kernel.
 *
 *  all-gather: ready to every peer (my output is free), wait for every
 *    peer's ready, copy my block into every output, done to every peer,
 *    wait for every peer's done.
 *  all-to-all (uniform): as the all-gather, block p of my input going to
 *    peer p's output at my index.
 *  broadcast: root sends ready (its input is written); each rank waits,
 *    copies root's input into its own output, sends done to root; root
 *    waits for every done before its input may be reused.
 *  broadcast, pipelined (ce_pipe): ready both ways (every output free);
 *    root copies each chunk of part p (the buffer in n - 1 parts) into
 *    rank p's output and sets p's ce_prog[root] to the chunk's number;
 *    rank p waits for each number (>=) and copies that chunk of its part
 *    from its output into every other rank's (root's too unless in place),
 *    resets the flag after the last, then done both ways.  Forwarding
 *    chunk c runs under root's copies of chunk c + 1.
 *  all-reduce: the reduce-scatter kernel (one barrier: every rank is in the
 *    call, so every output is free) leaves shard r reduced in rank r's own
 *    output; the copy engines copy it into every peer's output, then done to
 *    every peer and wait for every peer's done.  In place is safe: shard r
 *    of any input is read only by rank r, before its copies are queued.
 *  all-reduce, pipelined: the same in chunks (each cut in shards as above;
 *    SYMHEAP_CUDA_PIPE_CHUNK bytes, or an eighth of the buffer, 8-32 MiB).
 *    The reduce-scatter kernels of every chunk go on the caller's stream
 *    (only the first has a barrier: after it every rank is in the call);
 *    after chunk k's kernel an event lets a second stream of this thread
 *    copy chunk k's shard into every peer while the SMs reduce chunk k + 1.
 *    The second stream joins the caller's before the done exchange.  Events
 *    and a joined second stream are what graph capture records as a fork
 *    and a join, so a captured call replays the same. */
#include <cuda.h>
#include <stdlib.h>

#include "coll_api.h"
#include "symheap_adaptor.h"
#include "symheap_cuda_load.h"

namespace symheap_coll {

namespace {

typedef CUresult (*memop32_t)(CUstream, CUdeviceptr, cuuint32_t, unsigned);

struct memops_t {
  memop32_t wait, write;
};

memops_t load_memops() {
  memops_t m = {(memop32_t)symheap_cuda__entry("cuStreamWaitValue32", 12000),
                (memop32_t)symheap_cuda__entry("cuStreamWriteValue32", 12000)};
  if (!m.wait || !m.write)
    m.wait = m.write = NULL; /* both or neither */
  return m;
}

const memops_t &memops() {
  static const memops_t m = load_memops(); /* thread-safe once */
  return m;
}

CUdeviceptr flag_addr(const launch_t &a, int owner, size_t which, int sender) {
  return (CUdeviceptr)(uintptr_t)symheap_device_pad_ptr(
      &a.in, owner, SYMHEAP_PAD_COLL_OFFSET + which + (size_t)sender * 4);
}

/* Set `peer`'s flag `which` [me] to 1. */
CUresult ce_signal(const launch_t &a, size_t which, int peer) {
  return memops().write((CUstream)a.stream,
                        flag_addr(a, peer, which, a.in.rank), 1,
                        CU_STREAM_WRITE_VALUE_DEFAULT);
}

/* The wait as a one-block kernel: where ranks are threads sharing one GPU,
 * their streams can share a hardware queue, and a stream wait at its head
 * would hold back the peer's signal queued behind it.  A kernel that spins
 * has left the queue. */
__global__ void ce_wait_kernel(uint32_t *f, view_t w, int peer) {
  uint32_t v;
  symheap_dev_wait_t c = {0, 0};
  for (;;) {
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];"
                 : "=r"(v)
                 : "l"(f)
                 : "memory");
    if (v == 1)
      break;
    if (symheap_dev__wait_over(c, own_pad(w), w.timeout_ns)) {
      symheap_dev__gave_up(c, own_pad(w), w.status, SYMHEAP_WAIT_CE_FLAG,
                           peer, 1, v);
      return; /* the flag stays: the comm is broken */
    }
  }
  *(volatile uint32_t *)f = 0;
}

/* Wait for my flag `which` [peer] to be 1, then reset it. */
CUresult ce_await(const launch_t &a, size_t which, int peer) {
  CUdeviceptr f = flag_addr(a, a.in.rank, which, peer);
  if (a.sharing > 1) {
    ce_wait_kernel<<<1, 1, 0, a.stream>>>((uint32_t *)(uintptr_t)f, a.in,
                                          peer);
    return cudaGetLastError() == cudaSuccess ? CUDA_SUCCESS
                                             : CUDA_ERROR_LAUNCH_FAILED;
  }
  CUresult r = memops().wait((CUstream)a.stream, f, 1, CU_STREAM_WAIT_VALUE_EQ);
  return r != CUDA_SUCCESS ? r
                           : memops().write((CUstream)a.stream, f, 0,
                                            CU_STREAM_WRITE_VALUE_DEFAULT);
}

/* Signal every peer, then wait for every peer (flag `which`). */
CUresult ce_exchange(const launch_t &a, size_t which) {
  CUresult r = CUDA_SUCCESS;
  for (int k = 1; k < a.in.nranks && r == CUDA_SUCCESS; k++)
    r = ce_signal(a, which, (a.in.rank + k) % a.in.nranks);
  for (int k = 1; k < a.in.nranks && r == CUDA_SUCCESS; k++)
    r = ce_await(a, which, (a.in.rank + a.in.nranks - k) % a.in.nranks);
  return r;
}

symheap_result_t memop_fail(const char *fn, CUresult r) {
  return fail(SYMHEAP_ERR_DEVICE,
              "%s: a stream memory operation failed (CUresult %d); the "
              "collective is incomplete on this rank",
              fn, (int)r);
}

symheap_result_t need_memops(const char *fn) {
  return ce_available()
             ? SYMHEAP_SUCCESS
             : fail(SYMHEAP_ERR_UNSUPPORTED,
                    "%s: the copy-engine path needs the driver's stream "
                    "memory operations (cuStreamWaitValue32), which this "
                    "driver does not offer",
                    fn);
}

} // namespace

/* Both variables are declared in libsymheap's table, so a malformed value
 * has already failed comm init, naming it; read them validated, once. */
bool zero_sm_env() {
  static const bool on = [] {
    int v = 0;
    return symheap_host_services()->param_get_bool("SYMHEAP_CUDA_ZERO_SM",
                                                   &v) == SYMHEAP_SUCCESS &&
           v;
  }();
  return on;
}

size_t ce_threshold() {
  static const size_t t = [] {
    long v = 64l << 20;
    (void)symheap_host_services()->param_get_int("SYMHEAP_CUDA_CE_BYTES", &v);
    return (size_t)v;
  }();
  return t;
}

bool ce_available() { return memops().wait && memops().write; }

symheap_result_t all_gather_ce(launch_t &a, const char *fn) {
  symheap_result_t rr = need_memops(fn);
  if (rr != SYMHEAP_SUCCESS)
    return rr;
  const int n = a.in.nranks, me = a.in.rank;
  const size_t bytes = a.count, mine = a.out_off + (size_t)me * bytes;
  const void *src = symheap_device_local_ptr(&a.in, a.in_off);
  CUresult r = ce_exchange(a, kCeReady);
  for (int k = 0; k < n && r == CUDA_SUCCESS; k++) {
    void *dst = symheap_device_peer_ptr(&a.out, (me + k) % n, mine);
    if (dst != src && cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                      a.stream) != cudaSuccess)
      return cuda_fail(fn, cudaGetLastError());
  }
  if (r == CUDA_SUCCESS)
    r = ce_exchange(a, kCeDone);
  return r == CUDA_SUCCESS ? SYMHEAP_SUCCESS : memop_fail(fn, r);
}

/* As the all-gather: every output free, then block p of my input into
 * p's output at my index, then done both ways. */
symheap_result_t all_to_all_ce(launch_t &a, size_t bytes, const char *fn) {
  symheap_result_t rr = need_memops(fn);
  if (rr != SYMHEAP_SUCCESS)
    return rr;
  const int n = a.in.nranks, me = a.in.rank;
  const char *src = (const char *)symheap_device_local_ptr(&a.in, a.in_off);
  CUresult r = ce_exchange(a, kCeReady);
  for (int k = 0; k < n && r == CUDA_SUCCESS; k++) {
    const int p = (me + k) % n;
    void *dst =
        symheap_device_peer_ptr(&a.out, p, a.out_off + (size_t)me * bytes);
    if (cudaMemcpyAsync(dst, src + (size_t)p * bytes, bytes,
                        cudaMemcpyDeviceToDevice, a.stream) != cudaSuccess)
      return cuda_fail(fn, cudaGetLastError());
  }
  if (r == CUDA_SUCCESS)
    r = ce_exchange(a, kCeDone);
  return r == CUDA_SUCCESS ? SYMHEAP_SUCCESS : memop_fail(fn, r);
}

/* Chunks of the pipelined copy-engine broadcast: a part in chunks of about
 * 4 MiB of the buffer, 1 to 16, 256-byte aligned. */
static size_t bce_chunks(size_t bytes) {
  size_t k = bytes / (4u << 20);
  return k < 1 ? 1 : k > 16 ? 16 : k;
}

/* One chunk [lo, hi) of the buffer from `src` into `to` (a bit per rank). */
static symheap_result_t bce_copy(launch_t &a, const char *src, uint32_t to,
                                 size_t lo, size_t hi, const char *fn) {
  for (int q = 0; q < a.in.nranks && lo < hi; q++)
    if ((to >> q & 1) &&
        cudaMemcpyAsync(symheap_device_peer_ptr(&a.out, q, a.out_off + lo),
                        src + lo, hi - lo, cudaMemcpyDeviceToDevice,
                        a.stream) != cudaSuccess)
      return cuda_fail(fn, cudaGetLastError());
  return SYMHEAP_SUCCESS;
}

symheap_result_t broadcast_ce_pipe(launch_t &a, int root, bool skip_root,
                                   const char *fn) {
  symheap_result_t rr = need_memops(fn);
  if (rr != SYMHEAP_SUCCESS)
    return rr;
  const int n = a.in.nranks, me = a.in.rank;
  /* One rank: a copy; ranks sharing a GPU wait with kernels (==, not >=) */
  if (n < 2 || a.sharing > 1)
    return broadcast_ce(a, root, fn);
  const size_t bytes = a.count, parts = (size_t)n - 1, k = bce_chunks(bytes);
  const size_t part = ((bytes + parts - 1) / parts + 255) & ~(size_t)255;
  const size_t step = ((part + k - 1) / k + 255) & ~(size_t)255;
  CUresult r = ce_exchange(a, kCeReady); /* every output is free */
  if (me == root) {
    const char *src = (const char *)symheap_device_local_ptr(&a.in, a.in_off);
    for (size_t c = 0; c < k && r == CUDA_SUCCESS; c++) {
      for (size_t p = 0; p < parts; p++) {
        const int dest = (root + 1 + (int)p) % n;
        size_t lo = p * part + c * step, end = (p + 1) * part;
        lo = lo < bytes ? lo : bytes;
        size_t hi = lo + step < end ? lo + step : end;
        hi = hi < bytes ? hi : bytes;
        if ((rr = bce_copy(a, src, 1u << dest, lo, hi, fn)) != SYMHEAP_SUCCESS)
          return rr;
      }
      for (size_t p = 0; p < parts && r == CUDA_SUCCESS; p++)
        r = memops().write((CUstream)a.stream,
                           flag_addr(a, (root + 1 + (int)p) % n, kCeProg, me),
                           (cuuint32_t)(c + 1), CU_STREAM_WRITE_VALUE_DEFAULT);
    }
  } else {
    const size_t p = (size_t)((me - root - 1 + n) % n);
    const char *own = (const char *)symheap_device_local_ptr(&a.out, a.out_off);
    const CUdeviceptr f = flag_addr(a, me, kCeProg, root);
    uint32_t to = 0;
    for (int q = 0; q < n; q++)
      if (q != me && !(skip_root && q == root))
        to |= 1u << q;
    for (size_t c = 0; c < k && r == CUDA_SUCCESS; c++) {
      r = memops().wait((CUstream)a.stream, f, (cuuint32_t)(c + 1),
                        CU_STREAM_WAIT_VALUE_GEQ);
      size_t lo = p * part + c * step, end = (p + 1) * part;
      lo = lo < bytes ? lo : bytes;
      size_t hi = lo + step < end ? lo + step : end;
      hi = hi < bytes ? hi : bytes;
      if (r == CUDA_SUCCESS &&
          (rr = bce_copy(a, own, to, lo, hi, fn)) != SYMHEAP_SUCCESS)
        return rr;
    }
    if (r == CUDA_SUCCESS) /* root wrote its last value: this call's done */
      r = memops().write((CUstream)a.stream, f, 0,
                         CU_STREAM_WRITE_VALUE_DEFAULT);
  }
  if (r == CUDA_SUCCESS)
    r = ce_exchange(a, kCeDone); /* every copy into every output landed */
  return r == CUDA_SUCCESS ? SYMHEAP_SUCCESS : memop_fail(fn, r);
}

symheap_result_t broadcast_ce(launch_t &a, int root, const char *fn) {
  symheap_result_t rr = need_memops(fn);
  if (rr != SYMHEAP_SUCCESS)
    return rr;
  const int n = a.in.nranks, me = a.in.rank;
  const void *src = symheap_device_peer_ptr(&a.in, root, a.in_off);
  void *dst = symheap_device_local_ptr(&a.out, a.out_off);
  CUresult r = CUDA_SUCCESS;
  if (me == root)
    for (int k = 1; k < n && r == CUDA_SUCCESS; k++)
      r = ce_signal(a, kCeReady, (me + k) % n);
  else
    r = ce_await(a, kCeReady, root);
  if (r == CUDA_SUCCESS && dst != src &&
      cudaMemcpyAsync(dst, src, a.count, cudaMemcpyDeviceToDevice, a.stream) !=
          cudaSuccess)
    return cuda_fail(fn, cudaGetLastError());
  if (me == root)
    for (int k = 1; k < n && r == CUDA_SUCCESS; k++)
      r = ce_await(a, kCeDone, (me + k) % n);
  else if (r == CUDA_SUCCESS)
    r = ce_signal(a, kCeDone, root);
  return r == CUDA_SUCCESS ? SYMHEAP_SUCCESS : memop_fail(fn, r);
}

symheap_result_t all_reduce_rs_ce(launch_t &a, const char *fn) {
  symheap_result_t rr = need_memops(fn);
  if (rr != SYMHEAP_SUCCESS)
    return rr;
  const int n = a.in.nranks, me = a.in.rank;
  const size_t es = elem_size(a.dtype), per_unit = 16 / es;
  /* Shards of whole 16-byte units, as the two-shot cuts them. */
  size_t nunits = (a.count + per_unit - 1) / per_unit;
  size_t shard = (nunits + n - 1) / n * per_unit;
  rs_args_t r;
  r.first = (size_t)me * shard < a.count ? (size_t)me * shard : a.count;
  r.len = a.count - r.first < shard ? a.count - r.first : shard;
  r.out_first = r.first;
  r.grid_len = shard;
  r.barrier_after = false;
  cudaError_t e = launch_reduce_scatter(a, r);
  if (e != cudaSuccess)
    return cuda_fail(fn, e);
  const size_t off = a.out_off + r.first * es;
  const void *src = symheap_device_local_ptr(&a.out, off);
  for (int k = 1; k < n && r.len; k++)
    if (cudaMemcpyAsync(symheap_device_peer_ptr(&a.out, (me + k) % n, off), src,
                        r.len * es, cudaMemcpyDeviceToDevice,
                        a.stream) != cudaSuccess)
      return cuda_fail(fn, cudaGetLastError());
  CUresult c = ce_exchange(a, kCeDone);
  return c == CUDA_SUCCESS ? SYMHEAP_SUCCESS : memop_fail(fn, c);
}

namespace {

/* This thread's second stream and events on one device (made once, kept:
 * a thread that calls once will call again). */
struct side_t {
  cudaStream_t s;
  cudaEvent_t fork, join;
  bool made;
};
constexpr int kSideDevices = 64;
thread_local side_t side_res[kSideDevices];

cudaError_t side_for(side_t **out) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess)
    return e;
  if (dev < 0 || dev >= kSideDevices)
    return cudaErrorInvalidDevice;
  side_t &d = side_res[dev];
  if (!d.made) {
    /* Under a global-mode capture making streams is refused: relax it. */
    cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&m);
    e = cudaStreamCreateWithFlags(&d.s, cudaStreamNonBlocking);
    if (e == cudaSuccess &&
        (e = cudaEventCreateWithFlags(&d.fork, cudaEventDisableTiming)) !=
            cudaSuccess)
      (void)cudaStreamDestroy(d.s);
    if (e == cudaSuccess &&
        (e = cudaEventCreateWithFlags(&d.join, cudaEventDisableTiming)) !=
            cudaSuccess) {
      (void)cudaEventDestroy(d.fork);
      (void)cudaStreamDestroy(d.s);
    }
    (void)cudaThreadExchangeStreamCaptureMode(&m);
    if (e != cudaSuccess)
      return e;
    d.made = true;
  }
  *out = &d;
  return cudaSuccess;
}

/* Elements per chunk: SYMHEAP_CUDA_PIPE_CHUNK bytes, or an eighth of the
 * buffer, 8 to 32 MiB (each chunk costs a kernel and n - 1 copies: at 64
 * MiB, 16 chunks' copies would be 1 MiB each, where a copy's fixed cost
 * shows); in whole 16-byte units times nranks so every shard is whole
 * units. */
size_t pipe_chunk(size_t count, size_t es, int n) {
  static const size_t env = [] {
    long v = 0;
    (void)symheap_host_services()->param_get_int("SYMHEAP_CUDA_PIPE_CHUNK", &v);
    return (size_t)(v > 0 ? v : 0);
  }();
  const size_t per_unit = 16 / es, bytes = count * es;
  size_t c = bytes / 8;
  c = env               ? env
      : c < (8u << 20)  ? (8u << 20)
      : c > (32u << 20) ? (32u << 20)
                        : c;
  size_t units = c / 16 / (size_t)n * (size_t)n;
  return (units ? units : (size_t)n) * per_unit;
}

/* Chunk [c0, c0 + len) elements: shard `me` reduced by the SMs, then (on
 * the side stream) copied into every peer. */
cudaError_t pipe_chunk_run(launch_t &a, side_t *sd, size_t c0, size_t len,
                           bool first) {
  const int n = a.in.nranks, me = a.in.rank;
  const size_t es = elem_size(a.dtype), per_unit = 16 / es;
  size_t shard = ((len + per_unit - 1) / per_unit + n - 1) / n * per_unit;
  rs_args_t r;
  size_t lo = (size_t)me * shard < len ? (size_t)me * shard : len;
  r.first = c0 + lo;
  r.len = len - lo < shard ? len - lo : shard;
  r.out_first = r.first;
  r.grid_len = shard;
  r.barrier_before = first;
  r.barrier_after = false;
  cudaError_t e = launch_reduce_scatter(a, r);
  if (e != cudaSuccess || !r.len)
    return e;
  if ((e = cudaEventRecord(sd->fork, a.stream)) != cudaSuccess ||
      (e = cudaStreamWaitEvent(sd->s, sd->fork, 0)) != cudaSuccess)
    return e;
  const size_t off = a.out_off + r.first * es;
  const void *src = symheap_device_local_ptr(&a.out, off);
  for (int k = 1; k < n && e == cudaSuccess; k++)
    e = cudaMemcpyAsync(symheap_device_peer_ptr(&a.out, (me + k) % n, off), src,
                        r.len * es, cudaMemcpyDeviceToDevice, sd->s);
  return e;
}

} // namespace

symheap_result_t all_reduce_rs_ce_pipelined(launch_t &a, const char *fn) {
  symheap_result_t rr = need_memops(fn);
  if (rr != SYMHEAP_SUCCESS)
    return rr;
  /* Ranks sharing a GPU wait with kernels (ce_await): keep it one stream. */
  const size_t es = elem_size(a.dtype);
  const size_t chunk = pipe_chunk(a.count, es, a.in.nranks);
  if (a.sharing > 1 || a.count <= chunk)
    return all_reduce_rs_ce(a, fn);
  side_t *sd = NULL;
  cudaError_t e = side_for(&sd);
  for (size_t c0 = 0; c0 < a.count && e == cudaSuccess; c0 += chunk)
    e = pipe_chunk_run(a, sd, c0, a.count - c0 < chunk ? a.count - c0 : chunk,
                       c0 == 0);
  /* Join even after a failure, so a capture is not left forked. */
  cudaError_t j = sd ? cudaEventRecord(sd->join, sd->s) : cudaSuccess;
  if (sd && j == cudaSuccess)
    j = cudaStreamWaitEvent(a.stream, sd->join, 0);
  if (e == cudaSuccess)
    e = j;
  if (e != cudaSuccess)
    return cuda_fail(fn, e);
  CUresult c = ce_exchange(a, kCeDone);
  return c == CUDA_SUCCESS ? SYMHEAP_SUCCESS : memop_fail(fn, c);
}

const void *anchor_copy_engine() { return (const void *)ce_wait_kernel; }

} // namespace symheap_coll

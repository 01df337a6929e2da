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
 *  broadcast: root sends ready (its input is written); each rank waits,
 *    copies root's input into its own output, sends done to root; root
 *    waits for every done before its input may be reused.
 *  all-reduce: the reduce-scatter kernel (one barrier: every rank is in the
 *    call, so every output is free) leaves shard r reduced in rank r's own
 *    output; the copy engines copy it into every peer's output, then done to
 *    every peer and wait for every peer's done.  In place is safe: shard r
 *    of any input is read only by rank r, before its copies are queued. */
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
__global__ void ce_wait_kernel(uint32_t *f) {
  uint32_t v;
  do
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];"
                 : "=r"(v)
                 : "l"(f)
                 : "memory");
  while (v != 1);
  *(volatile uint32_t *)f = 0;
}

/* Wait for my flag `which` [peer] to be 1, then reset it. */
CUresult ce_await(const launch_t &a, size_t which, int peer) {
  CUdeviceptr f = flag_addr(a, a.in.rank, which, peer);
  if (a.sharing > 1) {
    ce_wait_kernel<<<1, 1, 0, a.stream>>>((uint32_t *)(uintptr_t)f);
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

const void *anchor_copy_engine() { return (const void *)ce_wait_kernel; }

} // namespace symheap_coll

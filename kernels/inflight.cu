/* A bound on the collectives a rank may have queued ahead of its GPU, where
 * ranks share one GPU.
 *
 * Why: a collective's kernel waits on the GPU for the peers' matching
 * kernels.  When two ranks are threads of one process on one GPU, a thread
 * that queues far ahead of its stalled GPU (1,000 calls with no host sync)
 * fills the driver's queue and then blocks inside the launch; the driver
 * then holds back the other thread's launches too, including the one the
 * stalled kernel waits for, and nobody moves again.  Observed with two
 * thread-ranks on one H100 (bench/gpu_hang.sh); as processes, each rank has
 * its own context and queue, so nothing blocks the peer.
 *
 * So each thread keeps a ring of events, one recorded before each of its
 * last SYMHEAP_CUDA_INFLIGHT collectives; before queueing another, it waits
 * (on the host, bounded by SYMHEAP_TIMEOUT_MS) until everything it queued
 * before the call that many back has finished.  The wait needs no lock the peer
 * thread wants, and a peer that never makes the matching call ends it with
 * SYMHEAP_ERR_TIMEOUT instead of a hang.  Not while the stream captures a
 * graph (nothing runs then; a graph's launch is one entry of the queue). */
#include <pthread.h>
#include <sched.h>

#include <new>

#include "coll_api.h"
#include "symheap_adaptor.h"

namespace symheap_coll {

namespace {

constexpr int kMaxInflight = 1024;

struct ring_t {
  int dev = -1, depth = 0, next = 0;
  cudaEvent_t ev[kMaxInflight] = {};
  bool used[kMaxInflight] = {};
};

pthread_key_t ring_key;
pthread_once_t ring_once = PTHREAD_ONCE_INIT;

/* Events are destroyed with the thread that made them (their device's
 * context may be gone at process exit: errors are ignored). */
void ring_free(void *p) {
  ring_t *r = (ring_t *)p;
  for (int i = 0; i < r->depth; i++)
    if (r->ev[i])
      (void)cudaEventDestroy(r->ev[i]);
  delete r;
}

void make_key() { (void)pthread_key_create(&ring_key, ring_free); }

int depth_env() {
  static const int d = [] {
    long v = 16;
    (void)symheap_host_services()->param_get_int("SYMHEAP_CUDA_INFLIGHT", &v);
    return (int)v;
  }();
  return d;
}

long timeout_ms() {
  long v = 30000;
  (void)symheap_host_services()->param_get_int("SYMHEAP_TIMEOUT_MS", &v);
  return v;
}

/* This thread's ring for device dev, made on first use. */
symheap_result_t ring_of(int dev, int depth, const char *fn, ring_t **out) {
  (void)pthread_once(&ring_once, make_key);
  ring_t *r = (ring_t *)pthread_getspecific(ring_key);
  if (r && (r->dev != dev || r->depth != depth)) {
    ring_free(r); /* another device: its events cannot be recorded here */
    r = NULL;
    (void)pthread_setspecific(ring_key, NULL);
  }
  if (r) {
    *out = r;
    return SYMHEAP_SUCCESS;
  }
  r = new (std::nothrow) ring_t;
  if (!r)
    return fail(SYMHEAP_ERR_NO_MEMORY,
                "%s: no memory for the in-flight "
                "ring",
                fn);
  r->dev = dev;
  for (int i = 0; i < depth; i++) {
    cudaError_t e = cudaEventCreateWithFlags(&r->ev[i], cudaEventDisableTiming);
    if (e != cudaSuccess) {
      r->depth = i;
      ring_free(r);
      return cuda_fail(fn, e);
    }
  }
  r->depth = depth;
  if (pthread_setspecific(ring_key, r) != 0) {
    ring_free(r);
    return fail(SYMHEAP_ERR_NO_MEMORY, "%s: pthread_setspecific failed", fn);
  }
  *out = r;
  return SYMHEAP_SUCCESS;
}

/* Until ev has completed, polling; bounded. */
symheap_result_t await_event(cudaEvent_t ev, int depth, int sharing,
                             const char *fn) {
  const symheap_host_services_t *s = symheap_host_services();
  const long ms = timeout_ms();
  const uint64_t end = s->now_ns() + (uint64_t)ms * 1000000u;
  for (unsigned spins = 0;; spins++) {
    cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess)
      return SYMHEAP_SUCCESS;
    if (e != cudaErrorNotReady)
      return cuda_fail(fn, e);
    if (s->now_ns() > end)
      return fail(SYMHEAP_ERR_TIMEOUT,
                  "%s: %d ranks share this GPU, and this rank's collective "
                  "%d calls back has not run after SYMHEAP_TIMEOUT_MS=%ld: a "
                  "peer has not made the matching call (nothing was queued "
                  "for this one)",
                  fn, sharing, depth, ms);
    if (spins > 64)
      sched_yield();
  }
}

} // namespace

symheap_result_t bound_inflight(const launch_t &a, int dev, const char *fn) {
  const int depth = depth_env();
  if (depth <= 0 || a.sharing <= 1)
    return SYMHEAP_SUCCESS;
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(a.stream, &cs);
  if (e != cudaSuccess)
    return cuda_fail(fn, e);
  if (cs != cudaStreamCaptureStatusNone)
    return SYMHEAP_SUCCESS;
  ring_t *r;
  symheap_result_t rr =
      ring_of(dev, depth < kMaxInflight ? depth : kMaxInflight, fn, &r);
  if (rr != SYMHEAP_SUCCESS)
    return rr;
  const int i = r->next;
  if (r->used[i] &&
      (rr = await_event(r->ev[i], r->depth, a.sharing, fn)) != SYMHEAP_SUCCESS)
    return rr;
  if ((e = cudaEventRecord(r->ev[i], a.stream)) != cudaSuccess)
    return cuda_fail(fn, e);
  r->used[i] = true;
  r->next = (i + 1) % r->depth;
  return SYMHEAP_SUCCESS;
}

} // namespace symheap_coll

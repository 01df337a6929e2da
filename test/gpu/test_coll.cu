// GPU tests of the CUDA collectives and the device API (libsymheap_cuda.so).
//
// Inputs are random (a fresh seed from rank 0 for every check) on a grid of
// values every dtype holds exactly, so the host can rebuild every rank's input
// and reduce it in float64.  Outputs are poisoned (all ones: NaN) before each
// run, every element is checked with the dtype's tolerance, and every rank
// must end with the same bits.  Sizes run from 1 element to 1 GiB with odd
// counts and offsets that are not 16-byte aligned.  A loop of thousands of
// back-to-back calls with no host synchronisation checks each result on the
// device (a race shows as a moving error count), and a CUDA graph of the
// collectives is captured and replayed.  Ranks as processes (symheap-run) or
// threads (--threads N).  Without a GPU: a SKIP line, exit 0.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#include "../harness.h"
#include "coll_testlib.cuh"
#include "symheap_cuda.h"
#include "symheap_cuda_load.h"
#include "symheap_device.cuh"

static char tag[32];

// One all-reduce checked on the host against float64.
static void check_one(th_ctx_t *c, symheap_window_t win, char *local,
                      size_t in_off, size_t out_off, size_t count, int dt,
                      int op, symheap_algo_t algo, cudaStream_t s,
                      std::vector<unsigned char> &host) {
  uint64_t seed = shared_seed(c);
  size_t es = esize(dt), bytes = count * es;
  CUDA_OK(cudaMemsetAsync(local + out_off, 0xff, bytes, s));
  fill<<<256, 256, 0, s>>>(local + in_off, dt, count, seed, c->rank);
  CUDA_OK(cudaGetLastError());
  CHECK_OK(symheap_cuda_all_reduce(win, in_off, win, out_off, count,
                                   (symheap_dtype_t)dt, (symheap_redop_t)op,
                                   algo, (symheap_stream_t)s));
  CUDA_OK(cudaStreamSynchronize(s));
  host.resize(bytes);
  CUDA_OK(cudaMemcpy(host.data(), local + out_off, bytes, cudaMemcpyDefault));
  double tol = dt == SYMHEAP_FLOAT32   ? 1e-6
               : dt == SYMHEAP_FLOAT16 ? 1e-3
                                       : 8e-3;
  size_t bad = 0, first = 0;
  double got0 = 0, want0 = 0;
  for (size_t i = 0; i < count; i++) {
    double want = value(dt, seed, 0, i);
    for (int r = 1; r < c->n; r++) {
      double x = value(dt, seed, r, i);
      want = op == SYMHEAP_OP_SUM ? want + x : (x > want ? x : want);
    }
    double got = get_elem(host.data(), dt, i);
    double err = fabs(got - want);
    if (!(err <= tol * fmax(fabs(want), 1.0))) {
      if (!bad++) {
        first = i;
        got0 = got;
        want0 = want;
      }
    }
  }
  CHECK(bad == 0,
        "%s %s algo %d count %zu in+%zu out+%zu: %zu bad, first [%zu] = %g, "
        "want %g",
        dt_name(dt), op ? "max" : "sum", (int)algo, count, in_off, out_off, bad,
        first, got0, want0);
  CHECK(same_everywhere(c, fnv(host.data(), bytes)),
        "%s count %zu: ranks hold different bits", dt_name(dt), count);
}

static void case_all_reduce(th_ctx_t *c) {
  const size_t win_bytes = 64u << 20;
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, win_bytes, 0, &w));
  char *local = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<unsigned char> host;
  const size_t counts[] = {1,       2,    3,     7,      8,
                           9,       31,   33,    255,    1000,
                           1023,    4097, 65535, 131075, (1u << 20) + 5,
                           3u << 20};
  const symheap_algo_t algos[] = {
      SYMHEAP_ALGO_AUTO, SYMHEAP_ALGO_ONE_SHOT, SYMHEAP_ALGO_TWO_SHOT,
      SYMHEAP_ALGO_RS_COPY_ENGINE, SYMHEAP_ALGO_RS_CE_PIPELINED};
  const int nalgos = sizeof algos / sizeof algos[0];
  int runs = 0;
  for (int dt = 0; dt < 3; dt++)
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
      for (int a = 0; a < nalgos; a++) {
        size_t es = esize(dt), count = counts[k];
        // aligned, in place; unaligned out of place (odd element offsets);
        // one-shot above the LL capacity cannot run in place (refused)
        bool in_place = k % 2 == 0 && !(algos[a] == SYMHEAP_ALGO_ONE_SHOT &&
                                        count * es > (64u << 10));
        size_t in_off = in_place ? 0 : es * 3;
        size_t out_off = in_place ? 0 : (32u << 20) + es * 5;
        int op = (k % 3 == 2) ? SYMHEAP_OP_MAX : SYMHEAP_OP_SUM;
        check_one(c, w, local, in_off, out_off, count, dt, op, algos[a], s,
                  host);
        runs++;
      }
  if (c->rank == 0)
    printf("# %d all-reduce checks (3 dtypes x %zu counts x %d algorithms)\n",
           runs, sizeof counts / sizeof counts[0], nalgos);
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w));
}

// The largest sizes: 1 GiB of bf16 (auto: two-shot), 256 MiB of f32 one-shot
// without LL, checked element by element on the host.
static void case_all_reduce_large(th_ctx_t *c) {
  const size_t gib = 1u << 30;
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 2 * gib, 0, &w));
  char *local = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<unsigned char> host;
  check_one(c, w, local, 0, gib, gib / 2, SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
            SYMHEAP_ALGO_AUTO, s, host);
  check_one(c, w, local, 0, 0, gib / 2, SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
            SYMHEAP_ALGO_TWO_SHOT, s, host);
  check_one(c, w, local, 4, gib + 12, (256u << 20) / 4 + 1, SYMHEAP_FLOAT32,
            SYMHEAP_OP_SUM, SYMHEAP_ALGO_ONE_SHOT, s, host);
  // pipelined rs+ce, in place: 256 chunks of 1 MiB (main sets
  // SYMHEAP_CUDA_PIPE_CHUNK) and one of 3 elements
  check_one(c, w, local, 0, 0, (128u << 20) + 3, SYMHEAP_BFLOAT16,
            SYMHEAP_OP_SUM, SYMHEAP_ALGO_RS_CE_PIPELINED, s, host);
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w));
}

// Thousands of back-to-back calls, no host synchronisation, each result
// checked on the device; in place, so a rank that runs ahead and overwrites
// an input a peer still reads shows up as an error.
static void case_race_loop(th_ctx_t *c) {
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 8u << 20, 0, &w));
  char *local = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned long long *bad;
  CUDA_OK(cudaMalloc(&bad, 3 * sizeof *bad));
  CUDA_OK(cudaMemset(bad, 0, 3 * sizeof *bad));
  uint64_t seed = shared_seed(c);
  const int iters = 3000;
  const size_t sizes[] = {2048, 33, 1u << 20}; // LL, LL odd, two-shot
  for (int it = 0; it < iters; it++) {
    int k = it % 3;
    size_t n = sizes[k];
    uint64_t sd = seed + (uint64_t)it;
    fill<<<64, 256, 0, s>>>(local, SYMHEAP_BFLOAT16, n, sd, c->rank);
    symheap_result_t r = symheap_cuda_all_reduce(
        w, 0, w, 0, n, SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
        k == 2 ? SYMHEAP_ALGO_TWO_SHOT : SYMHEAP_ALGO_ONE_SHOT,
        (symheap_stream_t)s);
    if (r != SYMHEAP_SUCCESS) {
      CHECK_OK(r);
      break;
    }
    check_reduce<<<64, 256, 0, s>>>(local, SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM, n,
                                    sd, c->n, bad + k);
  }
  CUDA_OK(cudaStreamSynchronize(s));
  unsigned long long h[3];
  CUDA_OK(cudaMemcpy(h, bad, sizeof h, cudaMemcpyDeviceToHost));
  CHECK(h[0] == 0 && h[1] == 0 && h[2] == 0,
        "%d back-to-back all-reduces: %llu / %llu / %llu wrong elements", iters,
        h[0], h[1], h[2]);
  CUDA_OK(cudaFree(bad));
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w));
}

static void case_all_gather(th_ctx_t *c) {
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 80u << 20, 0, &w));
  unsigned char *local = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t sizes[] = {1, 15, 16, 4096, 65536 + 3, 1u << 20, 8u << 20};
  std::vector<unsigned char> host, in;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t bytes = sizes[k], in_off = (k % 2) ? 1 : 0;
    size_t out_off = (16u << 20) + ((k % 2) ? 7 : 0);
    uint64_t seed = shared_seed(c);
    in.resize(bytes);
    for (size_t i = 0; i < bytes; i++)
      in[i] = (unsigned char)mix(seed + (uint64_t)c->rank, i);
    CUDA_OK(cudaMemcpy(local + in_off, in.data(), bytes, cudaMemcpyDefault));
    CUDA_OK(cudaMemsetAsync(local + out_off, 0xa5, bytes * (size_t)c->n, s));
    CHECK_OK(symheap_cuda_all_gather(w, in_off, w, out_off, bytes,
                                     (symheap_stream_t)s));
    CUDA_OK(cudaStreamSynchronize(s));
    host.resize(bytes * (size_t)c->n);
    CUDA_OK(cudaMemcpy(host.data(), local + out_off, host.size(),
                       cudaMemcpyDefault));
    size_t bad = 0;
    for (int r = 0; r < c->n; r++)
      for (size_t i = 0; i < bytes; i++)
        bad += host[(size_t)r * bytes + i] !=
               (unsigned char)mix(seed + (uint64_t)r, i);
    CHECK(bad == 0, "all-gather of %zu bytes (offsets %zu, %zu): %zu wrong",
          bytes, in_off, out_off, bad);
  }
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w));
}

// put into the next rank, get from the previous one.
static void case_put_get(th_ctx_t *c) {
  const size_t n = (32u << 20) + 3;
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, n, 0, &w));
  unsigned char *local = NULL, *src, *dst;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  CUDA_OK(cudaMalloc(&src, n));
  CUDA_OK(cudaMalloc(&dst, n));
  uint64_t seed = shared_seed(c);
  std::vector<unsigned char> h(n);
  for (size_t i = 0; i < n; i++)
    h[i] = (unsigned char)mix(seed + (uint64_t)c->rank, i);
  CUDA_OK(cudaMemcpy(src, h.data(), n, cudaMemcpyDefault));
  CUDA_OK(cudaMemset(local, 0, n));
  CUDA_OK(cudaDeviceSynchronize());
  CHECK_OK(symheap_comm_barrier(c->comm));
  int next = (c->rank + 1) % c->n, prev = (c->rank + c->n - 1) % c->n;
  CHECK_OK(symheap_cuda_put(w, next, 0, src, n, NULL));
  CUDA_OK(cudaDeviceSynchronize());
  CHECK_OK(symheap_comm_barrier(c->comm));
  CUDA_OK(cudaMemcpy(h.data(), local, n, cudaMemcpyDefault));
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += h[i] != (unsigned char)mix(seed + (uint64_t)prev, i);
  CHECK(bad == 0, "put from rank %d: %zu bytes wrong", prev, bad);
  // get the next rank's copy (which holds what its own previous, me, put)
  CHECK_OK(symheap_cuda_get(dst, w, next, 1, n - 1, NULL));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(h.data(), dst, n - 1, cudaMemcpyDefault));
  bad = 0;
  for (size_t i = 0; i + 1 < n; i++)
    bad += h[i] != (unsigned char)mix(seed + (uint64_t)c->rank, i + 1);
  CHECK(bad == 0, "get from rank %d: %zu bytes wrong", next, bad);
  CHECK_OK(symheap_comm_barrier(c->comm));
  CUDA_OK(cudaFree(src));
  CUDA_OK(cudaFree(dst));
  CHECK_OK(symheap_free(c->comm, w));
}

// Capture fill + all-reduces + all-gather + check into a graph; replay it.
static void case_graph(th_ctx_t *c) {
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 8u << 20, 0, &w));
  char *local = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint64_t *seed;
  unsigned long long *bad;
  CUDA_OK(cudaMalloc(&seed, sizeof *seed));
  CUDA_OK(cudaMalloc(&bad, 2 * sizeof *bad));
  uint64_t s0 = shared_seed(c);
  CUDA_OK(cudaMemcpy(seed, &s0, sizeof s0, cudaMemcpyDefault));
  CUDA_OK(cudaMemset(bad, 0, 2 * sizeof *bad));
  const size_t small = 1000, big = 1u << 20;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  bump<<<1, 1, 0, s>>>(seed);
  fill_dyn<<<64, 256, 0, s>>>(local, SYMHEAP_BFLOAT16, small, seed, c->rank);
  CHECK_OK(symheap_cuda_all_reduce(w, 0, w, 0, small, SYMHEAP_BFLOAT16,
                                   SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO,
                                   (symheap_stream_t)s));
  check_dyn<<<64, 256, 0, s>>>(local, SYMHEAP_BFLOAT16, small, seed, c->n, bad);
  fill_dyn<<<64, 256, 0, s>>>(local + (2u << 20), SYMHEAP_BFLOAT16, big, seed,
                              c->rank);
  CHECK_OK(symheap_cuda_all_reduce(w, 2u << 20, w, 2u << 20, big,
                                   SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
                                   SYMHEAP_ALGO_TWO_SHOT, (symheap_stream_t)s));
  check_dyn<<<64, 256, 0, s>>>(local + (2u << 20), SYMHEAP_BFLOAT16, big, seed,
                               c->n, bad + 1);
  CUDA_OK(cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
  const int replays = 500;
  for (int i = 0; i < replays; i++)
    CUDA_OK(cudaGraphLaunch(ge, s));
  CUDA_OK(cudaStreamSynchronize(s));
  unsigned long long h[2];
  uint64_t s1 = 0;
  CUDA_OK(cudaMemcpy(h, bad, sizeof h, cudaMemcpyDefault));
  CUDA_OK(cudaMemcpy(&s1, seed, sizeof s1, cudaMemcpyDefault));
  CHECK(s1 == s0 + replays, "the graph ran %llu times, not %d",
        (unsigned long long)(s1 - s0), replays);
  CHECK(h[0] == 0 && h[1] == 0,
        "%d graph replays: %llu (LL) / %llu (two-shot) wrong elements", replays,
        h[0], h[1]);
  CUDA_OK(cudaGraphExecDestroy(ge));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaFree(seed));
  CUDA_OK(cudaFree(bad));
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w));
}

// The device API in one kernel: each round every rank put_signals a block to
// the next rank, waits for the previous rank's, checks it, and meets the
// others at the barrier before the buffer is reused.
__global__ void ring(symheap_device_window_t w, int rounds, size_t bytes,
                     unsigned long long *bad) {
  int next = (w.rank + 1) % w.nranks, prev = (w.rank + w.nranks - 1) % w.nranks;
  unsigned char *mine = (unsigned char *)symheap_device_local_ptr(&w, 0);
  unsigned char *src = mine + bytes; // second half: what this rank sends
  for (int r = 1; r <= rounds; r++) {
    for (size_t i = threadIdx.x; i < bytes; i += blockDim.x)
      src[i] = (unsigned char)mix((uint64_t)w.rank * 1000003u + r, i);
    __syncthreads();
    symheap_dev_put_signal(w, next, 0, src, bytes, (uint64_t)r);
    if (threadIdx.x == 0)
      symheap_dev_wait_signal_from(w, prev, (uint64_t)r);
    __syncthreads();
    unsigned long long local = 0;
    for (size_t i = threadIdx.x; i < bytes; i += blockDim.x)
      local += mine[i] != (unsigned char)mix((uint64_t)prev * 1000003u + r, i);
    if (local)
      atomicAdd(bad, local);
    symheap_dev_barrier(w, 0);
  }
  // the free signals: every rank adds 1 to signal 40 of every rank
  if (threadIdx.x < (unsigned)w.nranks)
    symheap_dev_signal_add(w, (int)threadIdx.x, 40, 1);
  if (threadIdx.x == 0 &&
      symheap_dev_wait_signal(w, 40, (uint64_t)w.nranks) != (uint64_t)w.nranks)
    atomicAdd(bad, 1000000ull);
}

static void ring_on(th_ctx_t *c, symheap_window_t w, const char *what) {
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(v.flags & SYMHEAP_VIEW_SIGNALS, "%s: no signal slot", what);
  unsigned long long *bad;
  CUDA_OK(cudaMalloc(&bad, sizeof *bad));
  CUDA_OK(cudaMemset(bad, 0, sizeof *bad));
  CUDA_OK(cudaDeviceSynchronize());
  CHECK_OK(symheap_comm_barrier(c->comm));
  const int rounds = 2000;
  // A stream of this rank's own: thread ranks on one GPU would queue behind
  // each other on the legacy default stream, each ring waiting for the other.
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ring<<<1, 512, 0, s>>>(v, rounds, 4093, bad);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaStreamDestroy(s));
  unsigned long long h = 0;
  CUDA_OK(cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDefault));
  CHECK(h == 0, "%s: %d rounds of put_signal/wait/barrier: %llu wrong", what,
        rounds, h);
  CUDA_OK(cudaFree(bad));
  CHECK_OK(symheap_comm_barrier(c->comm));
}

// SYMHEAP_WINDOW_PATH=nccl: the same cases over NCCL's windows.
static int g_nccl;

static void case_device_api(th_ctx_t *c) {
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 1u << 20, 0, &w));
  ring_on(c, w, "flat VA");
  CHECK_OK(symheap_free(c->comm, w));
  // cudaMalloc memory: per-peer pointers (legacy IPC), same device API.
  // NCCL's windows take VMM memory only: refused there, saying so.
  void *p;
  CUDA_OK(cudaMalloc(&p, 1u << 20));
  if (g_nccl) {
    CHECK_ERR(symheap_window_register(c->comm, p, 1u << 20, 0, &w),
              SYMHEAP_ERR_DEVICE);
    CHECK(strstr(symheap_last_error(), "ncclCommWindowRegister") != NULL,
          "refusal: %s", symheap_last_error());
    CUDA_OK(cudaFree(p));
    return;
  }
  CHECK_OK(symheap_window_register(c->comm, p, 1u << 20, 0, &w));
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(!(v.flags & SYMHEAP_VIEW_FLAT), "cudaMalloc window is flat?");
  ring_on(c, w, "per-peer pointers");
  CHECK_OK(symheap_window_deregister(c->comm, w));
  CUDA_OK(cudaFree(p));
}

// While rank 0 captures a graph on a blocking stream: an allocation the heap
// has room for succeeds (no device call), and so does freeing it (with
// SYMHEAP_HEAP=0 the allocation maps, and is refused); what would
// map or unmap (registering memory, deregistering a registered window) is
// refused on every rank, saying why, with nothing changed.
static void case_capture_refused(th_ctx_t *c) {
  symheap_window_t w, x, y;
  void *m = NULL, *m2 = NULL;
  CHECK_OK(symheap_malloc(c->comm, 1u << 20, 0, &w)); // the heap has room now
  CHECK_OK(symheap_mem_alloc(c->comm, 2u << 20, &m));
  CHECK_OK(symheap_mem_alloc(c->comm, 2u << 20, &m2));
  CHECK_OK(symheap_window_register(c->comm, m, 2u << 20, 0, &y));
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s)); // blocking: the driver can see its capture
  unsigned long long *dummy;
  CUDA_OK(cudaMalloc(&dummy, 8));
  if (c->rank == 0) {
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CUDA_OK(cudaMemsetAsync(dummy, 0, 8, s));
  }
  symheap_heap_info_t hi = SYMHEAP_HEAP_INFO_INIT;
  CHECK_OK(symheap_heap_get_info(c->comm, &hi));
  if (hi.enabled) {
    CHECK_OK(symheap_malloc(c->comm, 1u << 20, 0, &x));
    CHECK_OK(symheap_free(c->comm, x));
  } else { // SYMHEAP_HEAP=0: every symheap_malloc is a registration
    symheap_result_t r = symheap_malloc(c->comm, 1u << 20, 0, &x);
    CHECK(r == SYMHEAP_ERR_UNSUPPORTED &&
              strstr(symheap_last_error(), "capturing a CUDA graph"),
          "SYMHEAP_HEAP=0 malloc during rank 0's capture: %s (%s)",
          symheap_strerror(r), symheap_last_error());
  }
  symheap_result_t r = symheap_window_register(c->comm, m2, 2u << 20, 0, &x);
  CHECK(r == SYMHEAP_ERR_UNSUPPORTED &&
            strstr(symheap_last_error(), "capturing a CUDA graph"),
        "registration during rank 0's capture: %s (%s)", symheap_strerror(r),
        symheap_last_error());
  CHECK_ERR(symheap_window_deregister(c->comm, y), SYMHEAP_ERR_UNSUPPORTED);
  CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
  CHECK(memcmp(&s0, &s1, sizeof s0) == 0,
        "a refused call (or a heap malloc + free) changed the accounting");
  if (c->rank == 0) {
    cudaGraph_t g;
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphDestroy(g));
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_window_deregister(c->comm, y)); // afterwards it works
  CHECK_OK(symheap_free(c->comm, w));
  CHECK_OK(symheap_mem_free(c->comm, m));
  CHECK_OK(symheap_mem_free(c->comm, m2));
  CUDA_OK(cudaFree(dummy));
  CUDA_OK(cudaStreamDestroy(s));
}

// A window that starts inside its allocation (the driver maps only from an
// allocation's start: the core maps it whole and places the window).
static void case_interior(th_ctx_t *c) {
  char *buf = NULL;
  CHECK_OK(symheap_mem_alloc(c->comm, 8u << 20, (void **)&buf));
  if (!buf)
    return;
  symheap_window_t w;
  const size_t off = (2u << 20) + 4096, size = 1u << 20;
  CHECK_OK(symheap_window_register(c->comm, buf + off, size, 0, &w));
  char *local = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&local));
  CHECK(local == buf + off, "window at %p, expected %p", (void *)local,
        (void *)(buf + off));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<unsigned char> host;
  check_one(c, w, local, 0, 0, size / 2, SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
            SYMHEAP_ALGO_TWO_SHOT, s, host);
  check_one(c, w, local, 0, 0, 1000, SYMHEAP_FLOAT32, SYMHEAP_OP_SUM,
            SYMHEAP_ALGO_AUTO, s, host);
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_window_deregister(c->comm, w));
  CHECK_OK(symheap_mem_free(c->comm, buf));
}

static const gpu_case_t cases[] = {
    {"device_api_put_signal_barrier", case_device_api},
    {"all_reduce_1_to_3M_elements", case_all_reduce},
    {"all_reduce_1GiB", case_all_reduce_large},
    {"all_reduce_back_to_back_3000", case_race_loop},
    {"all_gather", case_all_gather},
    {"put_get", case_put_get},
    {"graph_capture_replay_500", case_graph},
    {"register_refused_while_capturing", case_capture_refused},
    {"window_inside_its_allocation", case_interior},
};

static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  gpu_rank_begin(c, (const void *)bump);
  gpu_run_cases(c, tag, cases, sizeof cases / sizeof cases[0]);
}

int main(int argc, char **argv) {
  // rs_ce_pipe in chunks of 1 MiB (not its 8 MiB and up), so the sizes
  // here span several chunks and end in a partial one
  setenv("SYMHEAP_CUDA_PIPE_CHUNK", "1048576", 0);
  int status;
  if (!gpu_start("coll", "the collectives' GPU tests", &status))
    return status;
  const char *path = getenv("SYMHEAP_WINDOW_PATH");
  g_nccl = path && strcmp(path, "nccl") == 0;
  return th_main(argc, argv, g_nccl ? "coll_nccl_" : "coll_", tag, sizeof tag,
                 &gpu_threads, run_cases, NULL);
}

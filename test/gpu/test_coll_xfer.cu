// GPU tests of the collectives of issue 19: reduce-scatter, all-to-all,
// all-to-all-v (device-side counts), broadcast, the zero-SM (copy engine)
// all-gather and broadcast, and the copy-engine all-reduce.
//
// Every result is checked on the host against a float64 reference (within
// the dtype's tolerance) and, for reductions, bit for bit against the stated
// order of summation (float32, ranks 0..n-1, rounded once).  Outputs are
// poisoned first.  A loop of 1,000 back-to-back calls with no host sync is
// checked on the device, a graph of them is replayed 500 times, and ranks run
// as processes (symheap-run) or threads (--threads N).  Without a GPU: SKIP.
#include <pthread.h>

#include "../harness.h"
#include "a2av_testlib.cuh"
#include "coll_testlib.cuh"
#include "symheap_cuda.h"
#include "symheap_cuda_load.h"

static char tag[32];

// The hang reporter (--threads): where each rank's host thread is in the
// back-to-back loop, and which of its collectives its GPU has finished (a
// one-thread kernel stores the step into mapped host memory, so reading it
// needs no CUDA call: a thread stuck inside the driver cannot stop the
// report).  If neither moves for SYMHEAP_TEST_HANG_S seconds (default 40)
// while armed, the reporter prints both, each thread's kernel state, and
// exits 3: a hang names where it is instead of running into a kill.
constexpr int kMaxThreadRanks = 8;
struct progress_t {
  volatile int host_step, in_call, armed;
  volatile unsigned *gpu_step;
};
static progress_t prog[kMaxThreadRanks];
__global__ void mark(volatile unsigned *p, unsigned v) { *p = v; }

static void step(th_ctx_t *c, cudaStream_t s, int at, bool after) {
  if (c->rank >= kMaxThreadRanks || !prog[c->rank].gpu_step)
    return;
  prog[c->rank].in_call = !after;
  prog[c->rank].host_step = at;
  if (after)
    mark<<<1, 1, 0, s>>>(prog[c->rank].gpu_step, (unsigned)at);
}

static void *hang_reporter(void *arg) {
  int n = *(int *)arg;
  const char *e = getenv("SYMHEAP_TEST_HANG_S");
  int limit = e ? atoi(e) : 40, still = 0;
  long last = -1;
  for (;;) {
    sleep(1);
    long sum = 0;
    int armed = 0;
    for (int r = 0; r < n; r++) {
      sum += prog[r].host_step * 7919L +
             (prog[r].gpu_step ? *prog[r].gpu_step : 0);
      armed |= prog[r].armed;
    }
    still = armed && sum == last ? still + 1 : 0;
    last = sum;
    if (still < limit)
      continue;
    printf("FAIL %s/hang: no progress for %d s\n", tag, limit);
    for (int r = 0; r < n; r++)
      printf("  rank %d: host at step %d (%s), GPU finished step %u\n", r,
             prog[r].host_step,
             prog[r].in_call ? "inside the call" : "after it",
             prog[r].gpu_step ? *prog[r].gpu_step : 0u);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "for t in /proc/%d/task/*; do echo \"  $(cat $t/comm) "
             "$(cut -d' ' -f3 $t/stat) wchan=$(cat $t/wchan) "
             "syscall=$(cut -d' ' -f1 $t/syscall)\"; done; command -v gdb "
             ">/dev/null && timeout 60 gdb -p %d -batch -ex 'thread apply all "
             "bt 12' 2>&1 | grep -E '^#|^Thread' | head -150",
             (int)getpid(), (int)getpid());
    fflush(stdout);
    if (system(cmd) < 0)
      printf("  (could not run the report)\n");
    fflush(stdout);
    _exit(3);
  }
  return NULL;
}

// --threads: the progress marks' mapped memory, and the reporter's thread.
static void start_hang_reporter(int n) {
  static int ranks;
  ranks = n;
  for (int r = 0; r < n && r < kMaxThreadRanks; r++) {
    unsigned *p = NULL;
    CUDA_OK(cudaHostAlloc((void **)&p, sizeof *p, cudaHostAllocMapped));
    prog[r].gpu_step = p;
  }
  pthread_t rep;
  if (pthread_create(&rep, NULL, hang_reporter, &ranks) == 0)
    pthread_detach(rep);
}

static double tol_of(int dt) {
  return dt == SYMHEAP_FLOAT32 ? 1e-6 : dt == SYMHEAP_FLOAT16 ? 1e-3 : 8e-3;
}

// The stated reference, on the host: float32 in rank order, rounded once.
static uint32_t ref_bits(int dt, int op, uint64_t seed, int n, size_t i) {
  float acc = value(dt, seed, 0, i);
  for (int r = 1; r < n; r++) {
    float x = value(dt, seed, r, i);
    acc = op == SYMHEAP_OP_SUM ? acc + x : fmaxf(acc, x);
  }
  if (dt == SYMHEAP_FLOAT32) {
    uint32_t b;
    memcpy(&b, &acc, 4);
    return b;
  }
  if (dt == SYMHEAP_BFLOAT16)
    return __bfloat16_as_ushort(__float2bfloat16_rn(acc));
  return __half_as_ushort(__float2half_rn(acc));
}
static uint32_t got_bits(const void *base, int dt, size_t i) {
  if (dt == SYMHEAP_FLOAT32)
    return ((const uint32_t *)base)[i];
  return ((const uint16_t *)base)[i];
}

// Element i of rank `rank`'s reduce-scatter output vs float64 and the bits.
static void check_rs_host(th_ctx_t *c, const unsigned char *h, size_t count,
                          int dt, int op, uint64_t seed, size_t stride,
                          const char *what) {
  size_t bad = 0, badbits = 0, first = 0;
  for (size_t i = 0; i < count; i += stride) {
    size_t gi = (size_t)c->rank * count + i;
    double want = value(dt, seed, 0, gi);
    for (int r = 1; r < c->n; r++) {
      double x = value(dt, seed, r, gi);
      want = op == SYMHEAP_OP_SUM ? want + x : (x > want ? x : want);
    }
    double got = get_elem(h, dt, i);
    if (!(fabs(got - want) <= tol_of(dt) * fmax(fabs(want), 1.0)) && !bad++)
      first = i;
    badbits += got_bits(h, dt, i) != ref_bits(dt, op, seed, c->n, gi);
  }
  CHECK(bad == 0 && badbits == 0,
        "%s %s %s count %zu: %zu off the float64 reference (first [%zu]), "
        "%zu not bitwise the rank-order float32 result",
        what, dt_name(dt), op ? "max" : "sum", count, bad, first, badbits);
}

static win_t make_win(th_ctx_t *c, size_t bytes) {
  win_t x = {NULL, NULL};
  CHECK_OK(symheap_malloc(c->comm, bytes, 0, &x.w));
  CHECK_OK(symheap_window_local_ptr(x.w, (void **)&x.local));
  return x;
}

static void rs_one(th_ctx_t *c, win_t &w, size_t in_off, size_t out_off,
                   size_t count, int dt, int op, symheap_algo_t algo,
                   cudaStream_t s, std::vector<unsigned char> &h,
                   size_t stride = 1) {
  uint64_t seed = shared_seed(c);
  size_t es = esize(dt), bytes = count * es;
  bool in_place = out_off == in_off + (size_t)c->rank * bytes;
  fill<<<256, 256, 0, s>>>(w.local + in_off, dt, count * (size_t)c->n, seed,
                           c->rank);
  CUDA_OK(cudaGetLastError());
  if (!in_place)
    CUDA_OK(cudaMemsetAsync(w.local + out_off, 0xff, bytes, s));
  CHECK_OK(symheap_cuda_reduce_scatter(w.w, in_off, w.w, out_off, count,
                                       (symheap_dtype_t)dt, (symheap_redop_t)op,
                                       algo, (symheap_stream_t)s));
  CUDA_OK(cudaStreamSynchronize(s));
  h.resize(bytes);
  CUDA_OK(cudaMemcpy(h.data(), w.local + out_off, bytes, cudaMemcpyDefault));
  char what[64];
  snprintf(what, sizeof what, "rs algo %d%s in+%zu out+%zu", (int)algo,
           in_place ? " in place" : "", in_off, out_off);
  check_rs_host(c, h.data(), count, dt, op, seed, stride, what);
}

static void case_reduce_scatter(th_ctx_t *c) {
  win_t w = make_win(c, 64u << 20);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<unsigned char> h;
  symheap_algo_t probe;
  CHECK_OK(
      symheap_cuda_all_reduce_algo(w.w, 1u << 19, SYMHEAP_BFLOAT16, &probe));
  // The thresholds' LL capacity (a tuning table may choose otherwise).
  char table[1200] = "";
  CHECK_OK(symheap_cuda_tuning_table(table, sizeof table));
  if (c->n == 2 && strncmp(table, "none", 4) == 0)
    CHECK(probe == SYMHEAP_ALGO_ONE_SHOT,
          "1 MiB all-reduce at 2 ranks is algo %d, not LL", (int)probe);
  const size_t counts[] = {1,
                           2,
                           3,
                           7,
                           33,
                           1000,
                           4097,
                           65537,
                           131075,
                           (1u << 20) / 4 + 3,
                           (1u << 20) + 5};
  // the LL capacity: 16 blocks, two buffers, 16-byte lines of 8 data bytes
  const size_t cap =
      ((SYMHEAP_PAD_LL_BYTES / (16u * 2 * (size_t)c->n)) & ~(size_t)15) / 2 *
      16;
  int runs = 0;
  for (int dt = 0; dt < 3; dt++)
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
      for (int a = 0; a < 3; a++) {
        size_t es = esize(dt), count = counts[k];
        symheap_algo_t algo = (symheap_algo_t)a;
        if (algo == SYMHEAP_ALGO_ONE_SHOT && count * es > cap)
          continue;
        int op = (k + a) % 3 == 2 ? SYMHEAP_OP_MAX : SYMHEAP_OP_SUM;
        // odd element offsets out of place; in place on even k
        size_t in_off = k % 2 ? es * 3 : 0;
        size_t out_off =
            k % 2 ? (40u << 20) + es * 5 : (size_t)c->rank * count * es;
        rs_one(c, w, in_off, out_off, count, dt, op, algo, s, h);
        runs++;
      }
  if (c->rank == 0)
    printf("# %d reduce-scatter checks\n", runs);
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w.w));
}

// 1 GiB of bf16 input per rank, one case (two ranks share one GPU here).
static void case_reduce_scatter_1gib(th_ctx_t *c) {
  const size_t gib = 1u << 30;
  win_t w = make_win(c, gib + (gib >> 1) + 4096);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<unsigned char> h;
  size_t count = gib / 2 / (size_t)c->n; // bf16 elements per rank's block
  rs_one(c, w, 0, gib + 2, count, SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
         SYMHEAP_ALGO_AUTO, s, h, 7);
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w.w));
}

// --- all-to-all ----------------------------------------------------------
static unsigned char a2a_byte(uint64_t seed, int from, int to, size_t i) {
  return (unsigned char)mix(seed + (uint64_t)from * 977 + (uint64_t)to, i);
}

static void case_all_to_all(th_ctx_t *c) {
  win_t w = make_win(c, 80u << 20);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t sizes[] = {1, 15, 16, 4099, 65536, 1u << 20, 8u << 20};
  std::vector<unsigned char> in, out;
  const int n = c->n;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t b = sizes[k], in_off = k % 2 ? 3 : 0;
    size_t out_off = (40u << 20) + (k % 2 ? 5 : 0);
    uint64_t seed = shared_seed(c);
    in.resize(b * n);
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < b; i++)
        in[(size_t)p * b + i] = a2a_byte(seed, c->rank, p, i);
    // everything on s: the legacy stream does not order a non-blocking one
    CUDA_OK(cudaMemcpyAsync(w.local + in_off, in.data(), in.size(),
                            cudaMemcpyDefault, s));
    CUDA_OK(cudaMemsetAsync(w.local + out_off, 0xa5, b * n, s));
    CHECK_OK(symheap_cuda_all_to_all(w.w, in_off, w.w, out_off, b,
                                     (symheap_stream_t)s));
    CUDA_OK(cudaStreamSynchronize(s));
    out.resize(b * n);
    CUDA_OK(cudaMemcpy(out.data(), w.local + out_off, out.size(),
                       cudaMemcpyDefault));
    size_t bad = 0;
    for (int r = 0; r < n; r++)
      for (size_t i = 0; i < b; i++)
        bad += out[(size_t)r * b + i] != a2a_byte(seed, r, c->rank, i);
    CHECK(bad == 0, "all-to-all of %zu bytes (offsets %zu, %zu): %zu wrong", b,
          in_off, out_off, bad);
  }
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w.w));
}

static void case_all_to_allv(th_ctx_t *c) {
  win_t w = make_win(c, 64u << 20);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  a2av_bufs b = a2av_alloc();
  const size_t maxcs[] = {0, 1, 5, 1000, 65537, 1u << 20};
  int runs = 0;
  for (int mode = 0; mode < 2; mode++)
    for (size_t k = 0; k < sizeof maxcs / sizeof maxcs[0]; k++) {
      a2av_one(c, w, b, s, mode, maxcs[k], k % 2 ? 12 : 0,
               (32u << 20) + (k % 2 ? 4 : 0));
      runs++;
    }
  // One rank's output is too small: nothing moves anywhere, every rank's
  // counts say so (SIZE_MAX), the poisoned outputs are untouched.
  uint64_t seed = shared_seed(c);
  CUDA_OK(cudaMemcpyAsync(b.seed, &seed, sizeof seed, cudaMemcpyDefault, s));
  size_t out_off = 32u << 20, maxc = 1000;
  CUDA_OK(cudaMemsetAsync(w.local + out_off, 0x5a, 4096, s));
  a2av_prepare<<<64, 256, 0, s>>>(b.seed, 1, c->n, c->rank, maxc, b.sc, b.so,
                                  (uint32_t *)w.local);
  CHECK_OK(symheap_cuda_all_to_allv(
      w.w, 0, maxc * c->n, w.w, out_off, c->rank == 0 ? maxc * c->n - 1 : maxc,
      4, b.sc, NULL, b.rc, b.ro, (symheap_stream_t)s));
  CUDA_OK(cudaStreamSynchronize(s));
  std::vector<size_t> rc(c->n);
  std::vector<unsigned char> o(4096);
  CUDA_OK(
      cudaMemcpy(rc.data(), b.rc, c->n * sizeof(size_t), cudaMemcpyDefault));
  CUDA_OK(cudaMemcpy(o.data(), w.local + out_off, 4096, cudaMemcpyDefault));
  size_t bad = 0;
  for (int r = 0; r < c->n; r++)
    bad += rc[r] != SIZE_MAX;
  for (size_t i = 0; i < o.size(); i++)
    bad += o[i] != 0x5a;
  CHECK(bad == 0, "overflowing all-to-all-v: %zu counts/bytes not as refused",
        bad);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    printf("# %d all-to-all-v checks + the overflow refusal\n", runs);
  a2av_release(b);
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w.w));
}

// --- broadcast and zero-SM all-gather ------------------------------------
static void case_broadcast_zero_sm(th_ctx_t *c) {
  // The all-gather's output starts at 32 MiB + 3 and takes n blocks of up to
  // 8 MiB: size the window for the rank count (a fixed 64 MiB fit 2 ranks).
  size_t span = (32u << 20) + 4096 + (size_t)c->n * (8u << 20);
  win_t w = make_win(c, span > (64u << 20) ? span : (64u << 20));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t sizes[] = {1, 15, 16, 4099, 1u << 20, 8u << 20};
  std::vector<unsigned char> in, out;
  for (int zero = 0; zero < 2; zero++)
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      size_t b = sizes[k];
      int root = (int)(k % (size_t)c->n);
      bool in_place = k % 3 == 2;
      size_t in_off = k % 2 ? 7 : 0;
      size_t out_off = in_place ? in_off : (16u << 20) + (k % 2 ? 1 : 0);
      uint64_t seed = shared_seed(c);
      in.resize(b);
      for (size_t i = 0; i < b; i++)
        in[i] = (unsigned char)mix(seed + (uint64_t)c->rank, i);
      // on s: the legacy stream does not order a non-blocking one
      CUDA_OK(cudaMemcpyAsync(w.local + in_off, in.data(), b, cudaMemcpyDefault,
                              s));
      if (!in_place)
        CUDA_OK(cudaMemsetAsync(w.local + out_off, 0xa5, b, s));
      CHECK_OK(symheap_cuda_broadcast(w.w, in_off, w.w, out_off, b, root,
                                      zero ? SYMHEAP_CUDA_ZERO_SM : 0,
                                      (symheap_stream_t)s));
      CUDA_OK(cudaStreamSynchronize(s));
      out.resize(b);
      CUDA_OK(cudaMemcpy(out.data(), w.local + out_off, b, cudaMemcpyDefault));
      size_t bad = 0;
      for (size_t i = 0; i < b; i++)
        bad += out[i] != (unsigned char)mix(seed + (uint64_t)root, i);
      CHECK(bad == 0, "broadcast%s of %zu bytes from %d%s: %zu wrong",
            zero ? " (zero-SM)" : "", b, root, in_place ? " in place" : "",
            bad);
      // zero-SM all-gather of the same size, in place on odd k
      size_t ao = (32u << 20) + (k % 2 ? 3 : 0);
      size_t ai = k % 2 ? ao + (size_t)c->rank * b : in_off;
      if (!zero)
        continue;
      CUDA_OK(
          cudaMemcpyAsync(w.local + ai, in.data(), b, cudaMemcpyDefault, s));
      CHECK_OK(symheap_cuda_all_gather_flags(
          w.w, ai, w.w, ao, b, SYMHEAP_CUDA_ZERO_SM, (symheap_stream_t)s));
      CUDA_OK(cudaStreamSynchronize(s));
      out.resize(b * c->n);
      CUDA_OK(
          cudaMemcpy(out.data(), w.local + ao, out.size(), cudaMemcpyDefault));
      bad = 0;
      for (int r = 0; r < c->n; r++)
        for (size_t i = 0; i < b; i++)
          bad += out[(size_t)r * b + i] !=
                 (unsigned char)mix(seed + (uint64_t)r, i);
      CHECK(bad == 0, "zero-SM all-gather of %zu bytes%s: %zu wrong", b,
            k % 2 ? " in place" : "", bad);
    }
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w.w));
}

// --- back to back, and graphs ---------------------------------------------
// Output element i is global element first + i of the all-reduce.
__global__ void check_dyn_at(const void *out, int dt, size_t n, size_t first,
                             const uint64_t *seed, int nranks,
                             unsigned long long *bad) {
  uint64_t s = *seed;
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    char tmp[4];
    put_elem(tmp, dt, 0, expected(dt, SYMHEAP_OP_SUM, s, nranks, first + i));
    local += get_elem(out, dt, i) != get_elem(tmp, dt, 0);
  }
  if (local)
    atomicAdd(bad, local);
}
__global__ void fill_bytes(unsigned char *p, size_t n, const uint64_t *seed,
                           int rank) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = (unsigned char)mix(*seed + (uint64_t)rank, i);
}
// nblocks blocks of n bytes, block k from rank first + k.
__global__ void check_bytes(const unsigned char *p, size_t n, int first,
                            int nblocks, const uint64_t *seed,
                            unsigned long long *bad) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
       i < n * (size_t)nblocks; i += (size_t)gridDim.x * blockDim.x)
    local += p[i] != (unsigned char)mix(*seed + first + i / n, i % n);
  if (local)
    atomicAdd(bad, local);
}

// One round of the mix: RS (LL), RS (pipelined, in place), all-to-all-v,
// zero-SM all-gather, broadcast, copy-engine all-reduce; each checked by a
// kernel into bad[0..5].
static void round_enqueue(th_ctx_t *c, win_t &w, a2av_bufs &b, cudaStream_t s,
                          int round = 0) {
  int at = round * 6;
  const int n = c->n, dt = SYMHEAP_BFLOAT16;
  const size_t small = 1001, big = (1u << 19) + 3, ag = 4099;
  char *L = w.local;
  fill_dyn<<<64, 256, 0, s>>>(L, dt, small * n, b.seed, c->rank);
  step(c, s, ++at, false);
  CHECK_OK(symheap_cuda_reduce_scatter(
      w.w, 0, w.w, 8u << 20, small, SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
      SYMHEAP_ALGO_ONE_SHOT, (symheap_stream_t)s));
  step(c, s, at, true);
  check_dyn_at<<<64, 256, 0, s>>>(L + (8u << 20), dt, small,
                                  (size_t)c->rank * small, b.seed, n, b.bad);
  fill_dyn<<<64, 256, 0, s>>>(L, dt, big * n, b.seed, c->rank);
  size_t mine = (size_t)c->rank * big * 2;
  step(c, s, ++at, false);
  CHECK_OK(symheap_cuda_reduce_scatter(w.w, 0, w.w, mine, big, SYMHEAP_BFLOAT16,
                                       SYMHEAP_OP_SUM, SYMHEAP_ALGO_TWO_SHOT,
                                       (symheap_stream_t)s));
  step(c, s, at, true);
  check_dyn_at<<<64, 256, 0, s>>>(L + mine, dt, big, (size_t)c->rank * big,
                                  b.seed, n, b.bad + 1);
  step(c, s, ++at, false);
  a2av_enqueue(c, w, b, 0, 3001, 16u << 20, 20u << 20, 3001 * (size_t)n, s, -1);
  step(c, s, at, true);
  a2av_check<<<64, 256, 0, s>>>(b.seed, 0, n, c->rank, 3001, b.rc, b.ro,
                                (const uint32_t *)(L + (20u << 20)), b.bad + 2);
  fill_bytes<<<64, 256, 0, s>>>((unsigned char *)L + (24u << 20), ag, b.seed,
                                c->rank);
  step(c, s, ++at, false);
  CHECK_OK(symheap_cuda_all_gather_flags(w.w, 24u << 20, w.w, 25u << 20, ag,
                                         SYMHEAP_CUDA_ZERO_SM,
                                         (symheap_stream_t)s));
  step(c, s, at, true);
  check_bytes<<<64, 256, 0, s>>>((unsigned char *)L + (25u << 20), ag, 0, n,
                                 b.seed, b.bad + 3);
  step(c, s, ++at, false);
  CHECK_OK(symheap_cuda_broadcast(w.w, 24u << 20, w.w, 26u << 20, ag, n - 1, 0,
                                  (symheap_stream_t)s));
  step(c, s, at, true);
  check_bytes<<<64, 256, 0, s>>>((unsigned char *)L + (26u << 20), ag, n - 1, 1,
                                 b.seed, b.bad + 4);
  // even rounds (and graphs) the pipelined rs+ce over 4 chunks (1 MiB each,
  // the last 6 bytes), odd rounds the plain one
  const size_t arn = round % 2 ? big : (3u << 19) + 3;
  fill_dyn<<<64, 256, 0, s>>>(L + (28u << 20), dt, arn, b.seed, c->rank);
  step(c, s, ++at, false);
  CHECK_OK(symheap_cuda_all_reduce(
      w.w, 28u << 20, w.w, 28u << 20, arn, SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
      round % 2 ? SYMHEAP_ALGO_RS_COPY_ENGINE : SYMHEAP_ALGO_RS_CE_PIPELINED,
      (symheap_stream_t)s));
  step(c, s, at, true);
  check_dyn_at<<<64, 256, 0, s>>>(L + (28u << 20), dt, arn, 0, b.seed, n,
                                  b.bad + 5);
}

static void read_bad(a2av_bufs &b, unsigned long long (&h)[6]) {
  CUDA_OK(cudaMemcpy(h, b.bad, sizeof h, cudaMemcpyDefault));
}

static void case_back_to_back(th_ctx_t *c) {
  win_t w = make_win(c, 32u << 20);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  a2av_bufs b = a2av_alloc();
  uint64_t seed = shared_seed(c);
  CUDA_OK(cudaMemcpyAsync(b.seed, &seed, sizeof seed, cudaMemcpyDefault, s));
  // 6 collectives a round: 1,002 calls (SYMHEAP_TEST_ROUNDS: fewer or more)
  const char *re = getenv("SYMHEAP_TEST_ROUNDS");
  const int rounds = re ? atoi(re) : 1000 / 6 + 1;
  if (c->rank < kMaxThreadRanks)
    prog[c->rank].armed = 1;
  for (int i = 0; i < rounds; i++) {
    bump<<<1, 1, 0, s>>>(b.seed);
    round_enqueue(c, w, b, s, i);
  }
  CUDA_OK(cudaStreamSynchronize(s));
  if (c->rank < kMaxThreadRanks)
    prog[c->rank].armed = 0;
  unsigned long long h[6];
  read_bad(b, h);
  CHECK(!h[0] && !h[1] && !h[2] && !h[3] && !h[4] && !h[5],
        "%d back-to-back calls: wrong elements rs-LL %llu rs %llu a2av %llu "
        "ag-zero-SM %llu bcast %llu ar-CE %llu",
        rounds * 6, h[0], h[1], h[2], h[3], h[4], h[5]);
  a2av_release(b);
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w.w));
}

static void case_graph(th_ctx_t *c) {
  win_t w = make_win(c, 32u << 20);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  a2av_bufs b = a2av_alloc();
  uint64_t s0 = shared_seed(c);
  CUDA_OK(cudaMemcpyAsync(b.seed, &s0, sizeof s0, cudaMemcpyDefault, s));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  bump<<<1, 1, 0, s>>>(b.seed);
  round_enqueue(c, w, b, s);
  CUDA_OK(cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
  const int replays = 500;
  for (int i = 0; i < replays; i++)
    CUDA_OK(cudaGraphLaunch(ge, s));
  CUDA_OK(cudaStreamSynchronize(s));
  unsigned long long h[6];
  uint64_t s1 = 0;
  read_bad(b, h);
  CUDA_OK(cudaMemcpy(&s1, b.seed, sizeof s1, cudaMemcpyDefault));
  CHECK(s1 == s0 + replays, "the graph ran %llu times, not %d",
        (unsigned long long)(s1 - s0), replays);
  CHECK(!h[0] && !h[1] && !h[2] && !h[3] && !h[4] && !h[5],
        "%d replays: wrong elements rs-LL %llu rs %llu a2av %llu "
        "ag-zero-SM %llu bcast %llu ar-CE %llu",
        replays, h[0], h[1], h[2], h[3], h[4], h[5]);
  CUDA_OK(cudaGraphExecDestroy(ge));
  CUDA_OK(cudaGraphDestroy(g));
  a2av_release(b);
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_free(c->comm, w.w));
}

// Registered cudaMalloc memory: per-peer pointers (legacy IPC), not the
// flat VA; every new collective on it.
static void case_registered(th_ctx_t *c) {
  const size_t bytes = 16u << 20;
  void *p = NULL;
  CUDA_OK(cudaMalloc(&p, bytes));
  win_t w = {NULL, (char *)p};
  CHECK_OK(symheap_window_register(c->comm, p, bytes, 0, &w.w));
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w.w, &v));
  CHECK(!(v.flags & SYMHEAP_VIEW_FLAT), "a cudaMalloc window is flat?");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<unsigned char> h;
  rs_one(c, w, 2, (8u << 20) + 6, 1001, SYMHEAP_FLOAT16, SYMHEAP_OP_SUM,
         SYMHEAP_ALGO_ONE_SHOT, s, h);
  rs_one(c, w, 0, (size_t)c->rank * 300001 * 4, 300001, SYMHEAP_FLOAT32,
         SYMHEAP_OP_MAX, SYMHEAP_ALGO_TWO_SHOT, s, h);
  a2av_bufs b = a2av_alloc();
  a2av_one(c, w, b, s, 0, 4097, 4, 8u << 20);
  a2av_release(b);
  // broadcast (SM, then zero-SM) from the last rank
  for (int zero = 0; zero < 2; zero++) {
    uint64_t seed = shared_seed(c);
    const size_t n = 100003;
    std::vector<unsigned char> in(n), out(n);
    for (size_t i = 0; i < n; i++)
      in[i] = (unsigned char)mix(seed + (uint64_t)c->rank, i);
    CUDA_OK(cudaMemcpyAsync(w.local + 1, in.data(), n, cudaMemcpyDefault, s));
    CUDA_OK(cudaMemsetAsync(w.local + (4u << 20), 0, n, s));
    CHECK_OK(symheap_cuda_broadcast(w.w, 1, w.w, 4u << 20, n, c->n - 1,
                                    zero ? SYMHEAP_CUDA_ZERO_SM : 0,
                                    (symheap_stream_t)s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(out.data(), w.local + (4u << 20), n, cudaMemcpyDefault));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
      bad += out[i] != (unsigned char)mix(seed + (uint64_t)(c->n - 1), i);
    CHECK(bad == 0, "broadcast%s on a registered window: %zu wrong",
          zero ? " (zero-SM)" : "", bad);
  }
  CUDA_OK(cudaStreamDestroy(s));
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_window_deregister(c->comm, w.w));
  CUDA_OK(cudaFree(p));
}

// Ranks sharing this GPU: the legacy default stream is refused, saying why.
static void case_shared_gpu_stream(th_ctx_t *c) {
  int ndev = 0;
  CUDA_OK(cudaGetDeviceCount(&ndev));
  win_t w = make_win(c, 1u << 20);
  if (ndev >= c->n) {
    printf("SKIP %s/legacy_stream_refused_on_shared_gpu: each rank has its "
           "own GPU here\n",
           tag);
  } else {
    symheap_result_t r =
        symheap_cuda_reduce_scatter(w.w, 0, w.w, 1u << 19, 16, SYMHEAP_FLOAT32,
                                    SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO, NULL);
    CHECK(r == SYMHEAP_ERR_INVALID_ARG &&
              strstr(symheap_last_error(), "legacy default stream"),
          "legacy stream on a shared GPU: %s (%s)", symheap_strerror(r),
          symheap_last_error());
  }
  CHECK_OK(symheap_free(c->comm, w.w));
}

static const gpu_case_t cases[] = {
    {"legacy_stream_refused_on_shared_gpu", case_shared_gpu_stream},
    {"reduce_scatter", case_reduce_scatter},
    {"reduce_scatter_1GiB", case_reduce_scatter_1gib},
    {"all_to_all", case_all_to_all},
    {"all_to_allv", case_all_to_allv},
    {"broadcast_and_zero_sm", case_broadcast_zero_sm},
    {"registered_cudamalloc_window", case_registered},
    {"back_to_back_1000", case_back_to_back},
    {"graph_capture_replay_500", case_graph},
};

static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  // SYMHEAP_TEST_NO_PRELOAD=1 leaves this file's kernels to lazy loading, to
  // show the hazard (bench/gpu_hang.sh).
  gpu_rank_begin(c,
                 getenv("SYMHEAP_TEST_NO_PRELOAD") ? NULL : (const void *)mark);
  CHECK_OK(symheap_cuda_preload()); // what the first collective does anyway
  CHECK(symheap_cuda_load_module(NULL) == SYMHEAP_ERR_INVALID_ARG &&
            strstr(symheap_last_error(), "kernel is NULL"),
        "symheap_cuda_load_module(NULL): %s", symheap_last_error());
  int host_var = 0;
  symheap_result_t lr = symheap_cuda_load_module(&host_var);
  CHECK(!symheap_cuda_loading_is_lazy() ||
            (lr == SYMHEAP_ERR_INVALID_ARG &&
             strstr(symheap_last_error(), "not a kernel")),
        "symheap_cuda_load_module(a host variable) -> %s: %s",
        symheap_strerror(lr), symheap_last_error());
  gpu_run_cases(c, tag, cases, sizeof cases / sizeof cases[0]);
}

int main(int argc, char **argv) {
  // rs_ce_pipe in chunks of 1 MiB (not its 8 MiB and up), so the sizes
  // here span several chunks and end in a partial one
  setenv("SYMHEAP_CUDA_PIPE_CHUNK", "1048576", 0);
  int status;
  if (!gpu_start("coll_xfer", "the collectives' GPU tests", &status))
    return status;
  if (argc == 3 && strcmp(argv[1], "--threads") == 0)
    start_hang_reporter(atoi(argv[2]));
  return th_main(argc, argv, "coll_xfer_", tag, sizeof tag, &gpu_threads,
                 run_cases, NULL);
}

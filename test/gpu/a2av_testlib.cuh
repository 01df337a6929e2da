// All-to-all-v test helpers (test_coll_xfer.cu): per-peer counts and data
// made on the device from a seed, so the same round can run back to back
// and inside a CUDA graph, and the checks (on the device, and on the host).
#ifndef SYMHEAP_A2AV_TESTLIB_CUH
#define SYMHEAP_A2AV_TESTLIB_CUH

#include "coll_testlib.cuh"

struct win_t {
  symheap_window_t w;
  char *local;
};

// --- all-to-all-v: counts made on the device from a seed ------------------
// Rank `from` sends count_of(...) elements to `to`; mode 0: random with
// zeros, 1: everything to rank 0 (the others send and receive nothing).
__host__ __device__ static size_t count_of(uint64_t seed, int mode, int from,
                                           int to, size_t maxc) {
  if (mode == 1)
    return to == 0 ? maxc : 0;
  uint32_t m = mix(seed ^ 0xa2a, (uint64_t)from * 64 + (uint64_t)to);
  return m % 4 == 0 ? 0 : (size_t)(m >> 4) % (maxc + 1);
}
__host__ __device__ static uint32_t a2av_val(uint64_t seed, int from, int to,
                                             size_t j) {
  return mix(seed + (uint64_t)from * 131 + (uint64_t)to * 7, j);
}

// Send counts, offsets and the data, all from the device seed.  Mode 0
// lays the blocks out in reverse rank order (explicit send offsets); mode 1
// packs them in rank order (send_offsets NULL).
__global__ void a2av_prepare(const uint64_t *seedp, int mode, int n, int rank,
                             size_t maxc, size_t *counts, size_t *offs,
                             uint32_t *in) {
  uint64_t seed = *seedp;
  __shared__ size_t off_s[32];
  if (threadIdx.x == 0) {
    size_t o = 0;
    for (int k = 0; k < n; k++) {
      int p = mode == 1 ? k : n - 1 - k;
      off_s[p] = o;
      o += count_of(seed, mode, rank, p, maxc);
    }
  }
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x < (unsigned)n) {
    counts[threadIdx.x] = count_of(seed, mode, rank, threadIdx.x, maxc);
    offs[threadIdx.x] = off_s[threadIdx.x];
  }
  for (int p = 0; p < n; p++) {
    size_t cnt = count_of(seed, mode, rank, p, maxc);
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < cnt;
         j += (size_t)gridDim.x * blockDim.x)
      in[off_s[p] + j] = a2av_val(seed, rank, p, j);
  }
}

// Received counts and offsets, and the data packed in sender order.
__global__ void a2av_check(const uint64_t *seedp, int mode, int n, int rank,
                           size_t maxc, const size_t *rc, const size_t *ro,
                           const uint32_t *out, unsigned long long *bad) {
  uint64_t seed = *seedp;
  unsigned long long local = 0;
  size_t off = 0;
  for (int s = 0; s < n; s++) {
    size_t cnt = count_of(seed, mode, s, rank, maxc);
    if (blockIdx.x == 0 && threadIdx.x == 0)
      local += (rc[s] != cnt) + (ro[s] != off);
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < cnt;
         j += (size_t)gridDim.x * blockDim.x)
      local += out[off + j] != a2av_val(seed, s, rank, j);
    off += cnt;
  }
  if (local)
    atomicAdd(bad, local);
}

struct a2av_bufs {
  size_t *sc, *so, *rc, *ro;
  uint64_t *seed;
  unsigned long long *bad;
};
static a2av_bufs a2av_alloc(void) {
  a2av_bufs b;
  CUDA_OK(cudaMalloc(&b.sc, 4 * 32 * sizeof(size_t)));
  b.so = b.sc + 32;
  b.rc = b.sc + 64;
  b.ro = b.sc + 96;
  CUDA_OK(cudaMalloc(&b.seed, sizeof(uint64_t)));
  CUDA_OK(cudaMalloc(&b.bad, 6 * sizeof(unsigned long long)));
  CUDA_OK(cudaMemset(b.bad, 0, 6 * sizeof(unsigned long long)));
  // the legacy stream's memset is not ordered with the tests' non-blocking
  // streams: wait for it (not for the device, which may hold a peer's
  // kernel that waits for this thread)
  CUDA_OK(cudaStreamSynchronize(0));
  return b;
}
static void a2av_release(a2av_bufs &b) {
  CUDA_OK(cudaFree(b.sc));
  CUDA_OK(cudaFree(b.seed));
  CUDA_OK(cudaFree(b.bad));
}

// One all-to-all-v, everything on the device but the final copy of counts.
static void a2av_enqueue(th_ctx_t *c, win_t &w, a2av_bufs &b, int mode,
                         size_t maxc, size_t in_off, size_t out_off,
                         size_t out_cap, cudaStream_t s, int check_slot) {
  a2av_prepare<<<64, 256, 0, s>>>(b.seed, mode, c->n, c->rank, maxc, b.sc, b.so,
                                  (uint32_t *)(w.local + in_off));
  CHECK_OK(symheap_cuda_all_to_allv(
      w.w, in_off, maxc * (size_t)c->n, w.w, out_off, out_cap, 4, b.sc,
      mode == 1 ? NULL : b.so, b.rc, b.ro, (symheap_stream_t)s));
  if (check_slot >= 0)
    a2av_check<<<64, 256, 0, s>>>(b.seed, mode, c->n, c->rank, maxc, b.rc, b.ro,
                                  (const uint32_t *)(w.local + out_off),
                                  b.bad + check_slot);
}

// One all-to-all-v (mode as count_of), checked on the host.
static void a2av_one(th_ctx_t *c, win_t &w, a2av_bufs &b, cudaStream_t s,
                     int mode, size_t maxc, size_t in_off, size_t out_off) {
  uint64_t seed = shared_seed(c);
  CUDA_OK(cudaMemcpyAsync(b.seed, &seed, sizeof seed, cudaMemcpyDefault, s));
  CUDA_OK(cudaMemsetAsync(w.local + out_off, 0xff, maxc * 4 * (size_t)c->n, s));
  a2av_prepare<<<64, 256, 0, s>>>(b.seed, mode, c->n, c->rank, maxc, b.sc, b.so,
                                  (uint32_t *)(w.local + in_off));
  CHECK_OK(symheap_cuda_all_to_allv(
      w.w, in_off, maxc * (size_t)c->n, w.w, out_off, maxc * (size_t)c->n, 4,
      b.sc, mode == 1 ? NULL : b.so, b.rc, b.ro, (symheap_stream_t)s));
  CUDA_OK(cudaStreamSynchronize(s));
  // the host reads what arrived and compares with the seeds
  std::vector<size_t> rc(c->n), ro(c->n);
  CUDA_OK(
      cudaMemcpy(rc.data(), b.rc, c->n * sizeof(size_t), cudaMemcpyDefault));
  CUDA_OK(
      cudaMemcpy(ro.data(), b.ro, c->n * sizeof(size_t), cudaMemcpyDefault));
  size_t total = 0, bad = 0;
  for (int r = 0; r < c->n; r++) {
    size_t want = count_of(seed, mode, r, c->rank, maxc);
    bad += rc[r] != want || ro[r] != total;
    total += want;
  }
  std::vector<uint32_t> out(total);
  CUDA_OK(
      cudaMemcpy(out.data(), w.local + out_off, total * 4, cudaMemcpyDefault));
  size_t off = 0;
  for (int r = 0; r < c->n; r++) {
    size_t cnt = count_of(seed, mode, r, c->rank, maxc);
    for (size_t j = 0; j < cnt; j++)
      bad += out[off + j] != a2av_val(seed, r, c->rank, j);
    off += cnt;
  }
  CHECK(bad == 0, "all-to-all-v mode %d max %zu (in+%zu out+%zu): %zu wrong",
        mode, maxc, in_off, out_off, bad);
}

#endif

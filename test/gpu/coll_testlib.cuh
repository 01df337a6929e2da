// Helpers shared by the collectives' GPU tests (test_coll.cu,
// test_coll_xfer.cu): inputs on a grid every dtype holds exactly (so the host
// can rebuild any rank's input), element access by dtype, the float32
// rank-order reference, and seeds shared by the ranks.
#ifndef SYMHEAP_COLL_TESTLIB_CUH
#define SYMHEAP_COLL_TESTLIB_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#include "../harness.h"
#include "gpu_suite.cuh"
#include "symheap_cuda.h"

__host__ __device__ static inline uint32_t mix(uint64_t seed, uint64_t i) {
  uint64_t x = seed ^ (i * 0x9e3779b97f4a7c15ull);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 32;
  return (uint32_t)x;
}

// Element i of rank r's input: a multiple of a power of two small enough for
// the dtype to hold it exactly.
__host__ __device__ static inline float value(int dt, uint64_t seed, int r,
                                              uint64_t i) {
  uint32_t m = mix(seed + 0x1000193ull * (uint64_t)(r + 1), i);
  if (dt == SYMHEAP_FLOAT32)
    return (float)((int)(m % (1u << 20)) - (1 << 19)) / 1024.0f;
  if (dt == SYMHEAP_FLOAT16)
    return (float)((int)(m % 2049u) - 1024) / 8.0f;
  return (float)((int)(m % 257u) - 128) / 8.0f;
}

__device__ static inline void put_elem(void *base, int dt, size_t i, float v) {
  if (dt == SYMHEAP_FLOAT32)
    ((float *)base)[i] = v;
  else if (dt == SYMHEAP_BFLOAT16)
    ((__nv_bfloat16 *)base)[i] = __float2bfloat16_rn(v);
  else
    ((__half *)base)[i] = __float2half_rn(v);
}
__host__ __device__ static inline float get_elem(const void *base, int dt,
                                                 size_t i) {
  if (dt == SYMHEAP_FLOAT32)
    return ((const float *)base)[i];
  if (dt == SYMHEAP_BFLOAT16) {
    uint32_t b = ((const uint16_t *)base)[i];
    b <<= 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
  }
  return __half2float(((const __half *)base)[i]);
}
static size_t esize(int dt) { return dt == SYMHEAP_FLOAT32 ? 4 : 2; }

__global__ void fill(void *base, int dt, size_t n, uint64_t seed, int rank) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    put_elem(base, dt, i, value(dt, seed, rank, i));
}

// What the all-reduce must produce, bit for bit: float32, ranks in order.
__device__ static inline float expected(int dt, int op, uint64_t seed,
                                        int nranks, size_t i) {
  float acc = value(dt, seed, 0, i);
  for (int r = 1; r < nranks; r++) {
    float x = value(dt, seed, r, i);
    acc = op == SYMHEAP_OP_SUM ? acc + x : fmaxf(acc, x);
  }
  return acc;
}

__global__ void check_reduce(const void *out, int dt, int op, size_t n,
                             uint64_t seed, int nranks,
                             unsigned long long *bad) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float want = expected(dt, op, seed, nranks, i);
    char tmp[4];
    put_elem(tmp, dt, 0, want);
    local += get_elem(out, dt, i) != get_elem(tmp, dt, 0);
  }
  if (local)
    atomicAdd(bad, local);
}

// For graph replays: each replay advances the seed kept on the device.
__global__ void bump(uint64_t *seed) { *seed += 1; }
__global__ void fill_dyn(void *base, int dt, size_t n, const uint64_t *seed,
                         int rank) {
  uint64_t s = *seed;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    put_elem(base, dt, i, value(dt, s, rank, i));
}
__global__ void check_dyn(const void *out, int dt, size_t n,
                          const uint64_t *seed, int nranks,
                          unsigned long long *bad) {
  uint64_t s = *seed;
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    char tmp[4];
    put_elem(tmp, dt, 0, expected(dt, SYMHEAP_OP_SUM, s, nranks, i));
    local += get_elem(out, dt, i) != get_elem(tmp, dt, 0);
  }
  if (local)
    atomicAdd(bad, local);
}

static uint64_t urandom64(void) {
  uint64_t s = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(&s, sizeof s, 1, f) != 1)
    s = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
  if (f)
    fclose(f);
  return s;
}

// A fresh seed, the same on every rank (rank 0's).
static uint64_t shared_seed(th_ctx_t *c) {
  uint64_t mine = urandom64();
  std::vector<uint64_t> all((size_t)c->n);
  CHECK_OK(symheap_comm_allgather(c->comm, &mine, all.data(), sizeof mine));
  return all[0];
}

// Every rank holds the same 64-bit value?
static int same_everywhere(th_ctx_t *c, uint64_t v) {
  std::vector<uint64_t> all((size_t)c->n);
  if (symheap_comm_allgather(c->comm, &v, all.data(), sizeof v) !=
      SYMHEAP_SUCCESS)
    return 0;
  for (int p = 1; p < c->n; p++)
    if (all[(size_t)p] != all[0])
      return 0;
  return 1;
}

static uint64_t fnv(const unsigned char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static const char *dt_name(int dt) {
  return dt == SYMHEAP_FLOAT32    ? "f32"
         : dt == SYMHEAP_BFLOAT16 ? "bf16"
                                  : "f16";
}

#endif

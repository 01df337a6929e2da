/* What the collective kernels share: element types as raw bits, loads and
 * stores of 8- or 16-byte units that stay inside the buffer, reduction, and
 * the collectives' part of the comm pad (epochs, barrier flags, LL buffers).
 * Private to kernels/. */
#ifndef SYMHEAP_COLL_COMMON_CUH
#define SYMHEAP_COLL_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "symheap_cuda.h"
#include "symheap_device.cuh"

namespace symheap_coll {

typedef symheap_device_window_t view_t;

/* Collectives state in the pad (SYMHEAP_PAD_COLL_*): an epoch per channel
 * (local; every rank's advance in step because collectives are called in
 * the same order everywhere), then flags[channel][sender] set by peers. */
constexpr int kMaxChannels = 128;
constexpr int kMaxRanks = 32;
constexpr size_t kFlagsOffset = kMaxChannels * sizeof(uint64_t);
static_assert(kFlagsOffset + kMaxChannels * kMaxRanks * sizeof(uint64_t) <=
                  SYMHEAP_PAD_COLL_BYTES,
              "collective flags overflow the pad's collectives region");
/* After the flags: the state of the transfers that are not barrier-framed
 * (all-to-all(v), the copy-engine paths).  Words per rank of the pad:
 *  - xepoch: the all-to-all's epoch (local; the kernel's last block
 *    advances it) and xcount, the blocks of the running kernel that are done;
 *  - xready[sender], xdata[sender]: set by peers to the epoch (release);
 *  - xmatrix[sender][receiver]: every rank's send counts (all-to-all-v),
 *    each sender writes its row into every rank's copy; column kMaxRanks
 *    is the sender's output capacity;
 *  - ce_ready[sender], ce_done[sender]: 32-bit flags that the copy-engine
 *    paths set to 1 and wait for with stream memory operations (no SM), and
 *    that the waiter resets to 0 (constants only, so graph replays work);
 *  - push[channel]: the pipelined broadcast's progress, set by root's block
 *    `channel` to (epoch << 32) + the steps it has pushed to this rank
 *    (only rising: epochs advance on every rank in step);
 *  - ce_prog[sender]: the copy-engine pipelined broadcast's progress, set
 *    by root to the chunks it has copied to this rank (1, 2, ...: constants
 *    of the call) and reset to 0 by this rank after the last. */
constexpr size_t kXferOffset =
    kFlagsOffset + kMaxChannels * kMaxRanks * sizeof(uint64_t);
constexpr size_t kXEpoch = kXferOffset;
constexpr size_t kXCount = kXEpoch + 8;
constexpr size_t kXReady = kXCount + 8;
constexpr size_t kXData = kXReady + kMaxRanks * 8;
constexpr size_t kXMatrix = kXData + kMaxRanks * 8;
constexpr int kXRow = kMaxRanks + 1; /* counts, then the output capacity */
constexpr size_t kCeReady = kXMatrix + kMaxRanks * kXRow * 8;
constexpr size_t kCeDone = kCeReady + kMaxRanks * 4;
constexpr size_t kPush = kCeDone + kMaxRanks * 4;
constexpr size_t kCeProg = kPush + kMaxChannels * 8;
constexpr size_t kXferEnd = kCeProg + kMaxRanks * 4;
static_assert(kXferEnd <= SYMHEAP_PAD_PROXY_OFFSET - SYMHEAP_PAD_COLL_OFFSET,
              "transfer state overflows into the host proxy's counter");
/* The push all-reduce (all_reduce_push.cu): the blocks of the running
 * kernel that are done (the last advances the channels' epochs), and
 * 32-bit flags[block][sender] set by peers. */
constexpr size_t kPushDone = kXferEnd;
constexpr size_t kPushFlags = kPushDone + 16;
constexpr size_t kPushEnd = kPushFlags + kMaxChannels * kMaxRanks * 4;
static_assert(kPushEnd <= SYMHEAP_PAD_PROXY_OFFSET - SYMHEAP_PAD_COLL_OFFSET,
              "the push all-reduce's flags overflow into the proxy's counter");

/* LL (low-latency) one-shot: blocks, and buffers per (block, parity, sender)
 * carved out of SYMHEAP_PAD_LL_BYTES. */
constexpr int kLLBlocks = 16;
constexpr int kLLThreads = 512;

__host__ __device__ inline size_t ll_area_bytes(int nranks) {
  return (SYMHEAP_PAD_LL_BYTES / (kLLBlocks * 2 * (size_t)nranks)) &
         ~(size_t)15;
}
/* Payload the LL path carries: 8 bytes in each 16-byte line. */
__host__ __device__ inline size_t ll_capacity(int nranks) {
  return ll_area_bytes(nranks) / 2 * kLLBlocks;
}

__device__ __forceinline__ uint64_t *epochs(const view_t &w) {
  return (uint64_t *)symheap_device_pad_ptr(&w, w.rank,
                                            SYMHEAP_PAD_COLL_OFFSET);
}
__device__ __forceinline__ uint64_t *flag(const view_t &w, int rank, int ch,
                                          int sender) {
  return (uint64_t *)symheap_device_pad_ptr(
             &w, rank, SYMHEAP_PAD_COLL_OFFSET + kFlagsOffset) +
         ch * kMaxRanks + sender;
}

/* This block's next epoch; thread 0 advances it, every thread gets it. */
__device__ __forceinline__ uint64_t next_epoch(const view_t &w) {
  __shared__ uint64_t e;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint64_t *p = epochs(w) + blockIdx.x;
    e = *p + 1;
    *p = e;
  }
  __syncthreads();
  return e;
}

/* This rank's part of the comm pad (its gave-up word: symheap_device.cuh). */
__device__ __forceinline__ char *own_pad(const view_t &w) {
  return (char *)symheap_device_pad_ptr(&w, w.rank, 0);
}

/* Block blockIdx.x of every rank meets here (channel = block index); writes
 * before it, local or remote, are visible to all after it.  false (on every
 * thread of the block) when a peer did not come within the comm's timeout:
 * the kernel then returns (the comm's status says why). */
__device__ __forceinline__ bool barrier(const view_t &w) {
  uint64_t e = next_epoch(w);
  int p = (int)threadIdx.x, gave_up = 0;
  if (p < w.nranks && p != w.rank) {
    symheap_dev_st_release(flag(w, p, blockIdx.x, w.rank), e);
    uint64_t v;
    symheap_dev_wait_t c = {0, 0};
    while ((v = symheap_dev_ld_acquire(flag(w, w.rank, blockIdx.x, p))) < e)
      if (symheap_dev__wait_over(c, own_pad(w), w.timeout_ns)) {
        symheap_dev__gave_up(c, own_pad(w), w.status, SYMHEAP_WAIT_BARRIER, p,
                             e, v);
        gave_up = 1;
        break;
      }
  }
  return !__syncthreads_or(gave_up);
}

/* --- element types as raw bits ------------------------------------------ */
template <int DT> struct elem;
template <> struct elem<SYMHEAP_FLOAT32> {
  typedef uint32_t raw;
  static __device__ __forceinline__ float to_f(raw r) {
    return __uint_as_float(r);
  }
  static __device__ __forceinline__ raw from_f(float f) {
    return __float_as_uint(f);
  }
};
template <> struct elem<SYMHEAP_BFLOAT16> {
  typedef uint16_t raw;
  static __device__ __forceinline__ float to_f(raw r) {
    return __uint_as_float((uint32_t)r << 16);
  }
  static __device__ __forceinline__ raw from_f(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
};
template <> struct elem<SYMHEAP_FLOAT16> {
  typedef uint16_t raw;
  static __device__ __forceinline__ float to_f(raw r) {
    return __half2float(__ushort_as_half(r));
  }
  static __device__ __forceinline__ raw from_f(float f) {
    return __half_as_ushort(__float2half_rn(f));
  }
};

template <int OP> __device__ __forceinline__ float reduce(float a, float b) {
  return OP == SYMHEAP_OP_SUM ? a + b : fmaxf(a, b);
}

/* A unit of UB bytes (8 or 16) of a buffer of `count` elements.  Whole,
 * aligned units move in one access; the last, partial one (or any unit of a
 * misaligned buffer) element by element, never past the end. */
template <int DT, int UB> struct unit {
  typedef typename elem<DT>::raw raw;
  static constexpr int E = UB / (int)sizeof(raw);
  typedef typename std::conditional<UB == 16, uint4, uint2>::type word;
  union bits {
    word w;
    raw r[E];
  };

  static __device__ __forceinline__ bits load(const void *base, size_t u,
                                              size_t count, bool aligned) {
    bits b;
    size_t first = u * E;
    if (aligned && first + E <= count) {
      b.w = ((const word *)base)[u];
    } else {
#pragma unroll
      for (int e = 0; e < E; e++)
        b.r[e] = first + e < count ? ((const raw *)base)[first + e] : raw(0);
    }
    return b;
  }
  static __device__ __forceinline__ void
  store(void *base, size_t u, size_t count, bool aligned, const bits &b) {
    size_t first = u * E;
    if (aligned && first + E <= count) {
      ((word *)base)[u] = b.w;
    } else {
#pragma unroll
      for (int e = 0; e < E; e++)
        if (first + e < count)
          ((raw *)base)[first + e] = b.r[e];
    }
  }
  template <int OP>
  static __device__ __forceinline__ void accumulate(float (&acc)[E],
                                                    const bits &b, bool first) {
#pragma unroll
    for (int e = 0; e < E; e++) {
      float x = elem<DT>::to_f(b.r[e]);
      acc[e] = first ? x : reduce<OP>(acc[e], x);
    }
  }
  static __device__ __forceinline__ bits pack(const float (&acc)[E]) {
    bits b;
#pragma unroll
    for (int e = 0; e < E; e++)
      b.r[e] = elem<DT>::from_f(acc[e]);
    return b;
  }
};

/* acc = op over ranks (in rank order) of unit u of every rank's input. */
template <int DT, int OP, int NR>
__device__ __forceinline__ void
gather_reduce(const view_t &in, size_t in_off, size_t u, size_t count,
              bool aligned, float (&acc)[unit<DT, 16>::E]) {
  typedef unit<DT, 16> U;
  const int n = NR ? NR : in.nranks;
  if (NR) {
    typename U::bits x[NR ? NR : 1];
#pragma unroll
    for (int s = 0; s < (NR ? NR : 1); s++)
      x[s] =
          U::load(symheap_device_peer_ptr(&in, s, in_off), u, count, aligned);
#pragma unroll
    for (int s = 0; s < (NR ? NR : 1); s++)
      U::template accumulate<OP>(acc, x[s], s == 0);
  } else {
    for (int s = 0; s < n; s++)
      U::template accumulate<OP>(
          acc,
          U::load(symheap_device_peer_ptr(&in, s, in_off), u, count, aligned),
          s == 0);
  }
}

/* A launcher body per (dtype, op); F(D, O) launches. */
#define SYMHEAP_DISPATCH_DT_OP(dt, op, F)                                      \
  switch ((dt)*2 + (op)) {                                                     \
  case SYMHEAP_FLOAT32 * 2 + SYMHEAP_OP_SUM:                                   \
    F(SYMHEAP_FLOAT32, SYMHEAP_OP_SUM);                                        \
    break;                                                                     \
  case SYMHEAP_FLOAT32 * 2 + SYMHEAP_OP_MAX:                                   \
    F(SYMHEAP_FLOAT32, SYMHEAP_OP_MAX);                                        \
    break;                                                                     \
  case SYMHEAP_BFLOAT16 * 2 + SYMHEAP_OP_SUM:                                  \
    F(SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM);                                       \
    break;                                                                     \
  case SYMHEAP_BFLOAT16 * 2 + SYMHEAP_OP_MAX:                                  \
    F(SYMHEAP_BFLOAT16, SYMHEAP_OP_MAX);                                       \
    break;                                                                     \
  case SYMHEAP_FLOAT16 * 2 + SYMHEAP_OP_SUM:                                   \
    F(SYMHEAP_FLOAT16, SYMHEAP_OP_SUM);                                        \
    break;                                                                     \
  case SYMHEAP_FLOAT16 * 2 + SYMHEAP_OP_MAX:                                   \
    F(SYMHEAP_FLOAT16, SYMHEAP_OP_MAX);                                        \
    break;                                                                     \
  default:                                                                     \
    return cudaErrorInvalidValue;                                              \
  }

/* --- volatile 16-byte accesses for the LL protocol ---------------------- */
__device__ __forceinline__ void st_volatile(uint4 *p, uint4 v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ uint4 ld_volatile(const uint4 *p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

/* --- programmatic dependent launch (PDL, sm_90) -------------------------
 * The LL kernels (ll_one_shot, one_shot_ll128) are launched with
 * programmatic stream serialization: such a kernel may be scheduled once
 * every block of the stream's previous kernel has exited, before that
 * kernel has completed, and pdl_wait() (its first statement) holds it until
 * that kernel's memory is visible; kernels after it wait for it as usual.
 * Back-to-back collectives (a CUDA graph of them) overlap one's launch with
 * the previous one's end.  No kernel lets its dependents start earlier
 * (griddepcontrol.launch_dependents): measured on 2x H100, ll128 was 2-5%
 * slower with it, and the next kernel's waiting blocks could hold SMs that
 * a peer's blocks on the same GPU need to start. */
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
template <typename A>
void launch_pdl(void (*k)(A), unsigned grid, unsigned threads,
                cudaStream_t s, const A &a) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(threads);
  cfg.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  if (cudaLaunchKernelEx(&cfg, k, a) != cudaSuccess) {
    (void)cudaGetLastError(); /* not supported here: a plain launch */
    k<<<grid, threads, 0, s>>>(a);
  }
}

} // namespace symheap_coll

#endif

/* Atomic memory operations: the compiler's __atomic builtins on the peer's
 * mapping.  The peers are processes sharing the same physical pages, and
 * these builtins are lock-free for every AMO type (4 and 8 bytes), so they
 * are atomic across PEs.  The _nbi forms complete before they return.
 *
 * On a job across hosts every AMO, to this host's PEs and to this PE too,
 * is a symheap_atomic (remote.c): the network engine's atomics and the
 * CPU's are not atomic with each other, so one domain takes them all.  The
 * operand and the result travel as the type's bytes (4 or 8), which is
 * what the bitwise operations (fetch, set, swap, compare-and-swap) and a
 * two's complement add need, floating point and signed types included. */
#include "shmem_peer.h"

#define D SHMEM_CTX_DEFAULT
#define SEQ __ATOMIC_SEQ_CST
/* The whole word in one region (an atomic straddling its end is refused). */
#define AT(T, ctx, addr, pe)                                                   \
  ((T *)shm__peer_n((addr), sizeof(T), shm__ctx_pe((ctx), (pe))))
#define NET __builtin_expect(shm__s.net, 0)
/* Through symheap_atomic: returns the old value (r_) of a fetching op. */
#define NET_AMO(T, ctx, addr, pe, op, operand, compare)                        \
  T r_;                                                                        \
  shm__amo((addr), shm__ctx_pe((ctx), (pe)), (op), sizeof(T), (operand),       \
           (compare), &r_);                                                    \
  return r_;
#define NET_AMO_V(T, ctx, addr, pe, op, operand)                               \
  shm__amo((addr), shm__ctx_pe((ctx), (pe)), (op), sizeof(T), (operand), NULL, \
           NULL);                                                              \
  return;
#define SHM_UNPAREN(...) __VA_ARGS__
/* The form without a context calls the context form with the default. */
#define SHM_FWD(T, N, OP, PARAMS, ARGS)                                        \
  T shmem_##N##_atomic_##OP PARAMS {                                           \
    return shmem_ctx_##N##_atomic_##OP(D, SHM_UNPAREN ARGS);                   \
  }
#define SHM_FWD_V(N, OP, PARAMS, ARGS)                                         \
  void shmem_##N##_atomic_##OP PARAMS {                                        \
    shmem_ctx_##N##_atomic_##OP(D, SHM_UNPAREN ARGS);                          \
  }

#define SHM_DEF_AMO_EXT(T, N)                                                  \
  T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe) {   \
    if (NET) {                                                                 \
      NET_AMO(T, ctx, source, pe, SYMHEAP_AMO_FETCH, NULL, NULL)               \
    }                                                                          \
    T r;                                                                       \
    __atomic_load(AT(T, ctx, source, pe), &r, SEQ);                            \
    return r;                                                                  \
  }                                                                            \
  void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe) { \
    if (NET) {                                                                 \
      NET_AMO_V(T, ctx, dest, pe, SYMHEAP_AMO_SET, &value)                     \
    }                                                                          \
    __atomic_store(AT(T, ctx, dest, pe), &value, SEQ);                         \
  }                                                                            \
  T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe) {   \
    if (NET) {                                                                 \
      NET_AMO(T, ctx, dest, pe, SYMHEAP_AMO_SWAP, &value, NULL)                \
    }                                                                          \
    T r;                                                                       \
    __atomic_exchange(AT(T, ctx, dest, pe), &value, &r, SEQ);                  \
    return r;                                                                  \
  }                                                                            \
  void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch,             \
                                        const T *source, int pe) {             \
    *fetch = shmem_ctx_##N##_atomic_fetch(ctx, source, pe);                    \
  }                                                                            \
  void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest,     \
                                       T value, int pe) {                      \
    *fetch = shmem_ctx_##N##_atomic_swap(ctx, dest, value, pe);                \
  }                                                                            \
  SHM_FWD(T, N, fetch, (const T *source, int pe), (source, pe))                \
  SHM_FWD_V(N, set, (T * dest, T value, int pe), (dest, value, pe))            \
  SHM_FWD(T, N, swap, (T * dest, T value, int pe), (dest, value, pe))          \
  SHM_FWD_V(N, fetch_nbi, (T * fetch, const T *source, int pe),                \
            (fetch, source, pe))                                               \
  SHM_FWD_V(N, swap_nbi, (T * fetch, T * dest, T value, int pe),               \
            (fetch, dest, value, pe))
SYMHEAP_SHMEM_AMO_EXT_TYPES(SHM_DEF_AMO_EXT)

#define SHM_DEF_AMO_STD(T, N)                                                  \
  T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond,      \
                                        T value, int pe) {                     \
    if (NET) {                                                                 \
      NET_AMO(T, ctx, dest, pe, SYMHEAP_AMO_CSWAP, &value, &cond)              \
    }                                                                          \
    __atomic_compare_exchange_n(AT(T, ctx, dest, pe), &cond, value, 0, SEQ,    \
                                SEQ);                                          \
    return cond; /* the old value, whether or not it was swapped */            \
  }                                                                            \
  T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value,        \
                                     int pe) {                                 \
    if (NET) {                                                                 \
      NET_AMO(T, ctx, dest, pe, SYMHEAP_AMO_FETCH_ADD, &value, NULL)           \
    }                                                                          \
    return __atomic_fetch_add(AT(T, ctx, dest, pe), value, SEQ);               \
  }                                                                            \
  void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe) { \
    if (NET) {                                                                 \
      NET_AMO_V(T, ctx, dest, pe, SYMHEAP_AMO_ADD, &value)                     \
    }                                                                          \
    __atomic_fetch_add(AT(T, ctx, dest, pe), value, SEQ);                      \
  }                                                                            \
  T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe) {       \
    if (NET)                                                                   \
      return shmem_ctx_##N##_atomic_fetch_add(ctx, dest, (T)1, pe);            \
    return __atomic_fetch_add(AT(T, ctx, dest, pe), (T)1, SEQ);                \
  }                                                                            \
  void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe) {          \
    if (NET) {                                                                 \
      shmem_ctx_##N##_atomic_add(ctx, dest, (T)1, pe);                         \
      return;                                                                  \
    }                                                                          \
    __atomic_fetch_add(AT(T, ctx, dest, pe), (T)1, SEQ);                       \
  }                                                                            \
  void shmem_ctx_##N##_atomic_compare_swap_nbi(                                \
      shmem_ctx_t ctx, T *fetch, T *dest, T cond, T value, int pe) {           \
    *fetch = shmem_ctx_##N##_atomic_compare_swap(ctx, dest, cond, value, pe);  \
  }                                                                            \
  void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch,         \
                                            T *dest, int pe) {                 \
    *fetch = shmem_ctx_##N##_atomic_fetch_inc(ctx, dest, pe);                  \
  }                                                                            \
  void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch,         \
                                            T *dest, T value, int pe) {        \
    *fetch = shmem_ctx_##N##_atomic_fetch_add(ctx, dest, value, pe);           \
  }                                                                            \
  SHM_FWD(T, N, compare_swap, (T * dest, T cond, T value, int pe),             \
          (dest, cond, value, pe))                                             \
  SHM_FWD(T, N, fetch_add, (T * dest, T value, int pe), (dest, value, pe))     \
  SHM_FWD_V(N, add, (T * dest, T value, int pe), (dest, value, pe))            \
  SHM_FWD(T, N, fetch_inc, (T * dest, int pe), (dest, pe))                     \
  SHM_FWD_V(N, inc, (T * dest, int pe), (dest, pe))                            \
  SHM_FWD_V(N, compare_swap_nbi,                                               \
            (T * fetch, T * dest, T cond, T value, int pe),                    \
            (fetch, dest, cond, value, pe))                                    \
  SHM_FWD_V(N, fetch_inc_nbi, (T * fetch, T * dest, int pe),                   \
            (fetch, dest, pe))                                                 \
  SHM_FWD_V(N, fetch_add_nbi, (T * fetch, T * dest, T value, int pe),          \
            (fetch, dest, value, pe))
SYMHEAP_SHMEM_AMO_STD_TYPES(SHM_DEF_AMO_STD)

#define AMO_and SYMHEAP_AMO_AND
#define AMO_or SYMHEAP_AMO_OR
#define AMO_xor SYMHEAP_AMO_XOR
#define SHM_DEF_AMO_BITOP(T, N, OP)                                            \
  T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value,       \
                                      int pe) {                                \
    if (NET) {                                                                 \
      NET_AMO(T, ctx, dest, pe, AMO_##OP, &value, NULL)                        \
    }                                                                          \
    return __atomic_fetch_##OP(AT(T, ctx, dest, pe), value, SEQ);              \
  }                                                                            \
  void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value,          \
                                   int pe) {                                   \
    if (NET) {                                                                 \
      NET_AMO_V(T, ctx, dest, pe, AMO_##OP, &value)                            \
    }                                                                          \
    __atomic_fetch_##OP(AT(T, ctx, dest, pe), value, SEQ);                     \
  }                                                                            \
  void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch,      \
                                               T *dest, T value, int pe) {     \
    *fetch = shmem_ctx_##N##_atomic_fetch_##OP(ctx, dest, value, pe);          \
  }                                                                            \
  SHM_FWD(T, N, fetch_##OP, (T * dest, T value, int pe), (dest, value, pe))    \
  SHM_FWD_V(N, OP, (T * dest, T value, int pe), (dest, value, pe))             \
  SHM_FWD_V(N, fetch_##OP##_nbi, (T * fetch, T * dest, T value, int pe),       \
            (fetch, dest, value, pe))
#define SHM_DEF_AMO_BIT(T, N)                                                  \
  SHM_DEF_AMO_BITOP(T, N, and)                                                 \
  SHM_DEF_AMO_BITOP(T, N, or) SHM_DEF_AMO_BITOP(T, N, xor)
SYMHEAP_SHMEM_AMO_BIT_TYPES(SHM_DEF_AMO_BIT)

/* The deprecated names call the current ones. */
#define SHM_DEF_OLD_AMO_EXT(T, N)                                              \
  T shmem_##N##_swap(T *target, T value, int pe) {                             \
    return shmem_##N##_atomic_swap(target, value, pe);                         \
  }                                                                            \
  T shmem_##N##_fetch(const T *target, int pe) {                               \
    return shmem_##N##_atomic_fetch(target, pe);                               \
  }                                                                            \
  void shmem_##N##_set(T *target, T value, int pe) {                           \
    shmem_##N##_atomic_set(target, value, pe);                                 \
  }
#define SHM_DEF_OLD_AMO(T, N)                                                  \
  T shmem_##N##_cswap(T *target, T cond, T value, int pe) {                    \
    return shmem_##N##_atomic_compare_swap(target, cond, value, pe);           \
  }                                                                            \
  T shmem_##N##_fadd(T *target, T value, int pe) {                             \
    return shmem_##N##_atomic_fetch_add(target, value, pe);                    \
  }                                                                            \
  T shmem_##N##_finc(T *target, int pe) {                                      \
    return shmem_##N##_atomic_fetch_inc(target, pe);                           \
  }                                                                            \
  void shmem_##N##_add(T *target, T value, int pe) {                           \
    shmem_##N##_atomic_add(target, value, pe);                                 \
  }                                                                            \
  void shmem_##N##_inc(T *target, int pe) {                                    \
    shmem_##N##_atomic_inc(target, pe);                                        \
  }
SYMHEAP_SHMEM_OLD_AMO_EXT_TYPES(SHM_DEF_OLD_AMO_EXT)
SYMHEAP_SHMEM_OLD_AMO_TYPES(SHM_DEF_OLD_AMO)

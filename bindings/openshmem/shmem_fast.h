/* symheap-shmem: inline fast paths of the small RMA and AMO routines.
 *
 * Included by shmem.h.  A symmetric address on PE p is this PE's address
 * plus p's offset (its heap or data-segment copy minus this PE's); the
 * library publishes those offsets in symheap_shmem_fast at shmem_init.  In a
 * program, the plain (context-less) put/get/p/g/putmem/getmem and the
 * non-blocking-free AMOs are static inline functions that translate and
 * copy or apply the atomic directly, and fall back to the library's context
 * form (SHMEM_CTX_DEFAULT) for anything else (an address that is not
 * symmetric, a PE out of range, a call before shmem_init), which reports
 * the error.  That saves the call into the library, which costs as much as
 * an 8-byte store.  Define SYMHEAP_SHMEM_NO_INLINE before including shmem.h
 * to call the library's exported functions instead (same behaviour). */
#ifndef SYMHEAP_SHMEM_FAST_H
#define SYMHEAP_SHMEM_FAST_H

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Written by shmem_init, cleared by shmem_finalize (npes 0: every call takes
 * the library's path). */
struct symheap_shmem_fast {
  uintptr_t heap_base;
  size_t heap_size;
  const intptr_t *heap_delta; /* per PE: its heap copy minus ours */
  uintptr_t data_base;
  size_t data_size;
  const intptr_t *data_delta;
  int npes;
};
extern struct symheap_shmem_fast symheap_shmem_fast;
/* The library's copy (its copy.c) of a put or get of
 * SYMHEAP_SHMEM_FAST_COPY_MAX bytes or more, between addresses translated
 * and checked here.  A pointer, bound when the program is loaded, not a
 * function, which a call through the PLT binds at its first call: OSU's
 * 16 KiB put and get latency, timed from their first iteration, paid for
 * that.  Its own symbol, not a field of symheap_shmem_fast: a program
 * keeps a copy of that struct sized by the header it was built with. */
extern void (*const symheap_shmem_fast_copy)(void *dest, const void *src,
                                             size_t bytes);

/* Where the bytes at addr live on PE pe, or NULL when the library must
 * decide (it says what is wrong: a range that runs past the heap's or the
 * data segment's end is the library's to refuse, as a start outside). */
static inline void *symheap_shmem_fast_range(const void *addr, size_t bytes,
                                             int pe) {
  const struct symheap_shmem_fast *f = &symheap_shmem_fast;
  uintptr_t a = (uintptr_t)addr;
  if ((unsigned)pe >= (unsigned)f->npes)
    return NULL;
  if (a - f->heap_base < f->heap_size &&
      bytes <= f->heap_size - (a - f->heap_base))
    return (void *)(a + (uintptr_t)f->heap_delta[pe]);
  if (a - f->data_base < f->data_size &&
      bytes <= f->data_size - (a - f->data_base))
    return (void *)(a + (uintptr_t)f->data_delta[pe]);
  return NULL;
}
/* nelems elements of size bytes, in bytes; SIZE_MAX when that does not fit
 * a size_t.  A product that wrapped (nelems of 2^61 + 1 longs is 8 bytes)
 * moved a few bytes silently; SIZE_MAX runs past every region, so the
 * library refuses it (shm__range_fatal says the count overflowed). */
static inline size_t symheap_shmem_bytes(size_t nelems, size_t size) {
  return size && nelems > SIZE_MAX / size ? SIZE_MAX : nelems * size;
}
/* Where the byte at addr lives on PE pe, or NULL (as above). */
static inline void *symheap_shmem_fast_addr(const void *addr, int pe) {
  return symheap_shmem_fast_range(addr, 1, pe);
}

void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source,
                      size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source,
                      size_t nelems, int pe);

#define SYMHEAP_SHMEM_UNPAREN(...) __VA_ARGS__

/* Puts and gets of this many bytes or more are the library's to copy
 * (symheap_shmem_fast_copy): it picks plain or streaming stores.  It is
 * also the smallest SYMHEAP_SHMEM_STREAM_MIN. */
#define SYMHEAP_SHMEM_FAST_COPY_MAX 16384

#if !defined(SYMHEAP_SHMEM_BUILDING) && !defined(SYMHEAP_SHMEM_NO_INLINE)

static inline void symheap_shmem_fast_put(void *dest, const void *source,
                                          size_t bytes, int pe) {
  void *q_; /* declared first: programs build with C90's warnings too */
  if (!bytes) /* any pointer is valid for no bytes (Annex C) */
    return;
  q_ = symheap_shmem_fast_range(dest, bytes, pe);
  if (q_ && bytes < SYMHEAP_SHMEM_FAST_COPY_MAX)
    memcpy(q_, source, bytes);
  else if (q_)
    symheap_shmem_fast_copy(q_, source, bytes);
  else
    shmem_ctx_putmem(SHMEM_CTX_DEFAULT, dest, source, bytes, pe);
}

static inline void symheap_shmem_fast_get(void *dest, const void *source,
                                          size_t bytes, int pe) {
  const void *q_;
  if (!bytes)
    return;
  q_ = symheap_shmem_fast_range(source, bytes, pe);
  if (q_ && bytes < SYMHEAP_SHMEM_FAST_COPY_MAX)
    memcpy(dest, q_, bytes);
  else if (q_)
    symheap_shmem_fast_copy(dest, q_, bytes);
  else
    shmem_ctx_getmem(SHMEM_CTX_DEFAULT, dest, source, bytes, pe);
}

/* The plain RMA forms of one type (the context forms are functions). */
#define SYMHEAP_SHMEM_PLAIN_RMA(T, N)                                          \
  static inline void shmem_##N##_put(T *dest, const T *source, size_t nelems,  \
                                     int pe) {                                 \
    symheap_shmem_fast_put(dest, source,                                       \
                           symheap_shmem_bytes(nelems, sizeof(T)), pe);        \
  }                                                                            \
  static inline void shmem_##N##_put_nbi(T *dest, const T *source,             \
                                         size_t nelems, int pe) {              \
    symheap_shmem_fast_put(dest, source,                                       \
                           symheap_shmem_bytes(nelems, sizeof(T)), pe);        \
  }                                                                            \
  static inline void shmem_##N##_get(T *dest, const T *source, size_t nelems,  \
                                     int pe) {                                 \
    symheap_shmem_fast_get(dest, source,                                       \
                           symheap_shmem_bytes(nelems, sizeof(T)), pe);        \
  }                                                                            \
  static inline void shmem_##N##_get_nbi(T *dest, const T *source,             \
                                         size_t nelems, int pe) {              \
    symheap_shmem_fast_get(dest, source,                                       \
                           symheap_shmem_bytes(nelems, sizeof(T)), pe);        \
  }                                                                            \
  static inline void shmem_##N##_p(T *dest, T value, int pe) {                 \
    T *q_ = (T *)symheap_shmem_fast_range(dest, sizeof(T), pe);                \
    if (q_)                                                                    \
      *(volatile T *)q_ = value;                                               \
    else                                                                       \
      shmem_ctx_##N##_p(SHMEM_CTX_DEFAULT, dest, value, pe);                   \
  }                                                                            \
  static inline T shmem_##N##_g(const T *source, int pe) {                     \
    const T *q_ = (const T *)symheap_shmem_fast_range(source, sizeof(T), pe);  \
    if (q_)                                                                    \
      return *(const volatile T *)q_;                                          \
    return shmem_ctx_##N##_g(SHMEM_CTX_DEFAULT, source, pe);                   \
  }
#define SYMHEAP_SHMEM_PLAIN_MEM(NAME, OP)                                      \
  static inline void shmem_##NAME(void *dest, const void *source,              \
                                  size_t nelems, int pe) {                     \
    OP(dest, source, nelems, pe);                                              \
  }

/* An AMO: the context form is a function; the plain one applies EXPR to
 * q_, the translated ADDR, or calls the context form. */
#define SYMHEAP_SHMEM_AMO(RET, T, N, OP, ADDR, PARAMS, ARGS, EXPR)             \
  RET shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx,                             \
                                  SYMHEAP_SHMEM_UNPAREN PARAMS);               \
  static inline RET shmem_##N##_atomic_##OP PARAMS {                           \
    T *q_ = (T *)symheap_shmem_fast_range(ADDR, sizeof(T), pe);                \
    if (q_) {                                                                  \
      EXPR                                                                     \
    }                                                                          \
    return shmem_ctx_##N##_atomic_##OP(SHMEM_CTX_DEFAULT,                      \
                                       SYMHEAP_SHMEM_UNPAREN ARGS);            \
  }
#define SYMHEAP_SHMEM_AMO_V(T, N, OP, ADDR, PARAMS, ARGS, EXPR)                \
  void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx,                            \
                                   SYMHEAP_SHMEM_UNPAREN PARAMS);              \
  static inline void shmem_##N##_atomic_##OP PARAMS {                          \
    T *q_ = (T *)symheap_shmem_fast_range(ADDR, sizeof(T), pe);                \
    if (q_) {                                                                  \
      EXPR return;                                                             \
    }                                                                          \
    shmem_ctx_##N##_atomic_##OP(SHMEM_CTX_DEFAULT,                             \
                                SYMHEAP_SHMEM_UNPAREN ARGS);                   \
  }

#else /* the library itself, or SYMHEAP_SHMEM_NO_INLINE: declarations */

#define SYMHEAP_SHMEM_PLAIN_RMA(T, N)                                          \
  void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);       \
  void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);   \
  void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);       \
  void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);   \
  void shmem_##N##_p(T *dest, T value, int pe);                                \
  T shmem_##N##_g(const T *source, int pe);
#define SYMHEAP_SHMEM_PLAIN_MEM(NAME, OP)                                      \
  void shmem_##NAME(void *dest, const void *source, size_t nelems, int pe);
#define SYMHEAP_SHMEM_AMO(RET, T, N, OP, ADDR, PARAMS, ARGS, EXPR)             \
  RET shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx,                             \
                                  SYMHEAP_SHMEM_UNPAREN PARAMS);               \
  RET shmem_##N##_atomic_##OP PARAMS;
#define SYMHEAP_SHMEM_AMO_V(T, N, OP, ADDR, PARAMS, ARGS, EXPR)                \
  SYMHEAP_SHMEM_AMO(void, T, N, OP, ADDR, PARAMS, ARGS, EXPR)

#endif

/* The blocking AMOs of each table, through the macros above. */
#define SYMHEAP_SHMEM_SEQ __ATOMIC_SEQ_CST
#define SYMHEAP_SHMEM_FAST_AMO_EXT(T, N)                                       \
  SYMHEAP_SHMEM_AMO(T, T, N, fetch, source, (const T *source, int pe),         \
                    (source, pe), T r_;                                        \
                    __atomic_load(q_, &r_, SYMHEAP_SHMEM_SEQ); return r_;)     \
  SYMHEAP_SHMEM_AMO_V(T, N, set, dest, (T * dest, T value, int pe),            \
                      (dest, value, pe),                                       \
                      __atomic_store(q_, &value, SYMHEAP_SHMEM_SEQ);)          \
  SYMHEAP_SHMEM_AMO(T, T, N, swap, dest, (T * dest, T value, int pe),          \
                    (dest, value, pe), T r_;                                   \
                    __atomic_exchange(q_, &value, &r_, SYMHEAP_SHMEM_SEQ);     \
                    return r_;)
#define SYMHEAP_SHMEM_FAST_AMO_STD(T, N)                                       \
  SYMHEAP_SHMEM_AMO(                                                           \
      T, T, N, compare_swap, dest, (T * dest, T cond, T value, int pe),        \
      (dest, cond, value, pe),                                                 \
      __atomic_compare_exchange_n(q_, &cond, value, 0, SYMHEAP_SHMEM_SEQ,      \
                                  SYMHEAP_SHMEM_SEQ);                          \
      return cond;)                                                            \
  SYMHEAP_SHMEM_AMO(T, T, N, fetch_inc, dest, (T * dest, int pe), (dest, pe),  \
                    return __atomic_fetch_add(q_, 1, SYMHEAP_SHMEM_SEQ);)      \
  SYMHEAP_SHMEM_AMO_V(T, N, inc, dest, (T * dest, int pe), (dest, pe),         \
                      __atomic_fetch_add(q_, 1, SYMHEAP_SHMEM_SEQ);)           \
  SYMHEAP_SHMEM_AMO(T, T, N, fetch_add, dest, (T * dest, T value, int pe),     \
                    (dest, value, pe),                                         \
                    return __atomic_fetch_add(q_, value, SYMHEAP_SHMEM_SEQ);)  \
  SYMHEAP_SHMEM_AMO_V(T, N, add, dest, (T * dest, T value, int pe),            \
                      (dest, value, pe),                                       \
                      __atomic_fetch_add(q_, value, SYMHEAP_SHMEM_SEQ);)
#define SYMHEAP_SHMEM_FAST_AMO_BITOP(T, N, OP)                                 \
  SYMHEAP_SHMEM_AMO(T, T, N, fetch_##OP, dest, (T * dest, T value, int pe),    \
                    (dest, value, pe),                                         \
                    return __atomic_fetch_##OP(q_, value, SYMHEAP_SHMEM_SEQ);) \
  SYMHEAP_SHMEM_AMO_V(T, N, OP, dest, (T * dest, T value, int pe),             \
                      (dest, value, pe),                                       \
                      __atomic_fetch_##OP(q_, value, SYMHEAP_SHMEM_SEQ);)
#define SYMHEAP_SHMEM_FAST_AMO_BIT(T, N)                                       \
  SYMHEAP_SHMEM_FAST_AMO_BITOP(T, N, and)                                      \
  SYMHEAP_SHMEM_FAST_AMO_BITOP(T, N, or)                                       \
  SYMHEAP_SHMEM_FAST_AMO_BITOP(T, N, xor)

#ifdef __cplusplus
}
#endif
#endif /* SYMHEAP_SHMEM_FAST_H */

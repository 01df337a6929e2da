/* RMA and signals: copies between this PE's memory and a peer's mapping,
 * complete when the call returns (so the _nbi forms are the blocking ones
 * and quiet only orders), or, for a PE on another host, the one-sided API
 * (remote.c): put returns with the source reusable, get with the data, the
 * _nbi forms complete at quiet.  A transfer of zero elements touches nothing
 * and checks nothing (Annex C: any pointer, even NULL, is valid then);
 * put-with-signal still updates the signal. */
#include <string.h>

#include "shmem_peer.h"

/* As the inline paths do (shmem_fast.h): a copy of 16 KiB or more is
 * copy.c's to make, which picks its stores; a smaller one a memcpy. */
static inline void rma_copy(void *dest, const void *src, size_t bytes) {
  if (bytes < SYMHEAP_SHMEM_FAST_COPY_MAX)
    memcpy(dest, src, bytes);
  else
    shm__copy(dest, src, bytes);
}

static inline void shm_put(shmem_ctx_t ctx, void *dest, const void *src,
                           size_t bytes, int pe) {
  if (!bytes)
    return;
  pe = shm__ctx_pe(ctx, pe);
  if (shm__remote(pe))
    shm__net_put(dest, src, bytes, pe, 0);
  else
    rma_copy(shm__peer_n(dest, bytes, pe), src, bytes);
}

static inline void shm_get(shmem_ctx_t ctx, void *dest, const void *src,
                           size_t bytes, int pe) {
  if (!bytes)
    return;
  pe = shm__ctx_pe(ctx, pe);
  if (shm__remote(pe))
    shm__net_get(dest, src, bytes, pe, 0);
  else
    rma_copy(dest, shm__peer_n(src, bytes, pe), bytes);
}

static inline void shm_put_nbi(shmem_ctx_t ctx, void *dest, const void *src,
                               size_t bytes, int pe) {
  if (!bytes)
    return;
  pe = shm__ctx_pe(ctx, pe);
  if (shm__remote(pe))
    shm__net_put(dest, src, bytes, pe, 1);
  else
    rma_copy(shm__peer_n(dest, bytes, pe), src, bytes);
}

static inline void shm_get_nbi(shmem_ctx_t ctx, void *dest, const void *src,
                               size_t bytes, int pe) {
  if (!bytes)
    return;
  pe = shm__ctx_pe(ctx, pe);
  if (shm__remote(pe))
    shm__net_get(dest, src, bytes, pe, 1);
  else
    rma_copy(dest, shm__peer_n(src, bytes, pe), bytes);
}

/* Strided: element k goes from src[k*sst] to dest[k*dst]. */
static void shm_strided(char *d, ptrdiff_t dst, const char *s, ptrdiff_t sst,
                        size_t n, size_t elem) {
  for (size_t k = 0; k < n; k++)
    memcpy(d + (ptrdiff_t)k * dst * (ptrdiff_t)elem,
           s + (ptrdiff_t)k * sst * (ptrdiff_t)elem, elem);
}

/* Where n elements at addr, stride apart (in elements), live on PE pe:
 * all of them in one region, checked as one range from the lowest to the
 * highest (a stride may be negative); a span that does not fit a size_t
 * is no region's. */
static char *strided_peer(const void *addr, ptrdiff_t stride, size_t n,
                          size_t elem, int pe) {
  size_t span = shm__span(n, stride, elem);
  if (span == SIZE_MAX)
    shm__range_fatal(addr, SIZE_MAX);
  if (stride >= 0)
    return shm__peer_n(addr, span, pe);
  const char *lo = (const char *)addr - (span - elem);
  return shm__peer_n(lo, span, pe) + (span - elem);
}

static void shm_iput(shmem_ctx_t ctx, void *dest, const void *src,
                     ptrdiff_t dst, ptrdiff_t sst, size_t n, size_t elem,
                     int pe) {
  if (!n)
    return;
  pe = shm__ctx_pe(ctx, pe);
  if (shm__remote(pe))
    shm__net_strided(dest, dst, src, sst, n, elem, pe, 1);
  else
    shm_strided(strided_peer(dest, dst, n, elem, pe), dst, src, sst, n, elem);
}

static void shm_iget(shmem_ctx_t ctx, void *dest, const void *src,
                     ptrdiff_t dst, ptrdiff_t sst, size_t n, size_t elem,
                     int pe) {
  if (!n)
    return;
  pe = shm__ctx_pe(ctx, pe);
  if (shm__remote(pe))
    shm__net_strided(dest, dst, src, sst, n, elem, pe, 0);
  else
    shm_strided(dest, dst, strided_peer(src, sst, n, elem, pe), sst, n, elem);
}

/* The signal is updated after the data, with release order, so a PE that
 * sees the signal sees the data.  Across hosts it is an atomic of the
 * signal word's domain (symheap_atomic), for every PE. */
static void shm_signal(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal,
                       int sig_op, int pe) {
  int wpe = shm__ctx_pe(ctx, pe);
  if (sig_op != SHMEM_SIGNAL_ADD && sig_op != SHMEM_SIGNAL_SET)
    shm__fatal("unknown signal operator %d", sig_op);
  if (shm__s.net) {
    shm__amo(sig_addr, wpe,
             sig_op == SHMEM_SIGNAL_ADD ? SYMHEAP_AMO_ADD : SYMHEAP_AMO_SET, 8,
             &signal, NULL, NULL);
    return;
  }
  uint64_t *s = (uint64_t *)shm__peer(sig_addr, wpe);
  if (sig_op == SHMEM_SIGNAL_ADD)
    __atomic_fetch_add(s, signal, __ATOMIC_SEQ_CST);
  else
    __atomic_store_n(s, signal, __ATOMIC_SEQ_CST);
  shm__wake(wpe, s); /* a PE asleep in shmem_signal_wait_until */
}

static void shm_put_signal(shmem_ctx_t ctx, void *dest, const void *src,
                           size_t bytes, uint64_t *sig_addr, uint64_t signal,
                           int sig_op, int pe) {
  if (shm__s.net) { /* symheap_put_signal: the data, then the signal */
    if (sig_op != SHMEM_SIGNAL_ADD && sig_op != SHMEM_SIGNAL_SET)
      shm__fatal("unknown signal operator %d", sig_op);
    shm__net_put_signal(
        dest, src, bytes, sig_addr, signal,
        sig_op == SHMEM_SIGNAL_ADD ? SYMHEAP_AMO_ADD : SYMHEAP_AMO_SET,
        shm__ctx_pe(ctx, pe));
    return;
  }
  shm_put(ctx, dest, src, bytes, pe);
  shm_signal(ctx, sig_addr, signal, sig_op, pe);
}

#define D SHMEM_CTX_DEFAULT
#define SHM_DEF_RMA(T, N)                                                      \
  void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source,          \
                           size_t nelems, int pe) {                            \
    shm_put(ctx, dest, source, symheap_shmem_bytes(nelems, sizeof(T)), pe);    \
  }                                                                            \
  void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe) {      \
    shm_put(D, dest, source, symheap_shmem_bytes(nelems, sizeof(T)), pe);      \
  }                                                                            \
  void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source,      \
                               size_t nelems, int pe) {                        \
    shm_put_nbi(ctx, dest, source, symheap_shmem_bytes(nelems, sizeof(T)),     \
                pe);                                                           \
  }                                                                            \
  void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe) {  \
    shm_put_nbi(D, dest, source, symheap_shmem_bytes(nelems, sizeof(T)), pe);  \
  }                                                                            \
  void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source,          \
                           size_t nelems, int pe) {                            \
    shm_get(ctx, dest, source, symheap_shmem_bytes(nelems, sizeof(T)), pe);    \
  }                                                                            \
  void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe) {      \
    shm_get(D, dest, source, symheap_shmem_bytes(nelems, sizeof(T)), pe);      \
  }                                                                            \
  void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source,      \
                               size_t nelems, int pe) {                        \
    shm_get_nbi(ctx, dest, source, symheap_shmem_bytes(nelems, sizeof(T)),     \
                pe);                                                           \
  }                                                                            \
  void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe) {  \
    shm_get_nbi(D, dest, source, symheap_shmem_bytes(nelems, sizeof(T)), pe);  \
  }                                                                            \
  void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source,         \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems,       \
                            int pe) {                                          \
    shm_iput(ctx, dest, source, dst, sst, nelems, sizeof(T), pe);              \
  }                                                                            \
  void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst,               \
                        ptrdiff_t sst, size_t nelems, int pe) {                \
    shm_iput(D, dest, source, dst, sst, nelems, sizeof(T), pe);                \
  }                                                                            \
  void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source,         \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems,       \
                            int pe) {                                          \
    shm_iget(ctx, dest, source, dst, sst, nelems, sizeof(T), pe);              \
  }                                                                            \
  void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst,               \
                        ptrdiff_t sst, size_t nelems, int pe) {                \
    shm_iget(D, dest, source, dst, sst, nelems, sizeof(T), pe);                \
  }                                                                            \
  void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe) {          \
    int w_ = shm__ctx_pe(ctx, pe);                                             \
    if (shm__remote(w_))                                                       \
      shm__net_put(dest, &value, sizeof(T), w_, 0);                            \
    else                                                                       \
      *(volatile T *)shm__peer_n(dest, sizeof(T), w_) = value;                 \
  }                                                                            \
  void shmem_##N##_p(T *dest, T value, int pe) {                               \
    shmem_ctx_##N##_p(D, dest, value, pe);                                     \
  }                                                                            \
  T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe) {              \
    int w_ = shm__ctx_pe(ctx, pe);                                             \
    T v_;                                                                      \
    if (!shm__remote(w_))                                                      \
      return *(volatile const T *)shm__peer_n(source, sizeof(T), w_);          \
    shm__net_get(&v_, source, sizeof(T), w_, 0);                               \
    return v_;                                                                 \
  }                                                                            \
  T shmem_##N##_g(const T *source, int pe) {                                   \
    return shmem_ctx_##N##_g(D, source, pe);                                   \
  }                                                                            \
  void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source,   \
                                  size_t nelems, uint64_t *sig_addr,           \
                                  uint64_t signal, int sig_op, int pe) {       \
    shm_put_signal(ctx, dest, source, symheap_shmem_bytes(nelems, sizeof(T)),  \
                   sig_addr, signal, sig_op, pe);                              \
  }                                                                            \
  void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems,         \
                              uint64_t *sig_addr, uint64_t signal, int sig_op, \
                              int pe) {                                        \
    shm_put_signal(D, dest, source, symheap_shmem_bytes(nelems, sizeof(T)),    \
                   sig_addr, signal, sig_op, pe);                              \
  }                                                                            \
  void shmem_ctx_##N##_put_signal_nbi(                                         \
      shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,                \
      uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {               \
    shm_put_signal(ctx, dest, source, symheap_shmem_bytes(nelems, sizeof(T)),  \
                   sig_addr, signal, sig_op, pe);                              \
  }                                                                            \
  void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems,     \
                                  uint64_t *sig_addr, uint64_t signal,         \
                                  int sig_op, int pe) {                        \
    shm_put_signal(D, dest, source, symheap_shmem_bytes(nelems, sizeof(T)),    \
                   sig_addr, signal, sig_op, pe);                              \
  }
SYMHEAP_SHMEM_RMA_TYPES(SHM_DEF_RMA)

/* Sized and bytewise forms: NAME, element size, and the operation. */
#define SHM_DEF_SIZED(NAME, ELEM, OP)                                          \
  void shmem_ctx_##NAME(shmem_ctx_t ctx, void *dest, const void *source,       \
                        size_t nelems, int pe) {                               \
    OP(ctx, dest, source, symheap_shmem_bytes(nelems, ELEM), pe);              \
  }                                                                            \
  void shmem_##NAME(void *dest, const void *source, size_t nelems, int pe) {   \
    OP(D, dest, source, symheap_shmem_bytes(nelems, ELEM), pe);                \
  }
#define SHM_DEF_ISIZED(NAME, ELEM, OP)                                         \
  void shmem_ctx_##NAME(shmem_ctx_t ctx, void *dest, const void *source,       \
                        ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) { \
    OP(ctx, dest, source, dst, sst, nelems, ELEM, pe);                         \
  }                                                                            \
  void shmem_##NAME(void *dest, const void *source, ptrdiff_t dst,             \
                    ptrdiff_t sst, size_t nelems, int pe) {                    \
    OP(D, dest, source, dst, sst, nelems, ELEM, pe);                           \
  }
#define SHM_DEF_SIGSIZED(NAME, ELEM)                                           \
  void shmem_ctx_##NAME(shmem_ctx_t ctx, void *dest, const void *source,       \
                        size_t nelems, uint64_t *sig_addr, uint64_t signal,    \
                        int sig_op, int pe) {                                  \
    shm_put_signal(ctx, dest, source, symheap_shmem_bytes(nelems, ELEM),       \
                   sig_addr, signal, sig_op, pe);                              \
  }                                                                            \
  void shmem_##NAME(void *dest, const void *source, size_t nelems,             \
                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) { \
    shm_put_signal(D, dest, source, symheap_shmem_bytes(nelems, ELEM),         \
                   sig_addr, signal, sig_op, pe);                              \
  }
#define SHM_DEF_SIZE(BITS, T)                                                  \
  SHM_DEF_SIZED(put##BITS, sizeof(T), shm_put)                                 \
  SHM_DEF_SIZED(get##BITS, sizeof(T), shm_get)                                 \
  SHM_DEF_SIZED(put##BITS##_nbi, sizeof(T), shm_put_nbi)                       \
  SHM_DEF_SIZED(get##BITS##_nbi, sizeof(T), shm_get_nbi)                       \
  SHM_DEF_ISIZED(iput##BITS, sizeof(T), shm_iput)                              \
  SHM_DEF_ISIZED(iget##BITS, sizeof(T), shm_iget)                              \
  SHM_DEF_SIGSIZED(put##BITS##_signal, sizeof(T))                              \
  SHM_DEF_SIGSIZED(put##BITS##_signal_nbi, sizeof(T))
SYMHEAP_SHMEM_SIZES(SHM_DEF_SIZE)
SHM_DEF_SIZED(putmem, 1, shm_put)
SHM_DEF_SIZED(getmem, 1, shm_get)
SHM_DEF_SIZED(putmem_nbi, 1, shm_put_nbi)
SHM_DEF_SIZED(getmem_nbi, 1, shm_get_nbi)
SHM_DEF_SIGSIZED(putmem_signal, 1)
SHM_DEF_SIGSIZED(putmem_signal_nbi, 1)

uint64_t shmem_signal_fetch(const uint64_t *sig_addr) {
  /* This PE's own signal word: symmetric, like every other. */
  return __atomic_load_n((const uint64_t *)shm__peer_n(sig_addr, 8, shm__s.me),
                         __ATOMIC_ACQUIRE);
}

void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal,
                          int pe) {
  shm_signal(ctx, sig_addr, signal, SHMEM_SIGNAL_ADD, pe);
}
void shmem_signal_add(uint64_t *sig_addr, uint64_t signal, int pe) {
  shm_signal(D, sig_addr, signal, SHMEM_SIGNAL_ADD, pe);
}
void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal,
                          int pe) {
  shm_signal(ctx, sig_addr, signal, SHMEM_SIGNAL_SET, pe);
}
void shmem_signal_set(uint64_t *sig_addr, uint64_t signal, int pe) {
  shm_signal(D, sig_addr, signal, SHMEM_SIGNAL_SET, pe);
}

/* RMA from the specification: put, get, p, g, iput, iget, their _nbi and
 * context forms and put_signal, for every type of the standard RMA table
 * (into the symmetric heap and into static arrays), the sized and bytewise
 * forms, signals, and the C11 generic forms.  Each PE writes to its right
 * neighbour and reads from it, so every PE pair direction is exercised. */
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_check.h"

#define NE 16
static int me, npes, right, left;

/* The value PE p puts at index i: small enough for every type. */
#define VAL(T, p, i) ((T)((p)*7 + (i) + 1))

#define STATIC_DST(T, N) static T N##_sdst[NE];
SYMHEAP_SHMEM_RMA_TYPES(STATIC_DST)
static uint64_t sig;

#define TEST_TYPE(T, N)                                                        \
  static void test_##N(void) {                                                 \
    T src[NE], got[NE];                                                        \
    T *hdst = shmem_malloc(sizeof(T) * NE),                                    \
      *hsrc = shmem_malloc(sizeof(T) * NE);                                    \
    shmem_ctx_t ctx;                                                           \
    shc_begin("rma_" #N);                                                      \
    SHC_CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");                   \
    for (int i = 0; i < NE; i++) {                                             \
      src[i] = VAL(T, me, i);                                                  \
      hsrc[i] = VAL(T, me, i);                                                 \
    }                                                                          \
    shmem_barrier_all();                                                       \
    shmem_##N##_put(hdst, src, NE, right);                                     \
    shmem_##N##_put(N##_sdst, src, NE, right);                                 \
    shmem_barrier_all();                                                       \
    for (int i = 0; i < NE; i++) {                                             \
      SHC_CHECK(hdst[i] == VAL(T, left, i), "put heap [%d]", i);               \
      SHC_CHECK(N##_sdst[i] == VAL(T, left, i), "put static [%d]", i);         \
    }                                                                          \
    shmem_##N##_get(got, hsrc, NE, right);                                     \
    for (int i = 0; i < NE; i++)                                               \
      SHC_CHECK(got[i] == VAL(T, right, i), "get [%d]", i);                    \
    shmem_##N##_get(got, N##_sdst, NE, right);                                 \
    for (int i = 0; i < NE; i++)                                               \
      SHC_CHECK(got[i] == VAL(T, me, i), "get static [%d]", i);                \
    shmem_barrier_all();                                                       \
    memset(hdst, 0, sizeof(T) * NE);                                           \
    shmem_barrier_all();                                                       \
    shmem_##N##_p(&hdst[3], VAL(T, me, 3), right);                             \
    shmem_barrier_all();                                                       \
    SHC_CHECK(hdst[3] == VAL(T, left, 3), "p");                                \
    SHC_CHECK(shmem_##N##_g(&hdst[3], right) == VAL(T, me, 3), "g");           \
    SHC_CHECK(shmem_##N##_g(&hsrc[5], left) == VAL(T, left, 5), "g left");     \
    shmem_barrier_all();                                                       \
    memset(hdst, 0, sizeof(T) * NE);                                           \
    shmem_barrier_all();                                                       \
    shmem_##N##_iput(hdst, src, 2, 1, NE / 2, right);                          \
    shmem_barrier_all();                                                       \
    for (int i = 0; i < NE; i++)                                               \
      SHC_CHECK(hdst[i] == (i % 2 ? (T)0 : VAL(T, left, i / 2)), "iput [%d]",  \
                i);                                                            \
    shmem_##N##_iget(got, hsrc, 1, 2, NE / 2, right);                          \
    for (int i = 0; i < NE / 2; i++)                                           \
      SHC_CHECK(got[i] == VAL(T, right, 2 * i), "iget [%d]", i);               \
    shmem_barrier_all();                                                       \
    shmem_ctx_##N##_put_nbi(ctx, hdst, hsrc, NE, right);                       \
    shmem_ctx_quiet(ctx);                                                      \
    shmem_##N##_get_nbi(got, hsrc, NE, left);                                  \
    shmem_quiet();                                                             \
    shmem_barrier_all();                                                       \
    for (int i = 0; i < NE; i++) {                                             \
      SHC_CHECK(hdst[i] == VAL(T, left, i), "ctx put_nbi [%d]", i);            \
      SHC_CHECK(got[i] == VAL(T, left, i), "get_nbi [%d]", i);                 \
    }                                                                          \
    shmem_barrier_all();                                                       \
    sig = 0;                                                                   \
    memset(hdst, 0, sizeof(T) * NE);                                           \
    shmem_barrier_all();                                                       \
    shmem_##N##_put_signal(hdst, src, NE, &sig, 5, SHMEM_SIGNAL_ADD, right);   \
    shmem_ctx_##N##_put_signal_nbi(ctx, N##_sdst, src, NE, &sig, 2,            \
                                   SHMEM_SIGNAL_ADD, right);                   \
    SHC_CHECK(shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 7) == 7, "signal");  \
    for (int i = 0; i < NE; i++)                                               \
      SHC_CHECK(hdst[i] == VAL(T, left, i), "put_signal data [%d]", i);        \
    shmem_barrier_all();                                                       \
    shmem_ctx_destroy(ctx);                                                    \
    shmem_free(hsrc);                                                          \
    shmem_free(hdst);                                                          \
    shc_end();                                                                 \
  }
SYMHEAP_SHMEM_RMA_TYPES(TEST_TYPE)

static void test_sized(void) {
  shc_begin("rma_sized_and_mem");
  unsigned char *h = shmem_calloc(4096, 1);
  unsigned char src[4096], got[4096];
  for (int i = 0; i < 4096; i++)
    src[i] = (unsigned char)(me * 31 + i);
  static const size_t bytes[] = {1, 2, 4, 8, 16};
  for (int k = 0; k < 5; k++) {
    size_t b = bytes[k];
    memset(h, 0, 4096);
    shmem_barrier_all();
    switch (b) {
    case 1:
      shmem_put8(h, src, 64, right);
      break;
    case 2:
      shmem_put16(h, src, 64, right);
      break;
    case 4:
      shmem_put32_nbi(h, src, 64, right);
      break;
    case 8:
      shmem_put64(h, src, 64, right);
      break;
    default:
      shmem_put128(h, src, 64, right);
      break;
    }
    shmem_barrier_all();
    for (size_t i = 0; i < 64 * b; i++)
      SHC_CHECK(h[i] == (unsigned char)(left * 31 + (int)i), "put%zu [%zu]",
                b * 8, i);
    SHC_CHECK(h[64 * b] == 0, "put%zu wrote past its end", b * 8);
    memset(got, 0, sizeof got);
    switch (b) {
    case 1:
      shmem_get8(got, h, 64, right);
      break;
    case 2:
      shmem_get16_nbi(got, h, 64, right);
      break;
    case 4:
      shmem_get32(got, h, 64, right);
      break;
    case 8:
      shmem_get64(got, h, 64, right);
      break;
    default:
      shmem_get128(got, h, 64, right);
      break;
    }
    shmem_quiet();
    for (size_t i = 0; i < 64 * b; i++)
      SHC_CHECK(got[i] == (unsigned char)(me * 31 + (int)i), "get%zu [%zu]",
                b * 8, i);
    shmem_barrier_all();
  }
  /* iput32: every 3rd 32-bit word; iget64 with a source stride of 2. */
  memset(h, 0, 4096);
  shmem_barrier_all();
  uint32_t w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  shmem_iput32(h, w, 3, 1, 8, right);
  shmem_barrier_all();
  for (int i = 0; i < 24; i++) {
    uint32_t x;
    memcpy(&x, h + 4 * i, 4);
    SHC_CHECK(x == (i % 3 ? 0u : w[i / 3]), "iput32 [%d]", i);
  }
  uint64_t q[4];
  shmem_iget64(q, h, 1, 2, 4, left); /* words 0, 2, 4, 6 as 64-bit */
  for (int i = 0; i < 4; i++) {
    uint64_t x;
    memcpy(&x, h + 16 * i, 8);
    SHC_CHECK(q[i] == x, "iget64 [%d]", i);
  }
  shmem_barrier_all();
  /* putmem/getmem of a whole page and more, and an unaligned range. */
  shmem_putmem(h + 3, src, 4000, right);
  shmem_barrier_all();
  for (int i = 0; i < 4000; i++)
    SHC_CHECK(h[3 + i] == (unsigned char)(left * 31 + i), "putmem [%d]", i);
  shmem_getmem_nbi(got, h + 3, 4000, right);
  shmem_quiet();
  for (int i = 0; i < 4000; i++)
    SHC_CHECK(got[i] == (unsigned char)(me * 31 + i), "getmem [%d]", i);
  shmem_barrier_all();
  shmem_free(h);
  shc_end();
}

static void test_signals(void) {
  shc_begin("signal_ops");
  uint64_t *s = shmem_calloc(2, sizeof(uint64_t));
  long *d = shmem_calloc(4, sizeof(long));
  long v[4] = {me, me + 1, me + 2, me + 3};
  shmem_signal_set(&s[0], 40, right);
  shmem_signal_add(&s[0], 2, right);
  SHC_CHECK(shmem_signal_wait_until(&s[0], SHMEM_CMP_GE, 42) == 42,
            "set then add");
  shmem_barrier_all();
  SHC_CHECK(shmem_signal_fetch(&s[0]) == 42, "fetch");
  shmem_putmem_signal(d, v, sizeof v, &s[1], 9, SHMEM_SIGNAL_SET, right);
  shmem_signal_wait_until(&s[1], SHMEM_CMP_EQ, 9);
  for (int i = 0; i < 4; i++)
    SHC_CHECK(d[i] == left + i, "putmem_signal data [%d]", i);
  shmem_barrier_all();
  shmem_put64_signal_nbi(d, v, 4, &s[1], 1, SHMEM_SIGNAL_ADD, left);
  shmem_quiet();
  SHC_CHECK(shmem_signal_wait_until(&s[1], SHMEM_CMP_GT, 9) == 10,
            "put64_signal_nbi");
  shmem_barrier_all();
  shmem_free(d);
  shmem_free(s);
  shc_end();
}

/* Large puts and gets, back to back (round 15: a copy of 16 KiB or more
 * that continues the last one's destination uses streaming stores, which
 * are weakly ordered; bindings/openshmem/copy.c): chunks of odd sizes at
 * odd offsets, into the heap and into a static array, every byte checked
 * and the bytes around them untouched.  Each chunk put with a signal is
 * checked as soon as its signal is seen: its stores must be visible before
 * the signal's. */
#define ST_CHUNK ((64 << 10) + 37)
#define ST_N 12
#define ST_SPAN ((size_t)ST_CHUNK * ST_N + 64)
static unsigned char st_static[ST_SPAN];

static unsigned char st_byte(int pe, size_t i) {
  return (unsigned char)((size_t)pe * 131 + i * 7 + (i >> 12) + 1);
}

/* The chunks in dst as PE from wrote them (first at offset 3, from its
 * source at 5), and nothing else. */
static void st_check(const unsigned char *dst, int from, int k0, int k1,
                     const char *what) {
  for (int k = k0; k < k1; k++)
    for (size_t j = 0; j < ST_CHUNK; j++) {
      size_t i = 3 + (size_t)k * ST_CHUNK + j;
      SHC_CHECK(dst[i] == st_byte(from, 5 + (size_t)k * ST_CHUNK + j),
                "%s: chunk %d byte %zu", what, k, j);
    }
  SHC_CHECK(dst[0] == 0 && dst[2] == 0 && dst[3 + ST_N * ST_CHUNK] == 0,
            "%s: bytes around the chunks", what);
}

static void test_streams(void) {
  shc_begin("rma_large_streams");
  unsigned char *h = shmem_calloc(ST_SPAN, 1);
  uint64_t *sigs = shmem_calloc(ST_N, sizeof *sigs);
  unsigned char *src = malloc(ST_SPAN), *got = malloc(ST_SPAN);
  SHC_CHECK(h && sigs && src && got, "allocations");
  if (!h || !sigs || !src || !got)
    shmem_global_exit(1);
  for (size_t i = 0; i < ST_SPAN; i++)
    src[i] = st_byte(me, i);
  memset(st_static, 0, ST_SPAN);
  shmem_barrier_all();
  for (int k = 0; k < ST_N; k++)
    shmem_putmem_signal(h + 3 + (size_t)k * ST_CHUNK,
                        src + 5 + (size_t)k * ST_CHUNK, ST_CHUNK, &sigs[k], 1,
                        SHMEM_SIGNAL_SET, right);
  for (int k = 0; k < ST_N; k++) {
    shmem_signal_wait_until(&sigs[k], SHMEM_CMP_EQ, 1);
    st_check(h, left, k, k + 1, "putmem_signal");
  }
  for (int k = 0; k < ST_N; k++)
    shmem_putmem(st_static + 3 + (size_t)k * ST_CHUNK,
                 src + 5 + (size_t)k * ST_CHUNK, ST_CHUNK, right);
  shmem_barrier_all();
  st_check(st_static, left, 0, ST_N, "putmem static");
  memset(got, 0, ST_SPAN);
  for (int k = 0; k < ST_N; k++)
    shmem_getmem(got + 3 + (size_t)k * ST_CHUNK, h + 3 + (size_t)k * ST_CHUNK,
                 ST_CHUNK, right);
  st_check(got, me, 0, ST_N, "getmem");
  memset(got, 0, ST_SPAN);
  for (int k = 0; k < ST_N; k++)
    shmem_getmem_nbi(got + 3 + (size_t)k * ST_CHUNK,
                     st_static + 3 + (size_t)k * ST_CHUNK, ST_CHUNK, left);
  shmem_quiet();
  st_check(got, (left + npes - 1) % npes, 0, ST_N, "getmem_nbi static");
  shmem_barrier_all();
  /* Either side of the size from which the inline paths hand the copy to
   * the library (SYMHEAP_SHMEM_FAST_COPY_MAX), twice each (the second a
   * continuation of the first). */
  memset(h, 0, ST_SPAN);
  shmem_barrier_all();
  size_t at = 1;
  for (size_t n = SYMHEAP_SHMEM_FAST_COPY_MAX - 1;
       n <= SYMHEAP_SHMEM_FAST_COPY_MAX; n++)
    for (int twice = 0; twice < 2; twice++, at += n)
      shmem_putmem(h + at, src + at, n, right);
  shmem_barrier_all();
  for (size_t i = 0; i < ST_SPAN; i++)
    SHC_CHECK(h[i] == (i >= 1 && i < at ? st_byte(left, i) : 0),
              "puts around the inline limit: byte %zu", i);
  shmem_barrier_all();
  free(got);
  free(src);
  shmem_free(sigs);
  shmem_free(h);
  shc_end();
}

static void test_generic(void) {
  shc_begin("rma_c11_generic");
  static double gd[4];
  static long gl;
  double src[4] = {me + 0.5, me + 1.5, me + 2.5, me + 3.5};
  shmem_ctx_t ctx;
  shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx);
  shmem_put(gd, src, 4, right);
  shmem_p(&gl, (long)me * 3, right);
  shmem_barrier_all();
  SHC_CHECK(gd[2] == left + 2.5, "put");
  SHC_CHECK(gl == (long)left * 3, "p");
  SHC_CHECK(shmem_g(&gl, right) == (long)me * 3, "g");
  SHC_CHECK(shmem_g(ctx, &gl, right) == (long)me * 3, "ctx g");
  double got[4];
  shmem_get(ctx, got, gd, 4, right);
  SHC_CHECK(got[3] == me + 3.5, "ctx get");
  shmem_barrier_all();
  shmem_p(ctx, &gl, 11L, left);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  SHC_CHECK(gl == 11, "ctx p");
  shmem_ctx_destroy(ctx);
  shc_end();
}

int main(void) {
  shc_init(&me, &npes);
  right = (me + 1) % npes;
  left = (me + npes - 1) % npes;
#define CALL(T, N) test_##N();
  SYMHEAP_SHMEM_RMA_TYPES(CALL)
  test_sized();
  test_signals();
  test_streams();
  test_generic();
  shmem_finalize();
  return shc_status();
}

/* What programs written for other OpenSHMEM implementations rely on: the
 * deprecated headers (<mpp/shmem.h>, <mpp/shmemx.h>) and <shmemx.h>, the
 * deprecated allocation names (shmemalign, shrealloc, shmalloc, shfree), the
 * deprecated cache routines and _SHMEM_ constants, and
 * C11 generics (shmem_finc ... shmem_add), the generics' context forms of
 * the bitwise atomics, a heap large enough for ~200 MiB objects by default,
 * shrealloc growing in place, an invalid shrealloc getting NULL, and sizes
 * that do not fit getting NULL instead of a small block (issue 28 item 6). */
#include <mpp/shmem.h>
#include <mpp/shmemx.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_check.h"

static int me, npes;

static void test_headers(void) {
  shc_begin("compat_mpp_and_shmemx_headers");
  /* Compiling is most of it; the headers must be the same library's. */
  SHC_CHECK(SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION == 5,
            "version %d.%d", SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
  SHC_CHECK(shmem_n_pes() == npes, "shmem_n_pes through <mpp/shmem.h>");
  /* The deprecated names of constants and the cache routines (no-ops). */
  SHC_CHECK(_SHMEM_MAJOR_VERSION == 1 && _SHMEM_SYNC_VALUE == 0 &&
                _SHMEM_BCAST_SYNC_SIZE >= 1 && _SHMEM_CMP_EQ == SHMEM_CMP_EQ,
            "_SHMEM_ constants");
  static long line;
  shmem_clear_cache_inv();
  shmem_set_cache_inv();
  shmem_clear_cache_line_inv(&line);
  shmem_set_cache_line_inv(&line);
  shmem_udcflush();
  shmem_udcflush_line(&line);
  shc_end();
}

static void test_deprecated_alloc(void) {
  shc_begin("compat_shmemalign_shrealloc");
  char *a = shmemalign(4096, 100);
  SHC_CHECK(a && ((uintptr_t)a & 4095) == 0, "shmemalign(4096) gave %p",
            (void *)a);
  long *p = shmalloc(4 * sizeof(long));
  SHC_CHECK(p != NULL, "shmalloc");
  if (p) {
    for (int i = 0; i < 4; i++)
      p[i] = me * 100 + i;
    p = shrealloc(p, 4096 * sizeof(long));
    SHC_CHECK(p != NULL, "shrealloc grows");
  }
  if (p) {
    for (int i = 0; i < 4; i++)
      SHC_CHECK(p[i] == me * 100 + i, "shrealloc kept element %d", i);
    p[4095] = me;
    shmem_barrier_all();
    long got = shmem_long_g(&p[4095], (me + 1) % npes);
    SHC_CHECK(got == (me + 1) % npes, "the grown block is symmetric: %ld", got);
    shmem_barrier_all();
  }
  shfree(p);
  shfree(a);
  shc_end();
}

static void test_deprecated_generics(void) {
  static int i32;
  static long l64;
  static long long ll;
  static double d;
  shc_begin("compat_deprecated_c11_generics");
  i32 = 0, l64 = 0, ll = 0, d = 0;
  shmem_barrier_all();
  int target = 0;
  shmem_inc(&i32, target);
  shmem_add(&l64, 2L, target);
  (void)shmem_finc(&ll, target);
  (void)shmem_fadd(&i32, 10, target);
  shmem_barrier_all();
  if (me == 0) {
    SHC_CHECK(i32 == 11 * npes, "inc + fadd: %d", i32);
    SHC_CHECK(l64 == 2L * npes, "add: %ld", l64);
    SHC_CHECK(ll == npes, "finc: %lld", ll);
  }
  shmem_barrier_all();
  if (me == 0) {
    shmem_set(&d, 2.5, npes - 1);
    shmem_set(&l64, 7L, npes - 1);
  }
  shmem_barrier_all();
  SHC_CHECK(shmem_fetch(&d, npes - 1) == 2.5, "set + fetch (double)");
  SHC_CHECK(shmem_fetch(&l64, npes - 1) == 7L, "set + fetch (long)");
  shmem_barrier_all();
  if (me == npes - 1) {
    long old = shmem_swap(&l64, 9L, 0);
    long long c = shmem_cswap(&ll, (long long)npes, -1LL, 0);
    long want_old = npes == 1 ? 7L : 2L * npes; /* one PE: the set was here */
    SHC_CHECK(old == want_old && c == npes, "swap %ld cswap %lld", old, c);
  }
  shmem_barrier_all();
  if (me == 0)
    SHC_CHECK(l64 == 9 && ll == -1, "after swap/cswap: %ld %lld", l64, ll);
  shmem_barrier_all();
  shc_end();
}

/* The bitwise atomics' generics take a context first, as the others do. */
static void test_ctx_bitwise_generics(void) {
  static unsigned int u;
  static uint64_t u64;
  shc_begin("compat_generic_bitwise_atomics_and_reductions");
  shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
  u = 0;
  u64 = ~(uint64_t)0;
  shmem_barrier_all();
  shmem_atomic_or(ctx, &u, 1u << me, 0);
  shmem_atomic_and(ctx, &u64, ~((uint64_t)1 << me), 0);
  shmem_atomic_xor(ctx, &u64, (uint64_t)1 << 40, 0);
  (void)shmem_atomic_fetch_or(ctx, &u, 0u, 0);
  (void)shmem_atomic_fetch_and(ctx, &u64, ~(uint64_t)0, 0);
  (void)shmem_atomic_fetch_xor(ctx, &u, 0u, 0);
  shmem_barrier_all();
  if (me == 0) {
    uint64_t want = ~(uint64_t)0 & ~(((uint64_t)1 << npes) - 1);
    if (npes % 2)
      want ^= (uint64_t)1 << 40;
    SHC_CHECK(u == (1u << npes) - 1, "or: %#x", u);
    SHC_CHECK(u64 == want, "and/xor: %#llx want %#llx", (unsigned long long)u64,
              (unsigned long long)want);
  }
  /* int32_t and int64_t (int and long) are bitwise AMO types too. */
  static int32_t i32;
  static int64_t i64;
  i32 = 0, i64 = 0;
  shmem_barrier_all();
  shmem_atomic_or(ctx, &i32, (int32_t)1 << me, 0);
  shmem_atomic_xor(&i64, (int64_t)1 << me, 0);
  (void)shmem_atomic_fetch_and(ctx, &i64, (int64_t)-1, 0);
  shmem_barrier_all();
  if (me == 0)
    SHC_CHECK(i32 == (1 << npes) - 1 && i64 == ((int64_t)1 << npes) - 1,
              "int32/int64 or/xor: %d %lld", (int)i32, (long long)i64);
  /* And the bitwise team reductions of the signed fixed-width types. */
  static int32_t rin, rout;
  static int64_t lin, lout;
  rin = 1 << me;
  lin = (int64_t)1 << me;
  shmem_barrier_all();
  int rc = shmem_or_reduce(SHMEM_TEAM_WORLD, &rout, &rin, 1);
  rc |= shmem_xor_reduce(SHMEM_TEAM_WORLD, &lout, &lin, 1);
  SHC_CHECK(
      rc == 0 && rout == (1 << npes) - 1 && lout == ((int64_t)1 << npes) - 1,
      "or/xor_reduce on int32_t/int64_t: %d %lld", (int)rout, (long long)lout);
  unsigned int f = 0;
  shmem_atomic_fetch_and_nbi(ctx, &f, &u, ~0u, 0);
  shmem_ctx_quiet(ctx);
  SHC_CHECK(f != 0, "fetch_and_nbi with a context");
  shmem_barrier_all();
  shc_end();
}

/* Issue 28 item 6: sizes whose arithmetic would wrap fail (NULL on every
 * PE), and leave the heap as it was. */
static void test_alloc_overflow(void) {
  shc_begin("compat_alloc_sizes_that_do_not_fit");
  void *p = shmem_malloc(SIZE_MAX);
  SHC_CHECK(p == NULL, "shmem_malloc(SIZE_MAX) gave %p", p);
  p = shmem_malloc(SIZE_MAX - 62);
  SHC_CHECK(p == NULL, "shmem_malloc(SIZE_MAX - 62) gave %p", p);
  p = shmem_align(64, SIZE_MAX);
  SHC_CHECK(p == NULL, "shmem_align(64, SIZE_MAX) gave %p", p);
  p = shmem_align((size_t)1 << 62, 64);
  SHC_CHECK(p == NULL, "shmem_align(2^62, 64) gave %p", p);
  p = shmem_calloc(1, SIZE_MAX);
  SHC_CHECK(p == NULL, "shmem_calloc(1, SIZE_MAX) gave %p", p);
  p = shmem_calloc(SIZE_MAX / 2, 4);
  SHC_CHECK(p == NULL, "shmem_calloc(SIZE_MAX / 2, 4) gave %p", p);
  int *q = shmem_malloc(16 * sizeof(int));
  SHC_CHECK(q != NULL, "shmem_malloc(64)");
  if (q) {
    for (int i = 0; i < 16; i++)
      q[i] = i;
    int *r = shmem_realloc(q, SIZE_MAX);
    SHC_CHECK(r == NULL, "shmem_realloc(p, SIZE_MAX) gave %p", (void *)r);
    r = shmem_realloc(q, SIZE_MAX - 10);
    SHC_CHECK(r == NULL, "shmem_realloc(p, SIZE_MAX - 10) gave %p", (void *)r);
    for (int i = 0; i < 16; i++)
      SHC_CHECK(q[i] == i, "the block survives a failed realloc");
    shmem_free(q);
  }
  shc_end();
}

/* Programs sized for other implementations' 256-512 MiB defaults (OSU's
 * message-rate benchmarks allocate about 200 MiB); growing the last block
 * to most of the heap happens in place (it need not fit twice). */
static void test_heap_size(void) {
  shc_begin("compat_default_heap_and_realloc_in_place");
  size_t big = (size_t)200 << 20;
  char *p = shmem_malloc(big);
  SHC_CHECK(p != NULL, "shmem_malloc(200 MiB) with the default heap");
  if (p) {
    p[0] = 1;
    p[big - 1] = 2;
    shmem_free(p);
  }
  char *a = shmem_malloc(4096);
  SHC_CHECK(a != NULL, "shmem_malloc(4096)");
  if (a) {
    memset(a, 7, 4096);
    char *b = shmem_realloc(a, (size_t)768 << 20);
    SHC_CHECK(b == a, "realloc to 768 MiB grew in place (%p -> %p)", (void *)a,
              (void *)b);
    if (b) {
      SHC_CHECK(b[0] == 7 && b[4095] == 7, "contents kept");
      a = b;
    }
    shmem_free(a);
  }
  shc_end();
}

static void test_realloc_invalid(void) {
  shc_begin("compat_invalid_realloc_gets_null");
  char *p = shmem_malloc(256);
  SHC_CHECK(p != NULL, "shmem_malloc(256)");
  if (p) {
    void *r = shmem_realloc(p + 64, 512); /* not an allocation's start */
    SHC_CHECK(r == NULL, "shmem_realloc(inside a block) gave %p", r);
    static long stack_like;
    r = shrealloc(&stack_like, 512); /* symmetric, but not the heap's */
    SHC_CHECK(r == NULL, "shrealloc(a global) gave %p", r);
    /* Size 0 frees; a pointer that is not live gets NULL and a message
     * too (it ended the job, through shmem_free's check). */
    r = shrealloc(p + 64, 0);
    SHC_CHECK(r == NULL, "shrealloc(inside a block, 0) gave %p", r);
    p[255] = 5; /* p is still ours */
    shmem_free(p);
  }
  shc_end();
}

int main(void) {
  static const shc_test_fn tests[] = {test_headers,
                                      test_deprecated_alloc,
                                      test_deprecated_generics,
                                      test_ctx_bitwise_generics,
                                      test_alloc_overflow,
                                      test_heap_size,
                                      test_realloc_invalid};
  return shc_run(&me, &npes, tests, sizeof tests / sizeof tests[0]);
}

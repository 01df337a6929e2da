/* AMOs from the specification, for every type of each AMO table: every PE
 * hits the same word on PE 0 (and on its neighbour) at once, so a lost
 * update or a torn swap shows up as a wrong total. */
#include <shmem.h>
#include <stdint.h>

#include "shmem_check.h"

#define ROUNDS 200
static int me, npes, right;

/* Standard AMOs: fetch_inc, inc, fetch_add, add, compare_swap, nbi forms. */
#define TEST_STD(T, N)                                                         \
  static void std_##N(void) {                                                  \
    static T ctr, ring;                                                        \
    T *h = shmem_calloc(2, sizeof(T));                                         \
    shmem_ctx_t ctx;                                                           \
    shc_begin("amo_std_" #N);                                                  \
    shmem_ctx_create(0, &ctx);                                                 \
    ctr = 0;                                                                   \
    ring = 0;                                                                  \
    shmem_barrier_all();                                                       \
    T seen_max = 0;                                                            \
    for (int i = 0; i < ROUNDS; i++) {                                         \
      T old = shmem_##N##_atomic_fetch_inc(&ctr, 0);                           \
      if (old > seen_max)                                                      \
        seen_max = old;                                                        \
      shmem_##N##_atomic_inc(&h[0], 0);                                        \
      shmem_ctx_##N##_atomic_add(ctx, &h[1], (T)2, 0);                         \
      T f;                                                                     \
      shmem_##N##_atomic_fetch_add_nbi(&f, &ring, (T)1, right);                \
      shmem_quiet();                                                           \
      SHC_CHECK(f < (T)ROUNDS, "fetch_add_nbi fetched %lld", (long long)f);    \
    }                                                                          \
    shmem_barrier_all();                                                       \
    if (me == 0) {                                                             \
      SHC_CHECK(ctr == (T)(ROUNDS * npes), "fetch_inc total %lld",             \
                (long long)ctr);                                               \
      SHC_CHECK(h[0] == (T)(ROUNDS * npes), "inc total");                      \
      SHC_CHECK(h[1] == (T)(2 * ROUNDS * npes), "ctx add total");              \
    }                                                                          \
    SHC_CHECK(ring == (T)ROUNDS, "fetch_add_nbi on the neighbour");            \
    SHC_CHECK(seen_max < (T)(ROUNDS * npes), "fetch_inc values");              \
    shmem_barrier_all();                                                       \
    /* compare_swap as a ticket: each PE claims slot k when it sees k. */      \
    h[0] = 0;                                                                  \
    shmem_barrier_all();                                                       \
    int wins = 0;                                                              \
    for (T k = 0; k < (T)(npes * 4);) {                                        \
      T prev = shmem_##N##_atomic_compare_swap(&h[0], k, (T)(k + 1), 0);       \
      if (prev == k)                                                           \
        wins++;                                                                \
      k = prev == k ? (T)(k + 1) : prev;                                       \
    }                                                                          \
    int total = 0;                                                             \
    static int wins_all;                                                       \
    wins_all = 0;                                                              \
    shmem_barrier_all();                                                       \
    shmem_int_atomic_add(&wins_all, wins, 0);                                  \
    shmem_barrier_all();                                                       \
    total = shmem_int_g(&wins_all, 0);                                         \
    SHC_CHECK(total == npes * 4, "compare_swap wins %d", total);               \
    T f;                                                                       \
    shmem_##N##_atomic_compare_swap_nbi(&f, &h[1], (T)12345, (T)1, me);        \
    shmem_##N##_atomic_fetch_inc_nbi(&f, &h[1], me);                           \
    shmem_quiet();                                                             \
    SHC_CHECK(f == (me == 0 ? (T)(2 * ROUNDS * npes) : 0), "fetch_inc_nbi");   \
    shmem_barrier_all();                                                       \
    shmem_ctx_destroy(ctx);                                                    \
    shmem_free(h);                                                             \
    shc_end();                                                                 \
  }
SYMHEAP_SHMEM_AMO_STD_TYPES(TEST_STD)

/* Extended AMOs: fetch, set, swap (and nbi): a swap chain through one word
 * hands every PE's value to exactly one other. */
#define TEST_EXT(T, N)                                                         \
  static void ext_##N(void) {                                                  \
    static T w;                                                                \
    shc_begin("amo_ext_" #N);                                                  \
    w = (T)0;                                                                  \
    shmem_barrier_all();                                                       \
    if (me == 0)                                                               \
      shmem_##N##_atomic_set(&w, (T)1000, npes - 1);                           \
    shmem_barrier_all();                                                       \
    SHC_CHECK(shmem_##N##_atomic_fetch(&w, npes - 1) == (T)1000, "set/fetch"); \
    shmem_barrier_all();                                                       \
    T mine = (T)(me + 1), got = shmem_##N##_atomic_swap(&w, mine, 0);          \
    static T seen[64];                                                         \
    shmem_barrier_all();                                                       \
    /* Everyone's fetched value, plus what is left in w, is a permutation. */  \
    shmem_##N##_put(&seen[me], &got, 1, 0);                                    \
    shmem_barrier_all();                                                       \
    if (me == 0) {                                                             \
      double sum = (double)w;                                                  \
      for (int i = 0; i < npes; i++)                                           \
        sum += (double)seen[i];                                                \
      double want = npes * (npes + 1) / 2.0 + (npes == 1 ? 1000 : 0);          \
      SHC_CHECK(sum == want, "swap chain sum %g, want %g", sum, want);         \
    }                                                                          \
    shmem_barrier_all();                                                       \
    T f;                                                                       \
    shmem_##N##_atomic_swap_nbi(&f, &w, (T)7, me);                             \
    shmem_##N##_atomic_fetch_nbi(&got, &w, me);                                \
    shmem_quiet();                                                             \
    SHC_CHECK(got == (T)7, "fetch_nbi after swap_nbi");                        \
    shmem_barrier_all();                                                       \
    shc_end();                                                                 \
  }
SYMHEAP_SHMEM_AMO_EXT_TYPES(TEST_EXT)

/* Bitwise AMOs: each PE sets, then clears, then flips its own bit. */
#define TEST_BIT(T, N)                                                         \
  static void bit_##N(void) {                                                  \
    static T w;                                                                \
    shc_begin("amo_bit_" #N);                                                  \
    w = 0;                                                                     \
    shmem_barrier_all();                                                       \
    T bit = (T)((T)1 << me), all = (T)(((T)1 << npes) - 1);                    \
    shmem_##N##_atomic_or(&w, bit, 0);                                         \
    shmem_barrier_all();                                                       \
    SHC_CHECK(shmem_##N##_atomic_fetch(&w, 0) == all, "or");                   \
    shmem_barrier_all();                                                       \
    T old = shmem_##N##_atomic_fetch_and(&w, (T)~bit, 0);                      \
    SHC_CHECK(old &bit, "fetch_and saw its bit");                              \
    shmem_barrier_all();                                                       \
    SHC_CHECK(shmem_##N##_atomic_fetch(&w, 0) == 0, "and cleared");            \
    shmem_barrier_all();                                                       \
    shmem_##N##_atomic_xor(&w, bit, 0);                                        \
    shmem_barrier_all();                                                       \
    old = shmem_##N##_atomic_fetch_xor(&w, bit, 0);                            \
    SHC_CHECK(old &bit, "fetch_xor");                                          \
    shmem_barrier_all();                                                       \
    T f;                                                                       \
    shmem_##N##_atomic_fetch_or_nbi(&f, &w, bit, 0);                           \
    shmem_##N##_atomic_and(&w, all, 0);                                        \
    shmem_##N##_atomic_fetch_and_nbi(&f, &w, all, 0);                          \
    shmem_##N##_atomic_fetch_xor_nbi(&f, &w, 0, 0);                            \
    shmem_##N##_atomic_fetch_or(&w, 0, 0);                                     \
    shmem_quiet();                                                             \
    shmem_barrier_all();                                                       \
    SHC_CHECK(shmem_##N##_atomic_fetch(&w, 0) == all, "nbi or");               \
    shmem_barrier_all();                                                       \
    shc_end();                                                                 \
  }
SYMHEAP_SHMEM_AMO_BIT_TYPES(TEST_BIT)

static void test_generic(void) {
  static long c;
  static unsigned int u;
  static double d;
  shc_begin("amo_c11_generic");
  c = 0;
  u = 0;
  shmem_barrier_all();
  shmem_atomic_inc(&c, 0);
  shmem_atomic_fetch_add(SHMEM_CTX_DEFAULT, &c, 10L, 0);
  shmem_atomic_or(&u, 1u << me, 0);
  if (me == 0)
    shmem_atomic_set(&d, 2.5, npes - 1);
  shmem_barrier_all();
  SHC_CHECK(shmem_atomic_fetch(&c, 0) == 11L * npes, "inc + fetch_add");
  SHC_CHECK(shmem_atomic_fetch(&u, 0) == (1u << npes) - 1, "or");
  if (me == 0)
    SHC_CHECK(shmem_atomic_swap(&d, 1.0, npes - 1) == 2.5, "swap");
  shmem_barrier_all();
  shc_end();
}

/* The deprecated 1.3 names, on one word of PE 0. */
static void test_deprecated(void) {
  static long w;
  static double d;
  shc_begin("amo_deprecated_names");
  w = 0;
  d = 0;
  shmem_barrier_all();
  shmem_long_inc(&w, 0);
  shmem_long_add(&w, 2, 0);
  long f = shmem_long_finc(&w, 0);
  SHC_CHECK(f >= 0 && f < 14L * npes, "finc fetched %ld", f);
  shmem_long_fadd(&w, 10, 0);
  shmem_barrier_all();
  SHC_CHECK(shmem_long_fetch(&w, 0) == 14L * npes, "inc/add/finc/fadd total");
  shmem_barrier_all();
  if (me == 0) {
    SHC_CHECK(shmem_long_cswap(&w, 14L * npes, 1, 0) == 14L * npes, "cswap");
    SHC_CHECK(shmem_long_swap(&w, 5, 0) == 1, "swap");
    shmem_double_set(&d, 0.5, npes - 1);
    SHC_CHECK(shmem_double_fetch(&d, npes - 1) == 0.5, "set/fetch");
    SHC_CHECK(shmem_double_swap(&d, 1.5, npes - 1) == 0.5, "double swap");
  }
  shmem_barrier_all();
  shc_end();
}

int main(void) {
  shc_init(&me, &npes);
  right = (me + 1) % npes;
#define CALL_STD(T, N) std_##N();
#define CALL_EXT(T, N) ext_##N();
#define CALL_BIT(T, N) bit_##N();
  SYMHEAP_SHMEM_AMO_STD_TYPES(CALL_STD)
  SYMHEAP_SHMEM_AMO_EXT_TYPES(CALL_EXT)
  SYMHEAP_SHMEM_AMO_BIT_TYPES(CALL_BIT)
  test_generic();
  test_deprecated();
  shmem_finalize();
  return shc_status();
}

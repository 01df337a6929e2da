/* Point-to-point synchronisation, ordering and locks from the
 * specification: wait_until and every _all/_any/_some/_vector and test form
 * (every type of the table), the status mask, fence ordering put before
 * put, and a lock-protected read-modify-write that would lose updates if
 * two PEs held the lock at once. */
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>

#include "shmem_check.h"

static int me, npes;

/* Every PE sets its own element of ivars on every PE to 1 + its number. */
#define TEST_P2P(T, N)                                                         \
  static void p2p_##N(void) {                                                  \
    T *iv = shmem_calloc((size_t)npes, sizeof(T));                             \
    T *cmpv = malloc(sizeof(T) * (size_t)npes);                                \
    int *status = calloc((size_t)npes, sizeof(int));                           \
    size_t *idx = malloc(sizeof(size_t) * (size_t)npes);                       \
    shc_begin("p2p_" #N);                                                      \
    SHC_CHECK(shmem_##N##_test(&iv[me], SHMEM_CMP_NE, 0) == 0, "test false");  \
    SHC_CHECK(shmem_##N##_test_any(iv, (size_t)npes, NULL, SHMEM_CMP_GT, 0) == \
                  SIZE_MAX,                                                    \
              "test_any none");                                                \
    SHC_CHECK(shmem_##N##_test_some(iv, (size_t)npes, idx, NULL, SHMEM_CMP_GT, \
                                    0) == 0,                                   \
              "test_some none");                                               \
    shmem_barrier_all();                                                       \
    for (int p = 0; p < npes; p++)                                             \
      shmem_##N##_p(&iv[me], (T)(me + 1), p);                                  \
    for (int p = 0; p < npes; p++)                                             \
      cmpv[p] = (T)(p + 1);                                                    \
    size_t got =                                                               \
        shmem_##N##_wait_until_any(iv, (size_t)npes, NULL, SHMEM_CMP_GT, 0);   \
    SHC_CHECK(got < (size_t)npes && iv[got] == (T)(got + 1), "wait_any");      \
    size_t ns = shmem_##N##_wait_until_some(iv, (size_t)npes, idx, NULL,       \
                                            SHMEM_CMP_GE, 1);                  \
    SHC_CHECK(ns >= 1 && ns <= (size_t)npes, "wait_some count");               \
    for (size_t k = 0; k < ns; k++)                                            \
      SHC_CHECK(iv[idx[k]] == (T)(idx[k] + 1), "wait_some index");             \
    shmem_##N##_wait_until_all_vector(iv, (size_t)npes, NULL, SHMEM_CMP_EQ,    \
                                      cmpv);                                   \
    shmem_##N##_wait_until_all(iv, (size_t)npes, NULL, SHMEM_CMP_LE, (T)npes); \
    shmem_##N##_wait_until(&iv[npes - 1], SHMEM_CMP_EQ, (T)npes);              \
    SHC_CHECK(shmem_##N##_test_all(iv, (size_t)npes, NULL, SHMEM_CMP_LT, 1) == \
                  0,                                                           \
              "test_all false");                                               \
    SHC_CHECK(shmem_##N##_test_all_vector(iv, (size_t)npes, NULL,              \
                                          SHMEM_CMP_EQ, cmpv) == 1,            \
              "test_all_vector");                                              \
    SHC_CHECK(shmem_##N##_test_some_vector(iv, (size_t)npes, idx, NULL,        \
                                           SHMEM_CMP_EQ,                       \
                                           cmpv) == (size_t)npes,              \
              "test_some_vector");                                             \
    /* Masked: only the last element counts, and only it matches. */           \
    for (int p = 0; p < npes - 1; p++)                                         \
      status[p] = 1;                                                           \
    SHC_CHECK(shmem_##N##_test_any(iv, (size_t)npes, status, SHMEM_CMP_EQ,     \
                                   (T)npes) == (size_t)npes - 1,               \
              "test_any masked");                                              \
    SHC_CHECK(shmem_##N##_wait_until_any_vector(iv, (size_t)npes, status,      \
                                                SHMEM_CMP_EQ,                  \
                                                cmpv) == (size_t)npes - 1,     \
              "wait_any_vector masked");                                       \
    SHC_CHECK(shmem_##N##_wait_until_some_vector(                              \
                  iv, (size_t)npes, idx, status, SHMEM_CMP_EQ, cmpv) == 1 &&   \
                  idx[0] == (size_t)npes - 1,                                  \
              "wait_some_vector masked");                                      \
    SHC_CHECK(shmem_##N##_test_any_vector(iv, (size_t)npes, status,            \
                                          SHMEM_CMP_NE, cmpv) == SIZE_MAX,     \
              "test_any_vector none");                                         \
    for (int p = 0; p < npes; p++)                                             \
      status[p] = 1;                                                           \
    SHC_CHECK(shmem_##N##_wait_until_any(iv, (size_t)npes, status,             \
                                         SHMEM_CMP_EQ, 0) == SIZE_MAX,         \
              "wait_any with every element masked returns at once");           \
    SHC_CHECK(shmem_##N##_wait_until_some(iv, (size_t)npes, idx, status,       \
                                          SHMEM_CMP_EQ, 0) == 0,               \
              "wait_some with every element masked returns at once");          \
    shmem_barrier_all();                                                       \
    free(idx);                                                                 \
    free(status);                                                              \
    free(cmpv);                                                                \
    shmem_free(iv);                                                            \
    shc_end();                                                                 \
  }
SYMHEAP_SHMEM_P2P_TYPES(TEST_P2P)

/* A put, a fence, then a flag: whoever sees the flag sees the data. */
static void test_fence(void) {
  static long data[512];
  static int flag;
  shc_begin("fence_orders_puts");
  int right = (me + 1) % npes, left = (me + npes - 1) % npes;
  for (int round = 1; round <= 50; round++) {
    long src[512];
    for (int i = 0; i < 512; i++)
      src[i] = round * 1000 + me;
    shmem_long_put(data, src, 512, right);
    shmem_fence();
    shmem_int_p(&flag, round, right);
    shmem_int_wait_until(&flag, SHMEM_CMP_EQ, round);
    SHC_CHECK(data[0] == round * 1000 + left &&
                  data[511] == round * 1000 + left,
              "round %d", round);
    shmem_barrier_all();
  }
  shc_end();
}

static void test_locks(void) {
  static long lock, counter;
  shc_begin("locks");
  lock = 0;
  counter = 0;
  shmem_barrier_all();
  for (int i = 0; i < 100; i++) {
    shmem_set_lock(&lock);
    long v = shmem_long_g(&counter, 0); /* a plain read-modify-write */
    shmem_long_p(&counter, v + 1, 0);
    shmem_clear_lock(&lock);
  }
  shmem_barrier_all();
  SHC_CHECK(shmem_long_g(&counter, 0) == 100L * npes, "counter %ld",
            shmem_long_g(&counter, 0));
  /* test_lock: held by PE 0 in the middle, then free. */
  if (me == 0)
    SHC_CHECK(shmem_test_lock(&lock) == 0, "test_lock takes a free lock");
  shmem_barrier_all();
  if (me != 0)
    SHC_CHECK(shmem_test_lock(&lock) == 1, "test_lock on a held lock");
  shmem_barrier_all();
  if (me == 0)
    shmem_clear_lock(&lock);
  shmem_barrier_all();
  shc_end();
}

static void test_generic(void) {
  shc_begin("p2p_c11_generic");
  static long v;
  static int ivs[2];
  v = 0;
  shmem_barrier_all();
  shmem_long_atomic_inc(&v, 0);
  if (me == 0) {
    shmem_wait_until(&v, SHMEM_CMP_EQ, (long)npes);
    SHC_CHECK(shmem_test(&v, SHMEM_CMP_GE, (long)npes), "test");
  }
  shmem_int_p(&ivs[1], 1, me);
  shmem_quiet();
  SHC_CHECK(shmem_wait_until_any(ivs, 2, NULL, SHMEM_CMP_EQ, 1) == 1,
            "wait_until_any");
  shmem_barrier_all();
  shc_end();
}

int main(void) {
#define P2P_FN(T, N) p2p_##N,
  static const shc_test_fn tests[] = {
      SYMHEAP_SHMEM_P2P_TYPES(P2P_FN) test_fence, test_locks, test_generic};
  return shc_run(&me, &npes, tests, sizeof tests / sizeof tests[0]);
}

/* Zero-length operations: OpenSHMEM 1.5 Annex C makes a call with no
 * elements valid whatever its pointers are (NULL, or memory that is not
 * symmetric), and a no-op.  One case per family: contiguous puts and gets
 * (typed, sized, bytewise, context, non-blocking, the generics), strided,
 * put-with-signal (the signal still arrives), team collectives, active-set
 * collectives, and the point-to-point waits and tests over no variables.
 * Every pointer below is NULL or a local (non-symmetric) array. */
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>

#include "shmem_check.h"

static int me, npes;

static void test_rma(void) {
  shc_begin("zero_length_put_get");
  int right = (me + 1) % npes;
  int local[4] = {1, 2, 3, 4};
  shmem_int_put(NULL, NULL, 0, right);
  shmem_int_get(NULL, NULL, 0, right);
  shmem_int_put(local, local, 0, right); /* local: not symmetric */
  shmem_long_put_nbi(NULL, NULL, 0, right);
  shmem_double_get_nbi(NULL, NULL, 0, right);
  shmem_putmem(NULL, NULL, 0, right);
  shmem_getmem(NULL, NULL, 0, right);
  shmem_putmem_nbi(NULL, NULL, 0, right);
  shmem_getmem_nbi(NULL, NULL, 0, right);
  shmem_put32(NULL, NULL, 0, right);
  shmem_get64(NULL, NULL, 0, right);
  shmem_put128_nbi(NULL, NULL, 0, right);
  shmem_ctx_putmem(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);
  shmem_ctx_int_get(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);
  shmem_ctx_long_put_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);
  shmem_put((int *)NULL, (const int *)NULL, 0, right); /* C11 generic */
  shmem_get(SHMEM_CTX_DEFAULT, local, local, 0, right);
  shmem_quiet();
  SHC_CHECK(local[0] == 1 && local[3] == 4, "nothing moved");
  shmem_barrier_all();
  shc_end();
}

static void test_strided(void) {
  shc_begin("zero_length_strided");
  int right = (me + 1) % npes;
  shmem_int_iput(NULL, NULL, 1, 1, 0, right);
  shmem_int_iget(NULL, NULL, 2, 3, 0, right);
  shmem_iput64(NULL, NULL, 1, 1, 0, right);
  shmem_iget32(NULL, NULL, 1, 1, 0, right);
  shmem_ctx_double_iput(SHMEM_CTX_DEFAULT, NULL, NULL, 1, 1, 0, right);
  shmem_ctx_iget128(SHMEM_CTX_DEFAULT, NULL, NULL, 1, 1, 0, right);
  shmem_barrier_all();
  SHC_CHECK(1, "no strided call ended the job");
  shc_end();
}

static void test_signal(void) {
  static uint64_t sig;
  shc_begin("zero_length_put_signal");
  sig = 0;
  shmem_barrier_all();
  int right = (me + 1) % npes;
  shmem_putmem_signal(NULL, NULL, 0, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_int_put_signal(NULL, NULL, 0, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_put64_signal_nbi(NULL, NULL, 0, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_ctx_putmem_signal_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, &sig, 1,
                              SHMEM_SIGNAL_ADD, right);
  uint64_t got = shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 4);
  SHC_CHECK(got == 4, "the signal still arrives: %llu",
            (unsigned long long)got);
  shmem_barrier_all();
  shc_end();
}

static void test_team_collectives(void) {
  shc_begin("zero_length_team_collectives");
  int local[2] = {5, 6};
  SHC_CHECK(shmem_int_broadcast(SHMEM_TEAM_WORLD, NULL, NULL, 0, 0) == 0,
            "broadcast");
  SHC_CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, local, local, 0, 0) == 0,
            "broadcastmem");
  SHC_CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0,
            "collect");
  SHC_CHECK(shmem_fcollectmem(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0,
            "fcollectmem");
  SHC_CHECK(shmem_int_alltoall(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0,
            "alltoall");
  SHC_CHECK(shmem_alltoallsmem(SHMEM_TEAM_WORLD, NULL, NULL, 1, 1, 0) == 0,
            "alltoallsmem");
  SHC_CHECK(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0,
            "sum_reduce");
  SHC_CHECK(shmem_double_max_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0) == 0,
            "max_reduce");
  SHC_CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, (long *)NULL, (const long *)NULL,
                             0) == 0,
            "sum_reduce generic");
  SHC_CHECK(local[0] == 5 && local[1] == 6, "nothing moved");
  shc_end();
}

static void test_active_set_collectives(void) {
  static long psync[SHMEM_COLLECT_SYNC_SIZE];
  static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
  shc_begin("zero_length_active_set_collectives");
  for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; i++)
    psync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  shmem_broadcast64(NULL, NULL, 0, 0, 0, 0, npes, psync);
  shmem_collect32(NULL, NULL, 0, 0, 0, npes, psync);
  shmem_fcollect64(NULL, NULL, 0, 0, 0, npes, psync);
  shmem_alltoall32(NULL, NULL, 0, 0, 0, npes, psync);
  shmem_alltoalls64(NULL, NULL, 1, 1, 0, 0, 0, npes, psync);
  shmem_long_sum_to_all(NULL, NULL, 0, 0, 0, npes, pwrk, psync);
  /* The other sizes, and every _to_all operation (pWrk NULL too). */
  shmem_broadcast32(NULL, NULL, 0, 0, 0, 0, npes, psync);
  shmem_collect64(NULL, NULL, 0, 0, 0, npes, psync);
  shmem_fcollect32(NULL, NULL, 0, 0, 0, npes, psync);
  shmem_alltoall64(NULL, NULL, 0, 0, 0, npes, psync);
  shmem_alltoalls32(NULL, NULL, 2, 2, 0, 0, 0, npes, psync);
  shmem_short_and_to_all(NULL, NULL, 0, 0, 0, npes, NULL, psync);
  shmem_int_or_to_all(NULL, NULL, 0, 0, 0, npes, NULL, psync);
  shmem_longlong_xor_to_all(NULL, NULL, 0, 0, 0, npes, NULL, psync);
  shmem_float_max_to_all(NULL, NULL, 0, 0, 0, npes, NULL, psync);
  shmem_longdouble_min_to_all(NULL, NULL, 0, 0, 0, npes, NULL, psync);
  shmem_complexd_prod_to_all(NULL, NULL, 0, 0, 0, npes, NULL, psync);
  int ok = 1;
  for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; i++)
    ok &= psync[i] == SHMEM_SYNC_VALUE;
  SHC_CHECK(ok, "pSync handed back as it was given");
  shmem_barrier_all();
  shc_end();
}

/* The sized and typed forms the cases above leave out, the generics with a
 * context, and a stack array (not symmetric) for every pointer. */
static void test_sized_and_generic_ctx(void) {
  static uint64_t sig;
  shc_begin("zero_length_sized_strided_signal_generic_ctx");
  char stack[64];
  void *loc = stack;
  int right = (me + 1) % npes;
  shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
  sig = 0;
  shmem_barrier_all();
  shmem_put8(NULL, NULL, 0, right);
  shmem_get16(loc, NULL, 0, right);
  shmem_ctx_get128_nbi(ctx, loc, loc, 0, right);
  shmem_iput8(loc, loc, 1, 1, 0, right);
  shmem_iget16(NULL, NULL, 1, 1, 0, right);
  shmem_iput128(NULL, NULL, 1, 1, 0, right);
  shmem_longdouble_iput(loc, loc, 0, 0, 0, right);
  shmem_iput(ctx, (long *)NULL, (const long *)NULL, 1, 1, 0, right);
  shmem_iget((int *)loc, (const int *)loc, 1, 1, 0, right);
  shmem_put_nbi(ctx, (short *)NULL, (const short *)NULL, 0, right);
  shmem_put8_signal(NULL, NULL, 0, &sig, 1, SHMEM_SIGNAL_SET, me);
  shmem_put_signal(ctx, (int *)loc, (const int *)loc, 0, &sig, 2,
                   SHMEM_SIGNAL_SET, me);
  shmem_ctx_put128_signal_nbi(ctx, NULL, NULL, 0, &sig, 3, SHMEM_SIGNAL_SET,
                              me);
  shmem_quiet();
  SHC_CHECK(sig == 3, "the last signal set: %llu", (unsigned long long)sig);
  shmem_barrier_all();
  shc_end();
}

/* A team other than the world's (every PE but the last, or the one PE):
 * each collective family and every reduction operation, NULL and stack
 * pointers; its members still synchronise, the others are not involved. */
static void test_split_team_collectives(void) {
  shc_begin("zero_length_split_team_collectives");
  char stack[64];
  void *loc = stack;
  shmem_team_t t = SHMEM_TEAM_INVALID;
  int size = npes > 1 ? npes - 1 : 1;
  int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, size, NULL, 0, &t);
  SHC_CHECK(rc == 0, "split: %d", rc);
  if (t != SHMEM_TEAM_INVALID) {
    rc = shmem_char_broadcast(t, NULL, NULL, 0, 0);
    rc |= shmem_longdouble_broadcast(t, loc, loc, 0, 0);
    rc |= shmem_collectmem(t, NULL, NULL, 0);
    rc |= shmem_int64_collect(t, loc, loc, 0);
    rc |= shmem_size_fcollect(t, NULL, NULL, 0);
    rc |= shmem_alltoallmem(t, NULL, NULL, 0);
    rc |= shmem_uint8_alltoalls(t, NULL, NULL, 3, 2, 0);
    rc |= shmem_uchar_and_reduce(t, NULL, NULL, 0);
    rc |= shmem_uint64_or_reduce(t, NULL, NULL, 0);
    rc |= shmem_int8_xor_reduce(t, loc, loc, 0);
    rc |= shmem_float_min_reduce(t, NULL, NULL, 0);
    rc |= shmem_longdouble_max_reduce(t, loc, loc, 0);
    rc |= shmem_complexd_sum_reduce(t, NULL, NULL, 0);
    rc |= shmem_complexf_prod_reduce(t, NULL, NULL, 0);
    rc |= shmem_alltoalls(t, (short *)NULL, (const short *)NULL, 1, 1, 0);
    rc |= shmem_prod_reduce(t, (double *)loc, (const double *)loc, 0);
    SHC_CHECK(rc == 0, "a collective on the split team returned non-zero");
    shmem_team_destroy(t);
  }
  shmem_barrier_all();
  shc_end();
}

static void test_p2p(void) {
  shc_begin("zero_length_waits_and_tests");
  shmem_int_wait_until_all(NULL, 0, NULL, SHMEM_CMP_EQ, 1);
  size_t any = shmem_long_wait_until_any(NULL, 0, NULL, SHMEM_CMP_EQ, 1);
  size_t some = shmem_int_wait_until_some(NULL, 0, NULL, NULL, SHMEM_CMP_EQ, 1);
  int all = shmem_long_test_all(NULL, 0, NULL, SHMEM_CMP_EQ, 1);
  size_t tany = shmem_int_test_any(NULL, 0, NULL, SHMEM_CMP_EQ, 1);
  size_t tsome = shmem_int_test_some(NULL, 0, NULL, NULL, SHMEM_CMP_EQ, 1);
  shmem_int_wait_until_all_vector(NULL, 0, NULL, SHMEM_CMP_EQ, NULL);
  SHC_CHECK(any == SIZE_MAX, "wait_until_any over none: %zu", any);
  SHC_CHECK(some == 0 && tsome == 0, "some over none: %zu %zu", some, tsome);
  SHC_CHECK(all == 1, "test_all over none: %d", all);
  SHC_CHECK(tany == SIZE_MAX, "test_any over none: %zu", tany);
  shmem_barrier_all();
  shc_end();
}

int main(void) {
  static const shc_test_fn tests[] = {test_rma,
                                      test_strided,
                                      test_signal,
                                      test_team_collectives,
                                      test_active_set_collectives,
                                      test_p2p,
                                      test_sized_and_generic_ctx,
                                      test_split_team_collectives};
  return shc_run(&me, &npes, tests, sizeof tests / sizeof tests[0]);
}

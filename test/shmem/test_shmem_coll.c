/* Collectives from the specification: barrier_all, sync_all, team_sync,
 * broadcast, collect, fcollect, alltoall, alltoalls for every RMA type, every
 * reduction for every type it lists (on the world and on a strided team, in
 * place too), and the deprecated active-set forms with pSync (which must be
 * handed back holding SHMEM_SYNC_VALUE). */
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_check.h"

#define NE 8
static int me, npes;
static shmem_team_t evens; /* world PEs 0, 2, 4, ... */

#define VAL(T, p, i) ((T)((p)*5 + (i) + 1))

#define TEST_MOVE(T, N)                                                        \
  static void move_##N(void) {                                                 \
    T *src = shmem_malloc(sizeof(T) * NE * npes);                              \
    T *dst = shmem_malloc(sizeof(T) * NE * npes * 3);                          \
    shc_begin("coll_move_" #N);                                                \
    for (int i = 0; i < NE * npes; i++)                                        \
      src[i] = VAL(T, me, i);                                                  \
    memset(dst, 0, sizeof(T) * NE * npes * 3);                                 \
    /* Each collective's dest is ready on every PE before any PE calls it      \
     * (the specification's precondition: a broadcast's root and an            \
     * fcollect's members write into the others' dest): every PE has           \
     * checked the last one's result before the next one starts. */            \
    shmem_barrier_all();                                                       \
    int root = npes - 1;                                                       \
    SHC_CHECK(shmem_##N##_broadcast(SHMEM_TEAM_WORLD, dst, src, NE, root) ==   \
                  0,                                                           \
              "broadcast rc");                                                 \
    for (int i = 0; i < NE; i++)                                               \
      SHC_CHECK(dst[i] == VAL(T, root, i), "broadcast [%d]", i);               \
    SHC_CHECK(dst[NE] == 0, "broadcast wrote past nelems");                    \
    shmem_barrier_all();                                                       \
    shmem_##N##_fcollect(SHMEM_TEAM_WORLD, dst, src, NE);                      \
    for (int p = 0; p < npes; p++)                                             \
      for (int i = 0; i < NE; i++)                                             \
        SHC_CHECK(dst[p * NE + i] == VAL(T, p, i), "fcollect [%d][%d]", p, i); \
    shmem_barrier_all();                                                       \
    /* collect: PE p gives p % 3 + 1 elements. */                              \
    shmem_##N##_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)(me % 3 + 1));     \
    for (int p = 0, k = 0; p < npes; p++)                                      \
      for (int i = 0; i < p % 3 + 1; i++, k++)                                 \
        SHC_CHECK(dst[k] == VAL(T, p, i), "collect [%d]", k);                  \
    shmem_##N##_alltoall(SHMEM_TEAM_WORLD, dst, src, 2);                       \
    for (int p = 0; p < npes; p++)                                             \
      for (int i = 0; i < 2; i++)                                              \
        SHC_CHECK(dst[p * 2 + i] == VAL(T, p, me * 2 + i), "alltoall");        \
    memset(dst, 0, sizeof(T) * NE * npes * 3);                                 \
    shmem_##N##_alltoalls(SHMEM_TEAM_WORLD, dst, src, 3, 2, 2);                \
    for (int p = 0; p < npes; p++)                                             \
      for (int i = 0; i < 2; i++)                                              \
        SHC_CHECK(dst[(p * 2 + i) * 3] == VAL(T, p, (me * 2 + i) * 2),         \
                  "alltoalls");                                                \
    if (evens != SHMEM_TEAM_INVALID) {                                         \
      int tn = shmem_team_n_pes(evens);                                        \
      shmem_team_sync(evens);                                                  \
      shmem_##N##_broadcast(evens, dst, src, NE, tn - 1);                      \
      for (int i = 0; i < NE; i++)                                             \
        SHC_CHECK(dst[i] == VAL(T, 2 * (tn - 1), i), "team broadcast");        \
      shmem_team_sync(evens);                                                  \
      shmem_##N##_fcollect(evens, dst, src, 1);                                \
      for (int p = 0; p < tn; p++)                                             \
        SHC_CHECK(dst[p] == VAL(T, 2 * p, 0), "team fcollect");                \
    }                                                                          \
    shmem_barrier_all();                                                       \
    shmem_free(dst);                                                           \
    shmem_free(src);                                                           \
    shc_end();                                                                 \
  }
SYMHEAP_SHMEM_RMA_TYPES(TEST_MOVE)

/* The value PE p contributes at index i, per operation family. */
#define RV_bit(T, p, i) ((T)(1u << (((p) + (i)) % 8)))
#define RV_cmp(T, p, i) ((T)(((p)*3 + (i)) % 7))
#define RV_sum(T, p, i) ((T)(((p) + (i)) % 5))
#define RV_prod(T, p, i) ((T)(((p) + (i)) % 3 == 0 ? 2 : 1))
#define OPF_and bit
#define OPF_or bit
#define OPF_xor bit
#define OPF_max cmp
#define OPF_min cmp
#define OPF_sum sum
#define OPF_prod prod
#define COMB_and(a, b) ((a) & (b))
#define COMB_or(a, b) ((a) | (b))
#define COMB_xor(a, b) ((a) ^ (b))
#define COMB_max(a, b) ((a) > (b) ? (a) : (b))
#define COMB_min(a, b) ((a) < (b) ? (a) : (b))
#define COMB_sum(a, b) ((a) + (b))
#define COMB_prod(a, b) ((a) * (b))
#define CAT(a, b) CAT_(a, b)
#define CAT_(a, b) a##b
#define RV(OP, T, p, i) CAT(RV_, OPF_##OP)(T, p, i)

/* team: world (members 0..npes-1) or evens (members 0, 2, ...). */
#define TEST_RED_OP(T, N, OP)                                                  \
  static void red_##N##_##OP(shmem_team_t team, int step, T *src, T *dst) {    \
    int tme = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);             \
    if (tme < 0)                                                               \
      return;                                                                  \
    for (int i = 0; i < NE; i++)                                               \
      src[i] = RV(OP, T, me, i);                                               \
    SHC_CHECK(shmem_##N##_##OP##_reduce(team, dst, src, NE) == 0, "rc");       \
    for (int i = 0; i < NE; i++) {                                             \
      T want = RV(OP, T, 0, i);                                                \
      for (int p = 1; p < tn; p++)                                             \
        want = (T)COMB_##OP(want, RV(OP, T, p * step, i));                     \
      SHC_CHECK(dst[i] == want, #OP " [%d]", i);                               \
    }                                                                          \
    shmem_##N##_##OP##_reduce(team, src, src, NE); /* in place */              \
    SHC_CHECK(memcmp(src, dst, sizeof(T) * NE) == 0, #OP " in place");         \
  }
#define DEF_RED_BIT(T, N)                                                      \
  TEST_RED_OP(T, N, and) TEST_RED_OP(T, N, or) TEST_RED_OP(T, N, xor)
#define DEF_RED_CMP(T, N) TEST_RED_OP(T, N, max) TEST_RED_OP(T, N, min)
#define DEF_RED_ARITH(T, N) TEST_RED_OP(T, N, sum) TEST_RED_OP(T, N, prod)
SYMHEAP_SHMEM_REDUCE_BIT_TYPES(DEF_RED_BIT)
SYMHEAP_SHMEM_REDUCE_CMP_TYPES(DEF_RED_CMP)
SYMHEAP_SHMEM_REDUCE_ARITH_TYPES(DEF_RED_ARITH)

static void test_reductions(void) {
  void *src = shmem_malloc(NE * 32), *dst = shmem_malloc(NE * 32);
  shc_begin("coll_reduce_all_types_world_and_team");
#define RUN_OP(T, N, OP)                                                       \
  red_##N##_##OP(SHMEM_TEAM_WORLD, 1, src, dst);                               \
  if (evens != SHMEM_TEAM_INVALID)                                             \
    red_##N##_##OP(evens, 2, src, dst);
#define RUN_BIT(T, N) RUN_OP(T, N, and) RUN_OP(T, N, or) RUN_OP(T, N, xor)
#define RUN_CMP(T, N) RUN_OP(T, N, max) RUN_OP(T, N, min)
#define RUN_ARITH(T, N) RUN_OP(T, N, sum) RUN_OP(T, N, prod)
  SYMHEAP_SHMEM_REDUCE_BIT_TYPES(RUN_BIT)
  SYMHEAP_SHMEM_REDUCE_CMP_TYPES(RUN_CMP)
  SYMHEAP_SHMEM_REDUCE_ARITH_TYPES(RUN_ARITH)
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
  shc_end();
}

static void test_sync(void) {
  static int hits[64];
  shc_begin("coll_barrier_sync");
  for (int round = 0; round < 20; round++) {
    for (int p = 0; p < npes; p++)
      shmem_int_p(&hits[me], round + 1, p);
    shmem_barrier_all();
    for (int p = 0; p < npes; p++)
      SHC_CHECK(hits[p] == round + 1, "round %d from PE %d", round, p);
    if (round % 2) {
      shmem_sync_all();
    } else {
      shmem_team_sync(SHMEM_TEAM_SHARED);
      /* Across hosts the shared team is one host's: the world too, or a
       * PE of another host could put the next round's value too soon. */
      if (shmem_team_n_pes(SHMEM_TEAM_SHARED) < npes)
        shmem_sync_all();
    }
  }
  shmem_sync(SHMEM_TEAM_WORLD);
  shc_end();
}

static long psync[SHMEM_BCAST_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int psync_clean(void) {
  for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
    if (psync[i] != SHMEM_SYNC_VALUE)
      return 0;
  return 1;
}

static void test_active_set(void) {
  static int64_t s64[16], d64[64];
  static int32_t s32[16], d32[64];
  static int ired[4], isrc[4];
  static double dred[2], dsrc[2];
  shc_begin("coll_deprecated_active_set");
  for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
    psync[i] = SHMEM_SYNC_VALUE;
  for (int i = 0; i < 16; i++) {
    s64[i] = me * 100 + i;
    s32[i] = me * 100 + i;
  }
  shmem_barrier_all();
  /* The whole world, then the even PEs (log stride 1). */
  shmem_barrier(0, 0, npes, psync);
  /* A PE looks at its own pSync only while no peer can be in the next call
   * on it (a peer's next call writes there: the spec allows reuse once
   * every PE has returned, so the check sits between two barriers). */
  shmem_barrier_all();
  SHC_CHECK(psync_clean(), "pSync after barrier");
  shmem_barrier_all();
  shmem_broadcast64(d64, s64, 4, 1 % npes, 0, 0, npes, psync);
  if (me != 1 % npes)
    SHC_CHECK(d64[3] == (1 % npes) * 100 + 3, "broadcast64");
  SHC_CHECK(psync_clean(), "pSync after broadcast64");
  shmem_barrier_all();
  shmem_collect32(d32, s32, (size_t)(me + 1), 0, 0, npes, psync);
  for (int p = 0, k = 0; p < npes; p++)
    for (int i = 0; i <= p; i++, k++)
      SHC_CHECK(d32[k] == p * 100 + i, "collect32 [%d]", k);
  SHC_CHECK(psync_clean(), "pSync after collect32");
  shmem_barrier_all();
  int nev = (npes + 1) / 2;
  if (me % 2 == 0) {
    shmem_fcollect64(d64, s64, 2, 0, 1, nev, psync);
    for (int p = 0; p < nev; p++)
      SHC_CHECK(d64[2 * p + 1] == 2 * p * 100 + 1, "fcollect64 evens");
    shmem_alltoall32(d32, s32, 1, 0, 1, nev, psync);
    for (int p = 0; p < nev; p++)
      SHC_CHECK(d32[p] == 2 * p * 100 + me / 2, "alltoall32 evens");
    shmem_alltoalls64(d64, s64, 1, 2, 1, 0, 1, nev, psync);
    for (int p = 0; p < nev; p++)
      SHC_CHECK(d64[p] == 2 * p * 100 + 2 * (me / 2), "alltoalls64 evens");
    SHC_CHECK(psync_clean(), "pSync after the evens' collectives");
  }
  shmem_barrier_all();
  for (int i = 0; i < 4; i++)
    isrc[i] = me + i;
  dsrc[0] = me * 0.5;
  dsrc[1] = -me;
  shmem_int_sum_to_all(ired, isrc, 4, 0, 0, npes, (int *)pwrk, psync);
  SHC_CHECK(ired[2] == npes * (npes - 1) / 2 + 2 * npes, "int_sum_to_all");
  shmem_barrier_all();
  shmem_double_max_to_all(dred, dsrc, 2, 0, 0, npes, (double *)pwrk, psync);
  SHC_CHECK(dred[0] == (npes - 1) * 0.5 && dred[1] == 0, "double_max_to_all");
  shmem_barrier_all();
  SHC_CHECK(psync_clean(), "pSync after the reductions");
  shmem_barrier_all();
  symheap_shmem_sync_active(0, 0, npes, psync);
  shmem_sync(0, 0, npes, psync);
  SHC_CHECK(psync_clean(), "pSync after sync");
  shmem_barrier_all();
  shc_end();
}

int main(void) {
  shc_init(&me, &npes);
  shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0,
                           &evens);
  test_sync();
#define CALL(T, N) move_##N();
  SYMHEAP_SHMEM_RMA_TYPES(CALL)
  test_reductions();
  test_active_set();
  shmem_team_destroy(evens);
  shmem_finalize();
  return shc_status();
}

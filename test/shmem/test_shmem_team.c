/* Teams and contexts from the specification: the predefined teams,
 * split_strided (positive stride, a single PE, an invalid request),
 * split_2d, translate_pe, get_config, team_ptr, nested splits, contexts on
 * a team (PE numbers relative to the team), and teams made and destroyed
 * many more times than there are team slots. */
#include <shmem.h>
#include <stdint.h>

#include "shmem_check.h"

static int me, npes;

static void test_predefined(void) {
  shc_begin("team_predefined");
  SHC_CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "world my_pe");
  SHC_CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "world n_pes");
  /* SHMEM_TEAM_SHARED: this host's PEs (pretend hosts of per PEs each). */
  int per = shc_per_host(), first = me / per * per;
  int nshared = npes - first < per ? npes - first : per;
  SHC_CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == nshared, "shared n_pes");
  SHC_CHECK(shmem_team_my_pe(SHMEM_TEAM_SHARED) == me - first, "shared my_pe");
  SHC_CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1, "invalid my_pe");
  SHC_CHECK(shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1, "invalid n_pes");
  SHC_CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, first + nshared - 1,
                                    SHMEM_TEAM_SHARED) == nshared - 1,
            "translate world->shared");
  if (nshared < npes) /* another host's PE is not in this host's team */
    SHC_CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, (first + per) % npes,
                                      SHMEM_TEAM_SHARED) == -1,
              "translate another host's PE");
  SHC_CHECK(
      shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes, SHMEM_TEAM_SHARED) == -1,
      "translate out of range");
  static int x, y;
  SHC_CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0,
            "sync on an invalid team");
  SHC_CHECK(shmem_int_sum_reduce(SHMEM_TEAM_INVALID, &x, &y, 1) != 0,
            "reduce on an invalid team");
  shc_end();
}

static void test_strided(void) {
  static int val;
  shc_begin("team_split_strided");
  shmem_team_t odds, single, bad;
  shmem_team_config_t conf = {.num_contexts = 2}, got = {0};
  int nodd = npes / 2;
  /* With one PE there are no odd PEs: an empty team is refused. */
  int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, nodd, &conf,
                                    SHMEM_TEAM_NUM_CONTEXTS, &odds);
  SHC_CHECK(nodd ? rc == 0 : rc != 0, "split odds returned %d", rc);
  SHC_CHECK((me % 2 == 1) == (odds != SHMEM_TEAM_INVALID), "membership");
  if (odds != SHMEM_TEAM_INVALID) {
    SHC_CHECK(shmem_team_my_pe(odds) == me / 2, "odds my_pe");
    SHC_CHECK(shmem_team_n_pes(odds) == nodd, "odds n_pes");
    SHC_CHECK(shmem_team_get_config(odds, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
                  got.num_contexts == 2,
              "get_config");
    SHC_CHECK(shmem_team_translate_pe(odds, 0, SHMEM_TEAM_WORLD) == 1,
              "translate odds->world");
    SHC_CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, odds) == -1,
              "PE 0 is not odd");
    /* A context on the team numbers PEs in the team. */
    shmem_ctx_t ctx;
    shmem_team_t back;
    SHC_CHECK(shmem_team_create_ctx(odds, 0, &ctx) == 0, "create_ctx");
    SHC_CHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == odds,
              "ctx_get_team");
    int tme = shmem_team_my_pe(odds);
    shmem_ctx_int_p(ctx, &val, 1000 + tme, (tme + 1) % nodd);
    shmem_ctx_quiet(ctx);
    shmem_team_sync(odds);
    SHC_CHECK(val == 1000 + (tme + nodd - 1) % nodd, "ctx put in team");
    int *p = shmem_team_ptr(odds, &val, 0);
    if (shc_same_host(me, 1)) /* team PE 0 is world PE 1 */
      SHC_CHECK(p && *p == 1000 + nodd - 1, "team_ptr");
    else
      SHC_CHECK(!p, "team_ptr to another host's PE");
    shmem_team_sync(odds);
    shmem_ctx_destroy(ctx);
    /* A nested split: the first PE of the odds alone. */
    shmem_team_t first;
    SHC_CHECK(shmem_team_split_strided(odds, 0, 1, 1, NULL, 0, &first) == 0,
              "nested split");
    SHC_CHECK((tme == 0) == (first != SHMEM_TEAM_INVALID), "nested membership");
    if (first != SHMEM_TEAM_INVALID)
      SHC_CHECK(shmem_team_translate_pe(first, 0, SHMEM_TEAM_WORLD) == 1,
                "nested translate");
    shmem_team_destroy(first);
    shmem_team_destroy(odds);
  } else {
    SHC_CHECK(shmem_team_create_ctx(odds, 0, &(shmem_ctx_t){0}) != 0,
              "ctx on an invalid team refused");
  }
  SHC_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, 1, 1, NULL, 0,
                                     &single) == 0,
            "split single");
  SHC_CHECK((me == npes - 1) == (single != SHMEM_TEAM_INVALID), "single");
  shmem_team_destroy(single);
  SHC_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes + 1, NULL, 0,
                                     &bad) != 0 &&
                bad == SHMEM_TEAM_INVALID,
            "too large a team is refused");
  shc_end();
}

static void test_2d(void) {
  shc_begin("team_split_2d");
  int xr = npes >= 4 ? 2 : 1;
  shmem_team_t x, y;
  SHC_CHECK(
      shmem_team_split_2d(SHMEM_TEAM_WORLD, xr, NULL, 0, &x, NULL, 0, &y) == 0,
      "split_2d");
  SHC_CHECK(x != SHMEM_TEAM_INVALID && y != SHMEM_TEAM_INVALID, "both teams");
  SHC_CHECK(shmem_team_my_pe(x) == me % xr, "x my_pe");
  SHC_CHECK(shmem_team_my_pe(y) == me / xr, "y my_pe");
  SHC_CHECK(shmem_team_n_pes(y) == (npes - me % xr + xr - 1) / xr, "y n_pes");
  SHC_CHECK(shmem_team_translate_pe(x, 0, SHMEM_TEAM_WORLD) == me - me % xr,
            "x translate");
  int sum = 0, one = me;
  static int ssum, sone;
  sone = one;
  shmem_int_sum_reduce(y, &ssum, &sone, 1);
  for (int p = me % xr; p < npes; p += xr)
    sum += p;
  SHC_CHECK(ssum == sum, "sum over the column %d, want %d", ssum, sum);
  shmem_team_destroy(x);
  shmem_team_destroy(y);
  shc_end();
}

/* Far more teams than slots over the job's life: slots come back. */
static void test_churn(void) {
  shc_begin("team_create_destroy_churn");
  for (int i = 0; i < 200; i++) {
    shmem_team_t t;
    int start = i % npes;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 1, npes - start, NULL,
                                 0, &t) != 0) {
      SHC_CHECK(0, "split %d failed", i);
      break;
    }
    if (t != SHMEM_TEAM_INVALID) {
      shmem_team_sync(t);
      SHC_CHECK(shmem_team_my_pe(t) == me - start, "my_pe in round %d", i);
      shmem_team_destroy(t);
    }
  }
  shmem_barrier_all();
  shc_end();
}

static void test_contexts(void) {
  static long x;
  shc_begin("ctx_world");
  shmem_ctx_t c[3];
  long opts[3] = {0, SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED,
                  SHMEM_CTX_NOSTORE};
  for (int i = 0; i < 3; i++)
    SHC_CHECK(shmem_ctx_create(opts[i], &c[i]) == 0, "ctx_create %d", i);
  shmem_team_t t;
  SHC_CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 &&
                t == SHMEM_TEAM_WORLD,
            "default ctx team");
  x = 0;
  shmem_barrier_all();
  for (int i = 0; i < 3; i++)
    shmem_ctx_long_atomic_add(c[i], &x, 1, 0);
  for (int i = 0; i < 3; i++) {
    shmem_ctx_fence(c[i]);
    shmem_ctx_quiet(c[i]);
  }
  shmem_barrier_all();
  SHC_CHECK(shmem_long_g(&x, 0) == 3L * npes, "adds through 3 contexts");
  for (int i = 0; i < 3; i++)
    shmem_ctx_destroy(c[i]);
  shmem_barrier_all();
  shc_end();
}

/* Members that give a split different arguments all get
 * SHMEM_TEAM_INVALID and -1, and the next split works.  Before, PE 1 (size
 * npes + 5) got -1 while the others got a team whose first collective then
 * waited for PE 1 for ever. */
static void test_mismatched_split(void) {
  shc_begin("team_split_mismatched");
  shmem_team_t t = SHMEM_TEAM_INVALID;
  int size = me == 1 % npes ? npes + 5 : npes;
  int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, size, NULL, 0, &t);
  SHC_CHECK(npes == 1 || (rc == -1 && t == SHMEM_TEAM_INVALID),
            "a split with other arguments on PE 1: rc %d, team %s", rc,
            t == SHMEM_TEAM_INVALID ? "invalid" : "valid");
  if (t != SHMEM_TEAM_INVALID)
    shmem_team_destroy(t);
  rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t);
  SHC_CHECK(rc == 0 && t != SHMEM_TEAM_INVALID, "the next split: rc %d", rc);
  if (t != SHMEM_TEAM_INVALID) {
    shmem_team_sync(t);
    shmem_team_destroy(t);
  }
  shmem_barrier_all();
  shc_end();
}

/* A team and a context used after their destruction: the team answers as
 * SHMEM_TEAM_INVALID does, the context's team is SHMEM_TEAM_INVALID (the
 * operations on it end the job: test_shmem_exit --ctx-after-destroy).
 * Before, both were freed at once and these calls read freed memory. */
static void test_after_destroy(void) {
  shc_begin("team_after_destroy");
  shmem_team_t t = SHMEM_TEAM_INVALID, t2 = SHMEM_TEAM_INVALID;
  shmem_ctx_t ctx = SHMEM_CTX_INVALID;
  int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t);
  SHC_CHECK(rc == 0 && t != SHMEM_TEAM_INVALID, "split: rc %d", rc);
  SHC_CHECK(shmem_team_create_ctx(t, 0, &ctx) == 0, "team_create_ctx");
  shmem_ctx_destroy(ctx);
  shmem_team_t of = SHMEM_TEAM_WORLD;
  SHC_CHECK(shmem_ctx_get_team(ctx, &of) == -1 && of == SHMEM_TEAM_INVALID,
            "ctx_get_team of a destroyed context: team %s",
            of == SHMEM_TEAM_INVALID ? "invalid" : "valid");
  shmem_team_destroy(t);
  shmem_team_config_t cfg;
  int x;
  SHC_CHECK(shmem_team_my_pe(t) == -1, "my_pe: %d", shmem_team_my_pe(t));
  SHC_CHECK(shmem_team_n_pes(t) == -1, "n_pes: %d", shmem_team_n_pes(t));
  SHC_CHECK(shmem_team_translate_pe(t, 0, SHMEM_TEAM_WORLD) == -1 &&
                shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, t) == -1,
            "translate_pe answered");
  SHC_CHECK(shmem_team_ptr(t, &x, 0) == NULL, "team_ptr answered");
  SHC_CHECK(shmem_team_get_config(t, SHMEM_TEAM_NUM_CONTEXTS, &cfg) == -1,
            "get_config answered");
  SHC_CHECK(shmem_team_create_ctx(t, 0, &ctx) == -1 && ctx == SHMEM_CTX_INVALID,
            "create_ctx on it");
  /* Every PE takes the same path: no collective runs on the dead team. */
  rc = shmem_team_split_strided(t, 0, 1, 1, NULL, 0, &t2);
  SHC_CHECK(rc == -1 && t2 == SHMEM_TEAM_INVALID, "split of it: rc %d", rc);
  shmem_team_destroy(t); /* twice: nothing */
  shmem_barrier_all();
  shc_end();
}

int main(void) {
  static const shc_test_fn tests[] = {
      test_predefined,       test_strided,  test_2d,           test_churn,
      test_mismatched_split, test_contexts, test_after_destroy};
  return shc_run(&me, &npes, tests, sizeof tests / sizeof tests[0]);
}

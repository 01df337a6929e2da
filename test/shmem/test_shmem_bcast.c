/* Small broadcasts, reductions and collects are eager (issue 31: the 4-PE
 * collectives' floor; the large contributions of a collect are read from
 * their source).  Broadcasts: the
 * root returns without waiting for the members, each member gets the root's
 * data whenever it arrives, and back-to-back broadcasts with different roots
 * into different dests (no sync between them, as the specification allows)
 * lose no data and no flag.  Large ones (pulled between barriers) stay
 * right.  Run at 2, 4 and 8 PEs. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shmem_check.h"

static long psync[2][SHMEM_BCAST_SYNC_SIZE];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* PE 1 arrives 600 ms late: the root (PE 0) must not wait for it. */
static void root_does_not_wait(int me, int npes) {
  shc_begin("bcast_root_returns_before_late_member");
  long *src = shmem_malloc(64 * sizeof(long)), *dst = shmem_calloc(64, sizeof(long));
  for (int i = 0; i < 64; i++)
    src[i] = 1000 * me + i;
  shmem_barrier_all();
  double t0 = now_s();
  if (me == 1)
    usleep(600 * 1000);
  shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 64, 0);
  double took = now_s() - t0;
  if (me == 0)
    SHC_CHECK(took < 0.3, "root waited %.3f s for a late member", took);
  for (int i = 0; i < 64; i++)
    SHC_CHECK(dst[i] == i, "dst[%d] = %ld", i, dst[i]);
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
  (void)npes;
  shc_end();
}

/* 40 broadcasts back to back, root k % npes, into dest k; then the active-set
 * form alternating two pSyncs (as OSU's benchmark does), with a barrier. */
static void back_to_back(int me, int npes) {
  enum { K = 40, N = 5 };
  shc_begin("bcast_back_to_back_rotating_roots");
  int *src = shmem_malloc(sizeof(int) * N * K);
  int *dst = shmem_calloc((size_t)N * K, sizeof(int));
  for (int k = 0; k < K; k++)
    for (int i = 0; i < N; i++)
      src[k * N + i] = 100000 * me + 100 * k + i;
  shmem_barrier_all();
  for (int k = 0; k < K; k++)
    shmem_int_broadcast(SHMEM_TEAM_WORLD, dst + k * N, src + k * N, N, k % npes);
  for (int k = 0; k < K; k++)
    for (int i = 0; i < N; i++)
      SHC_CHECK(dst[k * N + i] == 100000 * (k % npes) + 100 * k + i,
                "broadcast %d [%d] = %d", k, i, dst[k * N + i]);
  shmem_barrier_all();
  for (int k = 0; k < K; k++) {
    shmem_broadcast32(dst + k * N, src + k * N, N, k % npes, 0, 0, npes,
                      psync[k % 2]);
    shmem_barrier_all();
  }
  for (int k = 0; k < K; k++)
    for (int i = 0; i < N; i++)
      if (me != k % npes)
        SHC_CHECK(dst[k * N + i] == 100000 * (k % npes) + 100 * k + i,
                  "broadcast32 %d [%d] = %d", k, i, dst[k * N + i]);
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
      SHC_CHECK(psync[p][i] == SHMEM_SYNC_VALUE, "pSync not handed back");
  shmem_barrier_all();
  shmem_free(dst);
  shmem_free(src);
  shc_end();
}

/* Sizes around the eager limit, around the most a root pushes (256 KiB in
 * all: coll.c's SHM_PUSH, split among the npes - 1 members), and far
 * above them, every root. */
static void sizes(int me, int npes) {
  shc_begin("bcast_sizes_eager_pushed_and_pulled");
  size_t push = (256u << 10) / (size_t)(npes > 1 ? npes - 1 : 1);
  const size_t sz[] = {1,     8,     4095,     4096, 4097,     16384,
                       16385, 65536, push - 1, push, push + 1, 1 << 20};
  char *src = shmem_malloc(1 << 20), *dst = shmem_malloc(1 << 20);
  for (size_t s = 0; s < sizeof sz / sizeof sz[0]; s++)
    for (int root = 0; root < npes; root++) {
      memset(src, 'a' + me, sz[s]);
      memset(dst, 0, 1 << 20);
      shmem_barrier_all();
      shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, sz[s], root);
      SHC_CHECK(dst[0] == 'a' + root && dst[sz[s] - 1] == 'a' + root,
                "%zu bytes from %d: %d..%d", sz[s], root, dst[0],
                dst[sz[s] - 1]);
      SHC_CHECK(sz[s] == 1 << 20 || dst[sz[s]] == 0, "%zu bytes: wrote past",
                sz[s]);
      shmem_barrier_all();
    }
  shmem_free(dst);
  shmem_free(src);
  shc_end();
}

/* PE p's share of collect_mixed, in ints. */
static size_t mixed_count(int p) { return 500 + (size_t)p * 1500; }

/* collect where PE p gives 500 + p * 1500 ints (PE 0's 2000 B under the
 * 4 KiB eager limit, copied eagerly; the others' above it, read from their
 * source), twice back to back into two dests, then a reduction of each
 * size class. */
static void collect_mixed(int me, int npes) {
  shc_begin("collect_mixed_eager_and_large");
  size_t total = 0;
  for (int p = 0; p < npes; p++)
    total += mixed_count(p);
  int *src = shmem_malloc(sizeof(int) * mixed_count(npes));
  int *d1 = shmem_malloc(sizeof(int) * total), *d2 = shmem_malloc(sizeof(int) * total);
  size_t mine = mixed_count(me);
  for (size_t i = 0; i < mine; i++)
    src[i] = me * 1000000 + (int)i;
  shmem_int_collect(SHMEM_TEAM_WORLD, d1, src, mine);
  shmem_int_collect(SHMEM_TEAM_WORLD, d2, src, mine);
  size_t at = 0;
  for (int p = 0; p < npes; p++)
    for (size_t i = 0; i < mixed_count(p); i++, at++) {
      SHC_CHECK(d1[at] == p * 1000000 + (int)i, "first [%d][%zu] = %d", p, i, d1[at]);
      SHC_CHECK(d2[at] == p * 1000000 + (int)i, "second [%d][%zu] = %d", p, i, d2[at]);
    }
  long *ls = shmem_malloc(sizeof(long) * 8192), *ld = shmem_malloc(sizeof(long) * 8192);
  for (int i = 0; i < 8192; i++)
    ls[i] = me + i;
  /* 512 longs: the eager limit; 513: just above it (split at 3+ PEs). */
  static const size_t ns[] = {1, 8, 64, 512, 513, 4096, 8192};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    size_t n = ns[k];
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, ld, ls, n);
    for (size_t i = 0; i < n; i++)
      SHC_CHECK(ld[i] == (long)npes * (long)i + (long)npes * (npes - 1) / 2,
                "sum of %zu [%zu] = %ld", n, i, ld[i]);
  }
  /* In place, large (read from the sources): no PE may overwrite its
   * source before the others have read it. */
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 8192; i++)
      ls[i] = me + i;
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, ls, ls, 8192);
    for (int i = 0; i < 8192; i++)
      SHC_CHECK(ls[i] == (long)npes * i + (long)npes * (npes - 1) / 2,
                "in place [%d] = %ld", i, ls[i]);
  }
  shmem_barrier_all();
  shmem_free(ld);
  shmem_free(ls);
  shmem_free(d2);
  shmem_free(d1);
  shmem_free(src);
  shc_end();
}

/* n sums of s[i] = 3 * me + i + round over the PEs first..first+count-1,
 * in place; then s is rewritten at once (a PE that left before the others
 * had copied its slice would hand them this garbage).  The index of the
 * first wrong element, or -1. */
static long split_round(long *s, size_t n, int me, int first, int count,
                        int round, shmem_team_t team, long *psync_r,
                        long *pwrk) {
  for (size_t i = 0; i < n; i++)
    s[i] = 3L * me + (long)i + round;
  if (team != SHMEM_TEAM_INVALID)
    shmem_long_sum_reduce(team, s, s, n);
  else
    shmem_long_sum_to_all(s, s, (int)n, first, 0, count, pwrk, psync_r);
  long pes = 3L * ((long)count * first + (long)count * (count - 1) / 2);
  long bad = -1;
  for (size_t i = 0; i < n && bad < 0; i++)
    if (s[i] != (long)count * ((long)i + round) + pes)
      bad = (long)i;
  memset(s, 0xff, n * sizeof *s);
  return bad;
}

/* Reductions above the eager size are split: each PE combines a slice of
 * the elements from every source and the others copy it from its dest
 * (coll.c, reduce_scattered; groups of 3 PEs or more: at 2 PEs the
 * same calls check the unsplit form).  Sizes just over the eager limit and
 * uneven ones, in place, on the world team, on a team of npes - 1 PEs (an odd
 * size at 4 and 8 PEs) and through the active-set form with two pSyncs in
 * turn; then doubles, whose sum depends on the order: every PE must get
 * the same bits. */
static void reduce_split(int me, int npes) {
  static long psync_r[2][SHMEM_REDUCE_SYNC_SIZE];
  static uint64_t sum_bits, lo, hi;
  shc_begin("reduce_large_split_in_slices");
  const size_t sizes[] = {2049, 4099, 100003};
  long *s = shmem_malloc(sizeof(long) * 100003);
  long *pwrk = shmem_malloc(sizeof(long) * (100003 / 2 + 1));
  double *d = shmem_malloc(sizeof(double) * 5003);
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
      psync_r[p][i] = SHMEM_SYNC_VALUE;
  shmem_team_t rest = SHMEM_TEAM_INVALID;
  if (npes > 2)
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 1, NULL, 0, &rest);
  shmem_barrier_all();
  SHC_CHECK(s && pwrk && d, "shmem_malloc failed");
  for (size_t k = 0; s && pwrk && d && k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    for (int round = 0; round < 4; round++) {
      long bad =
          split_round(s, n, me, 0, npes, round, SHMEM_TEAM_WORLD, NULL, NULL);
      SHC_CHECK(bad < 0, "world, %zu elements, round %d: [%ld] wrong", n, round,
                bad);
      bad = split_round(s, n, me, 0, npes, round, SHMEM_TEAM_INVALID,
                        psync_r[round & 1], pwrk);
      SHC_CHECK(bad < 0, "to_all, %zu elements, round %d: [%ld] wrong", n,
                round, bad);
      if (me >= 1 && rest != SHMEM_TEAM_INVALID) {
        bad = split_round(s, n, me, 1, npes - 1, round, rest, NULL, NULL);
        SHC_CHECK(bad < 0, "team of %d, %zu elements, round %d: [%ld] wrong",
                  npes - 1, n, round, bad);
      }
      shmem_barrier_all();
    }
  }
  for (int i = 0; d && i < 5003; i++)
    d[i] = (me % 2 ? 1e-9 : 1e9) / (1.0 + me + i);
  if (d)
    shmem_double_sum_reduce(SHMEM_TEAM_WORLD, d, d, 5003);
  sum_bits = 0;
  for (int i = 0; d && i < 5003; i++) {
    uint64_t b;
    memcpy(&b, &d[i], sizeof b);
    sum_bits = sum_bits * 31 + b;
  }
  shmem_uint64_max_reduce(SHMEM_TEAM_WORLD, &hi, &sum_bits, 1);
  shmem_uint64_min_reduce(SHMEM_TEAM_WORLD, &lo, &sum_bits, 1);
  SHC_CHECK(lo == hi, "PEs got different bits for a sum of doubles");
  if (rest != SHMEM_TEAM_INVALID)
    shmem_team_destroy(rest);
  shmem_barrier_all();
  shmem_free(d);
  shmem_free(pwrk);
  shmem_free(s);
  shc_end();
}

/* fcollects write each PE's block into every PE's dest (coll.c,
 * collect_push) unless source overlaps dest.  Three back to back, into
 * three dests with no sync between them (each is ready: no PE reads it
 * before its call), at sizes from one int to 256 KiB a PE; then with
 * source = dest (overlapping: read through the eager copies, not pushed,
 * up to the eager limit; not under --multiple, whose barrier forms read
 * the sources in place), three rounds, each rewriting dest at once after
 * its check. */
static void fcollect_pushed(int me, int npes, int multiple) {
  enum { MAX = 1 << 16 }; /* ints a PE */
  static const size_t ns[] = {1, 2, 1000, 1024, 1025, 20000, MAX};
  shc_begin("fcollect_pushed_back_to_back_and_overlapping");
  int *src = shmem_malloc(sizeof(int) * MAX * 3);
  int *d[3];
  for (int k = 0; k < 3; k++)
    d[k] = shmem_malloc(sizeof(int) * MAX * (size_t)npes);
  for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
    size_t n = ns[c];
    for (int k = 0; k < 3; k++) {
      for (size_t i = 0; i < n; i++)
        src[(size_t)k * MAX + i] = me * 1000000 + k * 100000 + (int)i;
      memset(d[k], 0xff,
             sizeof(int) * n * (size_t)npes); /* not the last size's */
    }
    shmem_barrier_all();
    for (int k = 0; k < 3; k++)
      shmem_int_fcollect(SHMEM_TEAM_WORLD, d[k], src + (size_t)k * MAX, n);
    for (int k = 0; k < 3; k++)
      for (int p = 0; p < npes; p++) {
        size_t i = 0;
        while (i < n &&
               d[k][(size_t)p * n + i] == p * 1000000 + k * 100000 + (int)i)
          i++;
        SHC_CHECK(i == n, "%zu ints, call %d, PE %d's [%zu] = %d", n, k, p, i,
                  d[k][(size_t)p * n + i]);
      }
    shmem_barrier_all();
  }
  for (size_t c = 0; !multiple && ns[c] * sizeof(int) <= 4096; c++)
    for (int round = 0; round < 3; round++) {
      size_t n = ns[c];
      for (size_t i = 0; i < n; i++)
        d[0][i] = me * 1000 + round * 7 + (int)i;
      shmem_barrier_all();
      shmem_int_fcollect(SHMEM_TEAM_WORLD, d[0], d[0], n);
      for (int p = 0; p < npes; p++) {
        size_t i = 0;
        while (i < n &&
               d[0][(size_t)p * n + i] == p * 1000 + round * 7 + (int)i)
          i++;
        SHC_CHECK(i == n, "source = dest, %zu ints, PE %d's [%zu] = %d", n, p,
                  i, d[0][(size_t)p * n + i]);
      }
      shmem_barrier_all();
      memset(d[0], 0xff, sizeof(int) * n * (size_t)npes);
    }
  shmem_barrier_all();
  for (int k = 0; k < 3; k++)
    shmem_free(d[k]);
  shmem_free(src);
  shc_end();
}

/* Flags are counts shared by every kind of collective on a group's sync
 * words (coll.c): 40 rounds with no sync, each of a pushed broadcast from
 * a rotating root, a pushed fcollect, an eager reduction and a pulled
 * broadcast (above the push limit), each into a dest of its own, on the
 * world team, on a team of the even PEs and through the active-set form
 * with two pSyncs in turn. */
static void kinds_unsynced(int me, int npes) {
  enum { R = 40, N = 4, BIG = 300000 }; /* BIG bytes: pulled at 2 PEs too */
  static long ps[2][SHMEM_BCAST_SYNC_SIZE];
  shc_begin("kinds_mixed_back_to_back");
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
      ps[p][i] = SHMEM_SYNC_VALUE;
  shmem_team_t evens = SHMEM_TEAM_INVALID;
  shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0,
                           &evens);
  long *src = shmem_malloc(sizeof(long) * N);
  long *b = shmem_calloc((size_t)R * 3 * N, sizeof(long));
  long *f = shmem_calloc((size_t)R * N * (size_t)npes, sizeof(long));
  long *s = shmem_calloc((size_t)R * 2 * N, sizeof(long));
  char *big = shmem_malloc(BIG), *bd = shmem_calloc((size_t)R, BIG);
  for (int i = 0; i < N; i++)
    src[i] = 10L * me + i;
  memset(big, 'A' + me, BIG);
  shmem_barrier_all();
  long sum = 10L * npes * (npes - 1) / 2, esum = 0;
  int tn = (npes + 1) / 2;
  for (int p = 0; p < npes; p += 2)
    esum += 10L * p;
  /* Each result checked as soon as its call returns: a PE that took a
   * raise meant for a later call must find this call's data already. */
  for (int r = 0; r < R; r++) {
    int root = r % npes;
    long *d = b + (r * 3) * N;
    shmem_long_broadcast(SHMEM_TEAM_WORLD, d, src, N, root);
    for (int i = 0; i < N; i++)
      SHC_CHECK(d[i] == 10L * root + i, "round %d: broadcast [%d]", r, i);
    d = f + (size_t)r * N * npes;
    shmem_long_fcollect(SHMEM_TEAM_WORLD, d, src, N);
    for (int i = 0; i < N * npes; i++)
      SHC_CHECK(d[i] == 10L * (i / N) + i % N, "round %d: fcollect [%d]", r, i);
    d = s + (r * 2) * N;
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, d, src, N);
    for (int i = 0; i < N; i++)
      SHC_CHECK(d[i] == sum + (long)npes * i, "round %d: sum [%d]", r, i);
    char *l = bd + (size_t)r * BIG;
    shmem_broadcastmem(SHMEM_TEAM_WORLD, l, big, BIG, root);
    SHC_CHECK(l[0] == 'A' + root && l[BIG - 1] == 'A' + root,
              "round %d: large broadcast %d..%d", r, l[0], l[BIG - 1]);
    if (evens != SHMEM_TEAM_INVALID) {
      d = b + (r * 3 + 1) * N;
      shmem_long_broadcast(evens, d, src, N, r % tn);
      for (int i = 0; i < N; i++)
        SHC_CHECK(d[i] == 10L * 2 * (r % tn) + i, "round %d: team broadcast",
                  r);
      d = s + (r * 2 + 1) * N;
      shmem_long_sum_reduce(evens, d, src, N);
      for (int i = 0; i < N; i++)
        SHC_CHECK(d[i] == esum + (long)tn * i, "round %d: team sum", r);
    }
    d = b + (r * 3 + 2) * N;
    shmem_broadcast64(d, src, N, root, 0, 0, npes, ps[r % 2]);
    for (int i = 0; i < N; i++)
      SHC_CHECK(me == root || d[i] == 10L * root + i,
                "round %d: broadcast64 [%d]", r, i);
  }
  shmem_barrier_all();
  if (evens != SHMEM_TEAM_INVALID)
    shmem_team_destroy(evens);
  shmem_free(bd);
  shmem_free(big);
  shmem_free(s);
  shmem_free(f);
  shmem_free(b);
  shmem_free(src);
  shc_end();
}

/* --unsynced (run with SYMHEAP_SHMEM_PUSH=0): a program that reuses dest
 * with no sync between its collectives (outside the specification, which
 * has dest ready on every PE before any PE calls) still gets every result,
 * since each PE then copies into its own dest inside its own call.  300
 * rounds of: dest set to -1 just before a broadcast from a rotating root,
 * checked; an fcollect into one dest, checked while the others go on into
 * the next round.  With pushing on (the default) this fails: the root's
 * data lands before the -1, the next fcollect's before the check. */
static void unsynced_reuse(int me, int npes) {
  enum { N = 8, ROUNDS = 300 };
  shc_begin("dest_reused_unsynced_without_push");
  long *src = shmem_malloc(sizeof(long) * N);
  long *b = shmem_malloc(sizeof(long) * N);
  long *f = shmem_malloc(sizeof(long) * N * (size_t)npes);
  shmem_barrier_all();
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < N; i++) {
      src[i] = 1000L * r + 10L * me + i;
      b[i] = -1;
    }
    shmem_long_broadcast(SHMEM_TEAM_WORLD, b, src, N, r % npes);
    for (int i = 0; i < N; i++)
      SHC_CHECK(b[i] == 1000L * r + 10L * (r % npes) + i,
                "round %d: broadcast [%d] = %ld", r, i, b[i]);
    shmem_long_fcollect(SHMEM_TEAM_WORLD, f, src, N);
    for (int i = 0; i < N * npes; i++)
      SHC_CHECK(f[i] == 1000L * r + 10L * (i / N) + i % N,
                "round %d: fcollect [%d] = %ld", r, i, f[i]);
  }
  shmem_barrier_all();
  shmem_free(f);
  shmem_free(b);
  shmem_free(src);
  shc_end();
}

/* --multiple: under SHMEM_THREAD_MULTIPLE, where the barrier forms run. */
int main(int argc, char **argv) {
  int multiple = argc > 1 && strcmp(argv[1], "--multiple") == 0, got;
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
      psync[p][i] = SHMEM_SYNC_VALUE;
  if (multiple) {
    if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, &got) != 0 ||
        got != SHMEM_THREAD_MULTIPLE)
      return printf("FAIL bcast_thread_multiple: not provided\n"), 1;
  } else {
    shmem_init();
  }
  int me = shmem_my_pe(), npes = shmem_n_pes();
  if (argc > 1 && strcmp(argv[1], "--unsynced") == 0) {
    unsynced_reuse(me, npes);
    shmem_finalize();
    return shc_status();
  }
  if (npes >= 2 && !multiple)
    root_does_not_wait(me, npes);
  back_to_back(me, npes);
  sizes(me, npes);
  collect_mixed(me, npes);
  fcollect_pushed(me, npes, multiple);
  kinds_unsynced(me, npes);
  reduce_split(me, npes);
  shmem_finalize();
  return shc_status();
}

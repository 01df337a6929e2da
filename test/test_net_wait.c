/* symheap_signal_wait_until as a waiting call (issue 27: progress inside
 * every waiting call, no wait unbounded, a waiting rank serves its peers),
 * and the same cases again for a loop of symheap_comm_wait_turn on a 4-byte
 * word (the waits of a binding on conditions of its own: OpenSHMEM's
 * wait_until), plus its argument checks:
 * ranks split into two pretend hosts (SYMHEAP_HOST_ID) through the net
 * adaptor SYMHEAP_NET names (default: the test adaptor "loop_wait", whose
 * wait fds the waits sleep on; the same program runs over ofi), or on one
 * host with no adaptor at all.
 *   symheap-run -n 4 test_net_wait              ranks 0..n/2-1 on host A
 *   symheap-run -n 2 test_net_wait --one-host   every rank on one host */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "harness.h"
#include "net_loop.h"

static char tag[64]; /* the suite's tag, for SKIP and # lines */
static int g_per_host; /* host of rank r: r / g_per_host */
static int g_loop;     /* the adaptor is ours: it counts progress calls */
static int g_fds;      /* the adaptor has wait fds (the waits sleep on them) */
static symheap_window_t g_win;

#define WIN_BYTES (64u << 10)
#define SIG_BUSY 0 /* the words the cases wait on */
#define SIG_IDLE 8
#define SIG_STORE 16
#define SIG_WAKE 24 /* the woken_sleeps_again case's puts */
#define SIG_LATE 32 /* the put_seen_at_once case's clock */
#define DATA_AT 4096
/* The wait_turn_ cases use words of their own, this far past the others. */
#define TURN_BASE 64

static int g_turns;    /* 1: the cases wait by symheap_comm_wait_turn loops */
static size_t g_base;  /* 0, or TURN_BASE in the wait_turn_ cases */

static int cmp_ok(uint32_t v, symheap_cmp_t cmp, uint32_t value) {
  return cmp == SYMHEAP_CMP_EQ ? v == value : v >= value; /* EQ and GE */
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t thread_cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Times this thread went to sleep (voluntary context switches). */
static long thread_sleeps(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nvcsw;
}

/* The first rank of the other host (rank 0's is host A). */
static int other_host_rank(th_ctx_t *c) {
  int t = g_per_host;
  return t < c->n ? t : -1;
}

/* A case that does not apply here: rank 0 says why on a SKIP line named
 * for the wait under test (signal_wait_ or wait_turn_), and it returns 1;
 * 0 where why is NULL (the case runs). */
static int skipped(th_ctx_t *c, const char *name, const char *why) {
  if (why && c->rank == 0)
    printf("SKIP %s/%s_%s: %s\n", tag, g_turns ? "wait_turn" : "signal_wait",
           name, why);
  return why != NULL;
}

/* Why a case that needs rank t of the other host and wait fds does not
 * apply (NULL: it does). */
static const char *peer_with_fds(int t) {
  return t < 0    ? "one host: no net adaptor"
         : !g_fds ? "the adaptor has no wait fds"
                  : NULL;
}

/* Waits until this rank's word at off compares cmp (EQ or GE) with value:
 * symheap_signal_wait_until, or (g_turns) a loop of symheap_comm_wait_turn
 * on the word's low 4 bytes, as a binding's own wait would loop; either
 * gives up with TIMEOUT after ms. */
static symheap_result_t await(th_ctx_t *c, size_t off, symheap_cmp_t cmp,
                              uint64_t value, uint64_t *seen, int ms) {
  if (!g_turns)
    return symheap_signal_wait_until(g_win, off, cmp, value, seen, ms);
  void *mine = NULL;
  symheap_result_t r = symheap_window_local_ptr(g_win, &mine);
  if (r != SYMHEAP_SUCCESS)
    return r;
  const uint32_t *w = (const uint32_t *)(void *)((char *)mine + off);
  symheap_wait_state_t st = {0};
  int64_t t0 = now_ms();
  uint32_t v;
  while (!cmp_ok(v = __atomic_load_n(w, __ATOMIC_ACQUIRE), cmp,
                 (uint32_t)value)) {
    if (now_ms() - t0 >= ms)
      break;
    r = symheap_comm_wait_turn(c->comm, &st);
    if (r != SYMHEAP_SUCCESS)
      return r;
  }
  if (seen)
    *seen = v;
  return cmp_ok(v, cmp, (uint32_t)value) ? SYMHEAP_SUCCESS
                                          : SYMHEAP_ERR_TIMEOUT;
}

static void settle(void) {
  /* A wait spins 5 ms after its engine's last work: over before a count
   * starts. */
  struct timespec ts = {0, 10 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* A rank waiting for a signal answers a burst of a peer's operations at
 * spin speed, by its own progress: while rank 0 gets from rank t of the
 * other host for 200 ms, t sits in symheap_signal_wait_until (the signal
 * comes after the gets), and t's own thread calls progress more than 200
 * times per 10 ms of it (under a sanitizer 30).  Before, the wait yielded
 * and napped 20 us between turns, counted as calls, so its progress thread
 * stood aside and each get waited for the waiter's next turn: on this
 * loaded machine (load 14-19) 9-110 calls per 10 ms and 156-691 gets in
 * 200 ms, against 241-2040 calls and 1134-3361 gets after.
 * On an engine without wait fds (SYMHEAP_NET=loop) the wait cannot tell a
 * burst from idleness: after its first 1 ms it naps 20-100 us between
 * turns (no_fds_naps), so t still takes a turn more than 10 times per
 * 10 ms (here 60-70, and rank 0 got 800-900 times in 200 ms; spinning
 * for the whole wait, before: 4900-5900 and 1400-1700). */
static void case_serves_peers(th_ctx_t *c) {
  int t = other_host_rank(c);
  if (skipped(c, "serves_peers",
              t < 0     ? "one host: no net adaptor"
              : !g_loop ? "SYMHEAP_NET is not the test adaptor (it counts "
                          "progress calls)"
                        : NULL))
    return;
  uint64_t v = 0, one = 1;
  CHECK_OK(symheap_comm_barrier(c->comm));
  long before = net_loop_progress_calls(), gets = 0;
  long all_before = net_loop_progress_calls_all();
  int64_t t0 = now_ms();
  if (c->rank == 0) {
    while (now_ms() - t0 < 200 && gets < 1000000) {
      CHECK_OK(symheap_get(g_win, t, 0, &v, 8));
      gets++;
    }
    CHECK_OK(symheap_atomic(g_win, t, g_base + SIG_BUSY, SYMHEAP_AMO_SET, 8,
                            &one, NULL, NULL));
    CHECK_OK(symheap_quiet(c->comm));
  }
  if (c->rank == t) {
    uint64_t seen = 0;
    CHECK_OK(await(c, g_base + SIG_BUSY, SYMHEAP_CMP_EQ, 1, &seen, 60000));
    CHECK(seen == 1, "observed %llu", (unsigned long long)seen);
  }
  long own = net_loop_progress_calls() - before;
  long others = net_loop_progress_calls_all() - all_before - own;
  long mine = (long)((double)own * 10.0 / ((double)(now_ms() - t0) + 1.0));
  int tool = getenv("SYMHEAP_TEST_UNDER_TOOL") != NULL;
  long least = !g_fds ? (tool ? 3 : 10) : tool ? 30 : 200;
  if (c->rank == t) {
    printf("# %s: rank %d in signal_wait_until: %ld progress calls per 10 "
           "ms\n",
           tag, t, mine);
    CHECK(mine > least,
          "rank %d, in symheap_signal_wait_until while rank 0 got from it "
          "for 200 ms, called progress itself %ld times per 10 ms (bound "
          "%ld): %s",
          t, mine, least,
          g_fds ? "it napped instead of spinning while its engine was busy"
                : "its naps between turns were too long");
  }
  /* Its progress thread, asleep on the same fds, keeps off the engine
   * while the wait runs: 6-64 calls against the wait's 26000-45000 here.
   * Before, it woke for most gets the wait was about to answer and
   * progressed the engine beside it: 678-970 against 18000-32000 (2.4-4.6%).
   * The bound is 1%.  A wait the scheduler keeps off the CPU is not seen
   * running, and its engine is then rightly the thread's: with two busy
   * loops beside the test, the wait made 180-400 calls per 10 ms and the
   * thread 10-18% of them.  So the bound holds only where the wait ran at
   * 600 calls per 10 ms or more (900-2200 here, before and after). */
  const char *prog = getenv("SYMHEAP_NET_PROGRESS");
  int ran = mine >= 600 && !tool;
  if (c->rank == t && g_fds && !(prog && strcmp(prog, "none") == 0)) {
    printf("# %s: rank %d's other threads: %ld progress calls while it "
           "made %ld%s\n",
           tag, t, others, own,
           ran ? "" : " (not checked: the wait did not run at full speed)");
    CHECK(!ran || others * 100 < own,
          "rank %d's progress thread called progress %ld times while the "
          "rank, spinning in its wait, called it %ld times (bound 1%%): it "
          "took the engine from a running wait",
          t, others, own);
  }
  if (c->rank == 0)
    printf("# %s: rank 0: %ld gets in 200 ms\n", tag, gets);
}

/* A wait of ms on a word nobody writes (SIG_IDLE): it must end in a clear
 * TIMEOUT, having seen the word still 0, after ms to ms + 1 s.  Gives the
 * waiting thread's CPU time (us), the wait's length (ms) and its sleeps. */
static void idle_wait(th_ctx_t *c, int ms, int64_t *cpu, int64_t *took,
                      long *sleeps) {
  char still[32];
  snprintf(still, sizeof still, "still 0 after %d ms", ms);
  long sleeps0 = thread_sleeps();
  int64_t cpu0 = thread_cpu_us(), t0 = now_ms();
  uint64_t seen = 1;
  symheap_result_t r =
      await(c, g_base + SIG_IDLE, SYMHEAP_CMP_EQ, 7, &seen, ms);
  *cpu = thread_cpu_us() - cpu0;
  *took = now_ms() - t0;
  *sleeps = thread_sleeps() - sleeps0;
  CHECK(r == SYMHEAP_ERR_TIMEOUT &&
            (g_turns || strstr(symheap_last_error(), still)) && seen == 0,
        "an unsatisfied %d ms wait -> %s: %s (observed %llu)", ms,
        symheap_strerror(r), symheap_last_error(), (unsigned long long)seen);
  CHECK(*took >= ms && *took < ms + 1000, "a %d ms wait took %lld ms", ms,
        (long long)*took);
}

/* A wait that nothing satisfies uses little CPU: 200 ms on a word nobody
 * writes ends in a clear TIMEOUT after 200 ms, and the waiting thread ran
 * less than 10% of it and went to sleep fewer than 400 times (asleep on
 * its engine's wait fds, or in growing naps: 2.3-2.7 ms and about 65 here).
 * Before, after its yields it woke every 20 us and progressed the engine
 * each time: 24-38 ms of CPU and 830-1022 sleeps here (on a machine so
 * loaded that its yields gave the CPU away for milliseconds each, it
 * stayed in its yields and passed: 0.9 ms, no sleep). */
static void case_idle_sleeps(th_ctx_t *c) {
  if (skipped(c, "idle_sleeps",
              g_per_host < c->n && !g_fds
                  ? "the adaptor has no wait fds (no_fds_naps covers its "
                    "waits)"
                  : NULL))
    return;
  CHECK_OK(symheap_comm_barrier(c->comm));
  settle();
  long progress0 = g_loop ? net_loop_progress_calls() : 0;
  int64_t cpu, took;
  long sleeps;
  idle_wait(c, 200, &cpu, &took, &sleeps);
  long calls = g_loop ? net_loop_progress_calls() - progress0 : 0;
  int tool = getenv("SYMHEAP_TEST_UNDER_TOOL") != NULL;
  CHECK(tool || cpu * 10 < took * 1000,
        "the waiting thread ran %lld us of a %lld ms idle wait (bound 10%%)",
        (long long)cpu, (long long)took);
  CHECK(sleeps < 400,
        "the waiting thread went to sleep %ld times in a %lld ms idle wait "
        "(bound 400): it naps instead of sleeping on its engine",
        sleeps, (long long)took);
  if (c->rank == 0)
    printf("# %s: idle 200 ms wait: %lld us CPU, %ld sleeps, %ld progress "
           "calls\n",
           tag, (long long)cpu, sleeps, calls);
  CHECK_OK(symheap_comm_barrier(c->comm));
}

/* On an engine with manual progress and no wait fds (SYMHEAP_NET=loop;
 * ucx or an ofi provider without them), an idle wait cannot sleep on the
 * engine, yet it need not spin for its whole length either: every rank
 * waits 300 ms on a word nobody writes, gets a clear TIMEOUT after 300 ms,
 * and its thread ran less than 30% of the wait (after a spin of 1 ms it
 * naps 20-100 us between progress turns: 39-62 ms of CPU here, loaded).
 * Before, the hook's "cannot sleep" read as "busy" and the wait spun to its
 * end: 146-299 ms of CPU (less only where its yields gave the CPU away). */
static void case_no_fds_naps(th_ctx_t *c) {
  if (skipped(c, "no_fds_naps",
              g_per_host >= c->n ? "one host: no net adaptor"
              : g_fds ? "the adaptor has wait fds (idle_sleeps covers its "
                        "waits)"
                      : NULL))
    return;
  CHECK_OK(symheap_comm_barrier(c->comm));
  settle();
  int64_t cpu, took;
  long sleeps;
  idle_wait(c, 300, &cpu, &took, &sleeps);
  int tool = getenv("SYMHEAP_TEST_UNDER_TOOL") != NULL;
  CHECK(tool || cpu * 10 < took * 3000,
        "the waiting thread ran %lld us of a %lld ms idle wait on an engine "
        "without wait fds (bound 30%%): it spun instead of napping",
        (long long)cpu, (long long)took);
  printf("# %s: rank %d: idle 300 ms wait without wait fds: %lld us CPU, "
         "%ld sleeps\n",
         tag, c->rank, (long long)cpu, sleeps);
  CHECK_OK(symheap_comm_barrier(c->comm));
}

/* The same for the waits of a collective (symheap_comm_barrier: the
 * socket waits of the boot floor, boot/sock.c, and its pauses): rank 0
 * sleeps 300 ms outside symheap before it joins a barrier the others
 * wait in, and their threads ran less than 30% of the wait (41-46 ms of
 * CPU here).  Before, the socket waits spun for the whole wait: 294 ms of
 * CPU in a 301 ms barrier. */
static void case_no_fds_barrier_naps(th_ctx_t *c) {
  if (g_per_host >= c->n || g_fds) {
    if (c->rank == 0)
      printf("SKIP %s/no_fds_barrier_naps: %s\n", tag,
             g_per_host >= c->n ? "one host: no net adaptor"
                                : "the adaptor has wait fds");
    return;
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  settle();
  int64_t cpu0 = thread_cpu_us(), t0 = now_ms();
  if (c->rank == 0) {
    struct timespec late = {0, 300 * 1000 * 1000};
    nanosleep(&late, NULL);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  int64_t cpu = thread_cpu_us() - cpu0, took = now_ms() - t0;
  if (c->rank == 0)
    return;
  int tool = getenv("SYMHEAP_TEST_UNDER_TOOL") != NULL;
  CHECK(took >= 290, "a barrier rank 0 joined after 300 ms ended after %lld ms",
        (long long)took);
  CHECK(tool || cpu * 10 < took * 3000,
        "the thread ran %lld us of a %lld ms barrier on an engine without "
        "wait fds (bound 30%%): it spun instead of napping",
        (long long)cpu, (long long)took);
  printf("# %s: rank %d: a 300 ms barrier without wait fds: %lld us CPU\n", tag,
         c->rank, (long long)cpu);
}

/* A wait its engine's fds woke (a peer's operation on this rank) spins a
 * while, serving the burst that may follow, then sleeps again: rank 0
 * waits 300 ms on a word nobody writes while rank t of the other host puts
 * into another of rank 0's words five times, 10 ms apart, from 50 ms on;
 * the waiting thread ran less than 20% of the wait.  Before, a wakeup's
 * news stayed with the wait (no turn that did not sleep cleared it), so
 * its spell of spinning began anew each turn and it spun from the first
 * put to its end: 250 ms of CPU here, and in a 4-PE OpenSHMEM job across
 * two namespaces 100-190 ms of a 200 ms wait_until in 3 of 8 loaded runs
 * (a barrier's arrival from the other host had woken it). */
static void case_woken_sleeps_again(th_ctx_t *c) {
  int t = other_host_rank(c);
  if (skipped(c, "woken_sleeps_again", peer_with_fds(t)))
    return;
  CHECK_OK(symheap_comm_barrier(c->comm));
  settle();
  if (c->rank == t) {
    struct timespec gap = {0, 50 * 1000 * 1000};
    for (uint64_t i = 1; i <= 5; i++) {
      nanosleep(&gap, NULL);
      gap.tv_nsec = 10 * 1000 * 1000;
      CHECK_OK(symheap_put(g_win, 0, g_base + SIG_WAKE, &i, 8));
      CHECK_OK(symheap_quiet(c->comm));
    }
  }
  if (c->rank == 0) {
    int64_t cpu0 = thread_cpu_us(), t0 = now_ms();
    symheap_result_t r =
        await(c, g_base + SIG_IDLE, SYMHEAP_CMP_EQ, 7, NULL, 300);
    int64_t cpu = thread_cpu_us() - cpu0, took = now_ms() - t0;
    void *mine = NULL;
    CHECK_OK(symheap_window_local_ptr(g_win, &mine));
    uint64_t puts = mine ? *(volatile uint64_t *)(void *)((char *)mine +
                                                          g_base + SIG_WAKE)
                         : 0;
    CHECK(r == SYMHEAP_ERR_TIMEOUT && puts == 5,
          "a 300 ms wait -> %s, %llu of 5 puts landed meanwhile",
          symheap_strerror(r), (unsigned long long)puts);
    int tool = getenv("SYMHEAP_TEST_UNDER_TOOL") != NULL;
    CHECK(tool || cpu * 5 < took * 1000,
          "the waiting thread ran %lld us of a %lld ms wait woken by 5 puts "
          "(bound 20%%): it spun on after its engine's work was done",
          (long long)cpu, (long long)took);
    printf("# %s: 300 ms wait woken by 5 puts: %lld us CPU\n", tag,
           (long long)cpu);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* A put from the other host ends a long wait as it lands, not at the end
 * of the wait's current sleep: rank t puts its clock into a word of rank
 * 0's 150 ms into rank 0's wait, seven times; every wait ended less than
 * 5 ms after its put (a sleep then lasts a sixteenth of 150 ms, 9.4 ms;
 * here 0.1-0.4 ms).  Before, the progress thread, asleep on the same
 * descriptor, often read the peer's message and applied the put first;
 * the wait's poll then saw nothing to read and slept on (here the latest
 * of five was 7-9 ms late in 3 of 6 runs, 3.2 ms in a fourth; OpenSHMEM's
 * 4 PEs across two namespaces: woken 5-11 ms after the put in 6 of 27
 * runs). */
static void case_put_seen_at_once(th_ctx_t *c) {
  int t = other_host_rank(c);
  if (skipped(c, "put_seen_at_once", peer_with_fds(t)))
    return;
  enum { ROUNDS = 7 };
  int64_t late[ROUNDS];
  for (int i = 0; i < ROUNDS; i++) {
    void *mine = NULL;
    CHECK_OK(symheap_window_local_ptr(g_win, &mine));
    volatile uint64_t *w =
        (volatile uint64_t *)(void *)((char *)mine + g_base + SIG_LATE);
    *w = 0;
    CHECK_OK(symheap_comm_barrier(c->comm));
    if (c->rank == t) {
      struct timespec gap = {0, 150 * 1000 * 1000};
      nanosleep(&gap, NULL);
      uint64_t clock = (uint64_t)now_ns() | 1; /* low word nonzero */
      CHECK_OK(symheap_put(g_win, 0, g_base + SIG_LATE, &clock, 8));
      CHECK_OK(symheap_quiet(c->comm));
    }
    if (c->rank == 0) {
      CHECK_OK(await(c, g_base + SIG_LATE, SYMHEAP_CMP_GE, 1, NULL, 5000));
      late[i] = (now_ns() - (int64_t)*w) / 1000;
    }
  }
  if (c->rank == 0) {
    qsort(late, ROUNDS, sizeof *late, cmp_i64);
    int tool = getenv("SYMHEAP_TEST_UNDER_TOOL") != NULL;
    /* Over tcp;ofi_rxm some puts wake no sleep at all, the thread's
     * included (0.7-5.4 ms late with or without the kick: the nap's end,
     * docs/network.md): the bound holds for the test adaptor only. */
    CHECK(tool || !g_loop || late[ROUNDS - 1] < 5000,
          "a put into a waited word after 150 ms seen %lld us after it "
          "landed (the latest of %d; bound 5000 us): the wait slept on",
          (long long)late[ROUNDS - 1], ROUNDS);
    printf("# %s: a put after 150 ms seen %lld-%lld us late (median %lld)%s\n",
           tag, (long long)late[0], (long long)late[ROUNDS - 1],
           (long long)late[ROUNDS / 2], g_loop ? "" : " (no bound)");
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
}

/* The signal's semantics stay: the data of a put_signal from the other
 * host (or a same-host peer) is there when the wait returns, and a word
 * written by a plain put (nothing wakes a sleep for it) is still seen,
 * within the naps' bound, after the waiter has slept for 100 ms. */
static void case_semantics(th_ctx_t *c) {
  int t = other_host_rank(c), from = 0;
  if (t < 0)
    t = c->n - 1;
  enum { LEN = 2048 };
  unsigned char buf[LEN];
  for (int i = 0; i < LEN; i++)
    buf[i] = (unsigned char)(i * 7 + 3);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == from)
    CHECK_OK(symheap_put_signal(g_win, t, DATA_AT, buf, LEN, g_win,
                                g_base + SIG_BUSY, 5, SYMHEAP_AMO_SET));
  if (c->rank == t) {
    CHECK_OK(await(c, g_base + SIG_BUSY, SYMHEAP_CMP_GE, 5, NULL, 60000));
    void *p = NULL;
    CHECK_OK(symheap_window_local_ptr(g_win, &p));
    CHECK(p && memcmp((char *)p + DATA_AT, buf, LEN) == 0,
          "the data of a put_signal is not there when its signal is");
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  /* A plain put from a peer of the waiter's host (itself if alone). */
  int near = g_per_host == 1 ? t : t % g_per_host ? t - 1 : t + 1;
  int64_t t0 = now_ms();
  if (c->rank == near) {
    struct timespec late = {0, 100 * 1000 * 1000};
    if (near != t)
      nanosleep(&late, NULL);
    uint64_t nine = 9;
    CHECK_OK(symheap_put(g_win, t, g_base + SIG_STORE, &nine, 8));
    CHECK_OK(symheap_quiet(c->comm));
  }
  if (c->rank == t) {
    CHECK_OK(await(c, g_base + SIG_STORE, SYMHEAP_CMP_EQ, 9, NULL, 5000));
    int64_t took = now_ms() - t0;
    CHECK(took < 1000, "a plain store after 100 ms seen after %lld ms",
          (long long)took);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
}

static void case_window(th_ctx_t *c) {
  CHECK_OK(symheap_malloc(c->comm, WIN_BYTES, 0, &g_win));
  void *mine = NULL;
  if (g_win && symheap_window_local_ptr(g_win, &mine) == SYMHEAP_SUCCESS)
    memset(mine, 0, WIN_BYTES); /* the words start at 0 */
}

/* Without a window, the cases say so and check nothing else. */
static void when_window(th_ctx_t *c, void (*fn)(th_ctx_t *c)) {
  CHECK(g_win != NULL, "no window");
  if (g_win)
    fn(c);
}
static void c_serves(th_ctx_t *c) { when_window(c, case_serves_peers); }
static void c_idle(th_ctx_t *c) { when_window(c, case_idle_sleeps); }
static void c_no_fds(th_ctx_t *c) { when_window(c, case_no_fds_naps); }
static void c_semantics(th_ctx_t *c) { when_window(c, case_semantics); }
static void c_woken(th_ctx_t *c) { when_window(c, case_woken_sleeps_again); }
static void c_at_once(th_ctx_t *c) { when_window(c, case_put_seen_at_once); }
/* The same cases as loops of symheap_comm_wait_turn. */
static void turns(th_ctx_t *c, void (*fn)(th_ctx_t *c)) {
  g_turns = 1;
  g_base = TURN_BASE;
  when_window(c, fn);
  g_turns = 0;
  g_base = 0;
}
static void t_serves(th_ctx_t *c) { turns(c, case_serves_peers); }
static void t_idle(th_ctx_t *c) { turns(c, case_idle_sleeps); }
static void t_no_fds(th_ctx_t *c) { turns(c, case_no_fds_naps); }
static void t_semantics(th_ctx_t *c) { turns(c, case_semantics); }
static void t_woken(th_ctx_t *c) { turns(c, case_woken_sleeps_again); }
static void t_at_once(th_ctx_t *c) { turns(c, case_put_seen_at_once); }

/* A comm that is not live, or no state: INVALID_ARG saying why, and the
 * state as it was. */
static void case_turn_bad_args(th_ctx_t *c) {
  symheap_wait_state_t st = {.since_ns = 5, .turns = 6, .woke = 1};
  CHECK(symheap_comm_wait_turn(NULL, &st) == SYMHEAP_ERR_INVALID_ARG &&
            strstr(symheap_last_error(), "symheap_comm_wait_turn"),
        "a NULL comm: %s", symheap_last_error());
  CHECK(st.since_ns == 5 && st.turns == 6 && st.woke == 1,
        "a refused turn changed the state");
  CHECK(symheap_comm_wait_turn(c->comm, NULL) == SYMHEAP_ERR_INVALID_ARG &&
            strstr(symheap_last_error(), "state is NULL"),
        "a NULL state: %s", symheap_last_error());
  CHECK_OK(symheap_comm_wait_turn(c->comm, &st));
  CHECK(st.since_ns == 5 && st.turns == 7,
        "a turn: since %llu (was 5), turns %u (was 6)",
        (unsigned long long)st.since_ns, (unsigned)st.turns);
  symheap_wait_state_t fresh = {0};
  CHECK_OK(symheap_comm_wait_turn(c->comm, &fresh));
  CHECK(fresh.since_ns != 0 && fresh.turns == 1,
        "a new wait's first turn: since %llu, turns %u",
        (unsigned long long)fresh.since_ns, (unsigned)fresh.turns);
}

static void c_free(th_ctx_t *c) {
  if (g_win)
    CHECK_OK(symheap_free(c->comm, g_win));
}

static const th_case_t cases[] = {
    {"window", case_window},
    {"signal_wait_serves_peers", c_serves},
    {"signal_wait_idle_sleeps", c_idle},
    {"signal_wait_no_fds_naps", c_no_fds},
    {"signal_wait_semantics", c_semantics},
    {"signal_wait_woken_sleeps_again", c_woken},
    {"signal_wait_put_seen_at_once", c_at_once},
    {"wait_turn_serves_peers", t_serves},
    {"wait_turn_idle_sleeps", t_idle},
    {"wait_turn_no_fds_naps", t_no_fds},
    {"wait_turn_semantics", t_semantics},
    {"wait_turn_woken_sleeps_again", t_woken},
    {"wait_turn_put_seen_at_once", t_at_once},
    {"wait_turn_bad_args", case_turn_bad_args},
    {"no_fds_barrier_naps", case_no_fds_barrier_naps},
    {"free", c_free},
};

int main(int argc, char **argv) {
  setenv("SYMHEAP_NET", "loop_wait", 0);
  if (symheap_register_net_adaptor(&net_loop_ops) != SYMHEAP_SUCCESS ||
      symheap_register_net_adaptor(&net_loop_wait_ops) != SYMHEAP_SUCCESS) {
    printf("FAIL net_wait/register: %s\n", symheap_last_error());
    return 1;
  }
  const char *net = getenv("SYMHEAP_NET");
  g_loop = strncmp(net, "loop", 4) == 0;
  /* tcp;ofi_rxm and loop_wait hand out wait fds; loop does not. */
  g_fds = !g_loop || strcmp(net, "loop_wait") == 0;
  int rank, n;
  if (th_launcher_ranks("net_wait/env", &rank, &n) != 0)
    return 1;
  int one_host = argc == 2 && strcmp(argv[1], "--one-host") == 0;
  g_per_host = one_host ? n : n / 2 ? n / 2 : 1;
  char host[32];
  snprintf(host, sizeof host, "host-%d", rank / g_per_host);
  if (!getenv("SYMHEAP_TEST_NET_REAL_HOSTS"))
    setenv("SYMHEAP_HOST_ID", host, 1);
  th_suite_t suite = {one_host ? "net_wait_one_host_" : "net_wait_", NULL,
                      cases, sizeof cases / sizeof *cases};
  snprintf(tag, sizeof tag, "%sprocs%d", suite.prefix, n); /* its lines' */
  return th_main_suite(1, argv, &suite);
}

/* PEs on several hosts (docs/openshmem.md): shmem_ptr gives an address for
 * a PE of this host and NULL for one on another host (as the specification
 * allows), shmem_addr_accessible is true for both, SHMEM_TEAM_SHARED is this
 * host's PEs, and RMA, atomics and signals reach every PE, into the heap and
 * into global variables (the data segment) alike.
 *
 * Under test/shmem/pretend_host.sh PE p is on host p / SYMHEAP_TEST_PER_HOST
 * (shc_per_host); without it, on one host, every PE is local. */
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "shmem_check.h"

static int me, npes;
static long global_word;      /* in the data segment: symmetric */
static int global_arr[64];    /* a put of many bytes into the data segment */
static uint64_t global_sig;   /* a signal word among the globals */
static long global_counter;   /* atomics from every PE into PE 0's copy */

static void test_ptr(void) {
  long *heap = shmem_malloc(sizeof(long));
  shc_begin("hosts_shmem_ptr");
  for (int p = 0; p < npes; p++) {
    void *h = shmem_ptr(heap, p), *g = shmem_ptr(&global_word, p);
    if (shc_same_host(me, p)) {
      SHC_CHECK(h && g, "PE %d on this host: shmem_ptr %p %p", p, h, g);
    } else {
      SHC_CHECK(!h && !g, "PE %d on another host: shmem_ptr %p %p", p, h, g);
    }
    SHC_CHECK(shmem_addr_accessible(heap, p) &&
                  shmem_addr_accessible(&global_word, p),
              "PE %d: a symmetric address is accessible", p);
  }
  int n = shmem_team_n_pes(SHMEM_TEAM_SHARED);
  SHC_CHECK(n == shc_per_host(),
            "SHMEM_TEAM_SHARED has %d PEs", n);
  for (int i = 0; i < n; i++) {
    int w = shmem_team_translate_pe(SHMEM_TEAM_SHARED, i, SHMEM_TEAM_WORLD);
    SHC_CHECK(shc_same_host(me, w), "shared team PE %d is world %d", i, w);
  }
  shc_end();
  shmem_free(heap);
}

/* Every PE puts into every other PE's globals (each into its own slot). */
static void test_global_put(void) {
  shc_begin("hosts_put_to_global");
  memset(global_arr, 0, sizeof global_arr);
  global_word = 0;
  shmem_barrier_all();
  int to = (me + npes / 2) % npes; /* another host when there are two */
  long v = 1000 + me;
  shmem_long_put(&global_word, &v, 1, to);
  for (int p = 0; p < npes; p++)
    shmem_int_p(&global_arr[me], 7 * me + 1, p);
  shmem_barrier_all();
  int from = (me - npes / 2 + npes) % npes;
  SHC_CHECK(global_word == 1000 + from, "global_word %ld, want %d",
            global_word, 1000 + from);
  for (int p = 0; p < npes; p++)
    SHC_CHECK(global_arr[p] == 7 * p + 1, "global_arr[%d] = %d", p,
              global_arr[p]);
  /* And back by get, from every PE. */
  for (int p = 0; p < npes; p++) {
    int got[64];
    shmem_int_get(got, global_arr, (size_t)npes, p);
    for (int q = 0; q < npes; q++)
      SHC_CHECK(got[q] == 7 * q + 1, "get from PE %d [%d] = %d", p, q, got[q]);
    SHC_CHECK(shmem_long_g(&global_word, p) ==
                  1000 + (p - npes / 2 + npes) % npes,
              "g from PE %d", p);
  }
  shmem_barrier_all();
  shc_end();
}

/* Atomics of every PE, this host's and the others', on one word. */
static void test_atomics(void) {
  shc_begin("hosts_atomics");
  global_counter = 0;
  long *heap = shmem_calloc(1, sizeof(long));
  shmem_barrier_all();
  for (int i = 0; i < 50; i++) {
    shmem_long_atomic_inc(&global_counter, 0);
    shmem_long_atomic_fetch_add(heap, 2, npes - 1);
  }
  shmem_barrier_all();
  long c = shmem_long_atomic_fetch(&global_counter, 0);
  long h = shmem_long_atomic_fetch(heap, npes - 1);
  SHC_CHECK(c == 50L * npes, "counter %ld, want %ld", c, 50L * npes);
  SHC_CHECK(h == 100L * npes, "heap counter %ld, want %ld", h, 100L * npes);
  shmem_barrier_all();
  shmem_free(heap);
  shc_end();
}

/* put_signal into the next PE's globals: the data is there when the
 * signal is. */
static void test_signal(void) {
  shc_begin("hosts_put_signal");
  static long data[32];
  long src[32];
  for (int i = 0; i < 32; i++)
    src[i] = me * 100 + i;
  global_sig = 0;
  shmem_barrier_all();
  int to = (me + 1) % npes, from = (me - 1 + npes) % npes;
  shmem_long_put_signal(data, src, 32, &global_sig, 1, SHMEM_SIGNAL_SET, to);
  shmem_signal_wait_until(&global_sig, SHMEM_CMP_EQ, 1);
  for (int i = 0; i < 32; i++)
    SHC_CHECK(data[i] == from * 100 + i, "data[%d] = %ld", i, data[i]);
  shmem_barrier_all();
  shc_end();
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long thread_cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static long thread_sleeps(void) { /* voluntary context switches */
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nvcsw;
}

/* A wait on a user variable sleeps while nothing arrives and wakes for
 * another host's put: PE 0 waits in shmem_long_wait_until while the first
 * PE of the other host (on one host: the last PE) sleeps 200 ms, then puts
 * its clock into the variable.  Where the net adaptor has wait descriptors
 * (ofi, ucx), PE 0's thread ran less than 20% of the wait and went to sleep
 * fewer than 400 times: asleep on the engine's descriptors.  Before, after
 * its yields it progressed the engine and napped 20 us a turn (woke
 * thousands of times in 200 ms). */
static long idle_flag;
static void test_idle_wait(void) {
  shc_begin("hosts_wait_until_sleeps");
  int other = shc_per_host() < npes ? shc_per_host() : npes - 1;
  const char *net = getenv("SYMHEAP_NET");
  int fds = other != 0 && !shc_same_host(0, other) && net &&
            (strcmp(net, "ofi") == 0 || strcmp(net, "ucx") == 0);
  idle_flag = 0;
  shmem_barrier_all();
  if (me == other && other != 0) {
    struct timespec late = {0, 200 * 1000 * 1000};
    nanosleep(&late, NULL);
    shmem_long_p(&idle_flag, (long)now_ns(), 0);
    shmem_quiet();
  }
  if (me == 0 && other != 0) {
    long sleeps0 = thread_sleeps();
    long long cpu0 = thread_cpu_us(), t0 = now_ns();
    shmem_long_wait_until(&idle_flag, SHMEM_CMP_NE, 0);
    long long t1 = now_ns(), cpu = thread_cpu_us() - cpu0;
    long sleeps = thread_sleeps() - sleeps0;
    long long took_us = (t1 - t0) / 1000, late_us = (t1 - idle_flag) / 1000;
    SHC_CHECK(idle_flag > t0 && late_us >= 0,
              "the put's clock %ld, the wait began at %lld", idle_flag, t0);
    if (fds) {
      SHC_CHECK(cpu * 5 < took_us,
                "the waiting thread ran %lld us of a %lld us wait (bound "
                "20%%)", cpu, took_us);
      SHC_CHECK(sleeps < 400,
                "the waiting thread went to sleep %ld times in a %lld us "
                "wait (bound 400): it napped instead of sleeping on its "
                "engine", sleeps, took_us);
    }
    printf("# hosts_wait_until_sleeps (%s): %lld us wait, %lld us CPU, %ld "
           "sleeps, woke %lld us after the put\n",
           fds ? "adaptor with wait fds" : "no CPU bound", took_us, cpu,
           sleeps, late_us);
  }
  shmem_barrier_all();
  shc_end();
}

int main(void) {
  static const shc_test_fn tests[] = {test_ptr, test_global_put, test_atomics,
                                      test_signal, test_idle_wait};
  return shc_run(&me, &npes, tests, sizeof tests / sizeof tests[0]);
}

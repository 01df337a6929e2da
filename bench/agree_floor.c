/* The floor under an agreement over shared memory on this machine: N
 * processes agree R times through one shared page and nothing else (no
 * records, no library), waiting the way core/agree_shm.c can wait:
 *   yield  spin 64 times, then sched_yield until every process arrived
 *   futex  spin 64 times, then sleep on a futex that the process completing
 *          the agreement wakes (FUTEX_WAKE of all sleepers)
 * It prints microseconds per agreement (process 0's mean over R).  A
 * symheap_malloc + symheap_free pair is two agreements, so twice this is
 * what a pair costs at the least.  docs/perf/heap.md has the numbers.
 *   cc -O2 -o /tmp/agree-floor bench/agree_floor.c
 *   /tmp/agree-floor 4 yield [R]; /tmp/agree-floor 4 futex [R]
 *   taskset -c 0 /tmp/agree-floor 4 yield     (all on one core) */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 64

typedef struct {
  struct {
    _Alignas(64) uint64_t seq;
  } arrived[MAX_PROCS];
  _Alignas(64) uint32_t gen;
  uint32_t sleepers;
} shared_t;

static shared_t *g;
static int g_n, g_futex;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int all_arrived(uint64_t k) {
  for (int p = 0; p < g_n; p++)
    if (__atomic_load_n(&g->arrived[p].seq, __ATOMIC_SEQ_CST) < k)
      return 0;
  return 1;
}

static void agree(int me, uint64_t k) {
  __atomic_store_n(&g->arrived[me].seq, k, __ATOMIC_SEQ_CST);
  if (g_futex && all_arrived(k)) { /* the last to arrive wakes the rest */
    __atomic_store_n(&g->gen, (uint32_t)k, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&g->sleepers, __ATOMIC_SEQ_CST))
      syscall(SYS_futex, &g->gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
  }
  for (unsigned spin = 0; !all_arrived(k); spin++) {
    if (spin < 64)
      continue;
    if (!g_futex) {
      sched_yield();
      continue;
    }
    __atomic_add_fetch(&g->sleepers, 1, __ATOMIC_SEQ_CST);
    uint32_t seen = __atomic_load_n(&g->gen, __ATOMIC_SEQ_CST);
    struct timespec slice = {0, 10 * 1000 * 1000};
    if (seen != (uint32_t)k)
      syscall(SYS_futex, &g->gen, FUTEX_WAIT, seen, &slice, NULL, 0);
    __atomic_sub_fetch(&g->sleepers, 1, __ATOMIC_SEQ_CST);
  }
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[2], "yield") && strcmp(argv[2], "futex"))) {
    fprintf(stderr, "usage: %s NPROCS yield|futex [ROUNDS]\n", argv[0]);
    return 2;
  }
  g_n = atoi(argv[1]);
  g_futex = strcmp(argv[2], "futex") == 0;
  int rounds = argc > 3 ? atoi(argv[3]) : 20000;
  if (g_n < 2 || g_n > MAX_PROCS || rounds < 1) {
    fprintf(stderr, "2 to %d processes, at least 1 round\n", MAX_PROCS);
    return 2;
  }
  g = mmap(NULL, sizeof *g, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
           -1, 0);
  if (g == MAP_FAILED)
    return 1;
  for (int me = 0; me < g_n; me++) {
    pid_t pid = fork();
    if (pid < 0)
      return 1;
    if (pid > 0)
      continue;
    uint64_t k = 0;
    for (int i = 0; i < 1000; i++) /* warm up */
      agree(me, ++k);
    double t0 = now_us();
    for (int i = 0; i < rounds; i++)
      agree(me, ++k);
    double per = (now_us() - t0) / rounds;
    if (me == 0)
      printf("%d processes, %s: %.2f us per agreement (%d rounds)\n", g_n,
             argv[2], per, rounds);
    fflush(stdout);
    _exit(0);
  }
  int st, bad = 0;
  while (wait(&st) > 0)
    bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  return bad;
}

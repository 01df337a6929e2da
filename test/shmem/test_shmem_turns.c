/* With more PEs than CPUs, the PEs a barrier releases run before the PE
 * that released them (issue 31: OSU's 4-PE broadcast on 2 CPUs).
 *
 * Every PE is bound to one CPU, so the PEs take turns on it, and the loop
 * is OSU's broadcast loop: a broadcast from PE 0, then a barrier.  Before,
 * the barrier's last arriver (a member) went on into the next broadcast
 * while its root was still asleep in the barrier, and waited out every
 * other PE's turn there: that member's broadcasts took 34-48 us (median)
 * where the others' took 0.1-0.2.  Now the last arriver yields after the
 * release, the root posts first, and no member waits in the broadcast.
 * A broadcast counts as slow when it took longer than a turn of another PE
 * (SLOW_US); each member must find fewer than a quarter of its broadcasts
 * slow.  Then a PE alone on its CPU must not sleep in a short wait.  Run
 * with more PEs than CPUs (test/run.sh: nproc + 2). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity, built alone with symheap-oshcc */
#endif
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shmem_check.h"

#define ITERS 1000
#define WARMUP 100
#define SLOW_US 15.0

static int cpu; /* symmetric: on PE 0, the CPU every PE is bound to */
static long psync[2][SHMEM_BCAST_SYNC_SIZE];

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* PE 0's first allowed CPU, for every PE (0 where it cannot tell). */
static int bind_all_to_one_cpu(int me) {
  cpu_set_t set;
  if (me == 0 && sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set)) {
        cpu = c;
        break;
      }
  }
  shmem_barrier_all();
  int c = shmem_int_g(&cpu, 0);
  CPU_ZERO(&set);
  CPU_SET(c, &set);
  return sched_setaffinity(0, sizeof set, &set);
}

/* This process's voluntary context switches (it slept). */
static long voluntary_switches(void) {
  char line[256];
  long v = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
      break;
  fclose(f);
  return v;
}

/* A PE alone on its CPU (the others on another one) does not sleep in a
 * wait of 1 ms: asleep, it gave its CPU to other programs and waited for
 * them when woken (a 4-PE broadcast whose root sat alone on a CPU loaded by
 * others took 685 us against 0.5 with every PE on one CPU).  Before, every
 * wait slept after 16 spins and 2 yields with more PEs than CPUs. */
static void alone_waits_awake(int me, int n, long ncpu,
                              const cpu_set_t *allowed) {
  int two[2], k = 0;
  for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
    if (CPU_ISSET(c, allowed))
      two[k++] = c;
  if (k < 2) {
    printf("SKIP shmem_pe_alone_on_its_cpu_waits_awake: one CPU allowed\n");
    return;
  }
  shc_begin("shmem_pe_alone_on_its_cpu_waits_awake");
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(two[me == 0 ? 0 : 1], &set);
  SHC_CHECK(sched_setaffinity(0, sizeof set, &set) == 0,
            "sched_setaffinity failed");
  /* Each PE notes its CPU as a wait begins: each barrier's last PE
   * arrives 1 ms late, so every PE waits in one after it moved. */
  for (int late = 0; late < n; late++) {
    if (me == late) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
    shmem_barrier_all();
  }
  for (int round = 0; round < 5; round++) {
    long before = voluntary_switches();
    if (me != 0) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL); /* PE 0 waits 1 ms in the barrier */
    }
    shmem_barrier_all();
    long slept = voluntary_switches() - before;
    if (me == 0)
      SHC_CHECK(slept == 0 || n <= ncpu,
                "PE 0, alone on CPU 0, slept %ld times in a 1 ms wait", slept);
  }
  shc_end();
}

int main(void) {
  for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
    psync[0][i] = psync[1][i] = SHMEM_SYNC_VALUE;
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int *buf = shmem_malloc(2 * sizeof(int));
  cpu_set_t allowed; /* before the first case binds every PE to one */
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    CPU_ZERO(&allowed);
  shc_begin("shmem_released_pes_run_first");
  SHC_CHECK(n > ncpu, "needs more PEs than CPUs (%d PEs, %ld CPUs)", n, ncpu);
  SHC_CHECK(buf != NULL, "shmem_malloc failed");
  SHC_CHECK(bind_all_to_one_cpu(me) == 0, "sched_setaffinity failed");
  int slow = 0;
  /* Each round's buf is set before the barrier that ends the round before
   * it: the root writes into the members' buf as it enters (a broadcast's
   * dest is ready on every PE before any PE calls it). */
  if (buf)
    buf[0] = buf[1] = me == 0 ? 0 : -1;
  shmem_barrier_all();
  for (int i = 0; buf && i < WARMUP + ITERS; i++) {
    double t0 = now_us();
    shmem_broadcast32(buf, buf, 2, 0, 0, 0, n, psync[i & 1]);
    double t = now_us() - t0;
    if (me != 0 && buf[0] != i)
      SHC_CHECK(0, "broadcast %d delivered %d", i, buf[0]);
    if (i >= WARMUP && t > SLOW_US)
      slow++;
    buf[0] = buf[1] = me == 0 ? i + 1 : -1;
    shmem_barrier_all();
  }
  if (me != 0)
    SHC_CHECK(slow < ITERS / 4,
              "%d of %d broadcasts took over %.0f us (waited for the root's "
              "turn)",
              slow, ITERS, SLOW_US);
  shc_end();
  shmem_barrier_all();
  alone_waits_awake(me, n, ncpu, &allowed);
  shmem_barrier_all();
  shmem_free(buf);
  shmem_finalize();
  return shc_status();
}

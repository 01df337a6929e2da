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
 * slow.  Run with more PEs than CPUs (test/run.sh: nproc + 2). */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shmem_check.h"

#define ITERS 1000
#define WARMUP 100
#define SLOW_US 15.0

static int cpu;  /* symmetric: on PE 0, the CPU every PE is bound to */
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

int main(void) {
  for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
    psync[0][i] = psync[1][i] = SHMEM_SYNC_VALUE;
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes();
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int *buf = shmem_malloc(2 * sizeof(int));
  shc_begin("shmem_released_pes_run_first");
  SHC_CHECK(n > ncpu, "needs more PEs than CPUs (%d PEs, %ld CPUs)", n, ncpu);
  SHC_CHECK(buf != NULL, "shmem_malloc failed");
  SHC_CHECK(bind_all_to_one_cpu(me) == 0, "sched_setaffinity failed");
  int slow = 0;
  for (int i = 0; buf && i < WARMUP + ITERS; i++) {
    buf[0] = buf[1] = me == 0 ? i : -1;
    double t0 = now_us();
    shmem_broadcast32(buf, buf, 2, 0, 0, 0, n, psync[i & 1]);
    double t = now_us() - t0;
    if (me != 0 && buf[0] != i)
      SHC_CHECK(0, "broadcast %d delivered %d", i, buf[0]);
    if (i >= WARMUP && t > SLOW_US)
      slow++;
    shmem_barrier_all();
  }
  if (me != 0)
    SHC_CHECK(slow < ITERS / 4,
              "%d of %d broadcasts took over %.0f us (waited for the root's "
              "turn)",
              slow, ITERS, SLOW_US);
  shc_end();
  shmem_barrier_all();
  shmem_free(buf);
  shmem_finalize();
  return shc_status();
}

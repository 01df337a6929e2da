/* The last PE to reach a barrier releases everyone (issue 31: with more PEs
 * than CPUs, a release that waits for one chosen PE to be scheduled costs a
 * time slice per barrier; a 4-PE barrier on 2 loaded CPUs took 272 us).
 *
 * PE 0 enters a barrier first and is stopped (SIGSTOP) once it waits in
 * it; the other PEs must then pass the barrier while it is still stopped.
 * Before, PE 0 (the group's first PE) counted the arrivals and raised the
 * others' release flags itself, so they waited for it to run again.  A
 * timer continues PE 0 after 20 s whatever happens, so a failure ends as a
 * FAIL line, not a hang.  Needs 2 PEs or more (symheap-run -n 4). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shmem_check.h"

static int pid;      /* symmetric (data segment): each PE's process */
static int entering; /* symmetric: on PE 1, 1 once PE 0 calls the barrier */
static volatile pid_t stopped_pid;

static void continue_pe0(int sig) {
  (void)sig;
  kill(stopped_pid, SIGCONT);
}

/* The state letter of process p (R, S, T...), or 0. */
static char state_of(int p) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", p);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' ? rp[2] : 0;
}

/* Until process p is in state want, polling for at most 30 s. */
static int wait_state(int p, char want) {
  struct timespec ms = {0, 1000000};
  for (int i = 0; i < 30000; i++) {
    if (state_of(p) == want)
      return 1;
    nanosleep(&ms, NULL);
  }
  return 0;
}

int main(void) {
  shmem_init();
  int me = shmem_my_pe();
  pid = (int)getpid();
  shmem_barrier_all();
  int pid0 = shmem_int_g(&pid, 0);
  shc_begin("shmem_barrier_released_by_last_arriver");
  if (me == 0) {
    shmem_int_atomic_set(&entering, 1, 1);
    shmem_barrier_all(); /* stopped in here, continued by PE 1 */
  } else {
    if (me == 1) {
      shmem_int_wait_until(&entering, SHMEM_CMP_EQ, 1);
      /* Asleep after that: waiting in the barrier, so it has arrived. */
      SHC_CHECK(wait_state(pid0, 'S'), "PE 0 never slept in the barrier");
      stopped_pid = pid0;
      signal(SIGALRM, continue_pe0);
      kill(pid0, SIGSTOP);
      SHC_CHECK(wait_state(pid0, 'T'), "PE 0 did not stop");
      alarm(20);
    }
    shmem_barrier_all();
    if (me == 1) {
      char st = state_of(pid0);
      SHC_CHECK(st == 'T' || st == 't',
                "the barrier waited for stopped PE 0 (its state: %c)",
                st ? st : '?');
      alarm(0);
      kill(pid0, SIGCONT);
    }
  }
  shc_end();
  shmem_barrier_all();
  shmem_finalize();
  return shc_status();
}

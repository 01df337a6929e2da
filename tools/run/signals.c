/* The signals symheap-run passes on to its ranks, caught the same way by
 * the launcher on one host, the launcher across hosts and the agent; the
 * grace period between asking ranks to stop and killing them. */
#include <signal.h>
#include <string.h>
#include <time.h>

#include "run.h"

static const int passed_on[] = {SIGINT, SIGTERM, SIGHUP};
#define N_PASSED_ON (sizeof passed_on / sizeof passed_on[0])

void run_catch_signals(void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  for (size_t i = 0; i < N_PASSED_ON; i++)
    sigaction(passed_on[i], &sa, NULL);
  /* Ignored SIGCHLD survives exec: started that way, the kernel would reap
   * the ranks itself, and waitpid would never say how one ended. */
  signal(SIGCHLD, SIG_DFL);
}

void run_fork_begin(sigset_t *old) {
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < N_PASSED_ON; i++)
    sigaddset(&set, passed_on[i]);
  sigprocmask(SIG_BLOCK, &set, old);
}

void run_fork_end(const sigset_t *old) { sigprocmask(SIG_SETMASK, old, NULL); }

void run_fork_child(const sigset_t *old) {
  for (size_t i = 0; i < N_PASSED_ON; i++)
    signal(passed_on[i], SIG_DFL);
  sigprocmask(SIG_SETMASK, old, NULL);
}

long long run_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

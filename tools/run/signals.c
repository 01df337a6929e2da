/* The signals symheap-run passes on to its ranks, caught the same way by
 * the launcher on one host, the launcher across hosts and the agent. */
#include <signal.h>
#include <string.h>

#include "run.h"

void run_catch_signals(void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

/* The waits' idle hook (idle.h). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

#include "base/internal.h"
#include "idle.h"

/* Set by a higher floor (comm/net_comm.c) once, read by every wait. */
static int (*g_idle_hook)(symheap__idle_t *io);

/* The host services' wait_progress: one turn of the hook, its fds
 * unused (the caller's loop polls something else: MPI_Test). */
static int idle_once(void) {
  symheap__idle_t io = {0, 0, {0}};
  return symheap__idle_turn(&io);
}

void symheap__sock_set_idle_hook(int (*hook)(symheap__idle_t *io)) {
  __atomic_store_n(&g_idle_hook, hook, __ATOMIC_RELEASE);
  symheap__services_set_wait_progress(idle_once);
}

int symheap__idle_turn(symheap__idle_t *io) {
  int (*hook)(symheap__idle_t *) =
      __atomic_load_n(&g_idle_hook, __ATOMIC_ACQUIRE);
  io->nfds = 0;
  int spin = hook && hook(io);
  /* The hook has taken the news of the last sleep's wakeup: a turn that
   * does not sleep again must not bring it again (it kept a wait spinning
   * to its end after one wakeup: the hook's spell of spinning after work
   * began anew each turn). */
  io->woke = 0;
  if (io->nfds < 0)
    io->nfds = 0;
  if (io->nfds > SYMHEAP__IDLE_FDS)
    io->nfds = SYMHEAP__IDLE_FDS;
  return spin;
}

void symheap__idle_sleep(symheap__idle_t *io, uint64_t ns) {
  const uint64_t most = (uint64_t)SYMHEAP__IDLE_SLEEP_MS * 1000000u;
  if (io->nfds && ns > most)
    ns = most;
  struct pollfd p[SYMHEAP__IDLE_FDS];
  for (int i = 0; i < io->nfds; i++)
    p[i] = (struct pollfd){io->fds[i], POLLIN, 0};
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  io->woke = ppoll(p, (nfds_t)io->nfds, &ts, NULL) > 0;
}

void symheap__idle_pause(int ms) {
  symheap__idle_t io = {0, 0, {0}};
  uint64_t end = symheap__now_ns() + (uint64_t)(ms < 0 ? 0 : ms) * 1000000u;
  for (unsigned turn = 1;; turn++) {
    uint64_t now = symheap__now_ns();
    if (now >= end)
      return;
    if (!symheap__idle_turn(&io))
      symheap__idle_sleep(&io, end - now);
    else if (turn % 64 == 0) /* spinning on busy engines: yield now and then */
      sched_yield();
  }
}

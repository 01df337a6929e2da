/* The waits' idle hook (idle.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/internal.h"
#include "idle.h"

/* Set by a higher floor (comm/net_comm.c) once, read by every wait. */
static int (*g_idle_hook)(symheap__idle_t *io);

/* The host services' wait_progress: one turn of the hook, its fds
 * unused (the caller's loop polls something else: MPI_Test). */
static int idle_once(void) {
  symheap__idle_t io = {0, 0, {0}, 0, 0};
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
  io->nap_ok = 0;
  int spin = hook && hook(io);
  if (!spin)
    io->nap_ok = 0;
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

#define NAP_MIN_NS 20000u
#define NAP_MAX_NS 100000u

uint64_t symheap__idle_nap_ns(uint64_t waited_ns) {
  if (waited_ns < SYMHEAP__IDLE_NAP_SPIN_NS)
    return 0;
  uint64_t ns = NAP_MIN_NS + (waited_ns - SYMHEAP__IDLE_NAP_SPIN_NS) / 16;
  return ns < NAP_MAX_NS ? ns : NAP_MAX_NS;
}

/* Kicks (symheap__idle_kick): a count, and an eventfd the sleeps poll
 * beside their descriptors, written only while some thread sleeps.  A
 * sleeper counts itself, then compares the count with the one it saw as
 * its last sleep ended: a kicker counts, then looks for sleepers (both
 * sequentially consistent), so either the sleeper sees the new count and
 * does not sleep, or the kicker sees the sleeper and wakes it.  A
 * semaphore: each of several sleepers (ranks as threads) takes one wake;
 * a wake nobody took costs a later sleep one turn.
 * The eventfd is open only while a kicker may kick (symheap__idle_kicks_
 * hold) or a sleep still polls it: a process that never opens a net
 * engine keeps no descriptor of ours, and the last close gives it back
 * (the tests count a comm's descriptors). */
static uint64_t g_kicks;
static int g_sleepers;
static pthread_mutex_t g_kick_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_kick_fd = -1; /* atomic reads; changed under g_kick_lock */
static int g_kick_refs;    /* kickers holding it */
static int g_kick_users;   /* sleeps polling it now */

static void kick_fd_drop(void) { /* under g_kick_lock */
  if (g_kick_refs == 0 && g_kick_users == 0 && g_kick_fd >= 0) {
    close(g_kick_fd);
    __atomic_store_n(&g_kick_fd, -1, __ATOMIC_RELEASE);
  }
}

void symheap__idle_kicks_hold(int on) {
  pthread_mutex_lock(&g_kick_lock);
  if (on && g_kick_refs++ == 0 && g_kick_fd < 0)
    __atomic_store_n(&g_kick_fd,
                     eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE),
                     __ATOMIC_RELEASE); /* -1: no kicks, the naps remain */
  if (!on && g_kick_refs > 0)
    g_kick_refs--;
  kick_fd_drop();
  pthread_mutex_unlock(&g_kick_lock);
}

static int kick_take(void) {
  pthread_mutex_lock(&g_kick_lock);
  int fd = g_kick_fd;
  if (fd >= 0)
    g_kick_users++;
  pthread_mutex_unlock(&g_kick_lock);
  return fd;
}

static void kick_give(int fd) {
  if (fd < 0)
    return;
  pthread_mutex_lock(&g_kick_lock);
  g_kick_users--;
  kick_fd_drop();
  pthread_mutex_unlock(&g_kick_lock);
}

/* The kicker holds the descriptor open (symheap__idle_kicks_hold). */
void symheap__idle_kick(void) {
  __atomic_add_fetch(&g_kicks, 1, __ATOMIC_SEQ_CST);
  uint64_t n = (uint64_t)__atomic_load_n(&g_sleepers, __ATOMIC_SEQ_CST);
  int fd = __atomic_load_n(&g_kick_fd, __ATOMIC_ACQUIRE);
  if (n && fd >= 0 && write(fd, &n, sizeof n) < 0) {
    /* full (2^64 - 2 wakes nobody took): the sleepers have plenty */
  }
}

void symheap__idle_sleep(symheap__idle_t *io, uint64_t ns) {
  const uint64_t most = (uint64_t)SYMHEAP__IDLE_SLEEP_MS * 1000000u;
  if (io->nfds && ns > most)
    ns = most;
  int kfd = kick_take(), n = io->nfds;
  struct pollfd p[SYMHEAP__IDLE_FDS + 1];
  for (int i = 0; i < n; i++)
    p[i] = (struct pollfd){io->fds[i], POLLIN, 0};
  if (kfd >= 0)
    p[n] = (struct pollfd){kfd, POLLIN, 0};
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  __atomic_add_fetch(&g_sleepers, 1, __ATOMIC_SEQ_CST);
  int r = 0;
  if (__atomic_load_n(&g_kicks, __ATOMIC_SEQ_CST) == io->kicks)
    r = ppoll(p, (nfds_t)(n + (kfd >= 0)), &ts, NULL);
  __atomic_sub_fetch(&g_sleepers, 1, __ATOMIC_SEQ_CST);
  io->woke = 0;
  for (int i = 0; r > 0 && i < n; i++)
    io->woke |= p[i].revents != 0;
  uint64_t one;
  if (r > 0 && kfd >= 0 && p[n].revents && read(kfd, &one, sizeof one) < 0) {
    /* another sleeper took this wake: it was one for both */
  }
  kick_give(kfd);
  io->kicks = __atomic_load_n(&g_kicks, __ATOMIC_SEQ_CST);
}

void symheap__idle_pause(int ms) {
  symheap__idle_t io = {0, 0, {0}, 0, 0};
  uint64_t t0 = symheap__now_ns();
  uint64_t end = t0 + (uint64_t)(ms < 0 ? 0 : ms) * 1000000u;
  for (unsigned turn = 1;; turn++) {
    uint64_t now = symheap__now_ns();
    if (now >= end)
      return;
    uint64_t nap = 0;
    if (!symheap__idle_turn(&io))
      symheap__idle_sleep(&io, end - now);
    else if (io.nap_ok && (nap = symheap__idle_nap_ns(now - t0)) != 0)
      symheap__idle_sleep(&io, nap < end - now ? nap : end - now);
    else if (turn % 64 == 0) /* spinning on busy engines: yield now and then */
      sched_yield();
  }
}

/* Fork detection without a system call per collective: a forked child
 * shares its parent's sockets, so a call of its own must be refused
 * (comm/comm.c, forked), but asking getpid on every call costs two system calls
 * per symheap_malloc + symheap_free pair on the heap's fast path.  A
 * pthread_atfork handler counts the forks instead (a child's copy of the
 * count is one more than its parent's), and the pid is asked only once the
 * count moved.  Where the handler could not be registered, every call
 * asks.  A child made without fork's handlers (vfork, posix_spawn) execs
 * at once and never calls us. */
#include <pthread.h>
#include <unistd.h>

#include "forks.h"

static unsigned forks_seen;
static int forks_watched;
static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void count_fork(void) {
  __atomic_add_fetch(&forks_seen, 1, __ATOMIC_RELAXED);
}

static void watch_forks(void) {
  forks_watched = pthread_atfork(NULL, NULL, count_fork) == 0;
}

unsigned symheap__forks_watch(void) {
  pthread_once(&forks_once, watch_forks);
  return __atomic_load_n(&forks_seen, __ATOMIC_RELAXED);
}

int symheap__forked_since(pid_t pid, unsigned forks_then) {
  if (forks_watched &&
      __atomic_load_n(&forks_seen, __ATOMIC_RELAXED) == forks_then)
    return 0;
  return pid != getpid();
}

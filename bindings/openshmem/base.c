/* The floor of symheap-shmem: the state of this PE and the way out (an
 * error the specification leaves undefined, shmem_global_exit), which
 * every other file uses.  It calls nothing above it: no shmem_ routine, so
 * the fatal path cannot loop back into the code that called it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "shmem_internal.h"

struct shm_state shm__s = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Every PE's control page gets the exit request (the first one stays);
 * the others exit with `status` at their next wait. */
void shm__exit_all(int status) {
  if (shm__s.ctrl && shm__s.heap_peer) {
    for (int p = 0; p < shm__s.npes; p++) {
      struct shm_ctrl *c = (struct shm_ctrl *)shm__s.heap_peer[p];
      int zero = 0;
      __atomic_compare_exchange_n(&c->exit_req, &zero, status + 1, 0,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
  }
  fflush(stdout);
  fflush(stderr);
  exit(status);
}

void shm__fatal(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "symheap-shmem: PE %d: ", shm__s.me);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  shm__exit_all(1);
}

void shm__require_init(const char *fn) {
  if (!shm__s.initialized) {
    fprintf(stderr, "symheap-shmem: %s called before shmem_init\n", fn);
    exit(1);
  }
}

/* The library's process state and its fatal path, under everything else of
 * the binding: the state every file reads, ending the job (the fatal path
 * and shmem_global_exit), the wait loop's turn, and where a symmetric
 * address lives on a PE.  It calls nothing of the binding's other files. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "shmem_internal.h"
#include "symheap_adaptor.h"

struct shm_state shm__s = {.lock = PTHREAD_MUTEX_INITIALIZER};

void shm__fatal(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "symheap-shmem: PE %d: ", shm__s.me);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  shm__exit_job(1);
}

void shm__require_init(const char *fn) {
  if (!shm__s.initialized) {
    fprintf(stderr, "symheap-shmem: %s called before shmem_init\n", fn);
    exit(1);
  }
}

/* The library's clock (the host services'). */
static long long now_ns(void) {
  return (long long)symheap_host_services()->now_ns();
}

/* A PE whose process is gone will never answer: end the job. */
static void check_peers_alive(void) {
  for (int p = 0; p < shm__s.npes; p++) {
    struct shm_ctrl *c = (struct shm_ctrl *)shm__s.heap_peer[p];
    int pid = __atomic_load_n(&c->pid, __ATOMIC_RELAXED);
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
      fprintf(stderr,
              "symheap-shmem: PE %d: PE %d (pid %d) has exited; ending the "
              "job instead of waiting for it\n",
              shm__s.me, p, pid);
      exit(1);
    }
  }
}

void shm__spin(struct shm_spin *s) {
  int req = __atomic_load_n(&shm__s.ctrl->exit_req, __ATOMIC_ACQUIRE);
  if (req) {
    fflush(stdout);
    exit(req - 1);
  }
  if (++s->n < shm__s.spin_before_yield) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  sched_yield();
  if ((s->n & 255) == 0) {
    long long t = now_ns();
    if (!s->next_check_ns) {
      s->next_check_ns = t + 1000000000LL;
    } else if (t >= s->next_check_ns) {
      s->next_check_ns = t + 1000000000LL;
      check_peers_alive();
    }
  }
}

void shm__exit_job(int status) {
  if (shm__s.ctrl) {
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

char *shm__peer_or_null(const void *addr, int pe) {
  uintptr_t a = (uintptr_t)addr;
  if (!shm__s.initialized || pe < 0 || pe >= shm__s.npes)
    return NULL;
  if (a - (uintptr_t)shm__s.heap_base < shm__s.heap_size)
    return pe == shm__s.me
               ? (char *)addr
               : shm__s.heap_peer[pe] + (a - (uintptr_t)shm__s.heap_base);
  if (a - (uintptr_t)shm__s.data_base < shm__s.data_size)
    return pe == shm__s.me
               ? (char *)addr
               : shm__s.data_peer[pe] + (a - (uintptr_t)shm__s.data_base);
  return NULL;
}

void shm__team_group(shmem_team_t team, struct shm_group *g) {
  if (team == SHMEM_TEAM_INVALID || team->slot < 0)
    shm__fatal("collective on an invalid or destroyed team");
  *g = (struct shm_group){.world = team->world,
                          .size = team->size,
                          .me = team->me,
                          .sync = shm__s.ctrl->team_sync[team->slot]};
}

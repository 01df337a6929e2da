/* The floor of symheap-shmem: the state of this PE and the way out (an
 * error the specification leaves undefined, shmem_global_exit), which
 * every other file uses.  It calls nothing above it: no shmem_ routine, so
 * the fatal path cannot loop back into the code that called it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "shmem_internal.h"

struct shm_state shm__s = {.lock = PTHREAD_MUTEX_INITIALIZER,
                           .net_lock = PTHREAD_MUTEX_INITIALIZER,
                           .stream_min = SIZE_MAX};

/* A job across hosts: the request goes by symheap_atomic (the word's
 * atomicity domain) to every PE at once, and one quiet sees it delivered
 * before this process ends (errors ignored: a PE that is gone cannot be
 * told, and the quiet gives up after SYMHEAP_TIMEOUT_MS).  A set, not a
 * compare-and-swap, so that nothing waits PE by PE: where several PEs
 * exit at once, any of their statuses may win. */
static void exit_all_net(int status) {
  int v = status + 1;
  size_t off = offsetof(struct shm_ctrl, exit_req);
  for (int p = 0; p < shm__s.npes; p++)
    (void)symheap_atomic(shm__s.heap_win, p, shm__s.heap_shift[p] + off,
                         SYMHEAP_AMO_SET, 4, &v, NULL, NULL);
  (void)symheap_quiet(shm__s.comm);
}

/* Every PE's control page gets the exit request (the first one stays);
 * the others exit with `status` at their next wait. */
void shm__exit_all(int status) {
  if (shm__s.ctrl && shm__s.heap_peer && shm__s.net) {
    exit_all_net(status);
  } else if (shm__s.ctrl && shm__s.heap_peer) {
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
  /* One write of the whole line: PEs that fail together (stderr is
   * unbuffered) wrote their prefixes and messages interleaved on one line. */
  char line[1024];
  int n = snprintf(line, sizeof line, "symheap-shmem: PE %d: ", shm__s.me);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < sizeof line)
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", line);
  shm__exit_all(1);
}

void shm__range_fatal(const void *addr, size_t bytes) {
  uintptr_t a = (uintptr_t)addr;
  const char *what = NULL;
  size_t left = 0;
  if (a - (uintptr_t)shm__s.heap_base < shm__s.heap_size) {
    what = "symmetric heap";
    left = shm__s.heap_size - (a - (uintptr_t)shm__s.heap_base);
  } else if (a - (uintptr_t)shm__s.data_base < shm__s.data_size) {
    what = "program's data and bss";
    left = shm__s.data_size - (a - (uintptr_t)shm__s.data_base);
  }
  if (bytes == SIZE_MAX) /* symheap_shmem_bytes: the count overflowed */
    shm__fatal("the length at %p overflows size_t (an element count too "
               "large for its type)",
               addr);
  if (what)
    shm__fatal("%zu bytes at %p run past the end of the %s (%zu bytes left "
               "there)",
               bytes, addr, what, left);
  shm__fatal("address %p is not symmetric (neither in the symmetric heap nor "
             "in the program's data or bss)",
             addr);
}

void shm__require_init(const char *fn) {
  if (!shm__s.initialized) {
    fprintf(stderr,
            "symheap-shmem: %s called before shmem_init or after "
            "shmem_finalize\n",
            fn);
    exit(1);
  }
}

/* Where pe's copy of a symmetric address is mapped here, or NULL: state
 * alone, so that every file above (teams, RMA) can ask without a circle. */
char *shm__peer_or_null(const void *addr, int pe) {
  uintptr_t a = (uintptr_t)addr;
  if (!shm__s.initialized || pe < 0 || pe >= shm__s.npes)
    return NULL;
  if (pe != shm__s.me && shm__s.net && shm__s.remote[pe])
    return NULL; /* another host: no address here */
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

/* A symmetric address is accessible on every PE, another host's too (by
 * RMA and AMOs, not by shmem_ptr). */
int shmem_addr_accessible(const void *addr, int pe) {
  uintptr_t a = (uintptr_t)addr;
  if (!shm__s.initialized || pe < 0 || pe >= shm__s.npes)
    return 0;
  return a - (uintptr_t)shm__s.heap_base < shm__s.heap_size ||
         a - (uintptr_t)shm__s.data_base < shm__s.data_size;
}

void *shmem_ptr(const void *dest, int pe) {
  return shm__peer_or_null(dest, pe);
}

/* A team as the collectives see it: state alone (the teams themselves are
 * team.c's; the barrier and the collectives below it only read them). */
void shm__team_group(shmem_team_t team, struct shm_group *g) {
  if (team == SHMEM_TEAM_INVALID || team->slot < 0)
    shm__fatal("collective on an invalid or destroyed team");
  *g = (struct shm_group){.world = team->world,
                          .size = team->size,
                          .me = team->me,
                          .sync = shm__s.ctrl->team_sync[team->slot]};
}

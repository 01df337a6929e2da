/* Contracts every channel keeps (issue 28): two different collective calls
 * never pair.  Rank 0 makes one call while every other rank makes another;
 * every rank must fail with SYMHEAP_ERR_MISMATCH, "out of step", naming
 * the same rank (1, the first whose call differs from rank 0's), and the
 * comm must be broken on every rank alike.  Run over the shared-memory
 * channel (the default where every rank is on this host) and over the
 * ccl's sockets (SYMHEAP_AGREE_SHM=0), as processes (symheap-run) and as
 * threads (--threads N).  Each case runs on a split of the job's comm, so
 * the job's comm stays healthy between cases.
 *  - malloc_vs_barrier, free_vs_allgather, malloc_vs_reserve,
 *    free_vs_deregister: the pairings issue 28 lists.
 *  - barrier_then_malloc: a barrier leaves no bytes for a later call to
 *    read as its own (malloc after barriers on every rank still works).
 *  - mem_calls_claimed: symheap_mem_alloc and symheap_mem_free from a
 *    second thread while the first is in a collective are refused, and
 *    change nothing (they once corrupted the allocation list).
 *  - mem_calls_fork: a forked child's symheap_mem_free and
 *    symheap_mem_alloc on its parent's comm are refused.
 *  - split_out_of_fds (processes only: the limit is per process): rank 1
 *    runs out of descriptors in symheap_comm_split; every rank fails
 *    within the timeout naming rank 1, and the parent comm goes on (it
 *    took the whole timeout, then broke the parent blaming another rank).
 *  - threshold (processes only: the variable is per process): one rank
 *    with another SYMHEAP_HEAP_THRESHOLD is refused at the first malloc. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h"
#include "harness.h"

static char tag[64] = "contracts";

typedef enum { OP_MALLOC, OP_BARRIER, OP_FREE, OP_ALLGATHER, OP_RESERVE,
               OP_DEREGISTER } op_t;

static symheap_result_t call(symheap_comm_t c, op_t op, symheap_window_t w) {
  symheap_window_t nw = NULL;
  char in[8] = {0}, out[8 * 64];
  switch (op) {
  case OP_MALLOC:
    return symheap_malloc(c, 4096, 0, &nw);
  case OP_BARRIER:
    return symheap_comm_barrier(c);
  case OP_FREE:
    return symheap_free(c, w);
  case OP_ALLGATHER:
    return symheap_comm_allgather(c, in, out, sizeof in);
  case OP_RESERVE:
    return symheap_heap_reserve(c, 1 << 20);
  case OP_DEREGISTER:
    return symheap_window_deregister(c, w);
  }
  return SYMHEAP_ERR_INTERNAL;
}

/* Rank 0 calls a, the others b, on a fresh split; `prep`: a window made
 * first (for free and deregister). */
static void pairing(th_ctx_t *t, const char *name, op_t a, op_t b, int prep) {
  th_begin(tag, name, t->rank);
  symheap_comm_t s = NULL;
  CHECK_OK(symheap_comm_split(t->comm, 0, t->rank, &s));
  if (!s) {
    th_end();
    return;
  }
  symheap_window_t w = NULL;
  if (prep)
    CHECK_OK(symheap_malloc(s, 4096, 0, &w));
  symheap_result_t r = call(s, t->rank == 0 ? a : b, w);
  const char *e = symheap_last_error();
  CHECK(r == SYMHEAP_ERR_MISMATCH, "got %s (%s), expected a mismatch",
        symheap_strerror(r), e);
  CHECK(strstr(e, "out of step") != NULL && strstr(e, "rank 1 ") != NULL,
        "the error does not name rank 1 as out of step: %s", e);
  /* The same end state everywhere: the comm is broken on every rank. */
  r = symheap_comm_barrier(s);
  CHECK(r != SYMHEAP_SUCCESS, "the comm still works after the mismatch");
  CHECK_OK(symheap_comm_destroy(s));
  CHECK_OK(symheap_comm_barrier(t->comm));
  th_end();
}

static void case_barrier_then_malloc(th_ctx_t *t) {
  th_begin(tag, "barrier_then_malloc", t->rank);
  /* The channel this run is about is the one in use. */
  const char *ch = getenv("SYMHEAP_AGREE_SHM");
  int want_shm = !(ch && strcmp(ch, "0") == 0);
  CHECK((t->comm->agree_shm != NULL) == want_shm,
        "agreements over shared memory: %s, expected %s",
        t->comm->agree_shm ? "yes" : "no", want_shm ? "yes" : "no");
  symheap_window_t w = NULL;
  int *mine = NULL;
  CHECK_OK(symheap_malloc(t->comm, 64, 0, &w));
  CHECK_OK(symheap_comm_barrier(t->comm));
  CHECK_OK(symheap_comm_barrier(t->comm));
  symheap_window_t w2 = NULL;
  CHECK_OK(symheap_malloc(t->comm, 128, 0, &w2));
  if (w2 && symheap_window_local_ptr(w2, (void **)&mine) == SYMHEAP_SUCCESS)
    *mine = t->rank;
  CHECK_OK(symheap_comm_barrier(t->comm));
  for (int p = 0; w2 && p < t->n; p++) {
    int *theirs = NULL;
    CHECK_OK(symheap_window_peer_ptr(w2, p, (void **)&theirs));
    CHECK(theirs && *theirs == p, "rank %d's block reads %d", p,
          theirs ? *theirs : -1);
  }
  CHECK_OK(symheap_comm_barrier(t->comm));
  if (w2)
    CHECK_OK(symheap_free(t->comm, w2));
  if (w)
    CHECK_OK(symheap_free(t->comm, w));
  th_end();
}

static void case_threshold(th_ctx_t *t) {
  th_begin(tag, "threshold", t->rank);
  if (t->rank == 1)
    setenv("SYMHEAP_HEAP_THRESHOLD", "2048", 1);
  symheap_comm_t s = NULL;
  CHECK_OK(symheap_comm_split(t->comm, 0, t->rank, &s));
  symheap_window_t w = NULL;
  if (s) {
    symheap_result_t r = symheap_malloc(s, 1024, 0, &w);
    CHECK(r == SYMHEAP_ERR_MISMATCH &&
              strstr(symheap_last_error(), "SYMHEAP_HEAP_THRESHOLD"),
          "a different threshold on rank 1: %s (%s)", symheap_strerror(r),
          symheap_last_error());
    CHECK(strstr(symheap_last_error(), "symheap_malloc: symheap_malloc") ==
              NULL,
          "doubled prefix: %s", symheap_last_error());
    if (r == SYMHEAP_SUCCESS)
      CHECK_OK(symheap_free(s, w));
    CHECK_OK(symheap_comm_destroy(s));
  }
  unsetenv("SYMHEAP_HEAP_THRESHOLD");
  CHECK_OK(symheap_comm_barrier(t->comm));
  th_end();
}

typedef struct {
  symheap_comm_t comm;
  void *held; /* an allocation of the owner's, to free */
  symheap_result_t ra, rf;
  char ma[512], mf[512];
} intruder_t;

static void *intruder(void *arg) {
  intruder_t *x = arg;
  void *p = NULL;
  usleep(100 * 1000); /* its owner is in a barrier by now (400 ms long) */
  x->ra = symheap_mem_alloc(x->comm, 4096, &p);
  snprintf(x->ma, sizeof x->ma, "%s", symheap_last_error());
  if (x->ra == SYMHEAP_SUCCESS)
    (void)symheap_mem_free(x->comm, p);
  x->rf = symheap_mem_free(x->comm, x->held);
  snprintf(x->mf, sizeof x->mf, "%s", symheap_last_error());
  return NULL;
}

static void case_mem_claimed(th_ctx_t *t) {
  th_begin(tag, "mem_calls_claimed", t->rank);
  void *held = NULL;
  CHECK_OK(symheap_mem_alloc(t->comm, 4096, &held));
  symheap_comm_stats_t before, after;
  memset(&before, 0, sizeof before);
  before.struct_size = sizeof before;
  after = before;
  CHECK_OK(symheap_comm_get_stats(t->comm, &before));
  if (t->rank != 0) {
    usleep(400 * 1000); /* rank 0 waits in its barrier meanwhile */
    CHECK_OK(symheap_comm_barrier(t->comm));
  } else {
    intruder_t x;
    memset(&x, 0, sizeof x);
    x.comm = t->comm;
    x.held = held;
    pthread_t th;
    pthread_create(&th, NULL, intruder, &x);
    CHECK_OK(symheap_comm_barrier(t->comm)); /* the intruder comes in */
    pthread_join(th, NULL);
    CHECK(x.ra == SYMHEAP_ERR_INVALID_ARG && strstr(x.ma, "another thread"),
          "the second thread's mem_alloc: %s (%s)", symheap_strerror(x.ra),
          x.ma);
    CHECK(x.rf == SYMHEAP_ERR_INVALID_ARG && strstr(x.mf, "another thread"),
          "the second thread's mem_free: %s (%s)", symheap_strerror(x.rf),
          x.mf);
  }
  CHECK_OK(symheap_comm_get_stats(t->comm, &after));
  CHECK(before.allocations_live == after.allocations_live,
        "the refused calls changed the allocations: %llu, then %llu",
        (unsigned long long)before.allocations_live,
        (unsigned long long)after.allocations_live);
  if (held)
    CHECK_OK(symheap_mem_free(t->comm, held));
  CHECK_OK(symheap_comm_barrier(t->comm));
  th_end();
}

static void case_mem_fork(th_ctx_t *t) {
  th_begin(tag, "mem_calls_fork", t->rank);
  void *held = NULL;
  CHECK_OK(symheap_mem_alloc(t->comm, 4096, &held));
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    void *p = NULL;
    int bad = symheap_mem_free(t->comm, held) != SYMHEAP_ERR_INVALID_ARG ||
              !strstr(symheap_last_error(), "fork");
    bad |= (symheap_mem_alloc(t->comm, 4096, &p) != SYMHEAP_ERR_INVALID_ARG ||
            !strstr(symheap_last_error(), "fork"))
           << 1;
    _exit(bad);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait failed");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child's mem calls on its parent's comm were not refused "
        "(status %d: 1 mem_free, 2 mem_alloc)",
        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  if (held)
    CHECK_OK(symheap_mem_free(t->comm, held)); /* the parent's is intact */
  CHECK_OK(symheap_comm_barrier(t->comm));
  th_end();
}

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void case_split_fds(th_ctx_t *t) {
  th_begin(tag, "split_out_of_fds", t->rank);
  const char *to = getenv("SYMHEAP_TIMEOUT_MS");
  long timeout = to ? atol(to) : 30000;
  struct rlimit old, low;
  getrlimit(RLIMIT_NOFILE, &old);
  low = old;
  if (t->rank == 1) {
    low.rlim_cur = (rlim_t)th_count_fds() + 3;
    setrlimit(RLIMIT_NOFILE, &low);
  }
  symheap_comm_t s = NULL;
  long t0 = now_ms();
  /* Rank 1 first in the new comm: a message in its numbering would name
   * another rank. */
  symheap_result_t r =
      symheap_comm_split(t->comm, 0, t->rank == 1 ? -1 : t->rank, &s);
  long took = now_ms() - t0;
  if (t->rank == 1)
    setrlimit(RLIMIT_NOFILE, &old);
  const char *e = symheap_last_error();
  if (getenv("CONTRACTS_VERBOSE"))
    printf("rank %d: %s\n", t->rank, e);
  CHECK(r != SYMHEAP_SUCCESS && !s, "the split succeeded with rank 1 out of "
                                    "descriptors");
  CHECK(strstr(e, "rank 1 ") && strstr(e, "file descriptors"),
        "the error does not name rank 1 running out: %s", e);
  CHECK(took <= timeout, "(%s) the split took %ld ms, the timeout is %ld", e,
        took, timeout);
  if (s)
    CHECK_OK(symheap_comm_destroy(s));
  /* The parent goes on, on every rank. */
  symheap_window_t w = NULL;
  CHECK_OK(symheap_comm_barrier(t->comm));
  CHECK_OK(symheap_malloc(t->comm, 4096, 0, &w));
  if (w)
    CHECK_OK(symheap_free(t->comm, w));
  s = NULL;
  CHECK_OK(symheap_comm_split(t->comm, 0, t->rank, &s));
  if (s)
    CHECK_OK(symheap_comm_destroy(s));
  th_end();
}

static int threads_mode;

static void rank_main(th_ctx_t *t, void *arg) {
  (void)arg;
  if (t->n < 2) {
    if (t->rank == 0)
      printf("SKIP %s/all: needs 2 ranks or more\n", tag);
    return;
  }
  case_barrier_then_malloc(t);
  pairing(t, "malloc_vs_barrier", OP_MALLOC, OP_BARRIER, 0);
  pairing(t, "barrier_vs_malloc", OP_BARRIER, OP_MALLOC, 0);
  pairing(t, "free_vs_allgather", OP_FREE, OP_ALLGATHER, 1);
  pairing(t, "malloc_vs_reserve", OP_MALLOC, OP_RESERVE, 0);
  pairing(t, "free_vs_deregister", OP_FREE, OP_DEREGISTER, 1);
  case_mem_claimed(t);
  const char *tool = getenv("SYMHEAP_TEST_UNDER_TOOL");
  if (!(threads_mode && tool)) /* a threaded fork under a tool "leaks" */
    case_mem_fork(t);
  if (!threads_mode) {
    case_split_fds(t);
    case_threshold(t);
  }
}

int main(int argc, char **argv) {
  const char *ch = getenv("SYMHEAP_AGREE_SHM");
  return th_main(argc, argv,
                 ch && strcmp(ch, "0") == 0 ? "contracts_sock_"
                                            : "contracts_shm_",
                 tag, sizeof tag, &threads_mode, rank_main, NULL);
}

/* How ranks wait in an agreement over shared memory (core/agree_shm.c):
 * they yield for a while, then sleep on a futex that the rank completing
 * the agreement wakes.  Run as processes (under symheap-run), with
 * --threads N, or under symheap-run with --mixed T (T thread-ranks per
 * process); the cases that kill or end a process fork ranks of their own
 * (--forked).
 *  - late_rank: the last rank arrives LATE_MS late; the others complete
 *    the heap allocation with it, on the same block (each reads its peers'
 *    marks through the peer pointers), and asleep: their CPU time while
 *    waiting is a small part of the wait.
 *  - rounds_after_sleep: many agreements in a row after a sleep (the futex
 *    word moves on with each; none is missed).
 *  - small_allgather: symheap_comm_allgather's small payloads ride in its
 *    size agreement; every size right, differing sizes refused.
 *  - exit_after_complete (--forked): a rank that completes an agreement
 *    and exits at once (a comm's final barrier, then exit) is not reported
 *    gone by the peers it woke (they are stopped until it is gone, so the
 *    order is certain).
 *  - dead_while_asleep (--forked): a rank that dies while its peers sleep
 *    is seen within a second, not at the comm's timeout.
 *  - hog_on_the_core (--forked): beside a busy loop on each rank's CPU,
 *    ranks stop yielding to it and sleep instead (median pair under 1 ms). */
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "base/internal.h"
#include "boot/uid.h"

#define LATE_MS 300
#define FORKED_RANKS 3

static char tag[64] = "agree_wait";

static int64_t cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void case_late_rank(th_ctx_t *c) {
  int late = c->n - 1;
  if (c->rank == late)
    usleep(LATE_MS * 1000);
  int64_t t0 = symheap__now_ms(), cpu0 = cpu_ns();
  symheap_window_t w = NULL;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  int64_t wall = symheap__now_ms() - t0, cpu = cpu_ns() - cpu0;
  if (!w)
    return;
  if (c->rank != late) {
    CHECK(wall >= LATE_MS / 2,
          "the allocation returned after %lld ms, before "
          "the late rank arrived",
          (long long)wall);
    /* Yielding for the whole wait would burn most of a core; asleep, the
     * waiter uses a few milliseconds at most.  A quarter leaves room for
     * sanitizers and a loaded machine. */
    CHECK(cpu < (int64_t)wall * 1000000 / 4,
          "waited %lld ms using %lld ms of CPU: the waiter did not sleep",
          (long long)wall, (long long)(cpu / 1000000));
  }
  int *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  if (mine)
    *mine = 1000 + c->rank;
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int p = 0; p < c->n; p++) {
    int *theirs = NULL;
    CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&theirs));
    CHECK(theirs && *theirs == 1000 + p, "rank %d's mark reads %d", p,
          theirs ? *theirs : -1);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_free(c->comm, w));
}

static void case_rounds_after_sleep(th_ctx_t *c) {
  for (int round = 0; round < 5; round++) {
    if (c->rank == round % c->n)
      usleep(5 * 1000); /* long enough that the others go to sleep */
    for (int i = 0; i < 200; i++) {
      symheap_window_t w = NULL;
      symheap_result_t r = symheap_malloc(c->comm, 4096 << (i % 4), 0, &w);
      if (r == SYMHEAP_SUCCESS)
        r = symheap_free(c->comm, w);
      CHECK(r == SYMHEAP_SUCCESS, "round %d, pair %d: %s: %s", round, i,
            symheap_strerror(r), symheap_last_error());
      if (r != SYMHEAP_SUCCESS) /* every rank fails it: the comm broke */
        return;
    }
  }
}

/* symheap_comm_allgather carries up to 120 bytes per rank in its size
 * agreement over shared memory; larger ones go over the ccl after it.
 * Every size returns every rank's bytes; sizes that differ across ranks
 * (one small, one large included) fail on every rank, and the comm goes
 * on. */
static void case_small_allgather(th_ctx_t *c) {
  static const size_t sizes[] = {1, 8, 119, 120, 121, 4096};
  unsigned char in[4097];
  unsigned char *out = malloc((size_t)c->n * sizeof in);
  CHECK(out, "no memory for the test's buffer");
  if (!out)
    return; /* the others then fail their next call: the test fails anyway */
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    for (size_t i = 0; i < n; i++)
      in[i] = (unsigned char)(c->rank * 7 + i + s);
    memset(out, 0xee, n * (size_t)c->n);
    CHECK_OK(symheap_comm_allgather(c->comm, in, out, n));
    for (int p = 0; p < c->n; p++)
      for (size_t i = 0; i < n; i++)
        if (out[(size_t)p * n + i] != (unsigned char)(p * 7 + i + s)) {
          CHECK(0, "%zu bytes: rank %d's byte %zu reads %u", n, p, i,
                out[(size_t)p * n + i]);
          p = c->n; /* one line is enough; the calls stay in step */
          break;
        }
  }
  size_t mine[] = {8, 120, 200};
  for (size_t k = 0; k < sizeof mine / sizeof mine[0]; k++) {
    size_t n = mine[k] + (c->rank == c->n - 1 ? (k == 1 ? 100 : 1) : 0);
    CHECK_ERR(symheap_comm_allgather(c->comm, in, out, n),
              SYMHEAP_ERR_MISMATCH);
  }
  CHECK_OK(symheap_comm_allgather(c->comm, in, out, 8));
  free(out);
}

static const th_case_t cases[] = {
    {"late_rank", case_late_rank},
    {"rounds_after_sleep", case_rounds_after_sleep},
    {"small_allgather", case_small_allgather},
};

/* th_run_cases keeps the ranks in step between cases (a barrier after
 * each), even after a failure. */
static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  th_run_cases(c, tag, cases, sizeof cases / sizeof cases[0]);
}

/* --forked: FORKED_RANKS processes of this test, with a comm of their own.
 * The survivors (ranks 1..) tell the parent they are entering a barrier
 * (`ready`) and go to sleep in it, waiting for rank 0.  exit_after_complete:
 * the parent stops them (SIGSTOP), lets rank 0 in (`go`), which completes
 * the barrier and exits at once; then resumes them: they must succeed (their
 * peer published before it left).  dead_while_asleep: rank 0 dies instead;
 * they must fail within a second, naming it. */
typedef struct {
  int ready[2], go[2];
} pipes_t;

static void forked_rank(const symheap_unique_id_t *id, int rank, int die,
                        const pipes_t *io) {
  symheap_comm_t c = NULL;
  if (symheap_comm_init(&c, FORKED_RANKS, id, rank) != SYMHEAP_SUCCESS ||
      symheap_comm_barrier(c) != SYMHEAP_SUCCESS)
    _exit(10);
  if (rank == 0) {
    char b;
    if (read(io->go[0], &b, 1) != 1 || die)
      _exit(0);
    _exit(symheap_comm_barrier(c) == SYMHEAP_SUCCESS ? 0 : 11);
  }
  if (write(io->ready[1], "r", 1) != 1)
    _exit(14);
  int64_t t0 = symheap__now_ms();
  symheap_result_t r = symheap_comm_barrier(c);
  int64_t ms = symheap__now_ms() - t0;
  if (!die && r != SYMHEAP_SUCCESS) {
    printf("# rank %d: %s\n", rank, symheap_last_error());
    fflush(stdout);
    _exit(12);
  }
  if (die && (r != SYMHEAP_ERR_REMOTE ||
              !strstr(symheap_last_error(), "rank 0 is gone") || ms > 1000)) {
    printf("# rank %d: %s after %lld ms: %s\n", rank, symheap_strerror(r),
           (long long)ms, symheap_last_error());
    fflush(stdout);
    _exit(13);
  }
  _exit(0); /* no destroy: its final barrier would wait for rank 0 */
}

static void forked_round(int die, int k) {
  symheap_unique_id_t id;
  pipes_t io;
  CHECK_OK(symheap_get_unique_id(&id));
  CHECK(pipe(io.ready) == 0 && pipe(io.go) == 0, "pipe");
  fflush(stdout);
  pid_t pids[FORKED_RANKS];
  for (int r = 0; r < FORKED_RANKS; r++)
    if ((pids[r] = fork()) == 0)
      forked_rank(&id, r, die, &io);
  char b;
  for (int r = 1; r < FORKED_RANKS; r++)
    CHECK(read(io.ready[0], &b, 1) == 1, "rank %d did not start", r);
  usleep(50 * 1000); /* the survivors are asleep in the barrier */
  for (int r = 1; r < FORKED_RANKS && !die; r++)
    kill(pids[r], SIGSTOP);
  CHECK(write(io.go[1], "g", 1) == 1, "pipe");
  int st = 0;
  CHECK(waitpid(pids[0], &st, 0) == pids[0], "wait for rank 0");
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "round %d: rank 0: 0x%x", k, st);
  for (int r = 1; r < FORKED_RANKS; r++) {
    if (!die)
      kill(pids[r], SIGCONT);
    CHECK(waitpid(pids[r], &st, 0) == pids[r], "wait for rank %d", r);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "round %d: rank %d ended with status 0x%x", k, r, st);
  }
  close(io.ready[0]);
  close(io.ready[1]);
  close(io.go[0]);
  close(io.go[1]);
}

static void forked_case(const char *name, int die, int repeat) {
  th_begin("agree_wait_forked", name, 0);
  for (int k = 0; k < repeat && !th_total_failures(); k++)
    forked_round(die, k);
  th_end();
}

/* hog_on_the_core (--forked): two ranks, each on a CPU of its own that it
 * shares with a busy loop that is no rank.  A yield cannot reach the peer
 * (it runs elsewhere) and hands the CPU to the busy loop for its whole
 * time slice (milliseconds), so a rank that kept yielding would take that
 * long per agreement; after a slow yield it sleeps instead, and the median
 * malloc + free pair stays well under a millisecond. */
#define HOG_PAIRS 301

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static void pin(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  (void)sched_setaffinity(0, sizeof one, &one);
}

static void hog_rank(const symheap_unique_id_t *id, int rank, int out) {
  symheap_comm_t c = NULL;
  static int64_t us[HOG_PAIRS];
  if (symheap_comm_init(&c, 2, id, rank) != SYMHEAP_SUCCESS ||
      symheap_heap_reserve(c, 1 << 20) != SYMHEAP_SUCCESS)
    _exit(10);
  for (int i = 0; i < HOG_PAIRS; i++) {
    symheap_window_t w;
    int64_t t0 = (int64_t)symheap__now_ns();
    if (symheap_malloc(c, 4096, 0, &w) != SYMHEAP_SUCCESS ||
        symheap_free(c, w) != SYMHEAP_SUCCESS)
      _exit(11);
    us[i] = ((int64_t)symheap__now_ns() - t0) / 1000;
  }
  qsort(us, HOG_PAIRS, sizeof us[0], cmp_i64);
  if (write(out, &us[HOG_PAIRS / 2], sizeof us[0]) != (ssize_t)sizeof us[0])
    _exit(12);
  _exit(symheap_comm_destroy(c) == SYMHEAP_SUCCESS ? 0 : 13);
}

static void case_hog_on_the_core(void) {
  cpu_set_t mine;
  int cpu[2], n = 0;
  CPU_ZERO(&mine);
  (void)sched_getaffinity(0, sizeof mine, &mine);
  for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
    if (CPU_ISSET(i, &mine))
      cpu[n++] = i;
  if (n < 2) {
    printf("SKIP agree_wait_forked/hog_on_the_core: needs 2 CPUs\n");
    return;
  }
  th_begin("agree_wait_forked", "hog_on_the_core", 0);
  symheap_unique_id_t id;
  int fd[2];
  CHECK_OK(symheap_get_unique_id(&id));
  CHECK(pipe(fd) == 0, "pipe");
  fflush(stdout);
  pid_t hogs[2], ranks[2];
  for (int r = 0; r < 2; r++)
    if ((hogs[r] = fork()) == 0) {
      pin(cpu[r]);
      for (volatile unsigned long spin = 0;; spin++)
        ;
    }
  for (int r = 0; r < 2; r++)
    if ((ranks[r] = fork()) == 0) {
      pin(cpu[r]);
      hog_rank(&id, r, fd[1]);
    }
  for (int r = 0; r < 2; r++) {
    int st = 0;
    CHECK(ranks[r] > 0 && waitpid(ranks[r], &st, 0) == ranks[r], "wait");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d: status 0x%x", r, st);
  }
  for (int r = 0; r < 2; r++) {
    kill(hogs[r], SIGKILL);
    waitpid(hogs[r], NULL, 0);
  }
  int64_t median[2] = {-1, -1};
  for (int r = 0; r < 2; r++)
    CHECK(read(fd[0], &median[r], sizeof median[r]) ==
              (ssize_t)sizeof median[r],
          "a rank did not report");
  for (int r = 0; r < 2; r++)
    CHECK(median[r] >= 0 && median[r] < 1000,
          "median pair %lld us beside a busy loop on each rank's CPU",
          (long long)median[r]);
  printf("# hog_on_the_core: median pair %lld us, %lld us\n",
         (long long)median[0], (long long)median[1]);
  close(fd[0]);
  close(fd[1]);
  th_end();
}

int main(int argc, char **argv) {
  setenv("SYMHEAP_HEAP_CHUNK", "1M", 0);
  setenv("SYMHEAP_HEAP_RESERVE", "64M", 0);
  if (argc == 2 && strcmp(argv[1], "--forked") == 0) {
    setenv("SYMHEAP_TIMEOUT_MS", "20000", 0); /* gone is seen long before */
    forked_case("exit_after_complete", 0, 3);
    forked_case("dead_while_asleep", 1, 3);
    if (getenv("SYMHEAP_TEST_UNDER_TOOL")) /* a time bound: not under tools */
      printf("SKIP agree_wait_forked/hog_on_the_core: timed, and %s slows "
             "every call\n",
             getenv("SYMHEAP_TEST_UNDER_TOOL"));
    else
      case_hog_on_the_core();
    return th_total_failures() ? 1 : 0;
  }
  if (argc == 3 && strcmp(argv[1], "--mixed") == 0)
    return th_run_mixed(atoi(argv[2]), "agree_wait_", tag, sizeof tag, NULL,
                        NULL, run_cases, NULL);
  return th_main(argc, argv, "agree_wait_", tag, sizeof tag, NULL, run_cases,
                 NULL);
}

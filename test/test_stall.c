/* A rank stalled (SIGSTOP, then SIGCONT after TH_RECORD_STOP_MS) before a
 * barrier, inside the descriptor exchange of a registration, or inside its
 * set_access.  3 ranks as processes on the recording adaptor, timeout T.
 *  - Every survivor gets SYMHEAP_ERR_TIMEOUT or SYMHEAP_ERR_REMOTE from the
 *    call that waited, within T + 1 s (one deadline per collective call,
 *    not one per step), naming the stalled rank.
 *  - The stalled rank, once resumed, fails that same call too (it once
 *    returned SUCCESS for a barrier its peers had failed): the peers that
 *    gave up poisoned it, and its message says so.
 * One line per case ("# stall ...") feeds docs/reliability.md. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "base/internal.h"

#define NRANKS 3
#define TIMEOUT_MS 1500

typedef struct {
  const char *where; /* "barrier", or a device op of symheap_malloc */
  int nth;
  int late_ms; /* rank 1 makes the call this much after the others */
} point_t;

static const point_t points[] = {
    {"barrier", 0, 0},
    {"heap", 0, 0},       /* a malloc the heap serves from memory it has: one
                            agreement over host shared memory, no device call */
    {"mem_export", 1, 0}, /* just before the descriptor exchange */
    {"set_access", 2, 0}, /* after the peers' memory is mapped */
    /* A survivor that starts late has a later deadline: when the first
     * survivor's passes, the late one is still in its failing exchange, and
     * was once blamed instead of the stalled rank. */
    {"mem_export", 1, 300},
};

typedef struct {
  int rank;
  int code, ms;
  int named; /* a survivor's message names the victim */
  char msg[240];
} report_t;

static void rank_main(const symheap_unique_id_t *id, int rank, int victim,
                      const point_t *p, int out) {
  report_t rep;
  memset(&rep, 0, sizeof rep);
  rep.rank = rank;
  symheap_comm_t c = NULL;
  symheap_window_t w = NULL;
  symheap_result_t r = symheap_comm_init(&c, NRANKS, id, rank);
  int barrier = strcmp(p->where, "barrier") == 0;
  int heap = strcmp(p->where, "heap") == 0;
  if (r == SYMHEAP_SUCCESS && heap) { /* the heap has room from here on */
    r = symheap_malloc(c, 1 << 20, 0, &w);
    if (r == SYMHEAP_SUCCESS)
      r = symheap_free(c, w);
    w = NULL;
  }
  if (r == SYMHEAP_SUCCESS && rank == victim && !barrier && !heap)
    th_record_fault(p->where, rank, th_record_count(p->where, rank) + p->nth,
                    TH_RECORD_STOP);
  int64_t t0 = symheap__now_ms();
  if (r == SYMHEAP_SUCCESS && (barrier || heap)) {
    if (rank == victim)
      th_stop_self(TH_RECORD_STOP_MS);
    t0 = symheap__now_ms();
    r = barrier ? symheap_comm_barrier(c) : symheap_malloc(c, 1 << 20, 0, &w);
  } else if (r == SYMHEAP_SUCCESS) {
    if (rank == 1 && p->late_ms) {
      usleep((useconds_t)p->late_ms * 1000);
      t0 = symheap__now_ms();
    }
    r = symheap_malloc(c, 1 << 20, 0, &w);
  }
  rep.code = r;
  rep.ms = (int)(symheap__now_ms() - t0);
  char want[16];
  snprintf(want, sizeof want, "rank %d", victim);
  rep.named = strstr(symheap_last_error(), want) != NULL;
  snprintf(rep.msg, sizeof rep.msg, "%s", symheap_last_error());
  if (w)
    symheap_free(c, w);
  if (c)
    symheap_comm_destroy(c);
  if (write(out, &rep, sizeof rep) != (ssize_t)sizeof rep)
    _exit(9);
  _exit(0);
}

static void run_case(const point_t *p, int victim) {
  char name[96];
  snprintf(name, sizeof name, "stall_rank%d_%s%s", victim, p->where,
           p->late_ms ? "_rank1_late" : "");
  th_begin("stall", name, 0);
  symheap_unique_id_t id;
  CHECK_OK(symheap_get_unique_id(&id));
  int pfd[2];
  CHECK(pipe(pfd) == 0, "pipe");
  th_record_reset(0);
  fflush(stdout);
  pid_t pids[NRANKS];
  for (int r = 0; r < NRANKS; r++)
    if ((pids[r] = fork()) == 0) {
      close(pfd[0]);
      rank_main(&id, r, victim, p, pfd[1]);
    }
  close(pfd[1]);
  for (int r = 0; r < NRANKS; r++) {
    int st;
    waitpid(pids[r], &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d: status 0x%x", r, st);
  }
  report_t rep;
  int reports = 0, worst = 0, victim_ms = 0;
  char victim_code[64] = "?";
  while (read(pfd[0], &rep, sizeof rep) == (ssize_t)sizeof rep) {
    reports++;
    if (rep.rank == victim) {
      CHECK(rep.code != SYMHEAP_SUCCESS,
            "the stalled rank %d completed the %s its peers failed", victim,
            p->where);
      CHECK(strstr(rep.msg, "gave up") || strstr(rep.msg, "reported by rank 0"),
            "the stalled rank's message does not say its peers gave up: %s",
            rep.msg);
      snprintf(victim_code, sizeof victim_code, "%s",
               rep.code ? symheap_strerror(rep.code) : "SUCCESS");
      victim_ms = rep.ms;
      continue;
    }
    CHECK(rep.code == SYMHEAP_ERR_TIMEOUT || rep.code == SYMHEAP_ERR_REMOTE,
          "survivor %d got %s (%s)", rep.rank,
          rep.code ? symheap_strerror(rep.code) : "no error", rep.msg);
    CHECK(rep.ms <= TIMEOUT_MS + 1000, "survivor %d waited %d ms", rep.rank,
          rep.ms);
    CHECK(rep.named, "survivor %d's message does not name rank %d: %s",
          rep.rank, victim, rep.msg);
    if (rep.ms > worst)
      worst = rep.ms;
  }
  close(pfd[0]);
  CHECK(reports == NRANKS, "%d ranks reported", reports);
  printf("# stall | %s%s | rank %d | survivors failed in at most %d ms (T = %d "
         "ms) | the stalled rank, resumed after %d ms: %s (%d ms) |\n",
         p->where, p->late_ms ? " (rank 1 starts 300 ms late)" : "", victim,
         worst, TIMEOUT_MS, TH_RECORD_STOP_MS, victim_code, victim_ms);
  th_end();
}

int main(void) {
  if (symheap_register_device_adaptor(&th_record_ops) != SYMHEAP_SUCCESS) {
    printf("FAIL stall/register_adaptor: %s\n", symheap_last_error());
    return 1;
  }
  char tmo[16];
  snprintf(tmo, sizeof tmo, "%d", TIMEOUT_MS);
  setenv("SYMHEAP_TIMEOUT_MS", tmo, 1);
  setenv("SYMHEAP_DEVICE", "record", 1);
  setenv("SYMHEAP_DEBUG", "NONE", 1);
  for (size_t i = 0; i < sizeof points / sizeof points[0]; i++)
    for (int victim = 0; victim < NRANKS; victim += 2)
      run_case(&points[i], victim);
  return th_total_failures() ? 1 : 0;
}

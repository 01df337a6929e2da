/* A rank killed (SIGKILL) at each stage of comm init, window registration
 * and deregistration.  3 ranks as processes on the recording adaptor; the
 * victim arms a kill at the first call of one device operation of one
 * stage.  Every survivor must get SYMHEAP_ERR_REMOTE or SYMHEAP_ERR_TIMEOUT
 * from the call that was waiting for the victim, within the timeout plus one
 * second, with a message naming the victim; and after destroying its comm it
 * must hold the descriptors and mappings it started with.  One line per case
 * ("# kill ...") feeds docs/reliability.md. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "base/internal.h"

#define NRANKS 3
#define TIMEOUT_MS 2000

typedef struct {
  const char *stage; /* init, register, deregister */
  const char *op;    /* the device operation the victim dies in */
  int nth;           /* which call of it, counted from the stage's start */
} point_t;

static const point_t points[] = {
    {"init", "init", 1},
    {"init", "mem_create", 1},
    {"init", "mem_export", 1},
    {"init", "mem_import", 1},
    {"init", "map", 2},
    {"init", "set_access", 2},
    {"init", "mem_zero", 1},
    {"register", "mem_create", 1},
    {"register", "mem_export", 1},
    {"register", "mem_import", 1},
    {"register", "va_reserve", 2},
    {"register", "map", 2},
    {"register", "set_access", 2},
    {"deregister", "mem_zero", 1},
    {"deregister", "unmap", 1},
    {"deregister", "va_free", 1},
};

typedef struct {
  int code;   /* the first failure's code, or 0 */
  int ms;     /* how long that call took */
  int named;  /* its message names the victim */
  int leaked; /* fds or mappings differ from the start after destroy */
  char where[24];
  char msg[200];
} report_t;

static int stage_index(const char *s) {
  return strcmp(s, "init") == 0 ? 0 : strcmp(s, "register") == 0 ? 1 : 2;
}

static void arm(const point_t *p, int rank) {
  th_record_reset(0);
  th_record_fault(p->op, rank, p->nth, TH_RECORD_KILL);
}

/* One rank's run: init, malloc, free, barrier, destroy. */
static void rank_main(const symheap_unique_id_t *id, int rank, int victim,
                      const point_t *p, int out) {
  report_t rep;
  memset(&rep, 0, sizeof rep);
  int fds0 = th_count_fds(), maps0 = th_count_symheap_maps();
  int stage = stage_index(p->stage);
  symheap_comm_t c = NULL;
  symheap_window_t w = NULL;
  const char *names[] = {"comm_init", "malloc", "free", "barrier"};
  for (int step = 0; step < 4; step++) {
    if (rank == victim && step == stage)
      arm(p, rank);
    int64_t t0 = symheap__now_ms();
    symheap_result_t r = step == 0   ? symheap_comm_init(&c, NRANKS, id, rank)
                         : step == 1 ? symheap_malloc(c, 1 << 20, 0, &w)
                         : step == 2 ? symheap_free(c, w)
                                     : symheap_comm_barrier(c);
    if (r == SYMHEAP_SUCCESS && step == 1) {
      /* as device code would: then the deregistration clears its slot */
      symheap_device_window_t v;
      r = symheap_window_device_view(w, &v);
    }
    if (r != SYMHEAP_SUCCESS) {
      char want[16];
      snprintf(want, sizeof want, "rank %d", victim);
      rep.code = r;
      rep.ms = (int)(symheap__now_ms() - t0);
      rep.named = strstr(symheap_last_error(), want) != NULL;
      snprintf(rep.where, sizeof rep.where, "%s", names[step]);
      snprintf(rep.msg, sizeof rep.msg, "%s", symheap_last_error());
      if (step == 2)
        w = NULL; /* a failed free still released this rank's part */
      break;
    }
  }
  if (c)
    symheap_comm_destroy(c);
  rep.leaked = th_count_fds() != fds0 || th_count_symheap_maps() != maps0;
  if (write(out, &rep, sizeof rep) != (ssize_t)sizeof rep)
    _exit(9);
  _exit(0);
}

static int run_case(const point_t *p, int victim, char *row, size_t rowlen) {
  char name[96];
  snprintf(name, sizeof name, "kill_rank%d_%s_%s", victim, p->stage, p->op);
  th_begin("kill", name, 0);
  symheap_unique_id_t id;
  CHECK_OK(symheap_get_unique_id(&id));
  int pfd[2];
  CHECK(pipe(pfd) == 0, "pipe");
  fflush(stdout);
  pid_t pids[NRANKS];
  for (int r = 0; r < NRANKS; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      close(pfd[0]);
      rank_main(&id, r, victim, p, pfd[1]);
    }
  }
  close(pfd[1]);
  int worst_ms = 0, ok = 1, died = 0;
  char codes[64] = "";
  for (int r = 0; r < NRANKS; r++) {
    int st;
    waitpid(pids[r], &st, 0);
    if (r == victim) {
      died = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
      CHECK(died, "the victim was not killed at %s/%s (status 0x%x)", p->stage,
            p->op, st);
    } else {
      CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d: status 0x%x", r,
            st);
    }
  }
  report_t rep;
  int survivors = 0;
  while (read(pfd[0], &rep, sizeof rep) == (ssize_t)sizeof rep) {
    survivors++;
    CHECK(rep.code == SYMHEAP_ERR_REMOTE || rep.code == SYMHEAP_ERR_TIMEOUT,
          "a survivor got %s in %s (%s)",
          rep.code ? symheap_strerror(rep.code) : "no error", rep.where,
          rep.msg);
    CHECK(rep.ms <= TIMEOUT_MS + 1000, "a survivor waited %d ms in %s", rep.ms,
          rep.where);
    CHECK(rep.named, "a survivor's message does not name rank %d: %s", victim,
          rep.msg);
    CHECK(!rep.leaked, "a survivor holds other fds or mappings after destroy");
    ok &= !rep.leaked && rep.named && rep.ms <= TIMEOUT_MS + 1000;
    if (rep.ms > worst_ms)
      worst_ms = rep.ms;
    if (!strstr(codes, rep.code == SYMHEAP_ERR_TIMEOUT ? "TIMEOUT" : "REMOTE"))
      snprintf(codes + strlen(codes), sizeof codes - strlen(codes), "%s%s",
               codes[0] ? "/" : "",
               rep.code == SYMHEAP_ERR_TIMEOUT ? "TIMEOUT" : "REMOTE");
    snprintf(row, rowlen, "| %s | `%s` | %d | %s in `%s` | %d ms | %s |",
             p->stage, p->op, victim, codes, rep.where, worst_ms,
             ok ? "yes" : "**no**");
  }
  close(pfd[0]);
  CHECK(survivors == NRANKS - 1, "%d survivors reported", survivors);
  th_end();
  return died;
}

int main(void) {
  /* Kills in the registration path's steps; the heap's growth is swept
   * for faults in test_cuda_fake and test_heap. */
  setenv("SYMHEAP_HEAP", "0", 1);
  if (symheap_register_device_adaptor(&th_record_ops) != SYMHEAP_SUCCESS) {
    printf("FAIL kill/register_adaptor: %s\n", symheap_last_error());
    return 1;
  }
  char tmo[16];
  snprintf(tmo, sizeof tmo, "%d", TIMEOUT_MS);
  setenv("SYMHEAP_TIMEOUT_MS", tmo, 1);
  setenv("SYMHEAP_DEVICE", "record", 1);
  setenv("SYMHEAP_DEBUG", "NONE", 1); /* the survivors' warnings are expected */
  int cases = 0;
  printf("# | stage | killed in | victim | survivors got | slowest | "
         "everything released |\n");
  for (size_t i = 0; i < sizeof points / sizeof points[0]; i++)
    for (int victim = 0; victim < NRANKS; victim += 2) {
      char row[256] = "";
      cases += run_case(&points[i], victim, row, sizeof row);
      printf("# %s\n", row);
    }
  printf("# %d kills, %d survivors each\n", cases, NRANKS - 1);
  return th_total_failures() ? 1 : 0;
}

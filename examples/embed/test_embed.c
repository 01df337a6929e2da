/* minicoll, the embedding example, as a test: 4 processes bootstrap with
 * minicoll's own TCP star, build a symheap comm on it, and all-reduce twice
 * (the window grows in between), every element checked exactly.  Then
 * symheap_comm_init_ccl's refusals. */
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "minicoll.h"
#include "symheap.h"
#include "symheap_adaptor.h"

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) ||
      getsockname(s, (struct sockaddr *)&a, &len))
    return 20000 + getpid() % 20000;
  close(s);
  return ntohs(a.sin_port);
}

static int rank_main(int rank, int n, int port) {
  minicoll_t *mc;
  if (minicoll_init(&mc, rank, n, port) != 0) {
    printf("FAIL embed/allreduce [rank %d] init: %s\n", rank, minicoll_error());
    return 1;
  }
  int bad = 0;
  const size_t counts[] = {1000, 100003};
  for (int k = 0; k < 2; k++) {
    size_t count = counts[k];
    float *d = malloc(count * sizeof *d);
    for (size_t i = 0; i < count; i++)
      d[i] = (float)((rank + 1) * (int)(i % 1024)) / 8.0f;
    if (minicoll_allreduce_f32(mc, d, count) != 0) {
      printf("FAIL embed/allreduce [rank %d] %s\n", rank, minicoll_error());
      bad = 1;
    }
    for (size_t i = 0; i < count && !bad; i++) {
      float want = (float)(n * (n + 1) / 2 * (int)(i % 1024)) / 8.0f;
      if (d[i] != want) {
        printf("FAIL embed/allreduce [rank %d] count %zu: [%zu] = %g, want "
               "%g\n",
               rank, count, i, d[i], want);
        bad = 1;
      }
    }
    free(d);
  }
  /* symheap_comm_split of the comm rides on minicoll's own split: halves,
   * each a comm whose ccl is minicoll, with windows that work. */
  symheap_comm_t half = NULL;
  symheap_result_t r =
      symheap_comm_split(minicoll_symheap_comm(mc), rank % 2, rank, &half);
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  if (r == SYMHEAP_SUCCESS)
    r = symheap_comm_get_info(half, &info);
  if (r != SYMHEAP_SUCCESS || strcmp(info.ccl_adaptor, "minicoll") != 0) {
    printf("FAIL embed/split [rank %d] %s (ccl '%s')\n", rank,
           symheap_last_error(), info.ccl_adaptor);
    bad = 1;
  } else {
    symheap_window_t w;
    int hr, hn, *mine, *peer;
    symheap_comm_rank(half, &hr);
    symheap_comm_size(half, &hn);
    r = symheap_malloc(half, 4096, 0, &w);
    if (r == SYMHEAP_SUCCESS) {
      symheap_window_local_ptr(w, (void **)&mine);
      *mine = 70 + rank;
      symheap_comm_barrier(half);
      symheap_window_peer_ptr(w, (hr + 1) % hn, (void **)&peer);
      /* the next member of this half is rank + 2 in the parent */
      if (*peer != 70 + (rank + 2) % n) {
        printf("FAIL embed/split [rank %d] read %d from its peer\n", rank,
               *peer);
        bad = 1;
      }
      symheap_comm_barrier(half);
      symheap_free(half, w);
    } else {
      printf("FAIL embed/split [rank %d] malloc: %s\n", rank,
             symheap_last_error());
      bad = 1;
    }
    symheap_comm_destroy(half);
  }
  minicoll_finalize(mc);
  return bad;
}

static int64_t ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* minicoll keeps the ccl contract on timeouts: rank 3 stalls (SIGSTOP for
 * 4 s) and the others' all-reduce fails with SYMHEAP_ERR_TIMEOUT within the
 * timeout plus a second, once per call rather than once per system call. */
static int rank_stall(int rank, int n, int port) {
  minicoll_t *mc;
  setenv("SYMHEAP_TIMEOUT_MS", "1500", 1);
  if (minicoll_init(&mc, rank, n, port) != 0) {
    printf("FAIL embed/stall [rank %d] init: %s\n", rank, minicoll_error());
    return 1;
  }
  float d[16] = {0};
  int bad = minicoll_allreduce_f32(mc, d, 16) != 0;
  if (rank == 3) {
    pid_t me = getpid();
    if (fork() == 0) {
      usleep(4000 * 1000);
      kill(me, SIGCONT);
      _exit(0);
    }
    raise(SIGSTOP);
    minicoll_finalize(mc);
    return 0; /* the stalled rank's own outcome is the bootstrap's concern */
  }
  int64_t t0 = ms_now();
  int failed = minicoll_allreduce_f32(mc, d, 16) != 0;
  int64_t ms = ms_now() - t0;
  /* Rank 0 times out on rank 3; the others time out too, or see rank 0 go
   * once it gave up: either way, within one timeout, saying which. */
  const char *e = minicoll_error();
  int said = rank == 0 ? strstr(e, "rank 3 did not answer within") != NULL
                       : strstr(e, "did not answer within") ||
                             strstr(e, "lost rank 0");
  if (!failed || !said || ms > 2500) {
    printf("FAIL embed/stall [rank %d] all-reduce with a stalled peer: %s "
           "after %lld ms (%s)\n",
           rank, failed ? "failed" : "succeeded", (long long)ms,
           minicoll_error());
    bad = 1;
  }
  minicoll_finalize(mc);
  return bad;
}

static int one(void *c) {
  (void)c;
  return 1;
}
static symheap_result_t no_deregister(void *ctx, void *handle) {
  (void)ctx;
  (void)handle;
  return SYMHEAP_SUCCESS;
}
static int zero(void *c) {
  (void)c;
  return 0;
}
static symheap_result_t gather(void *c, const void *in, void *out, size_t b,
                               int t) {
  (void)c, (void)t;
  memcpy(out, in, b);
  return SYMHEAP_SUCCESS;
}

int main(void) {
  const int n = 4;
  int port = free_port(), failed = 0;
  fflush(stdout);
  pid_t pids[4];
  for (int r = 0; r < n; r++)
    if ((pids[r] = fork()) == 0) {
      setenv("SYMHEAP_DEVICE", "host", 1);
      fflush(stdout);
      _exit(rank_main(r, n, port));
    }
  for (int r = 0; r < n; r++) {
    int st;
    waitpid(pids[r], &st, 0);
    failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  printf("%s embed/allreduce_and_split_over_symheap_on_own_bootstrap\n",
         failed ? "FAIL" : "PASS");
  port = free_port();
  failed = 0;
  fflush(stdout);
  for (int r = 0; r < n; r++)
    if ((pids[r] = fork()) == 0) {
      setenv("SYMHEAP_DEVICE", "host", 1);
      setenv("SYMHEAP_DEBUG", "NONE", 1);
      int rc = rank_stall(r, n, port);
      fflush(stdout);
      _exit(rc);
    }
  for (int r = 0; r < n; r++) {
    int st;
    waitpid(pids[r], &st, 0);
    failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  printf("%s embed/timeout_is_a_timeout_bounded_per_call\n",
         failed ? "FAIL" : "PASS");

  /* The table is checked before anything happens. */
  symheap_ccl_ops ops = {.abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
                         .struct_size = sizeof ops,
                         .name = "t",
                         .rank = zero,
                         .size = one,
                         .allgather = gather};
  symheap_comm_t c;
  int ok = 1;
  symheap_ccl_ops bad = ops;
  bad.abi_version = 99;
  ok &= symheap_comm_init_ccl(&c, &bad, NULL) == SYMHEAP_ERR_PLUGIN &&
        strstr(symheap_last_error(), "ABI version 99") != NULL;
  bad = ops;
  bad.allgather = NULL;
  ok &= symheap_comm_init_ccl(&c, &bad, NULL) == SYMHEAP_ERR_PLUGIN &&
        strstr(symheap_last_error(), "'allgather'") != NULL;
  bad = ops;
  bad.window_deregister = no_deregister; /* without window_register */
  ok &= symheap_comm_init_ccl(&c, &bad, NULL) == SYMHEAP_ERR_PLUGIN &&
        strstr(symheap_last_error(), "'window_register") != NULL;
  bad = ops;
  bad.rank = one;
  bad.size = one; /* rank 1 of 1 */
  ok &= symheap_comm_init_ccl(&c, &bad, NULL) == SYMHEAP_ERR_INVALID_ARG;
  ok &= symheap_comm_init_ccl(NULL, &ops, NULL) == SYMHEAP_ERR_INVALID_ARG;
  /* and a good one-rank table makes a working comm */
  setenv("SYMHEAP_DEVICE", "host", 1);
  symheap_window_t w;
  ok &= symheap_comm_init_ccl(&c, &ops, NULL) == SYMHEAP_SUCCESS &&
        symheap_malloc(c, 4096, 0, &w) == SYMHEAP_SUCCESS &&
        symheap_free(c, w) == SYMHEAP_SUCCESS &&
        symheap_comm_destroy(c) == SYMHEAP_SUCCESS;
  printf("%s embed/init_ccl_checks_the_table%s%s\n", ok ? "PASS" : "FAIL",
         ok ? "" : ": ", ok ? "" : symheap_last_error());
  return failed || !ok;
}

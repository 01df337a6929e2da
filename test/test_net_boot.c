/* Ranks on two hosts (test/net_boot.sh runs it across two network
 * namespaces with symheap-run --hosts A:k,B:k --rsh 'ip netns exec'): what
 * works across hosts without a net adaptor, and the bootstrap's faults.
 *   test_net_boot suite     init, host map, barrier, allgather, split,
 *                           split_local, a window over the host teams, destroy
 *   test_net_boot linkdown  barriers until one fails (net_boot.sh takes the
 *                           link down): within SYMHEAP_TIMEOUT_MS + 1 s
 *   test_net_boot join      init after SYMHEAP_TEST_JOIN_DELAY_MS on ranks
 *                           other than 0 (strangers knock meanwhile), then a
 *                           barrier and an allgather
 *   test_net_boot crash     rank 1 dies of SIGSEGV once every rank is in
 *   test_net_boot killed    the same by SIGKILL */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h" /* the host map */
#include "harness.h"

static char tag[32];

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Every rank's bytes, in rounds (256 KiB per rank takes several). */
static void check_allgather(th_ctx_t *c, symheap_comm_t comm, int rank, int n,
                            size_t bytes) {
  unsigned char *in = malloc(bytes), *out = malloc(bytes * (size_t)n);
  if (!in || !out) {
    CHECK(0, "no memory");
    free(in);
    free(out);
    return;
  }
  for (size_t i = 0; i < bytes; i++)
    in[i] = (unsigned char)(rank * 31 + i * 7);
  CHECK_OK(symheap_comm_allgather(comm, in, out, bytes));
  for (int p = 0; p < n; p++)
    for (size_t i = 0; i < bytes; i++)
      if (out[(size_t)p * bytes + i] != (unsigned char)(p * 31 + i * 7)) {
        CHECK(0, "allgather of %zu: rank %d byte %zu wrong", bytes, p, i);
        p = n;
        break;
      }
  (void)c;
  free(in);
  free(out);
}

/* Ranks 0..n/2-1 on host A, the rest on B (symheap-run's order). */
static int host_of(int rank, int n) { return rank >= n / 2; }

static void case_hosts(th_ctx_t *c) {
  th_begin(tag, "host_map", c->rank);
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  CHECK(info.nhosts == 2 && info.local_nranks == c->n / 2 &&
            info.local_rank == c->rank % (c->n / 2),
        "nhosts %d, local rank %d of %d", info.nhosts, info.local_rank,
        info.local_nranks);
  /* The internal host map the net paths use. */
  for (int p = 0; p < c->n; p++)
    CHECK(symheap__comm_host(c->comm, p) == host_of(p, c->n),
          "rank %d on host %d", p, symheap__comm_host(c->comm, p));
  CHECK(symheap__comm_host_nranks(c->comm, 0) == c->n / 2 &&
            symheap__comm_host_nranks(c->comm, 1) == c->n - c->n / 2,
        "ranks per host %d, %d", symheap__comm_host_nranks(c->comm, 0),
        symheap__comm_host_nranks(c->comm, 1));
  int ranks[8], count = 0;
  CHECK_OK(symheap_comm_local_ranks(c->comm, ranks, 8, &count));
  for (int i = 0; i < count; i++)
    CHECK(host_of(ranks[i], c->n) == host_of(c->rank, c->n),
          "local rank %d is on the other host", ranks[i]);
  th_end();
}

static void case_collectives(th_ctx_t *c) {
  th_begin(tag, "barrier_allgather", c->rank);
  for (int i = 0; i < 20; i++)
    CHECK_OK(symheap_comm_barrier(c->comm));
  check_allgather(c, c->comm, c->rank, c->n, 8);
  check_allgather(c, c->comm, c->rank, c->n, 256 << 10);
  th_end();
}

/* A split across hosts (even and odd ranks: each child spans both hosts
 * with 4 ranks) and the host teams (split_local). */
static void case_split(th_ctx_t *c) {
  th_begin(tag, "split_across_and_local", c->rank);
  symheap_comm_t sub = NULL, local = NULL;
  CHECK_OK(symheap_comm_split(c->comm, c->rank % 2, c->rank, &sub));
  if (sub) {
    int r = -1, n = 0;
    CHECK_OK(symheap_comm_rank(sub, &r));
    CHECK_OK(symheap_comm_size(sub, &n));
    CHECK(r == c->rank / 2 && n == c->n / 2, "split: rank %d of %d", r, n);
    CHECK_OK(symheap_comm_barrier(sub));
    check_allgather(c, sub, r, n, 100);
    CHECK_OK(symheap_comm_destroy(sub));
  }
  CHECK_OK(symheap_comm_split_local(c->comm, &local));
  if (local) {
    symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
    CHECK_OK(symheap_comm_get_info(local, &info));
    CHECK(info.nranks == c->n / 2 && info.nhosts == 1,
          "split_local: %d ranks on %d hosts", info.nranks, info.nhosts);
    CHECK_OK(symheap_comm_barrier(local));
    CHECK_OK(symheap_comm_destroy(local));
  }
  th_end();
}

/* Windows map the host team only: a same-host peer by load/store, the
 * other host refused (no net adaptor here). */
static void case_window(th_ctx_t *c) {
  th_begin(tag, "window_host_team", c->rank);
  symheap_window_t w = NULL;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  unsigned char *mine = NULL;
  if (w)
    CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  if (mine)
    memset(mine, 0x40 + c->rank, 4096);
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int p = 0; w && p < c->n; p++) {
    void *ptr = NULL;
    symheap_result_t r = symheap_window_peer_ptr(w, p, &ptr);
    if (host_of(p, c->n) == host_of(c->rank, c->n)) {
      CHECK(r == SYMHEAP_SUCCESS && ptr &&
                ((unsigned char *)ptr)[4095] == 0x40 + p,
            "same-host peer %d: %s", p, symheap_last_error());
    } else {
      CHECK(r == SYMHEAP_ERR_UNSUPPORTED && !ptr,
            "peer %d on the other host: %s", p, symheap_strerror(r));
    }
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (w)
    CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* The link goes down mid-job: the failing barrier returns within the
 * timeout + 1 s, on every rank. */
static void case_linkdown(th_ctx_t *c) {
  th_begin(tag, "link_down", c->rank);
  long timeout = atol(
      getenv("SYMHEAP_TIMEOUT_MS") ? getenv("SYMHEAP_TIMEOUT_MS") : "30000");
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    printf("READY\n");
    fflush(stdout);
  }
  int64_t start = now_ms(), took = 0;
  symheap_result_t r = SYMHEAP_SUCCESS;
  for (int i = 0; r == SYMHEAP_SUCCESS && now_ms() - start < 60000; i++) {
    int64_t t0 = now_ms();
    r = symheap_comm_barrier(c->comm);
    took = now_ms() - t0;
    if (r == SYMHEAP_SUCCESS)
      usleep(20000);
  }
  CHECK(r == SYMHEAP_ERR_TIMEOUT || r == SYMHEAP_ERR_REMOTE,
        "barrier after the link went down: %s", symheap_strerror(r));
  CHECK(took <= timeout + 1000,
        "the failing barrier took %lld ms (timeout %ld)", (long long)took,
        timeout);
  printf("# rank %d: %s after %lld ms: %s\n", c->rank, symheap_strerror(r),
         (long long)took, symheap_last_error());
  int64_t t0 = now_ms();
  CHECK_OK(symheap_comm_destroy(c->comm));
  CHECK(now_ms() - t0 < 2000, "destroy took %lld ms",
        (long long)(now_ms() - t0));
  c->comm = NULL;
  th_end();
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "suite";
  th_ctx_t c = {NULL, 0, 0};
  const char *delay = getenv("SYMHEAP_TEST_JOIN_DELAY_MS");
  const char *rank = getenv("SYMHEAP_RANK");
  if (strcmp(mode, "join") == 0 && delay && rank && atoi(rank) != 0)
    usleep((useconds_t)atoi(delay) * 1000);
  symheap_result_t r = symheap_comm_init_env(&c.comm);
  if (r != SYMHEAP_SUCCESS) {
    printf("FAIL %s/init %s\n", mode, symheap_last_error());
    return 1;
  }
  symheap_comm_rank(c.comm, &c.rank);
  symheap_comm_size(c.comm, &c.n);
  snprintf(tag, sizeof tag, "%s%d", mode, c.n);
  if (strcmp(mode, "suite") == 0) {
    case_hosts(&c);
    case_collectives(&c);
    case_split(&c);
    case_window(&c);
  } else if (strcmp(mode, "linkdown") == 0) {
    case_linkdown(&c);
  } else if (strcmp(mode, "hang") == 0 || strcmp(mode, "fail") == 0) {
    CHECK_OK(symheap_comm_barrier(c.comm));
    printf("READY %d\n", c.rank);
    fflush(stdout);
    if (strcmp(mode, "fail") == 0 && c.rank == c.n - 1)
      return 3;
    sleep(120);
  } else if (strcmp(mode, "crash") == 0 || strcmp(mode, "killed") == 0) {
    /* Rank 1 dies of SIGSEGV (no core file; "killed": SIGKILL, which no
     * handler sees) once every rank is in; the others, in a barrier, see it
     * gone and fail (launcher_checks.sh, shm_leftovers.sh). */
    CHECK_OK(symheap_comm_barrier(c.comm));
    if (c.rank == 1) {
      struct rlimit none = {0, 0};
      setrlimit(RLIMIT_CORE, &none);
      kill(getpid(), strcmp(mode, "crash") == 0 ? SIGSEGV : SIGKILL);
    }
    if (symheap_comm_barrier(c.comm) != SYMHEAP_SUCCESS)
      return 1;
  } else {
    th_begin(tag, "joined_despite_strangers", c.rank);
    CHECK_OK(symheap_comm_barrier(c.comm));
    check_allgather(&c, c.comm, c.rank, c.n, 64);
    th_end();
  }
  if (c.comm)
    CHECK_OK(symheap_comm_destroy(c.comm));
  /* The same job makes its comm again (as a program that initialises and
   * finalises twice): rank 0 listens at the address it reported before. */
  for (int round = 0; strcmp(mode, "suite") == 0 && round < 2; round++) {
    th_begin(tag, "init_again_after_destroy", c.rank);
    symheap_comm_t again = NULL;
    CHECK_OK(symheap_comm_init_env(&again));
    if (again) {
      CHECK_OK(symheap_comm_barrier(again));
      check_allgather(&c, again, c.rank, c.n, 16);
      CHECK_OK(symheap_comm_destroy(again));
    }
    th_end();
  }
  return th_total_failures() ? 1 : 0;
}

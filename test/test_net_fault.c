/* A host that disappears while its peers are in one-sided operations
 * (test/net_hosts.sh runs it across two network namespaces over the ofi
 * adaptor, then takes host B's link down or kills its ranks):
 *   test_net_fault      every rank puts, fetch-adds and quiets to a rank of
 *                       the other host until a call fails; the failing call
 *                       must return within SYMHEAP_TIMEOUT_MS + 1 s, with
 *                       this rank's own memory and its same-host peers'
 *                       untouched and still reachable.
 * Rank 0 prints READY once every rank is in the loop; each rank that sees
 * the failure prints "# rank R: <result> after N ms: <why>". */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#define WIN (1u << 20)
#define MINE 4096 /* this rank's own bytes: nobody writes them */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One round to `peer`: a put, a fetching atomic (it waits for its
 * result), a non-blocking put of 64 KiB and a quiet. */
static symheap_result_t round_to(th_ctx_t *c, symheap_window_t w, int peer,
                                 uint64_t i) {
  static unsigned char big[64 << 10];
  uint64_t one = 1, old = 0;
  size_t slot = 8 * (size_t)(c->rank + 1); /* a word apiece */
  symheap_result_t r = symheap_put(w, peer, slot, &i, 8);
  if (r == SYMHEAP_SUCCESS)
    r = symheap_atomic(w, peer, 0, SYMHEAP_AMO_FETCH_ADD, 8, &one, NULL, &old);
  if (r == SYMHEAP_SUCCESS)
    r = symheap_put_nbi(w, peer, 2 * MINE + (size_t)c->rank * sizeof big, big,
                        sizeof big);
  if (r == SYMHEAP_SUCCESS)
    r = symheap_quiet(c->comm);
  return r;
}

static void check_local(th_ctx_t *c, symheap_window_t w) {
  unsigned char *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  int bad = -1;
  for (int i = 0; mine && i < MINE && bad < 0; i++)
    if (mine[MINE + i] != (unsigned char)(c->rank * 17 + i))
      bad = i;
  CHECK(bad < 0, "this rank's own byte %d changed", bad);
  /* Same-host peers: still reachable, by load/store. */
  int per = c->n / 2, first = c->rank / per * per;
  for (int p = first; p < first + per; p++) {
    unsigned char b = 0;
    CHECK_OK(symheap_get(w, p, MINE + 5, &b, 1));
    CHECK(b == (unsigned char)(p * 17 + 5), "same-host rank %d's byte: %u", p,
          b);
  }
}

static void run(th_ctx_t *c) {
  long timeout = atol(
      getenv("SYMHEAP_TIMEOUT_MS") ? getenv("SYMHEAP_TIMEOUT_MS") : "30000");
  symheap_window_t w = NULL;
  th_begin("net_fault", "host_gone_mid_onesided", c->rank);
  CHECK_OK(symheap_malloc(c->comm, WIN, 0, &w));
  unsigned char *mine = NULL;
  if (w)
    CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  for (int i = 0; mine && i < MINE; i++)
    mine[MINE + i] = (unsigned char)(c->rank * 17 + i);
  CHECK_OK(symheap_comm_barrier(c->comm));
  int peer = (c->rank + c->n / 2) % c->n; /* on the other host */
  symheap_result_t r = w ? SYMHEAP_SUCCESS : SYMHEAP_ERR_INVALID_ARG;
  int64_t start = now_ms(), took = 0;
  for (uint64_t i = 1; r == SYMHEAP_SUCCESS && now_ms() - start < 60000; i++) {
    if (i == 20 && c->rank == 0) {
      printf("READY\n");
      fflush(stdout);
    }
    int64_t t0 = now_ms();
    r = round_to(c, w, peer, i);
    took = now_ms() - t0;
  }
  printf("# rank %d: %s after %lld ms: %s\n", c->rank, symheap_strerror(r),
         (long long)took, symheap_last_error());
  fflush(stdout);
  CHECK(r != SYMHEAP_SUCCESS, "no operation failed in 60 s");
  CHECK(took <= timeout + 1000,
        "the failing call took %lld ms (SYMHEAP_TIMEOUT_MS %ld)",
        (long long)took, timeout);
  if (w)
    check_local(c, w);
  th_end();
  printf("# rank %d: done\n", c->rank);
  fflush(stdout);
}

int main(void) {
  /* When host B's ranks are killed, symheap-run stops the others (SIGTERM,
   * SIGKILL 2 s later): they report first. */
  signal(SIGTERM, SIG_IGN);
  th_ctx_t c = {NULL, 0, 0};
  if (symheap_comm_init_env(&c.comm) != SYMHEAP_SUCCESS) {
    printf("FAIL net_fault/init %s\n", symheap_last_error());
    return 1;
  }
  symheap_comm_rank(c.comm, &c.rank);
  symheap_comm_size(c.comm, &c.n);
  run(&c);
  /* The comm is not usable across hosts any more: its destroy must not
   * hang (it may wait out one timeout for the other host). */
  _Exit(th_total_failures() ? 1 : 0);
}

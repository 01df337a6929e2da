/* symheap_comm_split of a comm made on a caller's runtime
 * (symheap_comm_init_ccl): it rides on the ccl's split when the ccl has
 * one, on symheap's socket bootstrap when every rank shares a host, and is
 * refused, on every rank and saying why, when the comm spans hosts and the
 * ccl cannot split (it once fell back to the bootstrap silently and
 * "succeeded" across pretend hosts).  The runtime here is another symheap
 * comm (A).  Run under symheap-run -n 4. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

typedef struct {
  symheap_comm_t a;
  int rank, n;
  int owned;   /* made by split: fini destroys it */
  int *splits; /* how often split ran, shared with the parent */
} rt_t;

static int rt_rank(void *ctx) { return ((rt_t *)ctx)->rank; }
static int rt_size(void *ctx) { return ((rt_t *)ctx)->n; }
static symheap_result_t rt_allgather(void *ctx, const void *in, void *out,
                                     size_t bytes, int timeout_ms) {
  (void)timeout_ms;
  return symheap_comm_allgather(((rt_t *)ctx)->a, in, out, bytes);
}
/* Contexts symheap owns (the ones split made) go; the caller's stays. */
static void rt_fini(void *ctx) {
  rt_t *x = ctx;
  if (!x->owned)
    return;
  symheap_comm_destroy(x->a);
  free(x);
}
static symheap_result_t rt_split(void *ctx, int color, int key, int timeout_ms,
                                 void **child) {
  (void)timeout_ms;
  rt_t *x = ctx, *c = calloc(1, sizeof *c);
  *child = NULL;
  symheap_comm_t a2 = NULL;
  symheap_result_t r = symheap_comm_split(
      x->a, color < 0 ? SYMHEAP_COLOR_NONE : color, key, &a2);
  (*x->splits)++;
  if (r != SYMHEAP_SUCCESS || !a2) {
    free(c);
    return r;
  }
  c->a = a2;
  c->owned = 1;
  c->splits = x->splits;
  symheap_comm_rank(a2, &c->rank);
  symheap_comm_size(a2, &c->n);
  *child = c;
  return SYMHEAP_SUCCESS;
}

static const symheap_ccl_ops with_split = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_ccl_ops),
    .name = "rt_split",
    .rank = rt_rank,
    .size = rt_size,
    .allgather = rt_allgather,
    .fini = rt_fini,
    .split = rt_split,
};
static const symheap_ccl_ops without_split = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_ccl_ops),
    .name = "rt_plain",
    .rank = rt_rank,
    .size = rt_size,
    .allgather = rt_allgather,
};

/* A window on `comm`: every rank writes, every rank reads every peer. */
static void check_window(symheap_comm_t comm) {
  int rank, n;
  symheap_comm_rank(comm, &rank);
  symheap_comm_size(comm, &n);
  symheap_window_t w = NULL;
  CHECK_OK(symheap_malloc(comm, 4096, 0, &w));
  if (!w)
    return;
  int *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  *mine = 500 + rank;
  CHECK_OK(symheap_comm_barrier(comm));
  for (int p = 0; p < n; p++) {
    int *pp = NULL;
    CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&pp));
    CHECK(pp && *pp == 500 + p, "rank %d's value %d", p, pp ? *pp : -1);
  }
  CHECK_OK(symheap_comm_barrier(comm));
  CHECK_OK(symheap_free(comm, w));
}

static const char *ccl_of(symheap_comm_t comm) {
  static symheap_comm_info_t info;
  info = (symheap_comm_info_t)SYMHEAP_COMM_INFO_INIT;
  symheap_comm_get_info(comm, &info);
  return info.ccl_adaptor;
}

static void case_split_over(symheap_comm_t a, int rank, int n,
                            const symheap_ccl_ops *ops, const char *want_ccl) {
  int splits = 0;
  rt_t x = {a, rank, n, 0, &splits};
  symheap_comm_t b = NULL, child = NULL;
  CHECK_OK(symheap_comm_init_ccl(&b, ops, &x));
  if (!b)
    return;
  CHECK_OK(symheap_comm_split(b, rank % 2, -rank, &child));
  if (child) {
    int crank, cn;
    symheap_comm_rank(child, &crank);
    symheap_comm_size(child, &cn);
    CHECK(cn == (n + 1 - rank % 2) / 2, "child of %d ranks", cn);
    CHECK(crank == cn - 1 - rank / 2, "rank %d is %d in its child (key -rank)",
          rank, crank);
    CHECK(strcmp(ccl_of(child), want_ccl) == 0, "child rides on '%s', not '%s'",
          ccl_of(child), want_ccl);
    check_window(child);
    CHECK_OK(symheap_comm_destroy(child));
  }
  CHECK(ops->split ? splits == 1 : splits == 0, "the ccl split %d times",
        splits);
  /* Opting out works too. */
  CHECK_OK(
      symheap_comm_split(b, rank == 0 ? SYMHEAP_COLOR_NONE : 1, 0, &child));
  CHECK(rank == 0 ? child == NULL : child != NULL, "opt-out gave %p",
        (void *)child);
  if (child)
    CHECK_OK(symheap_comm_destroy(child));
  CHECK_OK(symheap_comm_destroy(b));
}

int main(void) {
  symheap_comm_t a = NULL;
  int rank, n;
  if (symheap_comm_init_env(&a) != SYMHEAP_SUCCESS) {
    printf("FAIL split_ccl/comm_init: %s\n", symheap_last_error());
    return 1;
  }
  symheap_comm_rank(a, &rank);
  symheap_comm_size(a, &n);

  th_begin("split_ccl", "rides_on_the_ccl_split", rank);
  case_split_over(a, rank, n, &with_split, "rt_split");
  th_end();

  th_begin("split_ccl", "one_host_without_ccl_split_uses_the_bootstrap", rank);
  case_split_over(a, rank, n, &without_split, "local");
  th_end();

  /* Two pretend hosts: a comm on a ccl without split cannot be split. */
  th_begin("split_ccl", "hosts_without_ccl_split_refused_on_every_rank", rank);
  char host[32];
  snprintf(host, sizeof host, "pretend-host-%d", rank / 2);
  setenv("SYMHEAP_HOST_ID", host, 1);
  rt_t x = {a, rank, n, 0, NULL};
  symheap_comm_t b = NULL, child = NULL;
  CHECK_OK(symheap_comm_init_ccl(&b, &without_split, &x));
  if (b) {
    symheap_result_t r = symheap_comm_split(b, rank % 2, rank, &child);
    CHECK(r == SYMHEAP_ERR_UNSUPPORTED && child == NULL &&
              strstr(symheap_last_error(), "cannot split"),
          "split across hosts: %s (%s)", symheap_strerror(r),
          symheap_last_error());
    /* The comm is still usable. */
    CHECK_OK(symheap_comm_barrier(b));
    CHECK_OK(symheap_comm_destroy(b));
  }
  /* With the ccl's own split, the same comm splits. */
  int splits = 0;
  rt_t y = {a, rank, n, 0, &splits};
  CHECK_OK(symheap_comm_init_ccl(&b, &with_split, &y));
  if (b) {
    CHECK_OK(symheap_comm_split(b, rank / 2, rank, &child));
    if (child)
      CHECK_OK(symheap_comm_destroy(child));
    CHECK_OK(symheap_comm_destroy(b));
  }
  unsetenv("SYMHEAP_HOST_ID");
  th_end();

  symheap_comm_destroy(a);
  return th_total_failures() ? 1 : 0;
}

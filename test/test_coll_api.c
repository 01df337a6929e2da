/* The CUDA collectives' host side, on a machine with or without a GPU:
 * every argument check answers before anything is enqueued, with the error
 * code and a message that says what is wrong, and the choice of algorithm
 * follows the LL buffer's capacity.  Windows come from the host backend here,
 * so the last check is that host memory is refused (no GPU is needed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "symheap_cuda.h"

static char tag[32];

#define CHECK_MSG(call, want, text)                                            \
  do {                                                                         \
    symheap_result_t r_ = (call);                                              \
    CHECK(r_ == (want) && strstr(symheap_last_error(), text),                  \
          "%s -> %s (%s); expected %s mentioning '%s'", #call,                 \
          symheap_strerror(r_), symheap_last_error(), symheap_strerror(want),  \
          text);                                                               \
  } while (0)

static void body(th_ctx_t *c, void *arg) {
  (void)arg;
  symheap_window_t w;
  th_begin(tag, "argument_checks", c->rank);
  CHECK_OK(symheap_malloc(c->comm, 1 << 20, 0, &w));
  CHECK_MSG(symheap_cuda_all_reduce(w, 0, w, 0, 16, (symheap_dtype_t)7,
                                    SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO, NULL),
            SYMHEAP_ERR_INVALID_ARG, "unknown dtype");
  CHECK_MSG(symheap_cuda_all_reduce(w, 0, w, 0, 16, SYMHEAP_FLOAT32,
                                    (symheap_redop_t)9, SYMHEAP_ALGO_AUTO,
                                    NULL),
            SYMHEAP_ERR_INVALID_ARG, "unknown op");
  CHECK_MSG(symheap_cuda_all_reduce(w, 0, w, 0, 16, SYMHEAP_FLOAT32,
                                    SYMHEAP_OP_SUM,
                                    (symheap_algo_t)(SYMHEAP_ALGO_ONE_SHOT_LL128 + 1),
                                    NULL),
            SYMHEAP_ERR_INVALID_ARG, "unknown algorithm");
  CHECK_MSG(symheap_cuda_all_reduce(w, 2, w, 0, 16, SYMHEAP_FLOAT32,
                                    SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO, NULL),
            SYMHEAP_ERR_INVALID_ARG, "multiples of the element size");
  CHECK_MSG(symheap_cuda_all_reduce(w, 0, w, (1 << 20) - 60, 16,
                                    SYMHEAP_FLOAT32, SYMHEAP_OP_SUM,
                                    SYMHEAP_ALGO_AUTO, NULL),
            SYMHEAP_ERR_INVALID_ARG, "outside the window");
  CHECK_MSG(symheap_cuda_all_reduce(w, 0, w, 0, (size_t)1 << 62,
                                    SYMHEAP_FLOAT32, SYMHEAP_OP_SUM,
                                    SYMHEAP_ALGO_AUTO, NULL),
            SYMHEAP_ERR_INVALID_ARG, "overflows");
  CHECK_MSG(symheap_cuda_all_reduce(w, 0, w, 64, 1024, SYMHEAP_FLOAT32,
                                    SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO, NULL),
            SYMHEAP_ERR_INVALID_ARG, "overlap without being the same range");
  CHECK_MSG(symheap_cuda_all_gather(w, 8, w, 0, 4096, NULL),
            SYMHEAP_ERR_INVALID_ARG, "overlaps the output");
  CHECK_MSG(symheap_cuda_all_gather(w, 0, w, 0, (1 << 20) / c->n + 1, NULL),
            SYMHEAP_ERR_INVALID_ARG, "outside the window");
  CHECK_MSG(symheap_cuda_put(w, c->n, 0, &w, 8, NULL), SYMHEAP_ERR_INVALID_ARG,
            "is not a rank");
  CHECK_MSG(symheap_cuda_get(NULL, w, 0, 0, 8, NULL), SYMHEAP_ERR_INVALID_ARG,
            "dst is NULL");
  CHECK_MSG(symheap_cuda_all_reduce((symheap_window_t)&w, 0, w, 0, 16,
                                    SYMHEAP_FLOAT32, SYMHEAP_OP_SUM,
                                    SYMHEAP_ALGO_AUTO, NULL),
            SYMHEAP_ERR_INVALID_ARG, "unknown window");
  /* Host memory is not something a kernel can use. */
  symheap_result_t r = symheap_cuda_all_reduce(
      w, 0, w, 0, 16, SYMHEAP_FLOAT32, SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO, NULL);
  CHECK((r == SYMHEAP_ERR_INVALID_ARG || r == SYMHEAP_ERR_DEVICE) &&
            strlen(symheap_last_error()) > 20,
        "host window: %s (%s)", symheap_strerror(r), symheap_last_error());
  /* The push all-reduces are algorithms of all-reduce (here they fail on
   * the host memory, as AUTO does), not of reduce-scatter; past them none. */
  const int push_algos[] = {SYMHEAP_ALGO_ONE_SHOT_PUSH,
                            SYMHEAP_ALGO_TWO_SHOT_PUSH,
                            SYMHEAP_ALGO_ONE_SHOT_LL128};
  for (int i = 0; i < 3; i++) {
    int pa = push_algos[i];
    r = symheap_cuda_all_reduce(w, 0, w, 0, 16, SYMHEAP_FLOAT32,
                                SYMHEAP_OP_SUM, (symheap_algo_t)pa, NULL);
    CHECK(r != SYMHEAP_SUCCESS &&
              !strstr(symheap_last_error(), "unknown algorithm"),
          "algo %d: %s (%s)", pa, symheap_strerror(r), symheap_last_error());
    CHECK_MSG(symheap_cuda_reduce_scatter(w, 0, w, (1 << 19), 16,
                                          SYMHEAP_FLOAT32, SYMHEAP_OP_SUM,
                                          (symheap_algo_t)pa, NULL),
              SYMHEAP_ERR_INVALID_ARG, "unknown algorithm");
  }
  CHECK_MSG(symheap_cuda_all_reduce(
                w, 0, w, 0, 16, SYMHEAP_FLOAT32, SYMHEAP_OP_SUM,
                (symheap_algo_t)(SYMHEAP_ALGO_ONE_SHOT_LL128 + 1), NULL),
            SYMHEAP_ERR_INVALID_ARG, "unknown algorithm");
  th_end();

  th_begin(tag, "algorithm_choice", c->rank);
  /* The LL path carries SYMHEAP_PAD_LL_BYTES / (4 * nranks) bytes, rounded
   * down to 16-byte lines per block (16 blocks, two buffers, 16-byte lines
   * for 8 bytes of data). */
  size_t area = (SYMHEAP_PAD_LL_BYTES / (16u * 2 * (size_t)c->n)) & ~(size_t)15;
  size_t cap = area / 2 * 16;
  symheap_algo_t a = SYMHEAP_ALGO_AUTO;
  CHECK_OK(symheap_cuda_all_reduce_algo(w, cap / 2, SYMHEAP_BFLOAT16, &a));
  CHECK(a == SYMHEAP_ALGO_ONE_SHOT, "%zu bytes: algo %d", cap, (int)a);
  CHECK_OK(symheap_cuda_all_reduce_algo(w, cap / 2 + 1, SYMHEAP_BFLOAT16, &a));
  CHECK(a == SYMHEAP_ALGO_TWO_SHOT, "%zu bytes: algo %d", cap + 2, (int)a);
  CHECK_OK(symheap_cuda_all_reduce_algo(w, cap / 4, SYMHEAP_FLOAT32, &a));
  CHECK(a == SYMHEAP_ALGO_ONE_SHOT, "f32 at capacity: algo %d", (int)a);
  CHECK_MSG(symheap_cuda_all_reduce_algo(w, 1, SYMHEAP_BFLOAT16, NULL),
            SYMHEAP_ERR_INVALID_ARG, "NULL");
  if (c->n == 2)
    CHECK(cap == 1u << 20, "2 ranks: LL capacity %zu", cap);
  th_end();
  CHECK_OK(symheap_free(c->comm, w));
}

/* The collectives of issue 19: reduce-scatter, all-to-all(v), broadcast,
 * the flags of all-gather. */
static void xfer_checks(th_ctx_t *c, void *arg) {
  (void)arg;
  symheap_window_t w;
  const size_t wb = 8u << 20;
  th_begin(tag, "argument_checks_rs_a2a_bcast", c->rank);
  CHECK_OK(symheap_malloc(c->comm, wb, 0, &w));
  size_t n = (size_t)c->n, host_counts[4] = {1, 1, 1, 1};
  /* one-shot in place past the LL capacity (1 MiB at 2 ranks) */
  CHECK_MSG(symheap_cuda_all_reduce(
                w, 0, w, 0, SYMHEAP_PAD_LL_BYTES / (16 * n) + 16,
                SYMHEAP_FLOAT32, SYMHEAP_OP_SUM, SYMHEAP_ALGO_ONE_SHOT, NULL),
            SYMHEAP_ERR_INVALID_ARG, "cannot run in place");
  /* reduce-scatter */
  CHECK_MSG(symheap_cuda_reduce_scatter(w, 0, w, wb / 2, 16, (symheap_dtype_t)3,
                                        SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO,
                                        NULL),
            SYMHEAP_ERR_INVALID_ARG, "unknown dtype");
  CHECK_MSG(symheap_cuda_reduce_scatter(w, 0, w, wb / 2, 16, SYMHEAP_FLOAT32,
                                        SYMHEAP_OP_SUM,
                                        SYMHEAP_ALGO_RS_COPY_ENGINE, NULL),
            SYMHEAP_ERR_INVALID_ARG, "unknown algorithm");
  CHECK_MSG(symheap_cuda_reduce_scatter(w, 0, w, wb / 2, (size_t)1 << 61,
                                        SYMHEAP_FLOAT32, SYMHEAP_OP_SUM,
                                        SYMHEAP_ALGO_AUTO, NULL),
            SYMHEAP_ERR_INVALID_ARG, "overflows");
  CHECK_MSG(symheap_cuda_reduce_scatter(w, 0, w, wb / n, wb / (4 * n) + 1,
                                        SYMHEAP_FLOAT32, SYMHEAP_OP_SUM,
                                        SYMHEAP_ALGO_AUTO, NULL),
            SYMHEAP_ERR_INVALID_ARG, "outside the window");
  CHECK_MSG(symheap_cuda_reduce_scatter(w, 0, w, 4, 1024, SYMHEAP_FLOAT32,
                                        SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO,
                                        NULL),
            SYMHEAP_ERR_INVALID_ARG, "other than as one whole block");
  CHECK_MSG(symheap_cuda_reduce_scatter(w, 2, w, wb / 2, 16, SYMHEAP_FLOAT32,
                                        SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO,
                                        NULL),
            SYMHEAP_ERR_INVALID_ARG, "multiples of the element size");
  CHECK_MSG(symheap_cuda_reduce_scatter(
                w, 0, w, wb / 2, SYMHEAP_PAD_LL_BYTES / (16 * n) + 16,
                SYMHEAP_FLOAT32, SYMHEAP_OP_SUM, SYMHEAP_ALGO_ONE_SHOT, NULL),
            SYMHEAP_ERR_INVALID_ARG, "one-shot (LL) carries up to");
  /* in place at this rank's block passes the checks: host memory is next */
  symheap_result_t r = symheap_cuda_reduce_scatter(
      w, 0, w, (size_t)c->rank * 64, 16, SYMHEAP_FLOAT32, SYMHEAP_OP_SUM,
      SYMHEAP_ALGO_AUTO, NULL);
  CHECK((r == SYMHEAP_ERR_INVALID_ARG || r == SYMHEAP_ERR_DEVICE) &&
            (strstr(symheap_last_error(), "CUDA memory") ||
             strstr(symheap_last_error(), "cudaGetDevice")),
        "rs in place on a host window: %s (%s)", symheap_strerror(r),
        symheap_last_error());
  /* all-to-all */
  CHECK_MSG(symheap_cuda_all_to_all(w, 0, w, 16, 16, NULL),
            SYMHEAP_ERR_INVALID_ARG, "cannot run in place");
  CHECK_MSG(symheap_cuda_all_to_all(w, 0, w, wb / 2, wb / (2 * n) + 1, NULL),
            SYMHEAP_ERR_INVALID_ARG, "outside the window");
  CHECK_MSG(symheap_cuda_all_to_all(w, 0, w, wb / 2, SIZE_MAX / 2 + 1, NULL),
            SYMHEAP_ERR_INVALID_ARG, "overflows");
  /* all-to-all-v */
  size_t *dc = host_counts; /* host memory: refused once the rest passes */
  CHECK_MSG(symheap_cuda_all_to_allv(w, 0, 16, w, wb / 2, 16, 0, dc, NULL, dc,
                                     NULL, NULL),
            SYMHEAP_ERR_INVALID_ARG, "elem_size is 0");
  CHECK_MSG(symheap_cuda_all_to_allv(w, 0, 16, w, wb / 2, 16, 4, NULL, NULL, dc,
                                     NULL, NULL),
            SYMHEAP_ERR_INVALID_ARG, "send_counts is NULL");
  CHECK_MSG(symheap_cuda_all_to_allv(w, 0, 16, w, wb / 2, 16, 4, dc, NULL, NULL,
                                     NULL, NULL),
            SYMHEAP_ERR_INVALID_ARG, "recv_counts is NULL");
  CHECK_MSG(symheap_cuda_all_to_allv(w, 2, 16, w, wb / 2, 16, 4, dc, NULL, dc,
                                     NULL, NULL),
            SYMHEAP_ERR_INVALID_ARG, "multiples of elem_size");
  CHECK_MSG(symheap_cuda_all_to_allv(w, 0, 1024, w, 64, 16, 4, dc, NULL, dc,
                                     NULL, NULL),
            SYMHEAP_ERR_INVALID_ARG, "cannot run in place");
  CHECK_MSG(symheap_cuda_all_to_allv(w, 0, 16, w, wb / 2, wb / 8 + 1, 4, dc,
                                     NULL, dc, NULL, NULL),
            SYMHEAP_ERR_INVALID_ARG, "outside the window");
  CHECK_MSG(symheap_cuda_all_to_allv(w, 0, SIZE_MAX / 2, w, wb / 2, 16, 4, dc,
                                     NULL, dc, NULL, NULL),
            SYMHEAP_ERR_INVALID_ARG, "overflows");
  CHECK_MSG(symheap_cuda_all_to_allv(w, 0, 16, w, wb / 2, 16, 4, dc, NULL, dc,
                                     NULL, NULL),
            SYMHEAP_ERR_INVALID_ARG, "is not memory the device can read");
  CHECK_MSG(symheap_cuda_all_to_allv(w, 0, 16, w, wb / 2, 16, 4,
                                     (size_t *)((char *)dc + 1), NULL, dc, NULL,
                                     NULL),
            SYMHEAP_ERR_INVALID_ARG, "not aligned");
  /* broadcast */
  CHECK_MSG(symheap_cuda_broadcast(w, 0, w, 4096, 64, c->n, 0, NULL),
            SYMHEAP_ERR_INVALID_ARG, "is not a rank");
  CHECK_MSG(symheap_cuda_broadcast(w, 0, w, 4096, 64, -1, 0, NULL),
            SYMHEAP_ERR_INVALID_ARG, "is not a rank");
  CHECK_MSG(symheap_cuda_broadcast(w, 0, w, 4096, 64, 0, 0x10, NULL),
            SYMHEAP_ERR_INVALID_ARG, "unknown flags");
  CHECK_MSG(symheap_cuda_broadcast(w, 0, w, 32, 64, 0, 0, NULL),
            SYMHEAP_ERR_INVALID_ARG, "overlap without being the same range");
  CHECK_MSG(symheap_cuda_broadcast(w, wb - 8, w, 0, 64, 0, 0, NULL),
            SYMHEAP_ERR_INVALID_ARG, "outside the window");
  CHECK_MSG(symheap_cuda_all_gather_flags(w, 0, w, 4096, 64, 0x6, NULL),
            SYMHEAP_ERR_INVALID_ARG, "unknown flags");
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* Ranks given the same arguments reach the same verdict (issue 28): an
 * all-gather whose input is block 0 of the output, or a reduce-scatter
 * whose output is block 0 of the input, was accepted by rank 0 alone
 * (its own block), which then waited in the kernel for peers that had
 * refused.  Here every rank passes the same offsets; each says whether the
 * overlap check refused it, and every rank must have said the same (and,
 * the input being a whole block, none refuses for the overlap: host memory
 * is refused next, on every rank). */
static void same_verdict(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin(tag, "same_verdict_every_rank", c->rank);
  symheap_window_t w;
  size_t bytes = 4096, n = (size_t)c->n;
  CHECK_OK(symheap_malloc(c->comm, bytes * n * 2, 0, &w));
  int mine[4], all[4 * 8];
  mine[0] = symheap_cuda_all_gather(w, 0, w, 0, bytes, NULL) ==
                SYMHEAP_ERR_INVALID_ARG &&
            strstr(symheap_last_error(), "overlap") != NULL;
  mine[1] = symheap_cuda_all_gather(w, (n - 1) * bytes, w, 0, bytes, NULL) ==
                SYMHEAP_ERR_INVALID_ARG &&
            strstr(symheap_last_error(), "overlap") != NULL;
  mine[2] = symheap_cuda_reduce_scatter(w, 0, w, 0, bytes / 4, SYMHEAP_FLOAT32,
                                        SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO,
                                        NULL) == SYMHEAP_ERR_INVALID_ARG &&
            strstr(symheap_last_error(), "overlap") != NULL;
  mine[3] = symheap_cuda_reduce_scatter(w, 0, w, (n - 1) * bytes, bytes / 4,
                                        SYMHEAP_FLOAT32, SYMHEAP_OP_SUM,
                                        SYMHEAP_ALGO_AUTO, NULL) ==
                SYMHEAP_ERR_INVALID_ARG &&
            strstr(symheap_last_error(), "overlap") != NULL;
  CHECK_OK(symheap_comm_allgather(c->comm, mine, all, sizeof mine));
  static const char *what[4] = {"all-gather, input at block 0",
                                "all-gather, input at the last block",
                                "reduce-scatter, output at block 0",
                                "reduce-scatter, output at the last block"};
  for (int k = 0; k < 4; k++)
    for (int p = 0; p < c->n; p++)
      CHECK(all[4 * p + k] == 0,
            "%s, the same on every rank: rank %d refused it for the "
            "overlap (rank 0 %s)",
            what[k], p, all[k] ? "too" : "did not");
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* Windows of two comms cannot meet in one collective. */
static void two_comms(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin(tag, "windows_of_two_comms", c->rank);
  symheap_unique_id_t id, all[4];
  symheap_comm_t c2 = NULL;
  memset(&id, 0, sizeof id);
  if (c->rank == 0)
    CHECK_OK(symheap_get_unique_id(&id));
  CHECK_OK(symheap_comm_allgather(c->comm, &id, all, sizeof id));
  CHECK_OK(symheap_comm_init(&c2, c->n, &all[0], c->rank));
  symheap_window_t a, b;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &a));
  CHECK_OK(symheap_malloc(c2, 4096, 0, &b));
  CHECK_MSG(symheap_cuda_all_reduce(a, 0, b, 0, 16, SYMHEAP_FLOAT32,
                                    SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO, NULL),
            SYMHEAP_ERR_INVALID_ARG, "different comms");
  CHECK_OK(symheap_free(c2, b));
  CHECK_OK(symheap_free(c->comm, a));
  CHECK_OK(symheap_comm_destroy(c2));
  th_end();
}

/* Under symheap-run -n 4 with --two-hosts: ranks pretend to be two hosts
 * of 2 (SYMHEAP_HOST_ID), so no rank reaches every copy by load/store; the
 * collectives refuse, saying why, instead of faulting in a kernel. */
static int two_hosts(void) {
  int rank, n;
  if (th_launcher_ranks("coll_api/two_hosts", &rank, &n) != 0)
    return 1;
  setenv("SYMHEAP_HOST_ID", rank < n / 2 ? "host-a" : "host-b", 1);
  th_ctx_t c = {NULL, rank, n};
  th_begin("coll_api", "refused_across_hosts", rank);
  CHECK_OK(symheap_comm_init_env(&c.comm));
  symheap_window_t w = NULL;
  CHECK_OK(symheap_malloc(c.comm, 1 << 20, 0, &w));
  CHECK_MSG(symheap_cuda_all_reduce(w, 0, w, 0, 16, SYMHEAP_FLOAT32,
                                    SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO, NULL),
            SYMHEAP_ERR_UNSUPPORTED, "spans hosts");
  CHECK_MSG(symheap_cuda_all_gather(w, 0, w, 4096, 16, NULL),
            SYMHEAP_ERR_UNSUPPORTED, "spans hosts");
  CHECK_OK(symheap_free(c.comm, w));
  CHECK_OK(symheap_comm_destroy(c.comm));
  th_end();
  return th_total_failures() ? 1 : 0;
}

int main(int argc, char **argv) {
  setenv("SYMHEAP_DEVICE", "host", 1);
  if (argc == 2 && strcmp(argv[1], "--two-hosts") == 0)
    return two_hosts();
  int fails = 0;
  for (int n = 2; n <= 4; n += 2) {
    snprintf(tag, sizeof tag, "coll_api_threads%d", n);
    fails |= th_run_threads(n, body, NULL);
    fails |= th_run_threads(n, two_comms, NULL);
    fails |= th_run_threads(n, xfer_checks, NULL);
    fails |= th_run_threads(n, same_verdict, NULL);
  }
  return fails || th_total_failures() ? 1 : 0;
}

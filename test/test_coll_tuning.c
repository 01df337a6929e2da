/* The CUDA collectives' tuning table and override variables, end to end
 * through libsymheap_cuda.so on host windows (no GPU needed): what
 * symheap_cuda_all_reduce_algo answers under SYMHEAP_ALL_REDUCE_ALGO, under
 * a table (SYMHEAP_TUNING_FILE), and that a bad or missing named file fails
 * AUTO calls with the file and line while explicit algorithms are left
 * alone.  The table is read once per process, so each case is a run:
 * forced_pipe: SYMHEAP_ALL_REDUCE_ALGO=rs_ce_pipe is a value comm init
 * takes (it refused it before the pipelined rs+ce), and AUTO answers it, or
 * two-shot where the driver has no stream memory operations (no GPU).
 *   build/test/test_coll_tuning forced|forced_pipe|table|bad|missing|none */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "symheap_cuda.h"

static char tag[48], mode[16], file[64];

static symheap_algo_t algo_of(symheap_window_t w, size_t bytes) {
  symheap_algo_t a = SYMHEAP_ALGO_AUTO;
  CHECK_OK(symheap_cuda_all_reduce_algo(w, bytes / 2, SYMHEAP_BFLOAT16, &a));
  return a;
}

static void body(th_ctx_t *c, void *arg) {
  (void)arg;
  symheap_window_t w;
  th_begin(tag, mode, c->rank);
  CHECK_OK(symheap_malloc(c->comm, 1 << 20, 0, &w));
  if (strcmp(mode, "forced") == 0) {
    /* two_shot even where the LL path fits */
    symheap_algo_t a = algo_of(w, 4096);
    CHECK(a == SYMHEAP_ALGO_TWO_SHOT, "forced two_shot: algo %d", (int)a);
  } else if (strcmp(mode, "forced_pipe") == 0) {
    symheap_algo_t a = algo_of(w, 256u << 20);
    CHECK(a == SYMHEAP_ALGO_RS_CE_PIPELINED || a == SYMHEAP_ALGO_TWO_SHOT,
          "forced rs_ce_pipe: algo %d", (int)a);
  } else if (strcmp(mode, "table") == 0) {
    /* the table has 2-rank rows only: two_shot up to 64 KiB, then one_shot
     * (out of place, not LL); 4 ranks: the thresholds (LL at 4 KiB, two-shot
     * past the LL capacity of 512 KiB) */
    symheap_algo_t small = algo_of(w, 4096), mid = algo_of(w, 2 << 20);
    if (c->n == 2)
      CHECK(small == SYMHEAP_ALGO_TWO_SHOT && mid == SYMHEAP_ALGO_ONE_SHOT,
            "2 ranks, table: 4 KiB algo %d, 2 MiB algo %d", (int)small,
            (int)mid);
    else
      CHECK(small == SYMHEAP_ALGO_ONE_SHOT && mid == SYMHEAP_ALGO_TWO_SHOT,
            "4 ranks, no rows: 4 KiB algo %d, 2 MiB algo %d", (int)small,
            (int)mid);
    char buf[1200];
    CHECK_OK(symheap_cuda_tuning_table(buf, sizeof buf));
    CHECK(strstr(buf, file) && strstr(buf, "2 rows"), "tuning_table: '%s'",
          buf);
  } else if (strcmp(mode, "bad") == 0 || strcmp(mode, "missing") == 0) {
    const char *want = strcmp(mode, "bad") == 0 ? "line 3: 'three_shot'"
                                                : "No such file";
    symheap_algo_t a;
    symheap_result_t r =
        symheap_cuda_all_reduce_algo(w, 2048, SYMHEAP_BFLOAT16, &a);
    CHECK(r == SYMHEAP_ERR_INVALID_ARG &&
              strstr(symheap_last_error(), want) &&
              strstr(symheap_last_error(), file),
          "all_reduce_algo: %s (%s); wanted '%s' and the file",
          symheap_strerror(r), symheap_last_error(), want);
    r = symheap_cuda_all_reduce(w, 0, w, 4096, 16, SYMHEAP_FLOAT32,
                                SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO, NULL);
    CHECK(r == SYMHEAP_ERR_INVALID_ARG && strstr(symheap_last_error(), want),
          "AUTO all_reduce: %s (%s)", symheap_strerror(r),
          symheap_last_error());
    r = symheap_cuda_all_gather(w, 0, w, 4096, 16, NULL);
    CHECK(r == SYMHEAP_ERR_INVALID_ARG && strstr(symheap_last_error(), want),
          "all_gather: %s (%s)", symheap_strerror(r), symheap_last_error());
    /* an explicit algorithm does not read the table: it fails on the host
     * memory instead, as without a table */
    r = symheap_cuda_all_reduce(w, 0, w, 4096, 16, SYMHEAP_FLOAT32,
                                SYMHEAP_OP_SUM, SYMHEAP_ALGO_TWO_SHOT, NULL);
    CHECK(r != SYMHEAP_SUCCESS && !strstr(symheap_last_error(), want),
          "explicit two_shot: %s (%s)", symheap_strerror(r),
          symheap_last_error());
  } else {
    symheap_algo_t a = algo_of(w, 4096);
    CHECK(a == SYMHEAP_ALGO_ONE_SHOT, "SYMHEAP_TUNING_FILE=none: algo %d",
          (int)a);
  }
  th_end();
  CHECK_OK(symheap_free(c->comm, w));
}

static const char *table_text(void) {
  if (strcmp(mode, "bad") == 0)
    return "gpu test\nall_reduce 2 * 0 65536 two_shot 0 0\n"
           "all_reduce 2 * 65537 max three_shot 0 0\n";
  return "# a table for the test\ngpu test\n"
         "all_reduce\t2\t*\t0\t65536\ttwo_shot\t0\t0\t1.0\n"
         "all_reduce\t2\t*\t65537\tmax\tone_shot\t0\t0\n";
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_coll_tuning "
                    "forced|forced_pipe|table|bad|missing|none\n");
    return 2;
  }
  snprintf(mode, sizeof mode, "%s", argv[1]);
  setenv("SYMHEAP_DEVICE", "host", 1);
  snprintf(file, sizeof file, "/tmp/symheap-tuning-XXXXXX");
  if (strcmp(mode, "forced") == 0) {
    setenv("SYMHEAP_ALL_REDUCE_ALGO", "two_shot", 1);
  } else if (strcmp(mode, "forced_pipe") == 0) {
    setenv("SYMHEAP_ALL_REDUCE_ALGO", "rs_ce_pipe", 1);
  } else if (strcmp(mode, "missing") == 0) {
    snprintf(file, sizeof file, "/nonexistent/symheap-tuning.tsv");
    setenv("SYMHEAP_TUNING_FILE", file, 1);
  } else if (strcmp(mode, "none") == 0) {
    setenv("SYMHEAP_TUNING_FILE", "none", 1);
  } else {
    int fd = mkstemp(file);
    const char *t = table_text();
    if (fd < 0 || write(fd, t, strlen(t)) != (ssize_t)strlen(t)) {
      perror("test_coll_tuning: the table file");
      return 1;
    }
    close(fd);
    setenv("SYMHEAP_TUNING_FILE", file, 1);
  }
  int fails = 0;
  for (int n = 2; n <= 4; n += 2) {
    snprintf(tag, sizeof tag, "coll_tuning_threads%d", n);
    fails |= th_run_threads(n, body, NULL);
  }
  if (file[5] == 's') /* made here: /tmp/symheap-... */
    unlink(file);
  return fails || th_total_failures() ? 1 : 0;
}

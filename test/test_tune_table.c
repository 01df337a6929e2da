/* The collectives' tuning tables on the host (kernels/tune_table.c): the
 * parser accepts the format docs/tuning.md gives and refuses every fault
 * with the file and line and an empty table, the lookup takes the bucket
 * and the exact topology first, and the choice AUTO makes (forced, table,
 * thresholds, and the fallbacks where a choice cannot run) is the same
 * plain function on every machine.  No GPU and no CUDA needed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tune_table.h"

#define T "tune_table"

static const char *good =
    "# symheap tuning table\r\n"
    "gpu\tNVIDIA H100 80GB HBM3\r\n"
    "\n"
    "all_reduce\t2\tnvlink\t0\t262144\tone_shot\t0\t0\t3.95\n"
    "all_reduce\t2\tnvlink\t262145\t67108864\ttwo_shot\t64\t512\t11.4\n"
    "all_reduce 2 nvlink 67108865 max rs_ce 32 0\n"
    "all_reduce\t2\t*\t0\tmax\ttwo_shot\t0\t0\n"
    "reduce_scatter\t4\tnvlink\t0\tmax\ttwo_shot\t0\t0\n"
    "  all_gather\t4\tnvlink\t0\t1048575\tsm\t0\t0   \n"
    "all_gather\t4\tnvlink\t1048576\tmax\tzero_sm\t0\t0\n"
    "broadcast\t4\t*\t0\t1048576\tsm\t0\t0\n"
    "broadcast\t4\t*\t1048577\tmax\tscatter\t0\t0\n";

static void case_parse_good(void) {
  symheap_tune_table_t t;
  char err[512] = "";
  th_begin(T, "parse_good", 0);
  int rc = symheap_tune_parse(good, "good.tsv", &t, err, sizeof err);
  CHECK(rc == 0, "refused: %s", err);
  if (rc == 0) {
    CHECK(strcmp(t.gpu, "NVIDIA H100 80GB HBM3") == 0, "gpu '%s'", t.gpu);
    CHECK(t.nrows == 9, "%d rows", t.nrows);
    const symheap_tune_row_t *r = &t.rows[1];
    CHECK(r->coll == SYMHEAP_TUNE_ALL_REDUCE && r->nranks == 2 &&
              strcmp(r->topo, "nvlink") == 0 && r->lo == 262145 &&
              r->hi == 67108864 && r->algo == 2 && r->blocks == 64 &&
              r->threads == 512,
          "row 1 read wrong");
    CHECK(t.rows[2].hi == UINT64_MAX && t.rows[2].algo == 3,
          "'max' or rs_ce read wrong");
    CHECK(t.rows[6].algo == SYMHEAP_TUNE_ZERO_SM, "zero_sm read wrong");
    CHECK(t.rows[8].coll == SYMHEAP_TUNE_BROADCAST &&
              t.rows[8].algo == SYMHEAP_TUNE_SCATTER,
          "broadcast's scatter read wrong");
    symheap_tune_free(&t);
  }
  th_end();
}

static void case_lookup(void) {
  symheap_tune_table_t t;
  char err[512];
  th_begin(T, "lookup", 0);
  CHECK(symheap_tune_parse(good, "good.tsv", &t, err, sizeof err) == 0, "%s",
        err);
  const symheap_tune_row_t *r;
  r = symheap_tune_lookup(&t, SYMHEAP_TUNE_ALL_REDUCE, 2, "nvlink", 262144);
  CHECK(r && r->algo == 1, "262144 (inclusive max) not one_shot");
  r = symheap_tune_lookup(&t, SYMHEAP_TUNE_ALL_REDUCE, 2, "nvlink", 262145);
  CHECK(r && r->algo == 2 && r->blocks == 64, "262145 not two_shot/64");
  r = symheap_tune_lookup(&t, SYMHEAP_TUNE_ALL_REDUCE, 2, "nvlink", 1ull << 40);
  CHECK(r && r->algo == 3, "1 TiB not rs_ce");
  r = symheap_tune_lookup(&t, SYMHEAP_TUNE_ALL_REDUCE, 2, "pcie", 4096);
  CHECK(r && r->algo == 2 && strcmp(r->topo, "*") == 0,
        "another topology did not take the '*' row");
  CHECK(!symheap_tune_lookup(&t, SYMHEAP_TUNE_ALL_REDUCE, 4, "nvlink", 4096),
        "4 ranks found a 2-rank row");
  CHECK(!symheap_tune_lookup(&t, SYMHEAP_TUNE_REDUCE_SCATTER, 4, "pcie", 1),
        "reduce_scatter on pcie found an nvlink row");
  r = symheap_tune_lookup(&t, SYMHEAP_TUNE_ALL_GATHER, 4, "nvlink", 1048575);
  CHECK(r && r->algo == SYMHEAP_TUNE_SM, "all_gather below 1 MiB not sm");
  CHECK(!symheap_tune_lookup(NULL, 0, 2, "nvlink", 1), "NULL table found");
  symheap_tune_free(&t);
  th_end();
}

/* Each bad table: refused, naming the file and the line, with the why. */
static void case_parse_bad(void) {
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"gpu X\nall_reduce 2 nvlink 0 max three_shot 0 0\n",
       "bad.tsv line 2: 'three_shot' is not an algorithm of all_reduce"},
      {"gpu X\nreduce_scatter 2 nvlink 0 max rs_ce 0 0\n",
       "line 2: 'rs_ce' is not an algorithm of reduce_scatter"},
      {"gpu X\nreduce_scatter 2 nvlink 0 max one_shot_push 0 0\n",
       "line 2: 'one_shot_push' is not an algorithm of reduce_scatter"},
      {"gpu X\nall_gather 2 nvlink 0 max two_shot_push 0 0\n",
       "line 2: 'two_shot_push' is not an algorithm of all_gather"},
      {"gpu X\nall_gather 2 nvlink 0 max two_shot 0 0\n",
       "line 2: 'two_shot' is not an algorithm of all_gather"},
      {"gpu X\nall_gather 2 nvlink 0 max scatter 0 0\n",
       "line 2: 'scatter' is not an algorithm of all_gather (sm, zero_sm)"},
      {"gpu X\n# c\nallreduce 2 nvlink 0 max one_shot 0 0\n",
       "line 3: 'allreduce' is not 'gpu' or a collective"},
      {"gpu X\nall_reduce 0 nvlink 0 max one_shot 0 0\n",
       "line 2: ranks '0' is not a number of 1 to 32"},
      {"gpu X\nall_reduce 99 nvlink 0 max one_shot 0 0\n", "line 2: ranks"},
      {"gpu X\nall_reduce 2 NVLink 0 max one_shot 0 0\n",
       "line 2: topology 'NVLink'"},
      {"gpu X\nall_reduce 2 nvlink 10 9 one_shot 0 0\n",
       "line 2: min_bytes 10 is above max_bytes 9"},
      {"gpu X\nall_reduce 2 nvlink 12abc 20 one_shot 0 0\n",
       "line 2: min_bytes '12abc' is not a number"},
      {"gpu X\nall_reduce 2 nvlink -1 20 one_shot 0 0\n",
       "line 2: min_bytes '-1'"},
      {"gpu X\nall_reduce 2 nvlink 0 99999999999999999999999 one_shot 0 0\n",
       "line 2: max_bytes"},
      {"gpu X\nall_reduce 2 nvlink 0 max max one_shot 0 0 1 2\n",
       "line 2: more than 9 fields"},
      {"gpu X\nall_reduce 2 nvlink 0 max one_shot 0\n", "line 2: 7 fields"},
      {"gpu X\nall_reduce 2 nvlink 0 max one_shot 999 0\n",
       "line 2: blocks '999'"},
      {"gpu X\nall_reduce 2 nvlink 0 max two_shot 0 33\n",
       "line 2: threads '33'"},
      {"gpu X\nall_reduce 2 nvlink 0 max two_shot 0 0 fast\n",
       "line 2: time 'fast'"},
      {"gpu X\nall_reduce 2 nvlink 0 100 one_shot 0 0\n"
       "all_reduce 2 nvlink 100 max two_shot 0 0\n",
       "line 3: its sizes overlap line 2's"},
      {"all_reduce 2 nvlink 0 max one_shot 0 0\n", "line 1: no 'gpu <name>'"},
      {"gpu X\ngpu Y\n", "line 2: a second 'gpu' line"},
      {"gpu \n", "line 1: the GPU name is empty"},
  };
  th_begin(T, "parse_bad", 0);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    symheap_tune_table_t t;
    char err[512] = "";
    int rc = symheap_tune_parse(bad[i].text, "bad.tsv", &t, err, sizeof err);
    CHECK(rc == -1 && strstr(err, bad[i].want) && strstr(err, "bad.tsv line"),
          "table %zu: rc %d, '%s'; wanted '%s'", i, rc, err, bad[i].want);
    CHECK(t.nrows == 0 && t.rows == NULL, "table %zu: not left empty", i);
  }
  /* a line too long for the parser's buffer */
  char *longline = malloc(5000);
  memset(longline, 'a', 4999);
  memcpy(longline, "gpu X\n", 6);
  longline[4999] = 0;
  symheap_tune_table_t t;
  char err[512] = "";
  CHECK(symheap_tune_parse(longline, "long.tsv", &t, err, sizeof err) == -1 &&
            strstr(err, "long.tsv line 2: longer than"),
        "long line: '%s'", err);
  free(longline);
  th_end();
}

/* Every mutation of a good table either parses or is refused with a line;
 * none crashes (ASan and valgrind runs of make test see the memory). */
static void case_mutations(void) {
  th_begin(T, "mutations_refused_or_parsed", 0);
  size_t n = strlen(good);
  char *buf = malloc(n + 1);
  static const char junk[] = "\t \n#*-0159xmaz\r_";
  unsigned seed = 12345;
  int parsed = 0, refused = 0;
  for (int it = 0; it < 3000; it++) {
    memcpy(buf, good, n + 1);
    for (int k = 0; k < 1 + it % 4; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t at = (seed >> 8) % n;
      buf[at] = junk[(seed >> 20) % (sizeof junk - 1)];
    }
    symheap_tune_table_t t;
    char err[512] = "";
    int rc = symheap_tune_parse(buf, "m.tsv", &t, err, sizeof err);
    if (rc == 0) {
      parsed++;
      symheap_tune_free(&t);
    } else {
      refused++;
      CHECK(rc == -1 && strncmp(err, "m.tsv line ", 11) == 0,
            "mutation %d: rc %d, '%s'", it, rc, err);
    }
  }
  CHECK(parsed > 0 && refused > 0, "parsed %d, refused %d", parsed, refused);
  free(buf);
  th_end();
}

static void case_load(void) {
  th_begin(T, "load_file", 0);
  symheap_tune_table_t t;
  char err[512] = "", path[] = "/tmp/symheap-tune-XXXXXX";
  CHECK(symheap_tune_load("/nonexistent/x.tsv", &t, err, sizeof err) == 1 &&
            strstr(err, "/nonexistent/x.tsv"),
        "missing file: '%s'", err);
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd >= 0) {
    CHECK(write(fd, good, strlen(good)) == (ssize_t)strlen(good), "write");
    close(fd);
    CHECK(symheap_tune_load(path, &t, err, sizeof err) == 0 && t.nrows == 9,
          "good file: %s", err);
    symheap_tune_free(&t);
    FILE *f = fopen(path, "wb");
    fwrite("gpu X\n\0\n", 1, 8, f);
    fclose(f);
    CHECK(symheap_tune_load(path, &t, err, sizeof err) == -1 &&
              strstr(err, "NUL bytes"),
          "binary file: '%s'", err);
    unlink(path);
  }
  char name[128];
  symheap_tune_file_name("NVIDIA H100 80GB HBM3", name, sizeof name);
  CHECK(strcmp(name, "nvidia-h100-80gb-hbm3.tsv") == 0, "file name '%s'",
        name);
  symheap_tune_file_name("  NVIDIA  H200 (x)", name, sizeof name);
  CHECK(strcmp(name, "nvidia-h200-x.tsv") == 0, "file name '%s'", name);
  th_end();
}

/* The pipelined algorithms (issue 29): read by name, written back by name,
 * refused where they are not the collective's, and rs_ce_pipe without the
 * driver's stream memory operations falls back to two-shot.  The uniform
 * all-to-all's rows (sm, zero_sm), and zero_sm's fallback. */
static symheap_tune_choice_t choose(int coll, const symheap_tune_table_t *t,
                                    int forced, uint64_t bytes, int ce_ok,
                                    int in_place);
static void case_pipelined(void) {
  th_begin(T, "pipelined_algorithms", 0);
  symheap_tune_table_t t;
  char err[512] = "";
  int rc = symheap_tune_parse("gpu X\n"
                              "all_reduce 4 nvlink 0 max rs_ce_pipe 64 0\n"
                              "broadcast 4 nvlink 0 max scatter_pipe 0 0\n",
                              "pipe.tsv", &t, err, sizeof err);
  CHECK(rc == 0, "refused: %s", err);
  if (rc == 0) {
    CHECK(t.rows[0].algo == 6 && t.rows[0].blocks == 64,
          "rs_ce_pipe read as %d/%d", t.rows[0].algo, t.rows[0].blocks);
    CHECK(t.rows[1].algo == SYMHEAP_TUNE_SCATTER_PIPE,
          "scatter_pipe read as %d", t.rows[1].algo);
    symheap_tune_free(&t);
  }
  CHECK(strcmp(symheap_tune_algo_name(SYMHEAP_TUNE_ALL_REDUCE, 6),
               "rs_ce_pipe") == 0 &&
            strcmp(symheap_tune_algo_name(SYMHEAP_TUNE_BROADCAST, 4),
                   "scatter_pipe") == 0 &&
            strcmp(symheap_tune_algo_name(SYMHEAP_TUNE_ALL_GATHER, 4), "?") ==
                0 &&
            strcmp(symheap_tune_algo_name(SYMHEAP_TUNE_ALL_REDUCE, 7),
                   "ll128") == 0 &&
            strcmp(symheap_tune_algo_name(SYMHEAP_TUNE_ALL_REDUCE, 8), "?") ==
                0 &&
            symheap_tune_algo_id(SYMHEAP_TUNE_ALL_REDUCE, "ll128") == 7 &&
            symheap_tune_algo_id(SYMHEAP_TUNE_REDUCE_SCATTER, "ll128") == -1,
        "names of ids 4 and 6 (and 7)");
  CHECK(symheap_tune_algo_id(SYMHEAP_TUNE_REDUCE_SCATTER, "rs_ce_pipe") == -1 &&
            symheap_tune_algo_id(SYMHEAP_TUNE_ALL_GATHER, "scatter_pipe") == -1,
        "a pipelined name taken for the wrong collective");
  rc = symheap_tune_parse("gpu X\nall_to_all 4 nvlink 0 1048576 sm 0 0\n"
                          "all_to_all 4 nvlink 1048577 max zero_sm 0 0\n",
                          "a2a.tsv", &t, err, sizeof err);
  CHECK(rc == 0, "all_to_all rows refused: %s", err);
  if (rc == 0) {
    symheap_tune_query_t q = {0, &t, "nvlink", 4, 256u << 20, 0, 0, 1, 0};
    symheap_tune_choice_t a;
    symheap_tune_choose(SYMHEAP_TUNE_ALL_TO_ALL, &q, &a);
    CHECK(a.algo == SYMHEAP_TUNE_ZERO_SM, "256 MiB all-to-all: %d", a.algo);
    q.ce_ok = 0;
    symheap_tune_choose(SYMHEAP_TUNE_ALL_TO_ALL, &q, &a);
    CHECK(a.algo == SYMHEAP_TUNE_SM, "zero_sm without memops: %d", a.algo);
    q.bytes = 4096;
    q.ce_ok = 1;
    symheap_tune_choose(SYMHEAP_TUNE_ALL_TO_ALL, &q, &a);
    CHECK(a.algo == SYMHEAP_TUNE_SM, "4 KiB all-to-all: %d", a.algo);
    symheap_tune_free(&t);
  }
  rc = symheap_tune_parse("gpu X\nall_gather 4 nvlink 0 max scatter_pipe 0 0\n",
                          "bad.tsv", &t, err, sizeof err);
  CHECK(rc == -1 && strstr(err, "bad.tsv line 2"),
        "all_gather scatter_pipe: %s", rc ? err : "accepted");
  symheap_tune_choice_t c =
      choose(SYMHEAP_TUNE_ALL_REDUCE, NULL, 6, 1u << 30, 0, 0);
  CHECK(c.algo == 2, "forced rs_ce_pipe without memops: %d", c.algo);
  c = choose(SYMHEAP_TUNE_ALL_REDUCE, NULL, 6, 1u << 30, 1, 1);
  CHECK(c.algo == 6 && strcmp(c.why, "forced") == 0, "forced rs_ce_pipe: %d",
        c.algo);
  c = choose(SYMHEAP_TUNE_BROADCAST, NULL, SYMHEAP_TUNE_SCATTER_PIPE, 1u << 28,
             0, 0);
  CHECK(c.algo == SYMHEAP_TUNE_SCATTER_PIPE, "forced scatter_pipe: %d", c.algo);
  /* ce_pipe: the copy engines' broadcast, so SM without stream memops */
  CHECK(symheap_tune_algo_id(SYMHEAP_TUNE_BROADCAST, "ce_pipe") ==
                SYMHEAP_TUNE_CE_PIPE &&
            symheap_tune_algo_id(SYMHEAP_TUNE_ALL_GATHER, "ce_pipe") == -1,
        "ce_pipe's id");
  c = choose(SYMHEAP_TUNE_BROADCAST, NULL, SYMHEAP_TUNE_CE_PIPE, 1u << 28, 1,
             0);
  CHECK(c.algo == SYMHEAP_TUNE_CE_PIPE, "forced ce_pipe: %d", c.algo);
  c = choose(SYMHEAP_TUNE_BROADCAST, NULL, SYMHEAP_TUNE_CE_PIPE, 1u << 28, 0,
             0);
  CHECK(c.algo == SYMHEAP_TUNE_SM, "ce_pipe without memops: %d", c.algo);
  th_end();
}

static symheap_tune_choice_t choose(int coll, const symheap_tune_table_t *t,
                                    int forced, uint64_t bytes, int ce_ok,
                                    int in_place) {
  symheap_tune_query_t q = {forced, t,  "nvlink", 2, bytes, 262144,
                            64u << 20, ce_ok, in_place};
  symheap_tune_choice_t c;
  symheap_tune_choose(coll, &q, &c);
  return c;
}

static void case_choose(void) {
  th_begin(T, "choice", 0);
  symheap_tune_choice_t c;
  /* thresholds: LL while it fits, rs_ce from ce_bytes if the driver can */
  c = choose(SYMHEAP_TUNE_ALL_REDUCE, NULL, 0, 262144, 1, 0);
  CHECK(c.algo == 1 && strcmp(c.why, "thresholds") == 0, "cap: %d", c.algo);
  c = choose(SYMHEAP_TUNE_ALL_REDUCE, NULL, 0, 262145, 1, 0);
  CHECK(c.algo == 2, "cap + 1: %d", c.algo);
  c = choose(SYMHEAP_TUNE_ALL_REDUCE, NULL, 0, 64u << 20, 1, 0);
  CHECK(c.algo == 3, "64 MiB: %d", c.algo);
  c = choose(SYMHEAP_TUNE_ALL_REDUCE, NULL, 0, 64u << 20, 0, 0);
  CHECK(c.algo == 2, "64 MiB without memops: %d", c.algo);
  c = choose(SYMHEAP_TUNE_ALL_GATHER, NULL, 0, 4096, 1, 0);
  CHECK(c.algo == SYMHEAP_TUNE_SM, "all-gather thresholds: %d", c.algo);
  c = choose(SYMHEAP_TUNE_REDUCE_SCATTER, NULL, 0, 300000, 1, 0);
  CHECK(c.algo == 2, "reduce-scatter above cap: %d", c.algo);
  /* the table's row, with its launch parameters */
  symheap_tune_table_t t;
  char err[512];
  CHECK(symheap_tune_parse(good, "good.tsv", &t, err, sizeof err) == 0, "%s",
        err);
  c = choose(SYMHEAP_TUNE_ALL_REDUCE, &t, 0, 1 << 20, 1, 0);
  CHECK(c.algo == 2 && c.blocks == 64 && c.threads == 512 &&
            strcmp(c.why, "table") == 0,
        "table 1 MiB: %d/%d/%d %s", c.algo, c.blocks, c.threads, c.why);
  /* forced beats the table */
  c = choose(SYMHEAP_TUNE_ALL_REDUCE, &t, 3, 4096, 1, 0);
  CHECK(c.algo == 3 && strcmp(c.why, "forced") == 0 && c.blocks == 0,
        "forced rs_ce: %d %s", c.algo, c.why);
  /* what cannot run the call falls back */
  c = choose(SYMHEAP_TUNE_ALL_REDUCE, &t, 1, 1 << 20, 1, 1);
  CHECK(c.algo == 2, "one_shot in place above cap: %d", c.algo);
  c = choose(SYMHEAP_TUNE_ALL_REDUCE, &t, 1, 1 << 20, 1, 0);
  CHECK(c.algo == 1, "one_shot out of place above cap (non-LL): %d", c.algo);
  c = choose(SYMHEAP_TUNE_ALL_REDUCE, &t, 0, 1u << 30, 0, 0);
  CHECK(c.algo == 2 && c.blocks == 0, "table rs_ce without memops: %d/%d",
        c.algo, c.blocks);
  c = choose(SYMHEAP_TUNE_REDUCE_SCATTER, &t, 1, 1 << 20, 1, 0);
  CHECK(c.algo == 2, "reduce-scatter one_shot above cap: %d", c.algo);
  /* zero-SM all-gather only where the table measured it faster, and only
   * with the driver's stream memory operations */
  symheap_tune_query_t q = {0, &t, "nvlink", 4, 4096, 131072, 64u << 20, 1, 0};
  symheap_tune_choose(SYMHEAP_TUNE_ALL_GATHER, &q, &c);
  CHECK(c.algo == SYMHEAP_TUNE_SM, "4 KiB all-gather: %d", c.algo);
  q.bytes = 1 << 20;
  symheap_tune_choose(SYMHEAP_TUNE_ALL_GATHER, &q, &c);
  CHECK(c.algo == SYMHEAP_TUNE_ZERO_SM, "1 MiB all-gather: %d", c.algo);
  q.ce_ok = 0;
  symheap_tune_choose(SYMHEAP_TUNE_ALL_GATHER, &q, &c);
  CHECK(c.algo == SYMHEAP_TUNE_SM, "zero_sm without memops: %d", c.algo);
  /* another rank count: no row, the thresholds */
  q.nranks = 8;
  q.ce_ok = 1;
  symheap_tune_choose(SYMHEAP_TUNE_ALL_GATHER, &q, &c);
  CHECK(c.algo == SYMHEAP_TUNE_SM && strcmp(c.why, "thresholds") == 0,
        "8 ranks: %d %s", c.algo, c.why);
  symheap_tune_free(&t);
  th_end();
}

/* What the tuning run writes: runs of one winner merged, each measured size
 * covering (the size before, it], and the rows read back as written. */
static void case_write_rows(void) {
  th_begin(T, "write_rows", 0);
  const uint64_t sizes[] = {4096, 8192, 16384, 32768, 65536};
  const symheap_tune_choice_t win[] = {{1, 0, 0, "table"},
                                       {1, 0, 0, "table"},
                                       {2, 64, 0, "table"},
                                       {2, 64, 0, "table"},
                                       {3, 0, 0, "table"}};
  const double us[] = {4, 5, 9, 12, 30};
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  fprintf(f, "gpu test\n");
  int rows = symheap_tune_write_rows(f, SYMHEAP_TUNE_ALL_REDUCE, 4, "nvlink",
                                     5, sizes, win, us);
  fclose(f);
  CHECK(rows == 3, "%d rows:\n%s", rows, text);
  CHECK(strstr(text, "all_reduce\t4\tnvlink\t0\t8192\tone_shot\t0\t0\t5.00\n") &&
            strstr(text, "all_reduce\t4\tnvlink\t8193\t32768\ttwo_shot\t64\t0\t12.00\n") &&
            strstr(text, "all_reduce\t4\tnvlink\t32769\tmax\trs_ce\t0\t0\t30.00\n"),
        "rows written:\n%s", text);
  symheap_tune_table_t t;
  char err[512];
  CHECK(symheap_tune_parse(text, "written", &t, err, sizeof err) == 0, "%s",
        err);
  const uint64_t probe[] = {0, 8192, 8193, 32768, 32769, 1ull << 40};
  const int want[] = {1, 1, 2, 2, 3, 3};
  for (int i = 0; i < 6; i++) {
    const symheap_tune_row_t *r = symheap_tune_lookup(
        &t, SYMHEAP_TUNE_ALL_REDUCE, 4, "nvlink", probe[i]);
    CHECK(r && r->algo == want[i], "%llu bytes: algo %d, wanted %d",
          (unsigned long long)probe[i], r ? r->algo : -1, want[i]);
  }
  symheap_tune_free(&t);
  free(text);
  th_end();
}

/* The push all-reduces (ids 4 and 5): named in tables and by the override
 * variable, all-reduce only, their names read back. */
static void case_push_algos(void) {
  th_begin(T, "push_algos", 0);
  symheap_tune_table_t t;
  char err[512] = "";
  int rc = symheap_tune_parse("gpu X\n"
                              "all_reduce 2 nvlink 0 262144 one_shot_push 32 "
                              "256\n"
                              "all_reduce 2 nvlink 262145 max two_shot_push 0 "
                              "1024\n",
                              "push.tsv", &t, err, sizeof err);
  CHECK(rc == 0, "refused: %s", err);
  if (rc == 0) {
    CHECK(t.nrows == 2 && t.rows[0].algo == 4 && t.rows[0].blocks == 32 &&
              t.rows[0].threads == 256 && t.rows[1].algo == 5 &&
              t.rows[1].threads == 1024,
          "push rows read wrong");
    symheap_tune_free(&t);
  }
  CHECK(symheap_tune_algo_id(SYMHEAP_TUNE_ALL_REDUCE, "one_shot_push") == 4 &&
            symheap_tune_algo_id(SYMHEAP_TUNE_ALL_REDUCE, "two_shot_push") ==
                5,
        "push ids");
  CHECK(strcmp(symheap_tune_algo_name(SYMHEAP_TUNE_ALL_REDUCE, 4),
               "one_shot_push") == 0 &&
            strcmp(symheap_tune_algo_name(SYMHEAP_TUNE_ALL_REDUCE, 5),
                   "two_shot_push") == 0 &&
            strcmp(symheap_tune_algo_name(SYMHEAP_TUNE_REDUCE_SCATTER, 4),
                   "?") == 0 &&
            strcmp(symheap_tune_algo_name(SYMHEAP_TUNE_ALL_REDUCE, 6),
                   "rs_ce_pipe") == 0 &&
            strcmp(symheap_tune_algo_name(SYMHEAP_TUNE_ALL_REDUCE, 7),
                   "ll128") == 0,
        "push names");
  CHECK(symheap_tune_algo_id(SYMHEAP_TUNE_REDUCE_SCATTER, "two_shot_push") ==
            -1,
        "reduce-scatter takes two_shot_push");
  /* forced: taken as it is, in place too (the library falls back where the
   * staging cannot hold the size) */
  symheap_tune_query_t q;
  memset(&q, 0, sizeof q);
  q.forced = 5;
  q.nranks = 4;
  q.bytes = 1u << 20;
  q.ll_cap = 1024;
  q.in_place = 1;
  symheap_tune_choice_t c;
  symheap_tune_choose(SYMHEAP_TUNE_ALL_REDUCE, &q, &c);
  CHECK(c.algo == 5 && strcmp(c.why, "forced") == 0, "forced push: %d",
        c.algo);
  th_end();
}

int main(void) {
  case_push_algos();
  case_parse_good();
  case_lookup();
  case_parse_bad();
  case_mutations();
  case_load();
  case_choose();
  case_pipelined();
  case_write_rows();
  return th_total_failures() ? 1 : 0;
}

/* Tuning tables of the CUDA collectives: which algorithm AUTO takes, per
 * collective, rank count, topology and size bucket, as measured by the
 * tuning run (tools/symheap-tune.cu, bench/tune_gpu.sh) on one kind of GPU.
 * Plain C with no CUDA, so the parser and the lookup are tested on any
 * machine (test/test_tune_table.c).  docs/tuning.md describes the format:
 *
 *   # comment
 *   gpu <TAB> NVIDIA H100 80GB HBM3
 *   all_reduce <TAB> 4 <TAB> nvlink <TAB> 0 <TAB> 4096 <TAB> one_shot <TAB> 0 <TAB> 0 [<TAB> us]
 *
 * Row columns: collective, ranks, topology ("*": any), min and max bytes
 * (inclusive; "max": no bound), algorithm, blocks (0: the default grid),
 * threads (0: the default), and optionally the measured time (kept for
 * people, ignored here).  Fields are separated by tabs or spaces. */
#ifndef SYMHEAP_TUNE_TABLE_H
#define SYMHEAP_TUNE_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  SYMHEAP_TUNE_ALL_REDUCE = 0,
  SYMHEAP_TUNE_REDUCE_SCATTER = 1,
  SYMHEAP_TUNE_ALL_GATHER = 2,
  SYMHEAP_TUNE_BROADCAST = 3,
  SYMHEAP_TUNE_ALL_TO_ALL = 4, /* the uniform one (all-to-all-v: one kernel) */
  SYMHEAP_TUNE_NCOLL = 5,
} symheap_tune_coll_t;

/* Algorithm ids.  All-reduce and reduce-scatter: the symheap_algo_t values
 * (1 one_shot, 2 two_shot, 3 rs_ce and 6 rs_ce_pipe: all-reduce only).
 * All-gather and broadcast: 1 sm, 2 zero_sm, 3 scatter (broadcast only:
 * each rank pushes its part of root's input to every rank), 4 scatter_pipe
 * (broadcast only: root pushes each rank its part in steps, and each rank
 * forwards a step to the others as soon as it has landed), 5 ce_pipe
 * (broadcast only: the same by the copy engines, no SM).  All-to-all:
 * 1 sm (the kernel's stores), 2 zero_sm (a copy-engine copy per peer). */
enum {
  SYMHEAP_TUNE_SM = 1,
  SYMHEAP_TUNE_ZERO_SM = 2,
  SYMHEAP_TUNE_SCATTER = 3,
  SYMHEAP_TUNE_SCATTER_PIPE = 4,
  SYMHEAP_TUNE_CE_PIPE = 5
};

#define SYMHEAP_TUNE_TOPO_MAX 16
#define SYMHEAP_TUNE_GPU_MAX 96

typedef struct {
  int coll, nranks;
  char topo[SYMHEAP_TUNE_TOPO_MAX];
  uint64_t lo, hi; /* bytes, both inclusive */
  int algo;
  int blocks, threads; /* 0: the library's default */
} symheap_tune_row_t;

typedef struct {
  char gpu[SYMHEAP_TUNE_GPU_MAX];
  int nrows;
  symheap_tune_row_t *rows;
} symheap_tune_table_t;

/* Parse a table's text.  0 on success (*t owns rows: symheap_tune_free);
 * -1 on a fault, with err = "<name> line N: why" and *t empty. */
int symheap_tune_parse(const char *text, const char *name,
                       symheap_tune_table_t *t, char *err, size_t errlen);
/* Read and parse a file; a missing file is 1 (err says so), a bad one -1. */
int symheap_tune_load(const char *path, symheap_tune_table_t *t, char *err,
                      size_t errlen);
void symheap_tune_free(symheap_tune_table_t *t);

/* The row for bytes of coll at nranks on topo (rows of topology "*" match
 * any), or NULL. */
const symheap_tune_row_t *symheap_tune_lookup(const symheap_tune_table_t *t,
                                              int coll, int nranks,
                                              const char *topo,
                                              uint64_t bytes);

/* What AUTO takes for one call: the inputs of the choice, all plain data,
 * so the choice is the same on every rank that sees the same table and
 * environment, and is tested without a GPU. */
typedef struct {
  int forced; /* the override variable's algorithm id; 0: none */
  const symheap_tune_table_t *table; /* NULL: no table */
  const char *topo;
  int nranks;
  uint64_t bytes;    /* all-reduce: the buffer; reduce-scatter: each rank's
                        output block; all-gather: each rank's block;
                        broadcast: the buffer; all-to-all: each block */
  uint64_t ll_cap;   /* the LL capacity at nranks (ll_capacity) */
  uint64_t ce_bytes; /* SYMHEAP_CUDA_CE_BYTES */
  int ce_ok;         /* the driver has stream memory operations */
  int in_place;      /* all-reduce: input and output are the same range */
} symheap_tune_query_t;

typedef struct {
  int algo, blocks, threads;
  const char *why; /* "forced", "table" or "thresholds" */
} symheap_tune_choice_t;

/* Forced, else the table's row, else the thresholds (one-shot while it
 * fits the LL buffers, rs_ce from ce_bytes); then what cannot run this call
 * falls back: one-shot in place above ll_cap and rs_ce or zero_sm without
 * stream memory operations to two-shot / sm, reduce-scatter's one-shot
 * above ll_cap to two-shot. */
void symheap_tune_choose(int coll, const symheap_tune_query_t *q,
                         symheap_tune_choice_t *c);

/* The rows of one collective from the tuning run's winners: sizes[i]
 * ascending, win[i] the fastest variant at sizes[i] (us[i] its time).
 * Sizes with the same winner in a row become one row; a measured size s
 * covers (the size before, s], the first from 0, the last to "max".
 * Written as table lines to f; the number of rows. */
int symheap_tune_write_rows(FILE *f, int coll, int nranks, const char *topo,
                            int n, const uint64_t *sizes,
                            const symheap_tune_choice_t *win,
                            const double *us);

/* Names as the table and the override variables spell them. */
const char *symheap_tune_coll_name(int coll);
int symheap_tune_coll_id(const char *name); /* -1: unknown */
const char *symheap_tune_algo_name(int coll, int algo);
int symheap_tune_algo_id(int coll, const char *name); /* -1: unknown */

/* The file name of a GPU's table: its name in lower case, runs of other
 * characters as one '-', ".tsv" ("NVIDIA H100 80GB HBM3" ->
 * "nvidia-h100-80gb-hbm3.tsv"). */
void symheap_tune_file_name(const char *gpu, char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif

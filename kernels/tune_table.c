/* Tuning tables: parser and lookup (tune_table.h).  A fault names the file
 * and line and leaves the table empty; nothing here can crash on a bad file
 * (bounded lines, bounded rows, every number checked). */
#include "tune_table.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 4096
#define MAX_LINE 1024
#define MAX_FILE (1 << 20)
#define MAX_RANKS 32    /* kernels/coll_common.cuh: kMaxRanks */
#define MAX_BLOCKS 128  /* kMaxChannels */

static const char *const coll_names[SYMHEAP_TUNE_NCOLL] = {
    "all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all"};
/* Index = algorithm id; NULL: not an algorithm of that collective. */
#define NALGO 8 /* ids 1..7 */
static const char *const algo_names[SYMHEAP_TUNE_NCOLL][NALGO] = {
    {NULL, "one_shot", "two_shot", "rs_ce", "one_shot_push", "two_shot_push",
     "rs_ce_pipe", "ll128"},
    {NULL, "one_shot", "two_shot", NULL, NULL, NULL, NULL, NULL},
    {NULL, "sm", "zero_sm", NULL, NULL, NULL, NULL, NULL},
    {NULL, "sm", "zero_sm", "scatter", "scatter_pipe", "ce_pipe", NULL, NULL},
    {NULL, "sm", "zero_sm", NULL, NULL, NULL, NULL, NULL},
};

const char *symheap_tune_coll_name(int coll) {
  return coll >= 0 && coll < SYMHEAP_TUNE_NCOLL ? coll_names[coll] : "?";
}

int symheap_tune_coll_id(const char *name) {
  for (int c = 0; c < SYMHEAP_TUNE_NCOLL; c++)
    if (strcmp(name, coll_names[c]) == 0)
      return c;
  return -1;
}

const char *symheap_tune_algo_name(int coll, int algo) {
  if (coll < 0 || coll >= SYMHEAP_TUNE_NCOLL || algo < 1 || algo >= NALGO ||
      !algo_names[coll][algo])
    return "?";
  return algo_names[coll][algo];
}

int symheap_tune_algo_id(int coll, const char *name) {
  if (coll < 0 || coll >= SYMHEAP_TUNE_NCOLL)
    return -1;
  for (int a = 1; a < NALGO; a++)
    if (algo_names[coll][a] && strcmp(name, algo_names[coll][a]) == 0)
      return a;
  return -1;
}

void symheap_tune_file_name(const char *gpu, char *out, size_t len) {
  size_t n = 0;
  int dash = 0;
  if (len == 0)
    return;
  for (const char *p = gpu; *p && n + 5 < len; p++) {
    if (isalnum((unsigned char)*p)) {
      if (dash && n > 0)
        out[n++] = '-';
      dash = 0;
      if (n + 5 < len)
        out[n++] = (char)tolower((unsigned char)*p);
    } else {
      dash = 1;
    }
  }
  snprintf(out + n, len - n, ".tsv");
}

void symheap_tune_free(symheap_tune_table_t *t) {
  free(t->rows);
  memset(t, 0, sizeof *t);
}

/* Parsing state: the table being built and where a fault is reported. */
typedef struct {
  symheap_tune_table_t *t;
  int *row_line; /* the line of each row, for overlap messages */
  const char *name;
  int line;
  char *err;
  size_t errlen;
} parser_t;

static int fault(parser_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fault(parser_t *p, const char *fmt, ...) {
  char why[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  snprintf(p->err, p->errlen, "%s line %d: %s", p->name, p->line, why);
  return -1;
}

/* A decimal number with nothing else in the token; "max" where allowed. */
static int number(const char *s, uint64_t max, int allow_max, uint64_t *v) {
  if (allow_max && strcmp(s, "max") == 0) {
    *v = UINT64_MAX;
    return 0;
  }
  if (!isdigit((unsigned char)s[0]))
    return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  if (errno || *end || x > max)
    return -1;
  *v = x;
  return 0;
}

static int topo_ok(const char *s) {
  size_t n = strlen(s);
  if (strcmp(s, "*") == 0)
    return 1;
  if (n == 0 || n >= SYMHEAP_TUNE_TOPO_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) &&
        s[i] != '_' && s[i] != '-')
      return 0;
  return 1;
}

/* The fields of one row (tok[0..n)), checked, appended. */
static int add_row(parser_t *p, char **tok, int n, int coll) {
  symheap_tune_row_t r;
  uint64_t v;
  memset(&r, 0, sizeof r);
  r.coll = coll;
  if (n < 8 || n > 9)
    return fault(p, "%d fields; a row has 8 or 9: collective ranks topology "
                    "min_bytes max_bytes algorithm blocks threads [us]",
                 n);
  if (number(tok[1], MAX_RANKS, 0, &v) || v < 1)
    return fault(p, "ranks '%s' is not a number of 1 to %d", tok[1],
                 MAX_RANKS);
  r.nranks = (int)v;
  if (!topo_ok(tok[2]))
    return fault(p, "topology '%s' is not '*' or 1 to %d characters of "
                    "a-z, 0-9, '_' and '-'",
                 tok[2], SYMHEAP_TUNE_TOPO_MAX - 1);
  snprintf(r.topo, sizeof r.topo, "%s", tok[2]);
  if (number(tok[3], UINT64_MAX, 0, &r.lo))
    return fault(p, "min_bytes '%s' is not a number of bytes", tok[3]);
  if (number(tok[4], UINT64_MAX, 1, &r.hi))
    return fault(p, "max_bytes '%s' is not a number of bytes or 'max'",
                 tok[4]);
  if (r.lo > r.hi)
    return fault(p, "min_bytes %s is above max_bytes %s", tok[3], tok[4]);
  if ((r.algo = symheap_tune_algo_id(coll, tok[5])) < 0)
    return fault(p, "'%s' is not an algorithm of %s (%s)", tok[5], tok[0],
                 coll <= SYMHEAP_TUNE_REDUCE_SCATTER
                     ? (coll ? "one_shot, two_shot"
                             : "one_shot, two_shot, rs_ce, one_shot_push, "
                               "two_shot_push, rs_ce_pipe, ll128")
                 : coll == SYMHEAP_TUNE_BROADCAST
                     ? "sm, zero_sm, scatter, scatter_pipe, ce_pipe"
                     : "sm, zero_sm");
  if (number(tok[6], MAX_BLOCKS, 0, &v))
    return fault(p, "blocks '%s' is not a number of 0 to %d", tok[6],
                 MAX_BLOCKS);
  r.blocks = (int)v;
  if (number(tok[7], 1024, 0, &v) || (v && (v < 32 || v % 32)))
    return fault(p, "threads '%s' is not 0 or a multiple of 32 up to 1024",
                 tok[7]);
  r.threads = (int)v;
  if (n == 9) {
    char *end;
    double us = strtod(tok[8], &end);
    if (*end || !(us >= 0))
      return fault(p, "time '%s' is not a number of microseconds", tok[8]);
  }
  symheap_tune_table_t *t = p->t;
  for (int i = 0; i < t->nrows; i++) {
    const symheap_tune_row_t *o = &t->rows[i];
    if (o->coll == coll && o->nranks == r.nranks &&
        strcmp(o->topo, r.topo) == 0 && r.lo <= o->hi && o->lo <= r.hi)
      return fault(p, "its sizes overlap line %d's (%s, %d ranks, %s)",
                   p->row_line[i], tok[0], r.nranks, r.topo);
  }
  if (t->nrows == MAX_ROWS)
    return fault(p, "more than %d rows", MAX_ROWS);
  t->rows[t->nrows] = r;
  p->row_line[t->nrows++] = p->line;
  return 0;
}

/* One line (NUL-terminated, no newline). */
static int parse_line(parser_t *p, char *s, int *seen_gpu) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
    s[--n] = 0;
  if (!*s || *s == '#')
    return 0;
  if (strncmp(s, "gpu", 3) == 0 && (!s[3] || s[3] == ' ' || s[3] == '\t')) {
    if ((*seen_gpu)++)
      return fault(p, "a second 'gpu' line");
    s += 3;
    while (*s == ' ' || *s == '\t')
      s++;
    if (!*s || strlen(s) >= SYMHEAP_TUNE_GPU_MAX)
      return fault(p, "the GPU name is empty or longer than %d characters",
                   SYMHEAP_TUNE_GPU_MAX - 1);
    snprintf(p->t->gpu, sizeof p->t->gpu, "%s", s);
    return 0;
  }
  char *tok[10] = {NULL}; /* -O1 cannot see that a non-blank line has one */
  int nt = 0;
  char *save = NULL;
  for (char *q = strtok_r(s, " \t", &save); q; q = strtok_r(NULL, " \t", &save))
    if (nt < 10)
      tok[nt++] = q;
    else
      return fault(p, "more than 9 fields");
  if (nt == 0)
    return 0;
  int coll = symheap_tune_coll_id(tok[0]);
  if (coll < 0)
    return fault(p, "'%s' is not 'gpu' or a collective (all_reduce, "
                    "reduce_scatter, all_gather, broadcast, all_to_all)",
                 tok[0]);
  return add_row(p, tok, nt, coll);
}

int symheap_tune_parse(const char *text, const char *name,
                       symheap_tune_table_t *t, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  parser_t p = {t, NULL, name ? name : "tuning table", 0, err, errlen};
  t->rows = calloc(MAX_ROWS, sizeof *t->rows);
  p.row_line = calloc(MAX_ROWS, sizeof *p.row_line);
  int rc = 0, seen_gpu = 0;
  if (!t->rows || !p.row_line)
    rc = fault(&p, "no memory");
  char line[MAX_LINE];
  for (const char *s = text; rc == 0 && s && *s;) {
    const char *nl = strchr(s, '\n');
    size_t len = nl ? (size_t)(nl - s) : strlen(s);
    p.line++;
    if (len >= sizeof line) {
      rc = fault(&p, "longer than %d characters", MAX_LINE - 1);
      break;
    }
    memcpy(line, s, len);
    line[len] = 0;
    rc = parse_line(&p, line, &seen_gpu);
    s = nl ? nl + 1 : NULL;
  }
  if (rc == 0 && !seen_gpu) {
    p.line = 1;
    rc = fault(&p, "no 'gpu <name>' line (the GPU the table was measured on)");
  }
  free(p.row_line);
  if (rc)
    symheap_tune_free(t);
  return rc;
}

int symheap_tune_load(const char *path, symheap_tune_table_t *t, char *err,
                      size_t errlen) {
  memset(t, 0, sizeof *t);
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return errno == ENOENT ? 1 : -1;
  }
  char *buf = malloc(MAX_FILE + 1);
  size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
  int bad = !buf ? 1 : ferror(f) ? 2 : n > MAX_FILE ? 3 : 0;
  fclose(f);
  if (!bad && memchr(buf, 0, n))
    bad = 4;
  if (bad) {
    snprintf(err, errlen, "%s: %s", path,
             bad == 1   ? "no memory"
             : bad == 2 ? "read error"
             : bad == 3 ? "larger than 1 MiB: not a tuning table"
                        : "holds NUL bytes: not a tuning table");
    free(buf);
    return -1;
  }
  buf[n] = 0;
  int rc = symheap_tune_parse(buf, path, t, err, errlen);
  free(buf);
  return rc;
}

const symheap_tune_row_t *symheap_tune_lookup(const symheap_tune_table_t *t,
                                              int coll, int nranks,
                                              const char *topo,
                                              uint64_t bytes) {
  const symheap_tune_row_t *any = NULL;
  for (int i = 0; t && i < t->nrows; i++) {
    const symheap_tune_row_t *r = &t->rows[i];
    if (r->coll != coll || r->nranks != nranks || bytes < r->lo ||
        bytes > r->hi)
      continue;
    if (strcmp(r->topo, topo) == 0)
      return r; /* the exact topology first */
    if (!any && strcmp(r->topo, "*") == 0)
      any = r;
  }
  return any;
}

static int threshold_algo(int coll, const symheap_tune_query_t *q) {
  switch (coll) {
  case SYMHEAP_TUNE_ALL_REDUCE:
    return q->bytes <= q->ll_cap                  ? 1
           : q->bytes >= q->ce_bytes && q->ce_ok ? 3
                                                  : 2;
  case SYMHEAP_TUNE_REDUCE_SCATTER:
    return q->bytes <= q->ll_cap ? 1 : 2;
  default:
    return SYMHEAP_TUNE_SM;
  }
}

void symheap_tune_choose(int coll, const symheap_tune_query_t *q,
                         symheap_tune_choice_t *c) {
  const symheap_tune_row_t *r =
      q->forced ? NULL
                : symheap_tune_lookup(q->table, coll, q->nranks,
                                      q->topo ? q->topo : "", q->bytes);
  c->blocks = c->threads = 0;
  if (q->forced) {
    c->algo = q->forced;
    c->why = "forced";
  } else if (r) {
    c->algo = r->algo;
    c->blocks = r->blocks;
    c->threads = r->threads;
    c->why = "table";
  } else {
    c->algo = threshold_algo(coll, q);
    c->why = "thresholds";
  }
  int fallback = 0;
  if (coll == SYMHEAP_TUNE_ALL_REDUCE)
    fallback = (c->algo == 1 && q->in_place && q->bytes > q->ll_cap) ||
               ((c->algo == 3 || c->algo == 6) && !q->ce_ok);
  else if (coll == SYMHEAP_TUNE_REDUCE_SCATTER)
    fallback = c->algo == 1 && q->bytes > q->ll_cap;
  else
    fallback = (c->algo == SYMHEAP_TUNE_ZERO_SM ||
                (coll == SYMHEAP_TUNE_BROADCAST &&
                 c->algo == SYMHEAP_TUNE_CE_PIPE)) &&
               !q->ce_ok;
  if (fallback) {
    c->algo = coll <= SYMHEAP_TUNE_REDUCE_SCATTER ? 2 : SYMHEAP_TUNE_SM;
    c->blocks = c->threads = 0;
  }
}

int symheap_tune_write_rows(FILE *f, int coll, int nranks, const char *topo,
                            int n, const uint64_t *sizes,
                            const symheap_tune_choice_t *win,
                            const double *us) {
  uint64_t lo = 0;
  int rows = 0;
  for (int i = 0; i < n; i++) {
    const symheap_tune_choice_t *w = &win[i];
    if (i + 1 < n && win[i + 1].algo == w->algo &&
        win[i + 1].blocks == w->blocks && win[i + 1].threads == w->threads)
      continue; /* the same winner as the next size: one row */
    fprintf(f, "%s\t%d\t%s\t%llu\t", symheap_tune_coll_name(coll), nranks,
            topo, (unsigned long long)lo);
    if (i + 1 == n)
      fprintf(f, "max");
    else
      fprintf(f, "%llu", (unsigned long long)sizes[i]);
    fprintf(f, "\t%s\t%d\t%d\t%.2f\n", symheap_tune_algo_name(coll, w->algo),
            w->blocks, w->threads, us[i]);
    lo = sizes[i] + 1;
    rows++;
  }
  return rows;
}

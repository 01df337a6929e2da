/* A small test harness.  Each rank prints "FAIL <case> [rank r] ..." for
 * every failed check and rank 0 prints "PASS <case>" when it saw none;
 * test/run.sh counts a case as passed only if no rank failed it. */
#ifndef SYMHEAP_TEST_HARNESS_H
#define SYMHEAP_TEST_HARNESS_H

#include <stdio.h>

#include "symheap.h"
#include "symheap_adaptor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  symheap_comm_t comm;
  int rank, n;
} th_ctx_t;

void th_begin(const char *tag, const char *name, int rank);
/* Ends the case: prints PASS on rank 0 if this rank saw no failure.
 * Returns the number of failed checks on this rank. */
int th_end(void);
void th_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int th_total_failures(void);

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      th_fail(__FILE__, __LINE__, __VA_ARGS__);                                \
  } while (0)

#define CHECK_OK(call)                                                         \
  do {                                                                         \
    symheap_result_t r_ = (call);                                              \
    if (r_ != SYMHEAP_SUCCESS)                                                 \
      th_fail(__FILE__, __LINE__, "%s -> %s: %s", #call, symheap_strerror(r_), \
              symheap_last_error());                                           \
  } while (0)

#define CHECK_ERR(call, want)                                                  \
  do {                                                                         \
    symheap_result_t r_ = (call);                                              \
    if (r_ != (want))                                                          \
      th_fail(__FILE__, __LINE__, "%s -> %s (%s), expected %s", #call,         \
              symheap_strerror(r_), symheap_last_error(),                      \
              symheap_strerror(want));                                         \
  } while (0)

/* One case of a multi-rank test, and the cases run in turn on a rank:
 * th_begin, the case, a barrier over c->comm (so that the ranks stay in
 * step between cases even after a failure), th_end. */
typedef struct {
  const char *name;
  void (*fn)(th_ctx_t *c);
} th_case_t;
void th_run_cases(th_ctx_t *c, const char *tag, const th_case_t *cases,
                  size_t ncases);
/* A test that is only cases: th_main (below) with the tag PREFIX
 * "threads<N>" / "procs<N>", then on every rank setup (when not NULL) and
 * the cases, as th_run_cases runs them. */
typedef struct {
  const char *prefix;
  void (*setup)(th_ctx_t *c);
  const th_case_t *cases;
  size_t ncases;
} th_suite_t;
int th_main_suite(int argc, char **argv, const th_suite_t *suite);

/* Process-wide resource counts, to prove nothing leaks. */
int th_count_fds(void);
/* Sockets and memfds only: what symheap opens, and stable under sanitizers
 * and valgrind, whose own descriptors come and go. */
int th_count_symheap_fds(void);
/* All mappings of the process, or 0 under ASan or valgrind (set
 * SYMHEAP_TEST_UNDER_TOOL), whose own mappings come and go. */
int th_count_maps(void);
/* Mappings of memfd memory (the host adaptor's and the fake CUDA driver's):
 * stable under any tool. */
int th_count_symheap_maps(void);

/* Run fn on n thread-ranks of one process, each with its own comm. */
typedef void (*th_rank_fn)(th_ctx_t *ctx, void *arg);
int th_run_threads(int n, th_rank_fn fn, void *arg);
/* Run ranks first..first+count-1 of an nranks job as threads of this process
 * (other processes run the rest): ranks as processes and threads mixed. */
int th_run_rank_threads(const symheap_unique_id_t *id, int nranks, int first,
                        int count, th_rank_fn fn, void *arg);

/* The main of a multi-rank test: with argv `--threads N`, N thread-ranks of
 * this process (each with its own comm); without, this process is one rank
 * of a job symheap-run started (symheap_comm_init_env).  The tag of every
 * case line becomes PREFIX "threads<N>" or PREFIX "procs<N>" (tag, tag_size);
 * *threads (when not NULL) is set to 1 for thread-ranks.  fn runs on every
 * rank; returns the exit status. */
int th_main(int argc, char **argv, const char *prefix, char *tag,
            size_t tag_size, int *threads, th_rank_fn fn, void *arg);
/* This process's rank and the job's rank count, as symheap-run gives them
 * (SYMHEAP_RANK, SYMHEAP_NRANKS), into *rank and *n: 0; -1 after a line
 * "FAIL <what>: run under symheap-run" where either is unset. */
int th_launcher_ranks(const char *what, int *rank, int *n);
/* The --mixed T form of such a test (harness_mixed.c: tests linked with
 * libsymheap.a only), under symheap-run: this process runs
 * T thread-ranks (SYMHEAP_RANK * T onwards) of a job of SYMHEAP_NRANKS * T,
 * so the job is processes x threads in one comm.  The tag becomes PREFIX
 * "mixed<P>x<T>"; *threads (when not NULL) is set to 1 and *first_rank (when
 * not NULL) to this process's first rank.  Returns the exit status. */
int th_run_mixed(int per_proc, const char *prefix, char *tag, size_t tag_size,
                 int *threads, int *first_rank, th_rank_fn fn, void *arg);

/* The recording test adaptor (record_adaptor.c): host memory, every call
 * logged per rank, and a fault injected at the Nth call of one op. */
extern const symheap_device_ops th_record_ops;
void th_record_reset(int multicast);
/* Fail the nth (1-based) call of `op` on `rank` with `code`; with
 * TH_RECORD_KILL the rank's process dies there of SIGKILL. */
#define TH_RECORD_KILL ((symheap_result_t)1000)
/* With TH_RECORD_STOP the rank's process stops (SIGSTOP) there for
 * TH_RECORD_STOP_MS, then carries on with the call. */
#define TH_RECORD_STOP ((symheap_result_t)1001)
#define TH_RECORD_STOP_MS 3500
/* Stop this process (SIGSTOP) and have a child wake it (SIGCONT) after ms:
 * a rank stalled as a debugger or an overloaded machine would stall it. */
void th_stop_self(int ms);
void th_record_fault(const char *op, int rank, int nth, symheap_result_t code);
/* Calls of `op` on `rank` since the last reset. */
int th_record_count(const char *op, int rank);
/* Comma-separated log of calls on `rank` since the last reset. */
const char *th_record_log(int rank);

#ifdef __cplusplus
}
#endif

#endif

/* Checks for the OpenSHMEM tests: each PE prints "PASS <case>" or
 * "FAIL <case> <why>" (test/run.sh merges the PEs' lines by case), and the
 * program's exit status says whether every case passed on this PE. */
#ifndef SHMEM_CHECK_H
#define SHMEM_CHECK_H

#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

static const char *shc_case;
static int shc_bad, shc_failures;

static inline void shc_begin(const char *name) {
  shc_case = name;
  shc_bad = 0;
}

#define SHC_CHECK(cond, ...)                                                   \
  do {                                                                         \
    if (!(cond) && !shc_bad) {                                                 \
      shc_bad = 1;                                                             \
      shc_failures++;                                                          \
      printf("FAIL %s PE %d: ", shc_case, shmem_my_pe());                      \
      printf(__VA_ARGS__);                                                     \
      printf(" (%s:%d)\n", __FILE__, __LINE__);                                \
      fflush(stdout);                                                          \
    }                                                                          \
  } while (0)

static inline void shc_end(void) {
  if (!shc_bad)
    printf("PASS %s\n", shc_case);
  fflush(stdout);
}

static inline int shc_status(void) { return shc_failures ? 1 : 0; }

/* A test's start: shmem_init, *me and *npes set. */
static inline void shc_init(int *me, int *npes) {
  shmem_init();
  *me = shmem_my_pe();
  *npes = shmem_n_pes();
}

/* A test's main: shc_init, the tests in order, shmem_finalize; returns the
 * exit status (shc_status). */
typedef void (*shc_test_fn)(void);
static inline int shc_run(int *me, int *npes, const shc_test_fn *tests,
                          size_t ntests) {
  shc_init(me, npes);
  for (size_t i = 0; i < ntests; i++)
    tests[i]();
  shmem_finalize();
  return shc_status();
}

/* PEs per (pretend) host: SYMHEAP_TEST_PER_HOST, which
 * test/shmem/pretend_host.sh sets, PE p being on host p / that; unset, every
 * PE is on one host.  Across hosts, shmem_ptr is NULL for another host's
 * PEs and SHMEM_TEAM_SHARED is this host's. */
static inline int shc_per_host(void) {
  const char *v = getenv("SYMHEAP_TEST_PER_HOST");
  int n = shmem_n_pes(), k = v ? atoi(v) : 0;
  return k > 0 && k < n ? k : n;
}
static inline int shc_same_host(int a, int b) {
  return a / shc_per_host() == b / shc_per_host();
}

#endif

/* SHMEM_SYMMETRIC_SIZE is a limit, not an up-front cost (issue 31 item 4):
 * run with a heap far larger than what the PEs touch (run_shmem.sh sets
 * SHMEM_SYMMETRIC_SIZE=16G), shmem_init and an 8 GiB shmem_malloc commit
 * no more than the pages written (the resident set grows by little), and
 * the far end of the block is symmetric. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_check.h"

static int me, npes;

/* This process's resident set in KiB (/proc/self/status VmRSS), or -1. */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0)
      sscanf(line + 6, "%ld", &v);
  if (f)
    fclose(f);
  return v;
}

static void test_big_heap_costs_what_is_touched(void) {
  const size_t big = (size_t)8 << 30;
  shc_begin("reserve_8GiB_block_commits_what_is_touched");
  long before = rss_kib();
  char *p = shmem_malloc(big);
  SHC_CHECK(p != NULL, "shmem_malloc(8 GiB) with SHMEM_SYMMETRIC_SIZE=%s",
            getenv("SHMEM_SYMMETRIC_SIZE") ? getenv("SHMEM_SYMMETRIC_SIZE")
                                           : "(unset)");
  if (p) {
    p[0] = (char)me;
    p[big - 1] = (char)(me + 1);
    shmem_barrier_all();
    long after = rss_kib();
    /* Two pages written (and the library's own): far below 64 MiB. */
    SHC_CHECK(before > 0 && after - before < 64 * 1024,
              "resident set grew by %ld KiB", after - before);
    char far = shmem_char_g(&p[big - 1], (me + 1) % npes);
    SHC_CHECK(far == (char)((me + 1) % npes + 1), "the far end: %d", far);
    shmem_barrier_all();
    shmem_free(p);
  }
  shc_end();
}

int main(void) {
  static const shc_test_fn tests[] = {test_big_heap_costs_what_is_touched};
  /* run_shmem.sh sets it; started by hand, the same. */
  setenv("SHMEM_SYMMETRIC_SIZE", "16G", 0);
  long at_start = rss_kib();
  shc_init(&me, &npes);
  long at_init = rss_kib();
  shc_begin("reserve_init_commits_little");
  SHC_CHECK(at_start > 0 && at_init - at_start < 128 * 1024,
            "shmem_init grew the resident set by %ld KiB", at_init - at_start);
  shc_end();
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
    tests[i]();
  shmem_finalize();
  return shc_status();
}

/* The harness's --mixed form (th_run_mixed): apart from harness.c because it
 * reads the job's id the way symheap-run writes it, through the core's
 * decoder, which only tests linked with libsymheap.a reach (TEST_COMMON in
 * the Makefile); harness.c also serves programs linked with the shared
 * library. */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

/* core/boot/uid.h, declared here because some tests that link this build
 * without -Icore (test_mapobj), which that header needs. */
symheap_result_t symheap__uid_from_hex(const char *hex,
                                       symheap_unique_id_t *id);

int th_run_mixed(int per_proc, const char *prefix, char *tag, size_t tag_size,
                 int *threads, int *first_rank, th_rank_fn fn, void *arg) {
  const char *hex = getenv("SYMHEAP_UNIQUE_ID");
  const char *prank = getenv("SYMHEAP_RANK"), *pn = getenv("SYMHEAP_NRANKS");
  symheap_unique_id_t id;
  if (!hex || !prank || !pn ||
      symheap__uid_from_hex(hex, &id) != SYMHEAP_SUCCESS) {
    printf("FAIL %smixed/env: run under symheap-run (%s)\n", prefix,
           symheap_last_error());
    return 1;
  }
  int nprocs = atoi(pn), first = atoi(prank) * per_proc;
  if (threads)
    *threads = 1;
  if (first_rank)
    *first_rank = first;
  snprintf(tag, tag_size, "%smixed%dx%d", prefix, nprocs, per_proc);
  int rc =
      th_run_rank_threads(&id, nprocs * per_proc, first, per_proc, fn, arg);
  return rc || th_total_failures() ? 1 : 0;
}

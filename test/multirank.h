/* What the files of the multi-rank suite share (test_multirank.c defines
 * the helpers and lists the cases; multirank_*.c hold the cases by idea). */
#ifndef SYMHEAP_TEST_MULTIRANK_H
#define SYMHEAP_TEST_MULTIRANK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

extern char tag[32];     /* the cases' tag: "procs4", "threads2", ... */
extern int g_threads;    /* ranks are threads (all of them, or mixed) */
extern int g_first_rank; /* first rank of this process (mixed mode) */

/* Whether this rank takes the process-wide counts (with thread-ranks, the
 * process's first rank alone). */
int counts_here(th_ctx_t *c);
/* Descriptors and mappings of the process, between two barriers. */
void quiet_counts(th_ctx_t *c, int *fds, int *maps);
/* The byte at i of rank's pattern. */
unsigned char pattern(int rank, size_t i);
void barrier(th_ctx_t *c);
/* A comm's stats with its heap trimmed and its reservation left out. */
symheap_comm_stats_t settled(symheap_comm_t comm, int n);
symheap_comm_stats_t stats(th_ctx_t *c);

/* multirank_split.c */
void case_split(th_ctx_t *c);
void case_split_local(th_ctx_t *c);
void case_two_hosts(th_ctx_t *c);
/* multirank_reuse.c */
void case_reregister_shared(th_ctx_t *c);
void case_reregister_many(th_ctx_t *c);
void case_cycles(th_ctx_t *c);
void case_window_cache(th_ctx_t *c);
/* multirank_pad.c */
void case_signals(th_ctx_t *c);
void case_slots_exhausted(th_ctx_t *c);
void case_device_timeout(th_ctx_t *c);
void case_device_timeout_after_break(th_ctx_t *c);
/* multirank_state.c */
void case_info(th_ctx_t *c);
void case_stale_handles(th_ctx_t *c);
void case_fork(th_ctx_t *c);

#endif

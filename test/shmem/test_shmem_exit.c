/* Ending a job: run by test/run.sh, which checks the job's exit status.
 *   --global-exit S   PE 0 calls shmem_global_exit(S) while every other PE
 *                     waits in shmem_barrier_all: the job ends with S (also
 *                     for S = 0, when no launcher would stop the others).
 *   --pe-dies         the last PE exits without shmem_finalize while the
 *                     others wait in a barrier: they end with an error
 *                     instead of waiting for ever.
 *   --before-init     an RMA call before shmem_init ends the program with
 *                     status 1 and a message instead of crashing.
 *   --stuck-pe        the last PE stops in pause() (alive, never arriving)
 *                     while the others wait in a barrier: with
 *                     SYMHEAP_SHMEM_TIMEOUT_MS set they end, saying so (before,
 *                     they waited for ever).
 *   --poll-long       PE 0 polls shmem_test on a flag for 2.5 s, working
 *                     between the tests, until PE 1 sets it: with
 *                     SYMHEAP_SHMEM_TIMEOUT_MS=1000 the job still ends
 *                     with 0 (a polling loop is not a wait).
 *   --overrun WHAT    PE 0 makes an access that runs past its region (heap
 *                     put or get of 2 GiB from a heap object, data: a put
 *                     past the data segment's, iput: a stride of 2^40,
 *                     iput_back: one of -2^20, before the heap's start) or
 *                     that starts nowhere (self_null: a put to itself
 *                     through NULL; wait_null, test_null, signal_null: a
 *                     wait, test or signal_fetch on NULL): the job ends
 *                     with status 1, saying
 *                     so, where before the bytes went past the region
 *                     (another PE's control page) or the PE crashed.
 *                     *_wrap: a count whose bytes overflow size_t (put,
 *                     get, put_signal, broadcast, reduce, alltoall; before,
 *                     8 bytes moved silently); bcast_past, fcollect_past:
 *                     collectives of 2 GiB from a heap object (before, only
 *                     their first byte was checked).
 *   --ctx-after-destroy [twice]  PE 0 uses (or destroys again) a context
 *                     it destroyed: the job ends with status 1, saying so
 *                     (before: freed memory was read).
 *   --team-after-destroy  every PE syncs a team it destroyed: the same.
 *   --ctx-team-destroyed  every PE uses a context whose team it destroyed.
 *   --collect-past    every PE collects 64 KiB into a 64-byte global: the
 *                     job ends (before: the collect wrote past the data
 *                     segment's end).
 *   --free-mismatch   PE 0 frees another object than the others: every PE
 *                     ends, saying so (before: the heaps went asymmetric).
 * A PE that gets past the barrier prints "FAIL ..." (it should not). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char data_seg[64];

/* --overrun: PE 0's access to obj (1 MiB, symmetric); it must not
 * return. */
static void overrun(const char *what, char *obj) {
  size_t heap = (size_t)1 << 20, past = heap + 65536;
  volatile size_t huge = (size_t)1 << 31; /* no compile-time overflow */
  /* 2^61 + 1 longs: 8 bytes once the count is multiplied and wraps */
  volatile size_t wrap = SIZE_MAX / sizeof(long) + 2;
  char *buf = calloc(1, past);
  if (!obj || !buf)
    return;
  if (strcmp(what, "heap") == 0)
    shmem_putmem(obj, buf, huge, 1);
  else if (strcmp(what, "get") == 0)
    shmem_getmem(buf, obj, huge, 1); /* refused before a byte */
  else if (strcmp(what, "data") == 0)
    shmem_putmem(data_seg, buf, huge, 1);
  else if (strcmp(what, "iput") == 0)
    shmem_long_iput((long *)obj, (long *)buf, (ptrdiff_t)1 << 40, 1, 2, 1);
  else if (strcmp(what, "iput_back") == 0) /* the second 8 MiB before */
    shmem_long_iput((long *)obj, (long *)buf, -((ptrdiff_t)1 << 20), 1, 2, 1);
  else if (strcmp(what, "self_null") == 0)
    shmem_long_put(NULL, (long *)buf, 1, 0);
  else if (strcmp(what, "wait_null") == 0)
    shmem_long_wait_until(NULL, SHMEM_CMP_EQ, 1);
  else if (strcmp(what, "test_null") == 0)
    shmem_long_test_all(NULL, 2, NULL, SHMEM_CMP_EQ, 1);
  else if (strcmp(what, "signal_null") == 0)
    shmem_signal_fetch(NULL);
  else if (strcmp(what, "put_wrap") == 0) /* inline path */
    shmem_long_put((long *)obj, (long *)buf, wrap, 1);
  else if (strcmp(what, "ctx_put_wrap") == 0) /* the library's */
    shmem_ctx_long_put(SHMEM_CTX_DEFAULT, (long *)obj, (long *)buf, wrap, 1);
  else if (strcmp(what, "get_wrap") == 0)
    shmem_long_get((long *)buf, (long *)obj, wrap, 1);
  else if (strcmp(what, "signal_wrap") == 0)
    shmem_long_put_signal((long *)obj, (long *)buf, wrap,
                          (uint64_t *)(obj + 4096), 1, SHMEM_SIGNAL_SET, 1);
  else if (strcmp(what, "bcast_wrap") == 0)
    shmem_long_broadcast(SHMEM_TEAM_WORLD, (long *)obj, (long *)obj, wrap, 0);
  else if (strcmp(what, "bcast_past") == 0)
    shmem_broadcastmem(SHMEM_TEAM_WORLD, obj, obj, huge, 0);
  else if (strcmp(what, "fcollect_past") == 0)
    shmem_fcollectmem(SHMEM_TEAM_WORLD, obj, obj, huge / 4);
  else if (strcmp(what, "reduce_past") == 0) /* dest: 512 KiB, data_seg */
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, (long *)data_seg, (long *)obj,
                          65536);
  else if (strcmp(what, "reduce_wrap") == 0)
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, (long *)obj, (long *)obj, wrap);
  else if (strcmp(what, "alltoall_wrap") == 0)
    shmem_long_alltoall(SHMEM_TEAM_WORLD, (long *)obj, (long *)obj, wrap);
  printf("FAIL exit overrun %s returned\n", what);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--before-init") == 0) {
    static int x;
    if (argc > 2 && strcmp(argv[2], "barrier") == 0)
      shmem_barrier_all(); /* the message names shmem_barrier_all */
    shmem_int_p(&x, 1, 0); /* must end the program with a message */
    printf("FAIL exit shmem_int_p before shmem_init returned\n");
    return 0;
  }
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  if (argc > 2 && strcmp(argv[1], "--global-exit") == 0) {
    if (me == 0) {
      usleep(300 * 1000); /* the others are in the barrier by now */
      shmem_global_exit(atoi(argv[2]));
    }
  } else if (argc > 2 && strcmp(argv[1], "--overrun") == 0) {
    char *obj = shmem_malloc((size_t)1 << 20); /* collective: every PE */
    if (me == 0)
      overrun(argv[2], obj);
  } else if (argc > 1 && strcmp(argv[1], "--ctx-after-destroy") == 0) {
    static long x;
    shmem_ctx_t ctx;
    if (shmem_ctx_create(0, &ctx) != 0)
      printf("FAIL exit shmem_ctx_create\n");
    shmem_ctx_long_p(ctx, &x, 1, 1 % npes);
    shmem_ctx_destroy(ctx);
    if (me == 0) {
      if (argc > 2 && strcmp(argv[2], "twice") == 0)
        shmem_ctx_destroy(ctx);
      else
        shmem_ctx_long_p(ctx, &x, 2, 1 % npes); /* must end the job */
      printf("FAIL exit a destroyed context was used\n");
    }
  } else if (argc > 1 && strcmp(argv[1], "--ctx-team-destroyed") == 0) {
    static long x;
    shmem_team_t t;
    shmem_ctx_t ctx;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t);
    if (shmem_team_create_ctx(t, 0, &ctx) != 0)
      printf("FAIL exit shmem_team_create_ctx\n");
    shmem_team_destroy(t); /* with a context on it: the program's error */
    shmem_ctx_long_p(ctx, &x, 1, 0); /* every PE: must end the job */
    printf("FAIL exit a context of a destroyed team was used\n");
  } else if (argc > 1 && strcmp(argv[1], "--collect-past") == 0) {
    /* Every PE collects 64 KiB into a 64-byte global: the total, known
     * once every length is posted, runs past the data segment. */
    char *obj = shmem_malloc((size_t)1 << 16);
    shmem_collectmem(SHMEM_TEAM_WORLD, data_seg, obj, (size_t)1 << 16);
    printf("FAIL exit PE %d: a collect past its dest returned\n", me);
  } else if (argc > 1 && strcmp(argv[1], "--team-after-destroy") == 0) {
    shmem_team_t t;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t);
    shmem_team_destroy(t);
    shmem_team_sync(t); /* every PE: must end the job */
    printf("FAIL exit a collective on a destroyed team returned\n");
  } else if (argc > 1 && strcmp(argv[1], "--free-mismatch") == 0) {
    char *a = shmem_malloc(64), *b = shmem_malloc(64);
    shmem_free(me == 0 ? a : b); /* must end the job on every PE */
    printf("FAIL exit PE %d returned from a mismatched shmem_free\n", me);
  } else if (argc > 1 && strcmp(argv[1], "--poll-long") == 0) {
    static long flag;
    shmem_barrier_all();
    if (me != 0) /* working, not waiting in the library */
      usleep(2500 * 1000);
    if (me == 1 % npes)
      shmem_long_p(&flag, 1, 0);
    if (me == 0)
      while (!shmem_long_test(&flag, SHMEM_CMP_EQ, 1))
        usleep(1000); /* the program's own work between the tests */
    shmem_barrier_all();
    shmem_finalize();
    return 0;
  } else if (argc > 1 && strcmp(argv[1], "--stuck-pe") == 0) {
    if (me == npes - 1)
      for (;;)
        pause();
  } else if (argc > 1 && strcmp(argv[1], "--pe-dies") == 0) {
    if (me == npes - 1) {
      usleep(300 * 1000);
      _exit(0);
    }
  } else {
    fprintf(stderr,
            "usage: %s --global-exit S | --pe-dies | --stuck-pe | --overrun "
            "W | --ctx-after-destroy [twice] | --team-after-destroy | "
            "--ctx-team-destroyed | --collect-past | --free-mismatch\n",
            argv[0]);
    return 2;
  }
  shmem_barrier_all();
  printf("FAIL exit PE %d got past the barrier\n", me);
  shmem_finalize();
  return 1;
}

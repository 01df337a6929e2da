/* One-sided latency and bandwidth between two ranks (two hosts), the same
 * measurement as the raw libfabric probe (bench/net_probe.c: sizes,
 * iterations, warm-up, medians) written once over three libraries, so the
 * numbers of bench/net.sh differ only in the library:
 *   gcc   bench/net_onesided.c -lsymheap       symheap (symheap-run)
 *   oshcc -DNB_SHMEM bench/net_onesided.c      OpenSHMEM (oshrun)
 *   mpicc -DNB_MPI bench/net_onesided.c        MPI-3 RMA (mpirun)
 * Rank 0 measures against rank 1, which sits in a barrier (progressing, as
 * the probe's server does).  Source and destination are rank 0's copy of
 * the symmetric region (as the probe's registered region and OSU's
 * symmetric buffers); --private takes them from malloc'd memory instead.
 * Rows (rank 0), like the probe's: put_quiet/get <bytes> <usec>,
 * fetch_add 8 <usec>, put_bw <bytes> <MB/s>; '#' lines are comments.
 * --bw: the bandwidth rows alone (a quicker A/B of them).
 *   PROG [--quick] [--private] [--bw] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REGION (8u << 20) /* as PROBE_REGION, plus a word for fetch-add */
#define WINDOW 64         /* puts in flight per bandwidth round */

static int me, npes;
static char *sym, *buf; /* the symmetric region; the source/destination */

#if defined(NB_SHMEM)
#include <shmem.h>
#define ENGINE "OpenSHMEM (oshrun)"
static void b_init(int *argc, char ***argv) {
  (void)argc, (void)argv;
  shmem_init();
  me = shmem_my_pe(), npes = shmem_n_pes();
  sym = shmem_malloc(REGION + 64);
}
static void b_put(size_t off, size_t len) {
  shmem_putmem(sym + off, buf + off, len, 1);
}
static void b_put_nbi(size_t off, size_t len) {
  shmem_putmem_nbi(sym + off, buf + off, len, 1);
}
static void b_quiet(void) { shmem_quiet(); }
static void b_get(size_t off, size_t len) {
  shmem_getmem(buf + off, sym + off, len, 1);
}
static uint64_t b_fadd(size_t off) {
  return (uint64_t)shmem_long_atomic_fetch_add((long *)(void *)(sym + off), 1,
                                               1);
}
static void b_barrier(void) { shmem_barrier_all(); }
static void b_fini(void) {
  shmem_free(sym);
  shmem_finalize();
}

#elif defined(NB_MPI)
#include <mpi.h>
#define ENGINE "MPI-3 RMA (MPI_Win_allocate, lock_all, flush)"
static MPI_Win win;
static void b_init(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &npes);
  MPI_Win_allocate(REGION + 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &sym, &win);
  MPI_Win_lock_all(0, win);
}
/* MPI completes a put only by flush: put_quiet is MPI_Put + flush. */
static void b_put(size_t off, size_t len) {
  MPI_Put(buf + off, (int)len, MPI_BYTE, 1, (MPI_Aint)off, (int)len, MPI_BYTE,
          win);
}
static void b_put_nbi(size_t off, size_t len) { b_put(off, len); }
static void b_quiet(void) { MPI_Win_flush(1, win); }
static void b_get(size_t off, size_t len) {
  MPI_Get(buf + off, (int)len, MPI_BYTE, 1, (MPI_Aint)off, (int)len, MPI_BYTE,
          win);
  MPI_Win_flush(1, win);
}
static uint64_t b_fadd(size_t off) {
  uint64_t one = 1, old = 0;
  MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, 1, (MPI_Aint)off, MPI_SUM, win);
  MPI_Win_flush(1, win);
  return old;
}
static void b_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }
static void b_fini(void) {
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Finalize();
}

#else
#include "symheap.h"
#define ENGINE "symheap (public one-sided API)"
static symheap_comm_t comm;
static symheap_window_t win;
static void ok(symheap_result_t r, const char *what) {
  if (r == SYMHEAP_SUCCESS)
    return;
  fprintf(stderr, "net_onesided: rank %d: %s: %s\n", me, what,
          symheap_last_error());
  exit(1);
}
static void b_init(int *argc, char ***argv) {
  (void)argc, (void)argv;
  ok(symheap_comm_init_env(&comm), "symheap_comm_init_env");
  ok(symheap_comm_rank(comm, &me), "rank");
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  ok(symheap_comm_get_info(comm, &info), "get_info");
  npes = info.nranks;
  ok(symheap_malloc(comm, REGION + 64, 0, &win), "symheap_malloc");
  ok(symheap_window_local_ptr(win, (void **)&sym), "local_ptr");
}
static void b_put(size_t off, size_t len) {
  ok(symheap_put(win, 1, off, buf + off, len), "symheap_put");
}
static void b_put_nbi(size_t off, size_t len) {
  ok(symheap_put_nbi(win, 1, off, buf + off, len), "symheap_put_nbi");
}
static void b_quiet(void) { ok(symheap_quiet(comm), "symheap_quiet"); }
static void b_get(size_t off, size_t len) {
  ok(symheap_get(win, 1, off, buf + off, len), "symheap_get");
}
static uint64_t b_fadd(size_t off) {
  uint64_t one = 1, old = 0;
  ok(symheap_atomic(win, 1, off, SYMHEAP_AMO_FETCH_ADD, 8, &one, NULL, &old),
     "symheap_atomic");
  return old;
}
static void b_barrier(void) { ok(symheap_comm_barrier(comm), "barrier"); }
static void b_fini(void) {
  ok(symheap_free(comm, win), "symheap_free");
  ok(symheap_comm_destroy(comm), "destroy");
}
#endif

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* As net_probe.c's. */
static int iters_for(size_t len, int quick) {
  int n = len <= 4096 ? 1000 : len <= 65536 ? 300 : 100;
  return quick ? n / 10 + 2 : n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One latency series (op 0 put+quiet, 1 get, 2 fetch-add): each operation
 * timed to its completion after a warm-up; the median printed. */
static void latency(const char *name, int op, int quick) {
  static double t[1000];
  for (size_t len = 8; len <= (op == 2 ? 8u : 256u << 10); len *= 2) {
    int n = iters_for(len, quick);
    b_barrier();
    for (int i = -n / 10 - 1; me == 0 && i < n; i++) {
      double t0 = now_us();
      if (op == 0) {
        b_put(0, len);
        b_quiet();
      } else if (op == 1) {
        b_get(0, len);
      } else {
        (void)b_fadd(REGION);
      }
      if (i >= 0)
        t[i] = now_us() - t0;
    }
    if (me == 0) {
      printf("%s %zu %.2f\n", name, len, median(t, n));
      fflush(stdout);
    }
  }
}

/* As net_probe.c's: rounds of WINDOW puts in flight (fewer past 8 MiB a
 * round), then quiet; the median round's rate. */
static void bandwidth(int quick) {
  double t[64];
  for (size_t len = 4096; len <= (4u << 20); len *= 2) {
    size_t per = REGION / len < WINDOW ? REGION / len : WINDOW;
    int rounds = (int)((quick ? 16u << 20 : 128u << 20) / (len * per));
    rounds = rounds < 3 ? 3 : rounds > 64 ? 64 : rounds;
    b_barrier();
    for (int r = -1; me == 0 && r < rounds; r++) {
      double t0 = now_us();
      for (size_t k = 0; k < per; k++)
        b_put_nbi(k * len % REGION, len);
      b_quiet();
      if (r >= 0)
        t[r] = now_us() - t0;
    }
    if (me == 0) {
      printf("put_bw %zu %.1f\n", len,
             (double)len * (double)per / median(t, rounds));
      fflush(stdout);
    }
  }
}

int main(int argc, char **argv) {
  int quick = 0, priv = 0, bw_only = 0;
  b_init(&argc, &argv);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else if (!strcmp(argv[i], "--private"))
      priv = 1;
    else if (!strcmp(argv[i], "--bw"))
      bw_only = 1;
  }
  if (npes != 2) {
    if (me == 0)
      fprintf(stderr, "net_onesided: wants 2 ranks, has %d\n", npes);
    return 2;
  }
  char *own = priv ? aligned_alloc(4096, REGION) : NULL;
  buf = priv ? own : sym;
  memset(buf, 1, REGION);
  if (me == 0)
    printf("# engine: %s; buffers %s\n", ENGINE,
           priv ? "private (malloc)" : "the symmetric region");
  if (!bw_only) {
    latency("put_quiet", 0, quick);
    latency("get", 1, quick);
    latency("fetch_add", 2, quick);
  }
  bandwidth(quick);
  b_barrier();
  if (me == 0) {
    printf("# done\n");
    fflush(stdout);
  }
  free(own);
  b_fini();
  return 0;
}

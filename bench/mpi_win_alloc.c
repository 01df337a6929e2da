/* The peer's symmetric allocation, measured the way symheap-bench --heap
 * measures symheap_malloc + symheap_free: MPI_Win_allocate_shared +
 * MPI_Win_free on MPI_COMM_WORLD (one node), microseconds, the slowest
 * rank's time, median over iterations.
 *   make mpi-win-bench
 *   mpirun --oversubscribe --bind-to none -n 4 build/bin/mpi-win-bench \
 *     [--max-size BYTES] [--iters N]
 * docs/perf/heap.md has the numbers and the script that runs both. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double slowest(double v) {
  double m;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t max_size = 64u << 20;
  int iters = 21;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc)
      max_size = (size_t)strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
      iters = atoi(argv[++i]);
  }
  if (iters < 1)
    iters = 1;
  double *al = calloc((size_t)iters, sizeof *al);
  double *fr = calloc((size_t)iters, sizeof *fr);
  double *pr = calloc((size_t)iters, sizeof *pr);
  if (!al || !fr || !pr)
    MPI_Abort(MPI_COMM_WORLD, 1);
  if (rank == 0)
    printf("MPI_Win_allocate_shared + MPI_Win_free, %d ranks: microseconds, "
           "slowest rank, median of iters\n\n%-10s %12s %12s %12s %6s\n",
           n, "block", "allocate", "free", "pair", "iters");
  for (size_t size = 4096; size <= max_size; size *= 4) {
    for (int i = 0; i < iters; i++) {
      void *base;
      MPI_Win win;
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Win_allocate_shared((MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                              &base, &win);
      double t1 = MPI_Wtime();
      MPI_Win_free(&win);
      double t2 = MPI_Wtime();
      al[i] = slowest(t1 - t0);
      fr[i] = slowest(t2 - t1);
      pr[i] = slowest(t2 - t0);
    }
    if (rank == 0) {
      char label[32];
      if (size >= (1u << 20))
        snprintf(label, sizeof label, "%zu MiB", size >> 20);
      else
        snprintf(label, sizeof label, "%zu KiB", size >> 10);
      printf("%-10s %12.1f %12.1f %12.1f %6d\n", label, median(al, iters) * 1e6,
             median(fr, iters) * 1e6, median(pr, iters) * 1e6, iters);
    }
  }
  free(al);
  free(fr);
  free(pr);
  MPI_Finalize();
  return 0;
}

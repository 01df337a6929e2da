/* OSU's put (get) latency loop on the heap, each iteration timed: the first
 * put of each size into a peer's new object, the other 99, and the minor
 * page faults the 100 took (first_put.txt).  Sizes from FROM bytes (default
 * 16 KiB) to 1 MiB; as in OSU, 10000 iterations of sizes up to 8 KiB and
 * 100 above, every one timed (small_phase_timed.txt: FROM 1).
 * Build with symheap-oshcc -O2 (or Open MPI's oshcc); run: symheap-run -n 2
 * ./first_put get|put [FROM].  README.md has the commands. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static long minflt(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}
int main(int argc, char **argv) {
  int put = argc > 1 && !strcmp(argv[1], "put");
  long from = argc > 2 ? atol(argv[2]) : 16384;
  shmem_init();
  int me = shmem_my_pe();
  char *s = shmem_malloc(1 << 22), *r = shmem_malloc(1 << 22);
  s = (char *)(((unsigned long)s + 63) / 64 * 64);
  r = (char *)(((unsigned long)r + 63) / 64 * 64);
  static double t[10000];
  for (long size = from; size <= (1 << 20); size *= 2) {
    int n = size <= 8192 ? 10000 : 100;
    for (long i = 0; i < size; i++) {
      s[i] = 'a';
      r[i] = 'b';
    }
    shmem_barrier_all();
    long f0 = minflt();
    if (me == 0)
      for (int i = 0; i < n; i++) {
        double a = now();
        if (put)
          shmem_putmem(r, s, size, 1);
        else
          shmem_getmem(r, s, size, 1);
        t[i] = now() - a;
      }
    long f1 = minflt();
    shmem_barrier_all();
    if (me == 0) {
      double rest = 0;
      for (int i = 1; i < n; i++)
        rest += t[i];
      double tot = rest + t[0];
      printf("%s %7ld first %7.2f rest-mean %6.2f all-mean %6.2f faults %ld\n",
             put ? "put" : "get", size, t[0], rest / (n - 1), tot / n, f1 - f0);
    }
  }
  shmem_finalize();
  return 0;
}

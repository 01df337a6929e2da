/* OSU's get (put) latency loop from 1 byte: 10000 iterations up to 8 KiB, 100
 * above (the first timed), one time for all, as osu_oshm_get does; prints
 * the mean per size in the 8th column.  Build with symheap-oshcc -O2 or
 * oshcc -O2; small_phase.txt compares it with the same loop started at 16
 * KiB: small_phase get 16384. */
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
  shmem_init();
  int me = shmem_my_pe();
  char *s = shmem_malloc(1 << 22), *r = shmem_malloc(1 << 22);
  s = (char *)(((unsigned long)s + 63) / 64 * 64);
  r = (char *)(((unsigned long)r + 63) / 64 * 64);
  long from = argc > 2 ? atol(argv[2]) : 1;
  for (long size = from; size <= (1 << 20); size *= 2) {
    for (long i = 0; i < size; i++) {
      s[i] = 'a';
      r[i] = 'b';
    }
    shmem_barrier_all();
    double t[100];
    long f0 = minflt();
    int L = size <= 8192 ? 10000 : 100;
    double T0 = now();
    if (me == 0)
      for (int i = 0; i < L; i++) {
        if (put)
          shmem_putmem(r, s, size, 1);
        else
          shmem_getmem(r, s, size, 1);
      }
    double T1 = now();
    for (int i = 0; i < 100; i++)
      t[i] = (T1 - T0) / L;
    long f1 = minflt();
    shmem_barrier_all();
    if (me == 0) {
      double rest = 0;
      for (int i = 1; i < 100; i++)
        rest += t[i];
      double tot = rest + t[0];
      printf("%s %7ld first %7.2f rest-mean %6.2f all-mean %6.2f faults %ld\n",
             put ? "put" : "get", size, t[0], rest / 99, tot / 100, f1 - f0);
    }
  }
  shmem_finalize();
  return 0;
}

/* OSU's get (put) latency loop from 1 byte (10000 iterations up to 8 KiB,
 * 100 above, one time for all, as osu_oshm_get runs it), with PE 0's core
 * clock read around each size's timed loop.  MODE says what PE 0 does
 * between the barrier and the loop, and when it reads the clock (a chain
 * of dependent imuls, 3 cycles each: clock_copy.c; about 60 us):
 *   probe    the clock before the loop and after it
 *   after    the clock after the loop only
 *   none     nothing (OSU's own order)
 *   spin     60 us of clock_gettime calls before the loop
 *   sleep    a 60 us nanosleep before the loop
 * The buffers start on a page, as OSU's do.
 * Prints, from 16 KiB (every size with ALLSIZES set; FROM=N starts the
 * loop at N bytes): size, us per get, clock before, clock after (0: not
 * read), cycles per get (by the clock after).  Build with symheap-oshcc -O2
 * or oshcc -O2; run: symheap-run -n 2 ./clock_get get MODE. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static double ghz(void) {
  double best = 1e9;
  for (int r = 0; r < 3; r++) {
    unsigned long x = 3;
    double t0 = now();
    for (long i = 0; i < 20000; i++)
      __asm__ volatile("imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
                       "imul %0, %0"
                       : "+r"(x));
    double t = now() - t0;
    if (t < best)
      best = t;
  }
  return 240000 / best / 1000;
}
int main(int argc, char **argv) {
  int put = argc > 1 && !strcmp(argv[1], "put");
  const char *mode = argc > 2 ? argv[2] : "probe";
  int before = !strcmp(mode, "probe");
  int after = before || !strcmp(mode, "after");
  shmem_init();
  int me = shmem_my_pe();
  long page = 4096;
  char *s = shmem_malloc((1 << 22) + page), *r = shmem_malloc((1 << 22) + page);
  s = (char *)(((unsigned long)s + page - 1) / page * page);
  r = (char *)(((unsigned long)r + page - 1) / page * page);
  for (long size = getenv("FROM") ? atol(getenv("FROM")) : 1; size <= (1 << 20);
       size *= 2) {
    for (long i = 0; i < size; i++) {
      s[i] = 'a';
      r[i] = 'b';
    }
    shmem_barrier_all();
    int loops = size <= 8192 ? 10000 : 100;
    double g0 = 0, g1 = 0, t0 = 0, t1 = 0;
    if (me == 0) {
      if (!strcmp(mode, "spin")) {
        double t = now();
        while (now() - t < 60)
          ;
      } else if (!strcmp(mode, "sleep")) {
        struct timespec q = {0, 60000};
        nanosleep(&q, NULL);
      }
      if (before)
        g0 = ghz();
      t0 = now();
      for (int i = 0; i < loops; i++) {
        if (put)
          shmem_putmem(r, s, size, 1);
        else
          shmem_getmem(r, s, size, 1);
      }
      if (put)
        shmem_quiet();
      t1 = now();
      if (after)
        g1 = ghz();
    }
    shmem_barrier_all();
    if (me == 0 && size >= (getenv("ALLSIZES") ? 1 : 16384)) {
      double us = (t1 - t0) / loops;
      printf("%ld %.3f %.2f %.2f %.0f\n", size, us, g0, g1, us * g1 * 1000);
    }
  }
  shmem_finalize();
  return 0;
}

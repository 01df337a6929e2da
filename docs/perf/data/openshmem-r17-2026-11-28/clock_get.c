/* OSU's get (put) latency loop as osu_oshm_get runs it (buffers from
 * shmem_malloc aligned to 64 bytes; up to 8 KiB 1000 untimed gets, then
 * 10000 timed; above, 100 timed; one time for all), with PE 0's core clock
 * read around each size's timed loop.  The clock: a chain of dependent
 * imuls, 3 cycles each (clock_copy.c), best of 3 passes of 240000 cycles,
 * so about 180 us a reading.  MODE says what PE 0 does between the barrier
 * and the timed loop, and after the loop:
 *   none     nothing (OSU's own order)
 *   after    reads the clock after the loop
 *   probe    reads the clock before the loop and after it
 *   spin     clock_gettime calls for 180 us before the loop and after it
 *   sleep    a nanosleep of 180 us before the loop and after it
 * Prints, from 16 KiB (every size with ALLSIZES set; FROM=N starts at N
 * bytes): size, us per get, the clock before and after (0: not read), and
 * cycles per get by the clock after.  Build with symheap-oshcc -O2 or
 * oshcc -O2; run: symheap-run -n 2 ./clock_get get MODE. */
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
/* spin and sleep: about as long as a clock reading, without the imuls. */
static void pass_time(const char *mode) {
  if (!strcmp(mode, "spin")) {
    double t = now();
    while (now() - t < 180)
      ;
  } else if (!strcmp(mode, "sleep")) {
    struct timespec q = {0, 180000};
    nanosleep(&q, NULL);
  }
}
int main(int argc, char **argv) {
  int put = argc > 1 && !strcmp(argv[1], "put");
  const char *mode = argc > 2 ? argv[2] : "probe";
  int before = !strcmp(mode, "probe");
  int after = before || !strcmp(mode, "after");
  shmem_init();
  int me = shmem_my_pe();
  char *s = shmem_malloc((1 << 22) + 64), *r = shmem_malloc((1 << 22) + 64);
  s = (char *)(((unsigned long)s + 63) / 64 * 64);
  r = (char *)(((unsigned long)r + 63) / 64 * 64);
  for (long size = getenv("FROM") ? atol(getenv("FROM")) : 1; size <= (1 << 20);
       size *= 2) {
    for (long i = 0; i < size; i++) {
      s[i] = 'a';
      r[i] = 'b';
    }
    shmem_barrier_all();
    int skip = size <= 8192 ? 1000 : 0, loops = size <= 8192 ? 10000 : 100;
    double g0 = 0, g1 = 0, t0 = 0, t1 = 0;
    if (me == 0) {
      pass_time(mode);
      if (before)
        g0 = ghz();
      for (int i = 0; i < loops + skip; i++) {
        if (i == skip)
          t0 = now();
        if (put)
          shmem_putmem(r, s, size, 1);
        else
          shmem_getmem(r, s, size, 1);
      }
      if (put)
        shmem_quiet();
      t1 = now();
      pass_time(mode);
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

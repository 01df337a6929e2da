/* One process on one CPU: this core's clock and the time of a 32 KiB and a
 * 256 KiB memcpy between two cached buffers, before and after 10000 copies
 * of each size from 1 byte to MAX (as OSU's latency benchmarks run before
 * their large sizes), five times over.  The clock is a chain of dependent
 * imuls (3 cycles each on this core; best of 5 x 20000 x 4): the guest
 * has no cycle counter (perf: "cycles <not supported>").
 * gcc -O2 -o clock_copy clock_copy.c; taskset -c 0 ./clock_copy [MAX] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static char *a, *b;
static double ghz(void) {
  double best = 1e9;
  for (int r = 0; r < 5; r++) {
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
static double copy_us(size_t n) {
  double best = 1e9;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (int i = 0; i < 100; i++) {
      memcpy(b, a, n);
      __asm__ volatile("" ::: "memory");
    }
    double t = (now() - t0) / 100;
    if (t < best)
      best = t;
  }
  return best;
}
static void small(size_t max) {
  for (size_t s = 1; s <= max; s *= 2)
    for (int i = 0; i < 10000; i++) {
      memcpy(b, a, s);
      __asm__ volatile("" ::: "memory");
    }
}
static void line(const char *what) {
  double g = ghz(), c32 = copy_us(32 << 10), c256 = copy_us(256 << 10);
  printf("%-12s clock %.2f GHz  32K %.3f us (%.0f cycles)  256K %.3f us "
         "(%.0f cycles)\n",
         what, g, c32, c32 * g * 1000, c256, c256 * g * 1000);
}
int main(int argc, char **argv) {
  size_t max = argc > 1 ? (size_t)atol(argv[1]) : 8192;
  a = aligned_alloc(4096, 4 << 20);
  b = aligned_alloc(4096, 4 << 20);
  memset(a, 1, 4 << 20);
  memset(b, 2, 4 << 20);
  for (int k = 0; k < 5; k++) {
    line("before");
    small(max);
    line("after small");
  }
  return 0;
}

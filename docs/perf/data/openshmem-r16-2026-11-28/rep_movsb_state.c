/* One process, one CPU: the best of 5 x 100 copies of 256 KiB and 512 KiB
 * between two cached buffers, before and after 10000 copies of each size 1..MAX
 * bytes (as OSU's latency benchmarks run before their large sizes), then
 * after 20 ms of spinning.  HOW: 0 glibc memcpy, 1 rep movsb, 2 an AVX2
 * loop, 3 an AVX-512 loop.  gcc -O2; run: taskset -c 0 ./rep_movsb_state
 * MODE MAX HOW (MODE 1: a vzeroupper after the small copies). */
#include <immintrin.h>
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
static int how;
static void movsb(char *d, const char *s, size_t n) {
  __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n)::"memory");
}
__attribute__((target("avx2"))) static void v2(char *d, const char *s,
                                               size_t n) {
  for (size_t i = 0; i < n; i += 128) {
    __m256i x0 = _mm256_load_si256((const __m256i *)(s + i)),
            x1 = _mm256_load_si256((const __m256i *)(s + i + 32)),
            x2 = _mm256_load_si256((const __m256i *)(s + i + 64)),
            x3 = _mm256_load_si256((const __m256i *)(s + i + 96));
    _mm256_store_si256((__m256i *)(d + i), x0);
    _mm256_store_si256((__m256i *)(d + i + 32), x1);
    _mm256_store_si256((__m256i *)(d + i + 64), x2);
    _mm256_store_si256((__m256i *)(d + i + 96), x3);
  }
  _mm256_zeroupper();
}
__attribute__((target("avx512f"))) static void v5(char *d, const char *s,
                                                  size_t n) {
  for (size_t i = 0; i < n; i += 256) {
    __m512i x0 = _mm512_load_si512((const void *)(s + i)),
            x1 = _mm512_load_si512((const void *)(s + i + 64)),
            x2 = _mm512_load_si512((const void *)(s + i + 128)),
            x3 = _mm512_load_si512((const void *)(s + i + 192));
    _mm512_store_si512((void *)(d + i), x0);
    _mm512_store_si512((void *)(d + i + 64), x1);
    _mm512_store_si512((void *)(d + i + 128), x2);
    _mm512_store_si512((void *)(d + i + 192), x3);
  }
  _mm256_zeroupper();
}
static void cp(char *d, const char *s, size_t n) {
  if (how == 0)
    memcpy(d, s, n);
  else if (how == 1)
    movsb(d, s, n);
  else if (how == 2)
    v2(d, s, n);
  else
    v5(d, s, n);
}
static double big(size_t n) {
  double best = 1e9;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (int i = 0; i < 100; i++) {
      cp(b, a, n);
      __asm__ volatile("" ::: "memory");
    }
    double t = (now() - t0) / 100;
    if (t < best)
      best = t;
  }
  return best;
}
int main(int argc, char **argv) {
  int mode = atoi(argv[1]);
  how = atoi(argv[3]);
  size_t maxs = argc > 2 ? atol(argv[2]) : 8192;
  a = aligned_alloc(4096, 4 << 20);
  b = aligned_alloc(4096, 4 << 20);
  memset(a, 1, 4 << 20);
  memset(b, 2, 4 << 20);
  printf("before: 256K %.2f 512K %.2f\n", big(256 << 10), big(512 << 10));
  for (size_t s = 1; s <= maxs; s *= 2)
    for (int i = 0; i < 10000; i++) {
      memcpy(b, a, s);
      __asm__ volatile("" ::: "memory");
    }
  if (mode == 1)
    __asm__ volatile("vzeroupper");
  printf("after small (max %zu, mode %d): 256K %.2f 512K %.2f\n", maxs, mode,
         big(256 << 10), big(512 << 10));
  double t0 = now();
  while (now() - t0 < 20000)
    ;
  printf("after 20ms idle spin: 256K %.2f 512K %.2f\n", big(256 << 10),
         big(512 << 10));
  return 0;
}

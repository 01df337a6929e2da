/* The cost of a window accessor (symheap_window_local_ptr) and of a release
 * with few and with many live windows: both must not grow with the number
 * of live windows (issue: 65 us at 10,000 windows with the old linear walk).
 * One rank, host backend; prints one line per count.
 *   make window-lookup && build/bin/window-lookup */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "symheap.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(void) {
  symheap_unique_id_t id;
  symheap_comm_t c;
  if (symheap_get_unique_id(&id) || symheap_comm_init(&c, 1, &id, 0)) {
    fprintf(stderr, "init: %s\n", symheap_last_error());
    return 1;
  }
  const int counts[] = {10, 1000, 10000};
  printf("| live windows | local_ptr (ns) | malloc + free of one more (us) |\n"
         "|---|---|---|\n");
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    int n = counts[k];
    symheap_window_t *w = calloc((size_t)n, sizeof *w);
    for (int i = 0; i < n; i++)
      if (symheap_malloc(c, 256, 0, &w[i]) != SYMHEAP_SUCCESS) {
        fprintf(stderr, "malloc %d: %s\n", i, symheap_last_error());
        return 1;
      }
    void *p;
    const int iters = 1000000;
    double t0 = now_us();
    for (int i = 0; i < iters; i++)
      symheap_window_local_ptr(w[(unsigned)i * 7919u % (unsigned)n], &p);
    double lookup_ns = (now_us() - t0) * 1e3 / iters;
    symheap_window_t x;
    t0 = now_us();
    for (int i = 0; i < 1000; i++) {
      symheap_malloc(c, 256, 0, &x);
      symheap_free(c, x);
    }
    double pair_us = (now_us() - t0) / 1000;
    printf("| %d | %.0f | %.1f |\n", n, lookup_ns, pair_us);
    for (int i = 0; i < n; i++)
      symheap_free(c, w[i]);
    free(w);
  }
  symheap_comm_destroy(c);
  return 0;
}

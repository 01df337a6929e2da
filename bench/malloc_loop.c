/* Ad-hoc: time symheap_malloc + symheap_free of one size in a loop (slowest
 * rank), optionally after register/deregister of another buffer of that
 * size.  symheap-run -n 2 malloc_loop BYTES ITERS [prime] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symheap.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  size_t bytes = strtoull(argv[1], NULL, 0);
  int iters = atoi(argv[2]), prime = argc > 3;
  symheap_comm_t c;
  if (symheap_comm_init_env(&c)) {
    printf("init: %s\n", symheap_last_error());
    return 1;
  }
  int rank, n;
  symheap_comm_rank(c, &rank);
  symheap_comm_size(c, &n);
  if (prime) {
    void *buf;
    symheap_window_t w;
    symheap_mem_alloc(c, bytes, &buf);
    for (int i = 0; i < 3; i++) {
      symheap_window_register(c, buf, bytes, 0, &w);
      symheap_window_deregister(c, w);
    }
    symheap_mem_free(c, buf);
  }
  for (int i = 0; i < iters; i++) {
    symheap_window_t w;
    symheap_comm_barrier(c);
    double t0 = now_ms();
    if (symheap_malloc(c, bytes, 0, &w)) {
      printf("malloc: %s\n", symheap_last_error());
      return 1;
    }
    double t1 = now_ms(), all[16];
    double d = t1 - t0;
    symheap_comm_allgather(c, &d, all, sizeof d);
    symheap_comm_barrier(c);
    double t2 = now_ms();
    symheap_free(c, w);
    double t3 = now_ms();
    if (rank == 0)
      printf("malloc %.3f (rank0 %.3f, rank1 %.3f) free %.3f ms\n",
             all[0] > all[1] ? all[0] : all[1], all[0], all[1], t3 - t2);
  }
  symheap_comm_destroy(c);
  return 0;
}

/* shmem_malloc's time for a new object of 4 KiB-64 MiB and again after a
 * free (the same block): what prefaulting costs at allocation.  Build with
 * symheap-oshcc -O2; run under symheap-run with SYMHEAP_SHMEM_PREFAULT set
 * (README.md; alloc_cost.txt). */
#include <shmem.h>
#include <stdio.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
int main(void) {
  shmem_init();
  size_t sz[] = {4096, 65536, 1 << 20, 4 << 20, 64 << 20};
  for (int i = 0; i < 5; i++) {
    shmem_barrier_all();
    double a = now();
    void *p = shmem_malloc(sz[i]);
    double b = now();
    shmem_free(p);
    shmem_barrier_all();
    double c = now();
    void *q = shmem_malloc(sz[i]);
    double d = now();
    shmem_free(q);
    if (!shmem_my_pe())
      printf("%9zu first %8.3f ms again %8.3f ms\n", sz[i], b - a, d - c);
  }
  shmem_finalize();
}

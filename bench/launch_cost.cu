// Probe: where the host's time goes in one eager symheap_cuda_all_reduce
// call (not part of the library).  Times, per call, averaged over 20,000
// calls with no synchronisation inside the loop: an empty kernel launch with
// a small and with a view-sized parameter, symheap_window_device_view, and
// the whole all-reduce call (LL path, 4 KiB).  Then the per-op time of the
// call in a loop, as symheap-bench measures it.
//   make launch-cost && symheap-run -n 2 build/bin/launch-cost
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "symheap_cuda.h"

__global__ void empty_small(int x) { (void)x; }
__global__ void empty_big(symheap_device_window_t a, symheap_device_window_t b) {
  (void)a;
  (void)b;
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void) {
  int ndev = 0, rank = 0;
  cudaGetDeviceCount(&ndev);
  const char *lr = getenv("SYMHEAP_LOCAL_RANK");
  cudaSetDevice((lr ? atoi(lr) : 0) % ndev);
  setenv("SYMHEAP_DEVICE", "cuda", 0);
  symheap_comm_t comm;
  if (symheap_comm_init_env(&comm) != SYMHEAP_SUCCESS) {
    fprintf(stderr, "init: %s\n", symheap_last_error());
    return 1;
  }
  symheap_comm_rank(comm, &rank);
  symheap_window_t w;
  symheap_malloc(comm, 1 << 20, 0, &w);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  symheap_device_window_t v;
  symheap_window_device_view(w, &v);
  const int n = 20000;
  double t0, t[5];
  for (int k = 0; k < 2; k++) { // second pass is the one reported
    cudaStreamSynchronize(s);
    t0 = now_us();
    for (int i = 0; i < n; i++)
      empty_small<<<1, 32, 0, s>>>(i);
    t[0] = (now_us() - t0) / n;
    cudaStreamSynchronize(s);
    t0 = now_us();
    for (int i = 0; i < n; i++)
      empty_big<<<1, 32, 0, s>>>(v, v);
    t[1] = (now_us() - t0) / n;
    cudaStreamSynchronize(s);
    t0 = now_us();
    for (int i = 0; i < n; i++)
      symheap_window_device_view(w, &v);
    t[2] = (now_us() - t0) / n;
    symheap_comm_barrier(comm);
    t0 = now_us();
    for (int i = 0; i < n; i++)
      symheap_cuda_all_reduce(w, 0, w, 0, 2048, SYMHEAP_BFLOAT16,
                              SYMHEAP_OP_SUM, SYMHEAP_ALGO_AUTO,
                              (symheap_stream_t)s);
    t[3] = (now_us() - t0) / n;
    cudaStreamSynchronize(s);
    t[4] = (now_us() - t0) / n;
  }
  if (rank == 0)
    printf("host us per call: empty launch %.2f, launch with two views %.2f, "
           "device_view %.3f, all_reduce 4 KiB issue %.2f, issue+run %.2f\n",
           t[0], t[1], t[2], t[3], t[4]);
  symheap_comm_barrier(comm);
  symheap_free(comm, w);
  symheap_comm_destroy(comm);
  return 0;
}

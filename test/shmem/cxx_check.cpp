// shmem.h from C++: the header compiles as C++ and the typed routines link
// and work (each PE puts to its right neighbour, then reduces).
#include <shmem.h>

#include <cstdio>

static long ring;

int main() {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  long v = 100 + me;
  shmem_long_put(&ring, &v, 1, (me + 1) % npes);
  shmem_barrier_all();
  static long sum, src;
  src = ring;
  shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &sum, &src, 1);
  long want = 100L * npes + (long)npes * (npes - 1) / 2;
  bool ok = ring == 100 + (me + npes - 1) % npes && sum == want;
  std::printf("%s cxx_header\n", ok ? "PASS" : "FAIL");
  shmem_finalize();
  return ok ? 0 : 1;
}

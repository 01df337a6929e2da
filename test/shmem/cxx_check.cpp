// shmem.h from C++: the header compiles as C++ and the typed routines link
// and work (each PE puts to its right neighbour, then reduces); the
// deprecated headers (<mpp/shmem.h>, <shmemx.h>, <mpp/shmemx.h>) and the
// generic waits C++ programs keep using (shmem_wait, shmem_wait_until,
// shmem_test: overloads, there being no C11 generics in C++).
#include <mpp/shmem.h>
#include <mpp/shmemx.h>
#include <shmem.h>
#include <shmemx.h>

#include <cstdio>

static long ring;
static int flag_i;
static long long flag_ll;
static unsigned short flag_us;

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
  // Each PE raises its right neighbour's flags; each waits for its own.
  int right = (me + 1) % npes;
  shmem_int_p(&flag_i, 1, right);
  shmem_longlong_p(&flag_ll, 5, right);
  shmem_ushort_p(&flag_us, 3, right);
  shmem_wait_until(&flag_i, SHMEM_CMP_EQ, 1);
  shmem_wait(&flag_ll, 0LL); // deprecated: wait while it equals 0
  shmem_wait_until(&flag_us, SHMEM_CMP_GE, (unsigned short)3);
  bool ok2 = flag_i == 1 && flag_ll == 5 && flag_us == 3 &&
             shmem_test(&flag_i, SHMEM_CMP_EQ, 1);
  std::printf("%s cxx_generic_waits\n", ok2 ? "PASS" : "FAIL");
  shmem_finalize();
  return ok && ok2 ? 0 : 1;
}

/* symheap_comm_init_mpi under mpirun: a comm on MPI_COMM_WORLD and on a
 * split of it, windows over both, the caller's own MPI traffic in between. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "harness.h"
#include "net_loop.h"
#include "symheap_mpi.h"

/* Every rank writes its rank into its copy and reads every peer's. */
static void pattern(symheap_comm_t comm, int rank, int n, const char *what) {
  symheap_window_t w = NULL;
  CHECK_OK(symheap_malloc(comm, 4096, 0, &w));
  int *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  if (!w || !mine)
    return;
  for (int i = 0; i < 1024; i++)
    mine[i] = rank * 10000 + i;
  CHECK_OK(symheap_comm_barrier(comm));
  for (int p = 0; p < n; p++) {
    int *pp = NULL;
    CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&pp));
    int bad = -1;
    for (int i = 0; pp && i < 1024 && bad < 0; i++)
      if (pp[i] != p * 10000 + i)
        bad = i;
    CHECK(pp && bad < 0, "%s: rank %d's copy differs at %d", what, p, bad);
  }
  CHECK_OK(symheap_comm_barrier(comm));
  CHECK_OK(symheap_free(comm, w));
}

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The net cases' setting: the first half of the ranks on one pretend host,
 * the rest on another, the "loop" adaptor between them with no progress
 * thread (only the waits progress it), a 5 s timeout; cleared after. */
static void two_hosts_env(int rank, int n) {
  char host[32];
  snprintf(host, sizeof host, "mpi-host-%d", rank < n / 2 ? 0 : 1);
  setenv("SYMHEAP_HOST_ID", host, 1);
  setenv("SYMHEAP_NET", "loop", 1);
  setenv("SYMHEAP_NET_PROGRESS", "none", 1);
  setenv("SYMHEAP_TIMEOUT_MS", "5000", 1);
}

static void two_hosts_env_clear(void) {
  unsetenv("SYMHEAP_HOST_ID");
  unsetenv("SYMHEAP_NET");
  unsetenv("SYMHEAP_NET_PROGRESS");
  unsetenv("SYMHEAP_TIMEOUT_MS");
}

/* A rank inside a collective of the MPI ccl (MPI_Ibarrier polled with
 * MPI_Test) progresses the net adaptor, through the host services'
 * wait_progress: rank 0 gets from and adds to a rank of the other
 * (pretend) host while that rank sits in symheap_comm_barrier, and the
 * "loop" adaptor, like tcp;ofi_rxm, answers only when the target
 * progresses.  No progress thread (SYMHEAP_NET_PROGRESS=none): before,
 * the MPI ccl's wait progressed nothing, and rank 0's get timed out. */
static void net_progress_in_mpi_wait(int rank, int n) {
  th_begin("mpi", "net_progress_in_mpi_collective", rank);
  two_hosts_env(rank, n);
  setenv("SYMHEAP_HEAP_CHUNK", "1M", 1);
  setenv("SYMHEAP_HEAP_RESERVE", "16M", 1);
  symheap_comm_t c = NULL;
  CHECK_OK(symheap_comm_init_mpi(&c, MPI_COMM_WORLD));
  symheap_window_t w = NULL;
  if (c)
    CHECK_OK(symheap_malloc(c, 4096, 0, &w));
  uint64_t *mine = NULL;
  if (w)
    CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  if (mine) {
    mine[0] = 1000 + (uint64_t)rank;
    mine[1] = 0;
    CHECK_OK(symheap_comm_barrier(c));
    int t = n / 2; /* the other host's first rank */
    if (rank == 0) {
      /* Let t enter the barrier's MPI wait first. */
      struct timespec late = {0, 100 * 1000 * 1000};
      nanosleep(&late, NULL);
      int64_t t0 = now_ms();
      for (int i = 0; i < 20; i++) {
        uint64_t v = 0;
        CHECK_OK(symheap_get(w, t, 0, &v, 8));
        CHECK(v == 1000 + (uint64_t)t, "get from rank %d: %llu", t,
              (unsigned long long)v);
        CHECK_OK(symheap_atomic(w, t, 8, SYMHEAP_AMO_ADD, 8, &(uint64_t){1},
                                NULL, NULL));
      }
      CHECK_OK(symheap_quiet(c));
      CHECK(now_ms() - t0 < 3000,
            "20 gets and adds to a rank in an MPI barrier took %lld ms",
            (long long)(now_ms() - t0));
    }
    CHECK_OK(symheap_comm_barrier(c));
    if (rank == t)
      CHECK(mine[1] == 20, "rank %d's word after 20 adds: %llu", t,
            (unsigned long long)mine[1]);
    CHECK_OK(symheap_comm_barrier(c));
  }
  if (w)
    CHECK_OK(symheap_free(c, w));
  if (c)
    CHECK_OK(symheap_comm_destroy(c));
  two_hosts_env_clear();
  th_end();
}

/* This thread's voluntary context switches (sleeps) and CPU time. */
static void thread_use(long *sleeps, int64_t *cpu_us) {
  struct rusage u;
  getrusage(RUSAGE_THREAD, &u);
  *sleeps = u.ru_nvcsw;
  *cpu_us = (int64_t)u.ru_utime.tv_sec * 1000000 + u.ru_utime.tv_usec +
            (int64_t)u.ru_stime.tv_sec * 1000000 + u.ru_stime.tv_usec;
}

/* A rank in an MPI-ccl collective with a net engine that has no wait fds
 * (the "loop" adaptor: wait_progress stays nonzero for the whole wait)
 * naps after a burst of busy turns, still polling MPI_Test: rank 0 comes
 * to the barrier 300 ms late, and each other rank's wait there must have
 * slept (voluntary context switches; nanosleep is one, sched_yield is
 * not).  Before, it spun with yields for the whole 300 ms: no sleep. */
static void busy_engine_wait_naps(int rank, int n) {
  th_begin("mpi", "busy_engine_wait_naps", rank);
  two_hosts_env(rank, n);
  symheap_comm_t c = NULL;
  CHECK_OK(symheap_comm_init_mpi(&c, MPI_COMM_WORLD));
  if (c) {
    CHECK_OK(symheap_comm_barrier(c));
    if (rank == 0) {
      struct timespec late = {0, 300 * 1000 * 1000};
      nanosleep(&late, NULL);
    }
    long s0, s1;
    int64_t cpu0, cpu1, t0 = now_ms();
    thread_use(&s0, &cpu0);
    CHECK_OK(symheap_comm_barrier(c));
    thread_use(&s1, &cpu1);
    int64_t wall = now_ms() - t0;
    if (rank != 0) {
      printf("# rank %d waited %lld ms: %ld sleeps, %lld ms of CPU\n", rank,
             (long long)wall, s1 - s0, (long long)((cpu1 - cpu0) / 1000));
      /* At most 50 us a nap: thousands in 300 ms; 20 is generous. */
      CHECK(wall < 150 || s1 - s0 >= 20,
            "rank %d waited %lld ms in the barrier and slept %ld times "
            "(%lld ms of CPU): it spun",
            rank, (long long)wall, s1 - s0, (long long)((cpu1 - cpu0) / 1000));
    }
    CHECK_OK(symheap_comm_destroy(c));
  }
  two_hosts_env_clear();
  th_end();
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  th_begin("mpi", "init_mpi_world", rank);
  symheap_comm_t comm = NULL;
  CHECK_OK(symheap_comm_init_mpi(&comm, MPI_COMM_WORLD));
  if (comm) {
    int r = -1, s = -1;
    symheap_comm_rank(comm, &r);
    symheap_comm_size(comm, &s);
    symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
    CHECK_OK(symheap_comm_get_info(comm, &info));
    CHECK(r == rank && s == n && strcmp(info.ccl_adaptor, "mpi") == 0,
          "rank %d of %d on ccl '%s' (MPI: %d of %d)", r, s, info.ccl_adaptor,
          rank, n);
    pattern(comm, rank, n, "world");
    /* The caller's own traffic between symheap's: a separate communicator. */
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == n * (n - 1) / 2, "MPI_Allreduce gave %d", sum);
    pattern(comm, rank, n, "world again");
  }
  th_end();

  th_begin("mpi", "init_mpi_split", rank);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, n - rank, &half);
  int hr, hn;
  MPI_Comm_rank(half, &hr);
  MPI_Comm_size(half, &hn);
  symheap_comm_t sub = NULL;
  CHECK_OK(symheap_comm_init_mpi(&sub, half));
  if (sub) {
    int r = -1, s = -1;
    symheap_comm_rank(sub, &r);
    symheap_comm_size(sub, &s);
    CHECK(r == hr && s == hn, "split: rank %d of %d (MPI: %d of %d)", r, s, hr,
          hn);
    pattern(sub, hr, hn, "split");
    CHECK_OK(symheap_comm_destroy(sub));
  }
  MPI_Comm_free(&half);
  th_end();

  /* symheap_comm_split of an MPI comm rides on MPI_Comm_split: the child's
   * ccl is MPI too (it once fell back to symheap's socket bootstrap). */
  th_begin("mpi", "symheap_split_rides_on_mpi", rank);
  if (comm) {
    symheap_comm_t child = NULL;
    CHECK_OK(symheap_comm_split(comm, rank % 2, n - rank, &child));
    if (child) {
      int r = -1, s = -1;
      symheap_comm_rank(child, &r);
      symheap_comm_size(child, &s);
      symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
      CHECK_OK(symheap_comm_get_info(child, &info));
      CHECK(strcmp(info.ccl_adaptor, "mpi") == 0, "child on ccl '%s'",
            info.ccl_adaptor);
      CHECK(s == (n + 1 - rank % 2) / 2, "child of %d ranks", s);
      pattern(child, r, s, "symheap split");
      CHECK_OK(symheap_comm_destroy(child));
    }
  }
  th_end();

  th_begin("mpi", "bad_arguments", rank);
  CHECK_ERR(symheap_comm_init_mpi(&sub, MPI_COMM_NULL),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_comm_init_mpi(NULL, MPI_COMM_WORLD),
            SYMHEAP_ERR_INVALID_ARG);
  th_end();

  if (comm)
    CHECK_OK(symheap_comm_destroy(comm));
  if (n >= 2 &&
      symheap_register_net_adaptor(&net_loop_ops) == SYMHEAP_SUCCESS) {
    net_progress_in_mpi_wait(rank, n);
    busy_engine_wait_naps(rank, n);
  } else if (n >= 2)
    printf("FAIL mpi/register_loop: %s\n", symheap_last_error());
  MPI_Finalize();
  return th_total_failures() ? 1 : 0;
}

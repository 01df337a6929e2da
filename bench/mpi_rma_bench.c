/* The same measures as bench/shmem_bench.c with MPI-3 one-sided operations
 * on a shared-memory window (MPI_Win_allocate_shared, passive target under
 * MPI_Win_lock_all): MPI_Put/MPI_Get/MPI_Fetch_and_op completed by
 * MPI_Win_flush, and plain loads and stores through MPI_Win_shared_query.
 * Put latency completes each MPI_Put with MPI_Win_flush (MPI has no cheaper
 * way to complete one put); get latency likewise.
 * Rows: "mpi <op> <bytes> <npes> <value> <unit>"; op is put_lat, get_lat,
 * put_bw, fadd_lat, barrier_lat, and shq_put_lat, shq_get_lat, shq_fadd_lat
 * for the load/store path. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXB (1 << 20)
#define WINDOW 64

static int me, npes, partner, sender;

static int iters_for(size_t b) {
  return b >= 65536 ? 200 : b >= 4096 ? 2000 : 20000;
}

static void report(const char *op, size_t bytes, double v, const char *unit) {
  double mine = sender ? v : 0, sum = 0;
  MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  int n = npes > 1 ? npes / 2 : 1;
  if (me == 0) {
    printf("mpi %s %zu %d %.4f %s\n", op, bytes, npes, sum / n, unit);
    fflush(stdout);
  }
}

enum { PUT, GET, SHQ_PUT, SHQ_GET };

static void latency(const char *name, int kind, MPI_Win win, char *priv,
                    char *peer) {
  for (size_t b = 8; b <= MAXB; b *= 2) {
    int it = iters_for(b);
    double t = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (sender) {
      double t0 = 0;
      for (int i = -it / 10; i < it; i++) {
        if (i == 0)
          t0 = MPI_Wtime();
        switch (kind) {
        case PUT:
          MPI_Put(priv, (int)b, MPI_BYTE, partner, 0, (int)b, MPI_BYTE, win);
          MPI_Win_flush(partner, win);
          break;
        case GET:
          MPI_Get(priv, (int)b, MPI_BYTE, partner, 0, (int)b, MPI_BYTE, win);
          MPI_Win_flush(partner, win);
          break;
        case SHQ_PUT:
          memcpy(peer, priv, b);
          break;
        default:
          memcpy(priv, peer, b);
          break;
        }
      }
      t = (MPI_Wtime() - t0) * 1e6 / it;
    }
    report(name, b, t, "us");
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &npes);
  int half = npes / 2 ? npes / 2 : 1;
  sender = me < half;
  partner = npes == 1 ? 0 : sender ? me + half : me - half;
  char *base;
  MPI_Win win;
  MPI_Win_allocate_shared(MAXB + 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                          &win);
  MPI_Aint qsize;
  int qdisp;
  char *peer;
  MPI_Win_shared_query(win, partner, &qsize, &qdisp, &peer);
  /* The private buffer sits half a page off the symmetric one: copies whose
   * source and destination share their address modulo 4096 run several
   * times slower (rep movsb on AMD Zen), which would measure the alignment,
   * not the library. */
  char *priv_mem = aligned_alloc(4096, MAXB + 4096), *priv = priv_mem + 2048;
  memset(priv, me + 1, MAXB);
  MPI_Win_lock_all(0, win);
  latency("put_lat", PUT, win, priv, peer);
  latency("shq_put_lat", SHQ_PUT, win, priv, peer);
  latency("get_lat", GET, win, priv, peer);
  latency("shq_get_lat", SHQ_GET, win, priv, peer);
  for (size_t b = 8; b <= MAXB; b *= 2) {
    int it = iters_for(b) / WINDOW + 2;
    double mbs = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (sender) {
      double t0 = MPI_Wtime();
      for (int i = 0; i < it; i++) {
        for (int w = 0; w < WINDOW; w++)
          MPI_Put(priv, (int)b, MPI_BYTE, partner, 0, (int)b, MPI_BYTE, win);
        MPI_Win_flush(partner, win);
      }
      mbs = (double)b * WINDOW * it / ((MPI_Wtime() - t0) * 1e6);
    }
    report("put_bw", b, mbs, "MB/s");
  }
  /* Fetch-and-add on a long at the end of the partner's window. */
  long one = 1, old;
  int it = 20000;
  double t = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (sender) {
    double t0 = MPI_Wtime();
    for (int i = 0; i < it; i++) {
      MPI_Fetch_and_op(&one, &old, MPI_LONG, partner, MAXB, MPI_SUM, win);
      MPI_Win_flush(partner, win);
    }
    t = (MPI_Wtime() - t0) * 1e6 / it;
  }
  report("fadd_lat", 8, t, "us");
  MPI_Barrier(MPI_COMM_WORLD);
  if (sender) {
    long *p = (long *)(peer + MAXB);
    double t0 = MPI_Wtime();
    for (int i = 0; i < it; i++)
      __atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST);
    t = (MPI_Wtime() - t0) * 1e6 / it;
  }
  report("shq_fadd_lat", 8, t, "us");
  MPI_Win_unlock_all(win);
  int bit = npes > 2 ? 2000 : 10000;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < bit; i++)
    MPI_Barrier(MPI_COMM_WORLD);
  t = (MPI_Wtime() - t0) * 1e6 / bit;
  sender = 1;
  report("barrier_lat", 0, t, "us");
  MPI_Win_free(&win);
  free(priv_mem);
  MPI_Finalize();
  return 0;
}

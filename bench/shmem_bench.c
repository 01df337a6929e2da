/* OSU-style OpenSHMEM micro-benchmark (bench/openshmem.sh runs it beside
 * bench/mpi_rma_bench.c).  With N PEs, PE i < N/2 drives PE i + N/2 (N/2
 * pairs at once; one pair at N = 2) and the numbers are averaged over the
 * pairs.  Rows: "shmem <op> <bytes> <npes> <value> <unit>", where op is
 * put_lat, get_lat, put_bw, fadd_lat, barrier_lat, and the baseline through
 * a plain peer pointer (shmem_ptr): ptr_put_lat, ptr_get_lat, ptr_fadd_lat
 * (left out where the partner is on another host: shmem_ptr is NULL). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXB (1 << 20)
#define WINDOW 64

static int me, npes, partner, sender;
static double results[256];

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int iters_for(size_t b) {
  return b >= 65536 ? 200 : b >= 4096 ? 2000 : 20000;
}

/* Averages the senders' values on PE 0 and prints a row. */
static void report(const char *op, size_t bytes, double v, const char *unit) {
  static double mine;
  mine = sender ? v : 0;
  shmem_barrier_all();
  shmem_double_fcollect(SHMEM_TEAM_WORLD, results, &mine, 1);
  if (me == 0) {
    double s = 0;
    int n = npes > 1 ? npes / 2 : 1;
    for (int i = 0; i < n; i++)
      s += results[i];
    printf("shmem %s %zu %d %.4f %s\n", op, bytes, npes, s / n, unit);
    fflush(stdout);
  }
}

typedef void (*op_fn)(char *dst, const char *src, size_t b);
/* As OSU's osu_oshm_put: puts back to back, one quiet after the loop. */
static void op_put(char *d, const char *s, size_t b) {
  shmem_putmem(d, s, b, partner);
}
static void op_get(char *d, const char *s, size_t b) {
  shmem_getmem(d, s, b, partner);
}
static char *peer_buf;
static void op_ptr_put(char *d, const char *s, size_t b) {
  (void)d;
  memcpy(peer_buf, s, b);
}
static void op_ptr_get(char *d, const char *s, size_t b) {
  (void)s;
  memcpy(d, peer_buf, b);
}

static void latency(const char *name, op_fn fn, char *sym, char *priv) {
  for (size_t b = 8; b <= MAXB; b *= 2) {
    int it = iters_for(b);
    double t = 0;
    shmem_barrier_all();
    if (sender) {
      char *d = fn == op_get || fn == op_ptr_get ? priv : sym;
      char *s = fn == op_get || fn == op_ptr_get ? sym : priv;
      for (int i = 0; i < it / 10; i++) /* warm-up */
        fn(d, s, b);
      double t0 = now_us();
      for (int i = 0; i < it; i++)
        fn(d, s, b);
      shmem_quiet();
      t = (now_us() - t0) / it;
    }
    report(name, b, t, "us");
  }
}

static void bandwidth(char *sym, char *priv) {
  for (size_t b = 8; b <= MAXB; b *= 2) {
    int it = iters_for(b) / WINDOW + 2;
    double mbs = 0;
    shmem_barrier_all();
    if (sender) {
      double t0 = now_us();
      for (int i = 0; i < it; i++) {
        for (int w = 0; w < WINDOW; w++)
          shmem_putmem_nbi(sym, priv, b, partner);
        shmem_quiet();
      }
      mbs = (double)b * WINDOW * it / (now_us() - t0); /* bytes/us = MB/s */
    }
    report("put_bw", b, mbs, "MB/s");
  }
}

static void atomics(long *ctr) {
  int it = 20000;
  double t = 0;
  shmem_barrier_all();
  if (sender) {
    double t0 = now_us();
    for (int i = 0; i < it; i++)
      shmem_long_atomic_fetch_add(ctr, 1, partner);
    t = (now_us() - t0) / it;
  }
  report("fadd_lat", 8, t, "us");
  shmem_barrier_all();
  long *p = shmem_ptr(ctr, partner);
  if (!p) /* the partner is on another host: no pointer to measure */
    return;
  if (sender) {
    double t0 = now_us();
    for (int i = 0; i < it; i++)
      __atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST);
    t = (now_us() - t0) / it;
  }
  report("ptr_fadd_lat", 8, t, "us");
}

static void barriers(void) {
  int it = npes > 2 ? 2000 : 10000;
  shmem_barrier_all();
  double t0 = now_us();
  for (int i = 0; i < it; i++)
    shmem_barrier_all();
  double t = (now_us() - t0) / it;
  sender = 1; /* every PE's time counts */
  report("barrier_lat", 0, t, "us");
  sender = me < npes / 2 || npes == 1;
}

int main(int argc, char **argv) {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  int half = npes / 2 ? npes / 2 : 1;
  sender = me < half;
  partner = npes == 1 ? 0 : sender ? me + half : me - half;
  char *sym = shmem_malloc(MAXB);
  long *ctr = shmem_calloc(1, sizeof(long));
  /* The private buffer sits half a page off the symmetric one: copies whose
   * source and destination share their address modulo 4096 run several
   * times slower (rep movsb on AMD Zen), which would measure the alignment,
   * not the library. */
  char *priv_mem = aligned_alloc(4096, MAXB + 4096), *priv = priv_mem + 2048;
  memset(priv, me + 1, MAXB);
  memset(sym, 0, MAXB);
  peer_buf = shmem_ptr(sym, partner);
  const char *only = argc > 1 ? argv[1] : "all";
  int all = strcmp(only, "all") == 0;
  if (all || strstr(only, "lat")) {
    latency("put_lat", op_put, sym, priv);
    if (peer_buf) /* NULL: the partner is on another host */
      latency("ptr_put_lat", op_ptr_put, sym, priv);
    latency("get_lat", op_get, sym, priv);
    if (peer_buf)
      latency("ptr_get_lat", op_ptr_get, sym, priv);
  }
  if (all || strstr(only, "bw"))
    bandwidth(sym, priv);
  if (all || strstr(only, "amo"))
    atomics(ctr);
  if (all || strstr(only, "barrier"))
    barriers();
  shmem_free(ctr);
  shmem_free(sym);
  free(priv_mem);
  shmem_finalize();
  return 0;
}

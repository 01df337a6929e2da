/* symheap-bench: what a symmetric heap costs and gives, on the selected
 * backend.  Run it under symheap-run:
 *   symheap-run -n 4 symheap-bench [--max-size BYTES] [--iters N]
 *   symheap-run -n 2 symheap-bench --collectives [ARGS]
 * (--collectives runs symheap-bench-cuda, installed beside it where the
 * CUDA collectives were built: GPU all-reduce, all-gather and peer copies.)
 * It prints one table: collective register and deregister time by window
 * size (the slowest rank's time, median over iterations), peer read and
 * write bandwidth through the flat VA beside local memcpy, and a flat-VA
 * all-reduce (float sum) checked against a double-precision reference.  The
 * last two need CPU access to window memory (the host backend). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symheap.h"
#include "symheap_adaptor.h"

#define CHECK(call)                                                            \
  do {                                                                         \
    symheap_result_t r_ = (call);                                              \
    if (r_ != SYMHEAP_SUCCESS) {                                               \
      fprintf(stderr, "symheap-bench rank %d: %s failed: %s: %s\n", g_rank,    \
              #call, symheap_strerror(r_), symheap_last_error());              \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static int g_rank, g_n;
static symheap_comm_t g_comm;

/* The library's clock (the host services'). */
static double now_s(void) {
  return (double)symheap_host_services()->now_ns() * 1e-9;
}

/* The largest value over all ranks. */
static double max_over_ranks(double v) {
  double *all = calloc((size_t)g_n, sizeof *all);
  if (!all) {
    fprintf(stderr, "symheap-bench: out of memory\n");
    exit(1);
  }
  CHECK(symheap_comm_allgather(g_comm, &v, all, sizeof v));
  double m = v;
  for (int p = 0; p < g_n; p++)
    if (all[p] > m)
      m = all[p];
  free(all);
  return m;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void fmt_size(size_t b, char *out, size_t len) {
  if (b >= (1u << 30))
    snprintf(out, len, "%zu GiB", b >> 30);
  else if (b >= (1u << 20))
    snprintf(out, len, "%zu MiB", b >> 20);
  else
    snprintf(out, len, "%zu KiB", b >> 10);
}

static void bench_register(size_t max_size, int iters, int cpu) {
  if (g_rank == 0)
    printf("\nmilliseconds, slowest rank, median of iters.  first reg: the "
           "buffer's first\nregistration; register/deregister: the same buffer "
           "again (a kept mapping\nserves it unless SYMHEAP_WINDOW_CACHE=0); "
           "malloc/free: symheap_malloc and\nsymheap_free (from the heap: "
           "see its own table below; SYMHEAP_HEAP=0 for\nallocation + "
           "registration, never from the cache)\n");
  if (g_rank == 0)
    printf("\n%-10s %12s %12s %12s %12s %12s %6s\n", "window", "first reg",
           "register", "deregister", "malloc", "free", "iters");
  for (size_t size = 4096; size <= max_size; size *= 4) {
    void *buf;
    CHECK(symheap_mem_alloc(g_comm, size, &buf));
    /* Touch the local memory once: registration cost should not include
     * first-touch page faults of an application buffer.  (Device memory is
     * backed when allocated.) */
    if (cpu)
      memset(buf, g_rank + 1, size);
    int n = size >= (256u << 20) ? (iters + 1) / 2 : iters;
    double *reg = calloc((size_t)n, sizeof *reg);
    double *dereg = calloc((size_t)n, sizeof *dereg);
    double *mal = calloc((size_t)n, sizeof *mal);
    double *fre = calloc((size_t)n, sizeof *fre);
    for (int i = 0; i < n; i++) {
      symheap_window_t w;
      CHECK(symheap_comm_barrier(g_comm));
      double t0 = now_s();
      CHECK(symheap_window_register(g_comm, buf, size, 0, &w));
      double t1 = now_s();
      CHECK(symheap_comm_barrier(g_comm));
      double t2 = now_s();
      CHECK(symheap_window_deregister(g_comm, w));
      double t3 = now_s();
      reg[i] = max_over_ranks(t1 - t0);
      dereg[i] = max_over_ranks(t3 - t2);
    }
    /* Free the buffer (and the mapping kept of it) first: a live mapping of
     * peer memory makes the driver's next cuMemSetAccess cheaper, which
     * would flatter the figures below. */
    CHECK(symheap_mem_free(g_comm, buf));
    /* Allocation and registration together, as PyTorch's empty +
     * rendezvous: never served by a kept mapping. */
    for (int i = 0; i < n; i++) {
      symheap_window_t w;
      CHECK(symheap_comm_barrier(g_comm));
      double t0 = now_s();
      CHECK(symheap_malloc(g_comm, size, 0, &w));
      double t1 = now_s();
      CHECK(symheap_comm_barrier(g_comm));
      double t2 = now_s();
      CHECK(symheap_free(g_comm, w));
      double t3 = now_s();
      mal[i] = max_over_ranks(t1 - t0);
      fre[i] = max_over_ranks(t3 - t2);
    }
    char label[32];
    fmt_size(size, label, sizeof label);
    double first = reg[0];
    if (g_rank == 0)
      printf("%-10s %12.3f %12.3f %12.3f %12.3f %12.3f %6d\n", label,
             first * 1e3, median(reg, n) * 1e3, median(dereg, n) * 1e3,
             median(mal, n) * 1e3, median(fre, n) * 1e3, n);
    free(reg);
    free(dereg);
    free(mal);
    free(fre);
    if (size > SIZE_MAX / 4)
      break;
  }
}

/* The symmetric heap (docs/heap.md): symheap_malloc + symheap_free of
 * blocks that fit in committed memory (reserved ahead, so no growth is
 * timed), and what growth costs per chunk. */
static void bench_heap(size_t max_size, int iters) {
  symheap_heap_info_t hi = SYMHEAP_HEAP_INFO_INIT;
  CHECK(symheap_heap_get_info(g_comm, &hi));
  if (!hi.enabled) {
    if (g_rank == 0)
      printf("\n(heap: off, SYMHEAP_HEAP=0)\n");
    return;
  }
  if (max_size > hi.threshold)
    max_size = (size_t)hi.threshold;
  if (g_rank == 0)
    printf("\nheap: microseconds, slowest rank, median of iters; malloc and "
           "free of a block\nthat fits (reserved ahead: no device call), "
           "and their sum per pair\n\n%-10s %12s %12s %12s %6s\n",
           "block", "malloc", "free", "pair", "iters");
  int n = iters < 5 ? 5 : iters;
  double *mal = calloc((size_t)n, sizeof *mal);
  double *fre = calloc((size_t)n, sizeof *fre);
  double *pair = calloc((size_t)n, sizeof *pair);
  if (!mal || !fre || !pair) {
    fprintf(stderr, "symheap-bench: out of memory\n");
    exit(1);
  }
  for (size_t size = 4096; size <= max_size; size *= 4) {
    CHECK(symheap_heap_reserve(g_comm, size));
    for (int i = 0; i < n; i++) {
      symheap_window_t w;
      CHECK(symheap_comm_barrier(g_comm));
      double t0 = now_s();
      CHECK(symheap_malloc(g_comm, size, 0, &w));
      double t1 = now_s();
      CHECK(symheap_free(g_comm, w));
      double t2 = now_s();
      mal[i] = max_over_ranks(t1 - t0);
      fre[i] = max_over_ranks(t2 - t1);
      pair[i] = max_over_ranks(t2 - t0);
    }
    char label[32];
    fmt_size(size, label, sizeof label);
    if (g_rank == 0)
      printf("%-10s %12.1f %12.1f %12.1f %6d\n", label, median(mal, n) * 1e6,
             median(fre, n) * 1e6, median(pair, n) * 1e6, n);
    if (size > SIZE_MAX / 4)
      break;
  }
  /* Growth: from an empty heap, commit k chunks (collective create,
   * export, exchange, import, map, set access per chunk). */
  for (int k = 1; k <= 4; k *= 4) {
    for (int i = 0; i < n; i++) {
      CHECK(symheap_heap_trim(g_comm));
      CHECK(symheap_comm_barrier(g_comm));
      double t0 = now_s();
      CHECK(symheap_heap_reserve(g_comm, (size_t)hi.chunk_size * (size_t)k));
      mal[i] = max_over_ranks(now_s() - t0);
    }
    if (g_rank == 0)
      printf("growth by %d chunk%s of %llu MiB: %.3f ms (%.3f ms per chunk)\n",
             k, k == 1 ? "" : "s", (unsigned long long)(hi.chunk_size >> 20),
             median(mal, n) * 1e3, median(mal, n) * 1e3 / k);
  }
  CHECK(symheap_heap_trim(g_comm));
  free(mal);
  free(fre);
  free(pair);
}

/* Best-of-reps memcpy bandwidth in GB/s. */
static double copy_bw(void *dst, const void *src, size_t bytes, int reps) {
  double best = 1e30;
  for (int i = 0; i < reps; i++) {
    double t0 = now_s();
    memcpy(dst, src, bytes);
    double t = now_s() - t0;
    if (t < best)
      best = t;
  }
  return (double)bytes / best / 1e9;
}

static void bench_bandwidth(size_t bytes, int reps) {
  symheap_window_t w;
  CHECK(symheap_malloc(g_comm, bytes, 0, &w));
  char *mine, *base;
  size_t stride;
  CHECK(symheap_window_local_ptr(w, (void **)&mine));
  CHECK(symheap_window_flat_base(w, (void **)&base, &stride));
  char *priv = malloc(bytes);
  if (!priv) {
    fprintf(stderr, "symheap-bench: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < bytes; i++) {
    mine[i] = (char)(i * 131 + (size_t)g_rank);
    priv[i] = (char)(i * 7);
  }
  CHECK(symheap_comm_barrier(g_comm));
  int peer = (g_rank + 1) % g_n;
  char *peer_copy = base + (size_t)peer * stride;
  /* One rank at a time, so ranks do not compete for cores and memory: the
   * figures compare access paths, not contention. */
  double local = 0, rd = 0, wr = 0;
  int ok = 1;
  for (int turn = 0; turn < g_n; turn++) {
    if (turn == g_rank) {
      memcpy(priv, peer_copy, bytes); /* warm the peer mapping */
      memcpy(peer_copy, priv, bytes);
      local = copy_bw(priv, mine, bytes, reps);
      rd = copy_bw(priv, peer_copy, bytes, reps);
      for (size_t i = 0; i < bytes; i += 4093)
        ok &= priv[i] == (char)(i * 131 + (size_t)peer);
      wr = copy_bw(peer_copy, priv, bytes, reps);
    }
    CHECK(symheap_comm_barrier(g_comm));
  }
  double lmin = -max_over_ranks(-local), rmin = -max_over_ranks(-rd);
  double wmin = -max_over_ranks(-wr), bad = max_over_ranks(ok ? 0 : 1);
  if (g_rank == 0) {
    char label[32];
    fmt_size(bytes, label, sizeof label);
    printf("\n%-34s %10s   (%s, each rank alone, best of %d, slowest rank)\n",
           "copy", "GB/s", label, reps);
    printf("%-34s %10.2f\n", "local memcpy (own window)", lmin);
    printf("%-34s %10.2f   ratio to local %.2f\n", "peer read via flat VA",
           rmin, rmin / lmin);
    printf("%-34s %10.2f   ratio to local %.2f\n", "peer write via flat VA",
           wmin, wmin / lmin);
    printf("%-34s %10s\n", "peer data verified", bad == 0 ? "yes" : "NO");
  }
  free(priv);
  CHECK(symheap_free(g_comm, w));
  if (bad != 0)
    exit(1);
}

static float input_value(int rank, size_t i) {
  uint64_t x = (uint64_t)(rank + 1) * 0x9e3779b97f4a7c15ull ^
               (i * 0xbf58476d1ce4e5b9ull);
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 29;
  return (float)((double)(x & 0xffffff) / (double)0xffffff - 0.5);
}

/* Two-shot all-reduce over the flat VA: rank r reduces chunk r from every
 * peer's input into its output, then gathers the other chunks from their
 * owners' outputs. */
static void allreduce(char *base, size_t stride, size_t count, float *out) {
  size_t chunk = (count + (size_t)g_n - 1) / (size_t)g_n;
  size_t lo = chunk * (size_t)g_rank,
         hi = lo + chunk > count ? count : lo + chunk;
  for (size_t i = lo; i < hi; i++) {
    float s = 0;
    for (int p = 0; p < g_n; p++)
      s += ((float *)(base + (size_t)p * stride))[i];
    out[i] = s;
  }
  CHECK(symheap_comm_barrier(g_comm));
  for (int p = 0; p < g_n; p++) {
    if (p == g_rank)
      continue;
    size_t plo = chunk * (size_t)p,
           phi = plo + chunk > count ? count : plo + chunk;
    if (plo < phi)
      memcpy(out + plo,
             (float *)(base + (size_t)p * stride + count * sizeof(float)) + plo,
             (phi - plo) * sizeof(float));
  }
  CHECK(symheap_comm_barrier(g_comm));
}

static void bench_allreduce(size_t count, int iters) {
  symheap_window_t w;
  CHECK(symheap_malloc(g_comm, 2 * count * sizeof(float), 0, &w));
  char *base;
  size_t stride;
  float *in;
  CHECK(symheap_window_flat_base(w, (void **)&base, &stride));
  CHECK(symheap_window_local_ptr(w, (void **)&in));
  float *out = in + count;
  for (size_t i = 0; i < count; i++)
    in[i] = input_value(g_rank, i);
  double *t = calloc((size_t)iters, sizeof *t);
  for (int it = 0; it < iters; it++) {
    memset(out, 0xff, count * sizeof(float)); /* poison: NaN everywhere */
    CHECK(symheap_comm_barrier(g_comm));
    double t0 = now_s();
    allreduce(base, stride, count, out);
    t[it] = max_over_ranks(now_s() - t0);
  }
  double max_err = 0;
  for (size_t i = 0; i < count; i++) {
    double ref = 0;
    for (int p = 0; p < g_n; p++)
      ref += input_value(p, i);
    double err = fabs((double)out[i] - ref);
    if (!(err <= max_err))
      max_err = isnan(err) ? INFINITY : err;
  }
  max_err = max_over_ranks(max_err);
  double tol = 1e-5 * g_n;
  double med = median(t, iters);
  if (g_rank == 0) {
    printf("\n%-34s %10s %10s %12s\n", "all-reduce (float sum, two-shot)", "ms",
           "GB/s", "max |err|");
    printf("%-34zu %10.3f %10.2f %12.2e   %s (tolerance %.0e)\n", count,
           med * 1e3, (double)count * sizeof(float) / med / 1e9, max_err,
           max_err <= tol ? "checked against float64 reference: ok"
                          : "MISMATCH against float64 reference",
           tol);
  }
  free(t);
  CHECK(symheap_free(g_comm, w));
  if (!(max_err <= tol))
    exit(1);
}

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k')
    v *= 1024;
  else if (*end == 'M' || *end == 'm')
    v *= 1024 * 1024;
  else if (*end == 'G' || *end == 'g')
    v *= 1024.0 * 1024 * 1024;
  else if (*end) {
    fprintf(stderr, "symheap-bench: bad size '%s'\n", s);
    exit(2);
  }
  return (size_t)v;
}

/* --collectives: the CUDA benchmark is its own program (CUDA C); run the one
 * next to this one. */
static int exec_collectives(char **argv, int argc) {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
  if (n <= 0) {
    fprintf(stderr, "symheap-bench: cannot find myself: %s\n", strerror(errno));
    return 2;
  }
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  strcpy(slash ? slash + 1 : path, "symheap-bench-cuda");
  char **args = calloc((size_t)argc + 1, sizeof *args);
  if (!args)
    return 2;
  args[0] = path;
  for (int i = 2; i < argc; i++)
    args[i - 1] = argv[i];
  execv(path, args);
  fprintf(stderr,
          "symheap-bench: --collectives needs %s (built with the CUDA "
          "collectives where nvcc is): %s\n",
          path, strerror(errno));
  free(args);
  return 2;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--collectives") == 0)
    return exec_collectives(argv, argc);
  size_t max_size = 1u << 30, bw_bytes = 64u << 20, count = 4u << 20;
  int iters = 21, heap_only = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--version") == 0) {
      int major, minor, patch;
      symheap_get_version(&major, &minor, &patch);
      printf("symheap-bench %d.%d.%d\n", major, minor, patch);
      return 0;
    }
    if (strcmp(argv[i], "--heap") == 0)
      heap_only = 1;
    else if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc)
      max_size = parse_size(argv[++i]);
    else if (strcmp(argv[i], "--bw-size") == 0 && i + 1 < argc)
      bw_bytes = parse_size(argv[++i]);
    else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
      count = parse_size(argv[++i]);
    else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
      iters = atoi(argv[++i]);
    else {
      fprintf(
          stderr,
          "usage: symheap-run -n N symheap-bench [--heap] [--max-size BYTES] "
          "[--bw-size BYTES] [--count FLOATS] [--iters N] | --version\n"
          "       symheap-run -n N symheap-bench --collectives "
          "[see symheap-bench-cuda --help]\n");
      return 2;
    }
  }
  if (iters < 1)
    iters = 1;
  if (getenv("SYMHEAP_UNIQUE_ID")) {
    CHECK(symheap_comm_init_env(&g_comm));
  } else {
    symheap_unique_id_t id;
    CHECK(symheap_get_unique_id(&id));
    CHECK(symheap_comm_init(&g_comm, 1, &id, 0));
  }
  CHECK(symheap_comm_rank(g_comm, &g_rank));
  CHECK(symheap_comm_size(g_comm, &g_n));
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK(symheap_comm_get_info(g_comm, &info));
  if (g_rank == 0) {
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    printf("symheap-bench: %d ranks, device adaptor '%s' on %s, ccl '%s', "
           "window path '%s', %d host%s, %s\n",
           g_n, info.device_adaptor, info.device, info.ccl_adaptor,
           info.window_path, info.nhosts, info.nhosts == 1 ? "" : "s", date);
  }
  if (heap_only) { /* the heap's table alone */
    bench_heap(max_size, iters);
    CHECK(symheap_comm_destroy(g_comm));
    return 0;
  }
  bench_register(max_size, iters, info.cpu_access);
  bench_heap(max_size, iters);
  if (info.cpu_access) {
    bench_bandwidth(bw_bytes, 5);
    bench_allreduce(count, iters);
  } else if (g_rank == 0) {
    printf("\n(peer bandwidth and all-reduce here use CPU loads and stores; "
           "'%s' memory needs device kernels: see test/gpu/)\n",
           info.device_adaptor);
  }
  CHECK(symheap_comm_destroy(g_comm));
  return 0;
}

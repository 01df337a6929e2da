// symheap-tune: the tuning run of the CUDA collectives (docs/tuning.md).
// Times every algorithm of all-reduce (one-shot, two-shot, rs+ce, rs+ce
// pipelined, with launch variants), reduce-scatter, all-gather (SM,
// zero-SM), broadcast (SM, zero-SM, scatter, scatter_pipe, ce_pipe) and the
// uniform all-to-all (SM, zero-SM) at every power of two from 4 KiB to
// --max-bytes, checks each result (inputs are small integers, never zeros),
// and writes the table AUTO chooses from: for each size the fastest correct
// variant, the slowest rank's median.  One rank count per run:
//   symheap-run -n 4 symheap-tune --out n4.tsv [--all all.tsv]
//     [--max-bytes 1073741824] [--graph] [--coll all_reduce]
//     [--min-bytes 65536]
// (--coll and --min-bytes make a partial run, for probes: not a table)
// bench/tune_gpu.sh runs it at 2 and 4 ranks and merges the tables.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <string>
#include <vector>

#include "coll_api.h"
#include "symheap.h"
#include "symheap_cuda.h"
#include "tuning.h"

#define CHECK_PROG "symheap-tune"
#include "cuda_check.h"

static symheap_comm_t comm;
static int rank, nranks;
static cudaStream_t st;
static symheap_window_t w;
static size_t g_half; /* input at [0, g_half), output at [g_half, 2 g_half) */
static bool graph_mode;
static int only_coll = -1; /* --coll: that collective only */
static size_t minb;        /* --min-bytes: sizes from there */

// Rank r's element i: a small integer, exact in bf16 and in every sum.
static inline float val(size_t i, int r) {
  return (float)((i * 7 + (size_t)r) % 8 + 1);
}
__global__ void fill_input(uint16_t *p, size_t n, int r) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float v = (float)((i * 7 + (size_t)r) % 8 + 1);
    p[i] = (uint16_t)(__float_as_uint(v) >> 16);
  }
}
static uint16_t bf16(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  return (uint16_t)(u >> 16);
}

struct variant {
  int coll, algo, blocks, threads;
};
static std::string vname(const variant &v) {
  std::string s = symheap_tune_algo_name(v.coll, v.algo);
  if (v.blocks)
    s += "/b" + std::to_string(v.blocks);
  if (v.threads)
    s += "/t" + std::to_string(v.threads);
  return s;
}

// One call of v at bytes (the collective's own unit, tune_table.h).
static symheap_result_t call(const variant &v, size_t bytes) {
  symheap_coll::set_launch_override(v.blocks, v.threads);
  symheap_coll::set_algo_override(
      SYMHEAP_TUNE_BROADCAST, v.algo == SYMHEAP_TUNE_SCATTER ||
                                      v.algo == SYMHEAP_TUNE_SCATTER_PIPE ||
                                      v.algo == SYMHEAP_TUNE_CE_PIPE
                                  ? v.algo
                                  : 0);
  symheap_stream_t s = (symheap_stream_t)st;
  switch (v.coll) {
  case SYMHEAP_TUNE_ALL_REDUCE:
    return symheap_cuda_all_reduce(w, 0, w, g_half, bytes / 2, SYMHEAP_BFLOAT16,
                                   SYMHEAP_OP_SUM, (symheap_algo_t)v.algo, s);
  case SYMHEAP_TUNE_REDUCE_SCATTER:
    return symheap_cuda_reduce_scatter(w, 0, w, g_half, bytes / 2,
                                       SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
                                       (symheap_algo_t)v.algo, s);
  case SYMHEAP_TUNE_ALL_GATHER:
    return symheap_cuda_all_gather_flags(
        w, 0, w, g_half, bytes,
        v.algo == SYMHEAP_TUNE_ZERO_SM ? SYMHEAP_CUDA_ZERO_SM : 0, s);
  case SYMHEAP_TUNE_ALL_TO_ALL:
    symheap_coll::set_algo_override(SYMHEAP_TUNE_ALL_TO_ALL, v.algo);
    return symheap_cuda_all_to_all(w, 0, w, g_half, bytes, s);
  default:
    return symheap_cuda_broadcast(
        w, 0, w, g_half, bytes, 0,
        v.algo == SYMHEAP_TUNE_ZERO_SM ? SYMHEAP_CUDA_ZERO_SM : 0, s);
  }
}

// Elements of this rank's output to check, and what each must be.
static uint16_t expect(int coll, size_t bytes, size_t j) {
  size_t count = bytes / 2;
  float s = 0;
  switch (coll) {
  case SYMHEAP_TUNE_ALL_REDUCE:
    for (int r = 0; r < nranks; r++)
      s += val(j, r);
    return bf16(s);
  case SYMHEAP_TUNE_REDUCE_SCATTER:
    for (int r = 0; r < nranks; r++)
      s += val((size_t)rank * count + j, r);
    return bf16(s);
  case SYMHEAP_TUNE_ALL_GATHER:
    return bf16(val(j % count, (int)(j / count)));
  case SYMHEAP_TUNE_ALL_TO_ALL: /* block r: rank r's block `rank` */
    return bf16(val((size_t)rank * count + j % count, (int)(j / count)));
  default:
    return bf16(val(j, 0));
  }
}
static size_t out_elems(int coll, size_t bytes) {
  return (coll == SYMHEAP_TUNE_ALL_GATHER || coll == SYMHEAP_TUNE_ALL_TO_ALL
              ? bytes * (size_t)nranks
              : bytes) /
         2;
}

// Zero the head and tail of the output (so a stale result cannot pass),
// then after the timing check them: true where every rank is right.
static const size_t kSample = 8192; /* elements at each end */
static void clear_sample(int coll, size_t bytes) {
  char *out;
  SH(symheap_window_local_ptr(w, (void **)&out));
  out += g_half;
  size_t n = out_elems(coll, bytes), k = std::min(n, kSample);
  CU(cudaMemsetAsync(out, 0, k * 2, st));
  CU(cudaMemsetAsync(out + (n - k) * 2, 0, k * 2, st));
  CU(cudaStreamSynchronize(st));
  SH(symheap_comm_barrier(comm));
}
static bool check_sample(int coll, size_t bytes, std::string *why) {
  char *out;
  SH(symheap_window_local_ptr(w, (void **)&out));
  out += g_half;
  CU(cudaStreamSynchronize(st));
  size_t n = out_elems(coll, bytes), k = std::min(n, kSample);
  std::vector<uint16_t> h(k);
  int bad = 0;
  for (int end = 0; end < 2 && !bad; end++) {
    size_t first = end ? n - k : 0;
    CU(cudaMemcpy(h.data(), out + first * 2, k * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < k && !bad; i++)
      if (h[i] != expect(coll, bytes, first + i)) {
        char b[160];
        snprintf(b, sizeof b, "rank %d element %zu is 0x%04x, not 0x%04x",
                 rank, first + i, h[i], expect(coll, bytes, first + i));
        *why = b;
        bad = 1;
      }
  }
  std::vector<int> all((size_t)nranks);
  SH(symheap_comm_allgather(comm, &bad, all.data(), sizeof bad));
  return std::count(all.begin(), all.end(), 0) == nranks;
}

// The slowest rank's value of x.
static double slowest(double x) {
  std::vector<double> all((size_t)nranks);
  SH(symheap_comm_allgather(comm, &x, all.data(), sizeof x));
  return *std::max_element(all.begin(), all.end());
}

// Microseconds per op of `iters` calls, eager or replayed from a graph.
static double run_us(const variant &v, size_t bytes, int iters) {
  cudaEvent_t a, b;
  CU(cudaEventCreate(&a));
  CU(cudaEventCreate(&b));
  cudaGraphExec_t ge = NULL;
  if (graph_mode) {
    cudaGraph_t g;
    CU(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < iters; i++)
      SH(call(v, bytes));
    CU(cudaStreamEndCapture(st, &g));
    CU(cudaGraphInstantiate(&ge, g, 0));
    CU(cudaGraphDestroy(g));
    CU(cudaGraphLaunch(ge, st)); /* warm */
  }
  CU(cudaStreamSynchronize(st));
  SH(symheap_comm_barrier(comm));
  CU(cudaEventRecord(a, st));
  if (ge)
    CU(cudaGraphLaunch(ge, st));
  else
    for (int i = 0; i < iters; i++)
      SH(call(v, bytes));
  CU(cudaEventRecord(b, st));
  CU(cudaEventSynchronize(b));
  float ms = 0;
  CU(cudaEventElapsedTime(&ms, a, b));
  if (ge)
    CU(cudaGraphExecDestroy(ge));
  CU(cudaEventDestroy(a));
  CU(cudaEventDestroy(b));
  return ms * 1e3 / iters;
}

// The slowest rank's median of 3 repeats, each ~1.5 ms of calls; every rank
// makes the same number of calls (the estimate is agreed first).
static double time_us(const variant &v, size_t bytes) {
  for (int i = 0; i < 2; i++)
    SH(call(v, bytes));
  double est = slowest(run_us(v, bytes, 3));
  int iters = (int)std::min(200.0, std::max(3.0, ceil(1500.0 / est)));
  std::vector<double> r;
  for (int k = 0; k < 3; k++)
    r.push_back(run_us(v, bytes, iters));
  std::sort(r.begin(), r.end());
  return slowest(r[1]);
}

struct result {
  variant v;
  size_t bytes;
  double us; /* < 0: wrong result or refused */
};

static std::vector<variant> variants(int coll, size_t bytes, size_t cap,
                                     bool ce) {
  std::vector<variant> out;
  auto add = [&](int algo, int blocks, int threads) {
    out.push_back(variant{coll, algo, blocks, threads});
  };
  bool big = bytes >= (256u << 10);
  /* The push all-reduces where their staging (about 4 MiB a rank) holds
   * the size (above it they run two-shot: nothing to time). */
  const size_t stage = 4u << 20, n1 = (size_t)(nranks > 1 ? nranks - 1 : 1);
  bool push_ok = nranks == 2 || nranks == 4 || nranks == 8;
  bool push1 = push_ok && bytes >= (16u << 10) && bytes * n1 <= stage;
  bool push2 = push_ok && bytes >= (16u << 10) &&
               bytes / (size_t)nranks * n1 <= stage - (64u << 10);
  switch (coll) {
  case SYMHEAP_TUNE_ALL_REDUCE:
    if (bytes <= (16u << 20))
      add(1, 0, 0); /* one-shot: LL up to cap, then every rank reads all */
    for (int a = 4; a <= 5; a++)
      if (a == 4 ? push1 : push2) {
        add(a, 0, 0); /* 512 threads, 2 units (32 bytes) a thread */
        add(a, 0, 128); /* more, smaller blocks */
        add(a, 0, 256);
        add(a, 0, 1024);
      }
    if (push_ok && bytes >= (16u << 10) && bytes * n1 <= stage / 128 * 120) {
      add(7, 0, 0); /* ll128: 512 threads, 64 lines a block a step */
      add(7, 0, 128);
      add(7, 0, 256);
      add(7, 0, 1024);
      add(7, 64, 0);
      add(7, 32, 0);
    }
    add(2, 0, 0);
    if (big) {
      add(2, 32, 0);
      add(2, 64, 0);
      add(2, 96, 0);
      add(2, 0, 256);
      add(2, 0, 512);
      add(2, 64, 512);
    }
    if (ce && bytes >= (1u << 20)) {
      add(3, 0, 0);
      add(3, 32, 0);
      add(3, 64, 0);
    }
    if (ce && bytes >= (4u << 20)) { /* rs_ce_pipe: chunks of 1 MiB up */
      add(6, 0, 0); /* one variant: slower than rs_ce wherever measured */
    }
    break;
  case SYMHEAP_TUNE_REDUCE_SCATTER:
    if (bytes <= cap)
      add(1, 0, 0);
    add(2, 0, 0);
    if (big) {
      add(2, 32, 0);
      add(2, 64, 0);
    }
    break;
  default:
    add(SYMHEAP_TUNE_SM, 0, 0);
    if (ce)
      add(SYMHEAP_TUNE_ZERO_SM, 0, 0);
    if (coll == SYMHEAP_TUNE_BROADCAST) {
      add(SYMHEAP_TUNE_SCATTER, 0, 0);
      add(SYMHEAP_TUNE_SCATTER_PIPE, 0, 0);
      if (ce)
        add(SYMHEAP_TUNE_CE_PIPE, 0, 0);
    }
  }
  return out;
}

// The best of one size: the fastest correct variant; zero-SM (a choice of
// convenience, not of speed) only where it beats SM by 3%.
static const result *best_of(const std::vector<result> &rs) {
  const result *b = NULL;
  for (const result &r : rs) {
    if (r.us < 0)
      continue;
    double margin =
        r.v.coll >= SYMHEAP_TUNE_ALL_GATHER && r.v.algo == SYMHEAP_TUNE_ZERO_SM
            ? 0.97
            : 1.0;
    if (!b || r.us < b->us * margin)
      b = &r;
  }
  return b;
}

static void write_table(FILE *f, const std::vector<std::vector<result>> &all,
                        const char *gpu, const char *topo) {
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  fprintf(f,
          "# symheap tuning table: symheap-tune at %d ranks, %s, %s\n"
          "# (%s timing); columns: collective ranks topology min_bytes "
          "max_bytes algorithm blocks threads us\n"
          "gpu\t%s\n",
          nranks, topo, date, graph_mode ? "graph" : "eager", gpu);
  char file[160];
  symheap_tune_file_name(gpu, file, sizeof file);
  fprintf(f, "# file name: %s\n", file);
  for (int c = 0; c < SYMHEAP_TUNE_NCOLL; c++) {
    std::vector<uint64_t> sizes;
    std::vector<symheap_tune_choice_t> win;
    std::vector<double> us;
    for (const auto &rs : all)
      if (!rs.empty() && rs[0].v.coll == c) {
        const result *b = best_of(rs);
        if (!b)
          continue; /* none was right: the next size's winner covers it */
        symheap_tune_choice_t w = {b->v.algo, b->v.blocks, b->v.threads,
                                   "table"};
        sizes.push_back(rs[0].bytes);
        win.push_back(w);
        us.push_back(b->us);
      }
    symheap_tune_write_rows(f, c, nranks, topo, (int)sizes.size(),
                            sizes.data(), win.data(), us.data());
  }
}

// --check TABLE: the table as the library reads it, rows or the faulty line.
static int check_table(const char *path) {
  symheap_tune_table_t t;
  char err[800];
  if (symheap_tune_load(path, &t, err, sizeof err) != 0) {
    fprintf(stderr, "symheap-tune: %s\n", err);
    return 1;
  }
  printf("%s: %d rows, gpu %s\n", path, t.nrows, t.gpu);
  symheap_tune_free(&t);
  return 0;
}

struct options {
  const char *out_path = NULL, *all_path = NULL;
  size_t maxb = (size_t)1 << 30;
};

// The run's arguments (into the file's globals and *o); false: usage said.
static bool parse_args(int argc, char **argv, options *o) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
      o->out_path = argv[++i];
    else if (strcmp(argv[i], "--all") == 0 && i + 1 < argc)
      o->all_path = argv[++i];
    else if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc)
      o->maxb = strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--graph") == 0)
      graph_mode = true;
    else if (strcmp(argv[i], "--coll") == 0 && i + 1 < argc &&
             symheap_tune_coll_id(argv[i + 1]) >= 0)
      only_coll = symheap_tune_coll_id(argv[++i]);
    else if (strcmp(argv[i], "--min-bytes") == 0 && i + 1 < argc)
      minb = strtoull(argv[++i], NULL, 0);
    else {
      fprintf(stderr, "usage: symheap-run -n N symheap-tune --out TABLE "
                      "[--all ALL.tsv] [--max-bytes N] [--graph]\n"
                      "         [--coll NAME] [--min-bytes N]\n"
                      "       symheap-tune --check TABLE\n");
      return false;
    }
  }
  return true;
}

// The device, the comm, the stream and the window (2 * maxb bytes, its
// input half filled); *prop is this rank's GPU.
static void setup(size_t maxb, cudaDeviceProp *prop) {
  // Every algorithm is named explicitly here: no table, no override, and
  // the flag alone picks SM or zero-SM.
  setenv("SYMHEAP_TUNING_FILE", "none", 1);
  setenv("SYMHEAP_ALL_GATHER_ALGO", "sm", 1);
  setenv("SYMHEAP_BROADCAST_ALGO", "sm", 1);
  setenv("SYMHEAP_ALL_TO_ALL_ALGO", "sm", 1);
  setenv("SYMHEAP_CUDA_ZERO_SM", "0", 1);
  setenv("SYMHEAP_DEVICE", "cuda", 0);
  int ndev = 0;
  CU(cudaGetDeviceCount(&ndev));
  const char *lr = getenv("SYMHEAP_LOCAL_RANK");
  CU(cudaSetDevice((lr ? atoi(lr) : 0) % ndev));
  CU(cudaFree(0));
  SH(symheap_comm_init_env(&comm));
  SH(symheap_comm_rank(comm, &rank));
  SH(symheap_comm_size(comm, &nranks));
  CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  int dev;
  CU(cudaGetDevice(&dev));
  CU(cudaGetDeviceProperties(prop, dev));
  g_half = maxb;
  SH(symheap_malloc(comm, 2 * g_half, 0, &w));
  char *local;
  SH(symheap_window_local_ptr(w, (void **)&local));
  fill_input<<<1024, 256, 0, st>>>((uint16_t *)local, g_half / 2, rank);
  CU(cudaGetLastError());
  CU(cudaStreamSynchronize(st));
  SH(symheap_comm_barrier(comm));
}

// Every variant of collective c at `bytes`, timed and checked, one line
// printed (rank 0); *wrong counts the wrong results.
static std::vector<result> sweep_size(int c, size_t b, size_t cap, bool ce,
                                      int *wrong) {
  std::vector<result> rs;
  std::string line;
  for (const variant &v : variants(c, b, cap, ce)) {
    clear_sample(c, b);
    double us = time_us(v, b);
    std::string why;
    if (!check_sample(c, b, &why)) {
      (*wrong)++;
      if (rank == 0)
        printf("WRONG %s %zu bytes %s: %s\n", symheap_tune_coll_name(c), b,
               vname(v).c_str(), why.c_str());
      us = -1;
    }
    rs.push_back(result{v, b, us});
    char cell[96];
    snprintf(cell, sizeof cell, " %s %.2f", vname(v).c_str(), us);
    line += cell;
  }
  const result *best = best_of(rs);
  if (rank == 0)
    printf("%-14s %2d %10zu best %-16s%s\n", symheap_tune_coll_name(c), nranks,
           b, best ? vname(best->v).c_str() : "(none)", line.c_str());
  fflush(stdout);
  return rs;
}

// Every collective (or --coll's) at every size; returns the wrong results.
static int sweep(size_t maxb, size_t cap, bool ce,
                 std::vector<std::vector<result>> *all) {
  int wrong = 0;
  for (int c = 0; c < SYMHEAP_TUNE_NCOLL; c++) {
    if (only_coll >= 0 && c != only_coll)
      continue;
    size_t top = c == SYMHEAP_TUNE_REDUCE_SCATTER ||
                         c == SYMHEAP_TUNE_ALL_GATHER ||
                         c == SYMHEAP_TUNE_ALL_TO_ALL
                     ? maxb / (size_t)nranks
                     : maxb;
    for (size_t b = 4096; b <= top; b *= 2)
      if (b >= minb)
        all->push_back(sweep_size(c, b, cap, ce, &wrong));
  }
  return wrong;
}

// --all: every variant's time at every size.
static int write_all(const char *path,
                     const std::vector<std::vector<result>> &all,
                     const char *topo) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return 1;
  }
  fprintf(f, "collective\tranks\ttopology\tbytes\tvariant\tus\n");
  for (const auto &rs : all)
    for (const result &r : rs)
      fprintf(f, "%s\t%d\t%s\t%zu\t%s\t%.3f\n",
              symheap_tune_coll_name(r.v.coll), nranks, topo, r.bytes,
              vname(r.v).c_str(), r.us);
  fclose(f);
  return 0;
}

// --out: the table, then read back as the library reads it.
static int write_out(const char *path,
                     const std::vector<std::vector<result>> &all,
                     const cudaDeviceProp &prop, const char *topo) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return 1;
  }
  write_table(f, all, prop.name, topo);
  if (fclose(f) != 0) {
    perror(path);
    return 1;
  }
  // What we wrote must be a table the library takes.
  symheap_tune_table_t t;
  char err[800];
  if (symheap_tune_load(path, &t, err, sizeof err) != 0) {
    fprintf(stderr, "symheap-tune: the table written is refused: %s\n", err);
    return 1;
  }
  printf("# wrote %s: %d rows for %s, %d ranks, %s\n", path, t.nrows,
         prop.name, nranks, topo);
  symheap_tune_free(&t);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--check") == 0)
    return check_table(argv[2]);
  options o;
  if (!parse_args(argc, argv, &o))
    return 2;
  if (o.maxb < 8192 || (o.maxb & (o.maxb - 1))) {
    fprintf(stderr, "symheap-tune: --max-bytes must be a power of two of at "
                    "least 8192\n");
    return 2;
  }
  cudaDeviceProp prop;
  setup(o.maxb, &prop);
  const char *topo = symheap_coll::tuning_topology();
  const size_t cap = symheap_coll::ll_capacity(nranks);
  const bool ce = symheap_coll::ce_available();
  if (rank == 0)
    printf("# symheap-tune: %d ranks, %s (sm_%d%d), topology %s, %s timing, "
           "4 KiB to %zu MiB; LL capacity %zu bytes, copy-engine ordering "
           "%s\n",
           nranks, prop.name, prop.major, prop.minor, topo,
           graph_mode ? "graph" : "eager", o.maxb >> 20, cap,
           ce ? "available" : "absent");
  std::vector<std::vector<result>> all;
  int wrong = sweep(o.maxb, cap, ce, &all);
  if (rank == 0 && o.all_path && write_all(o.all_path, all, topo) != 0)
    return 1;
  if (rank == 0 && o.out_path && write_out(o.out_path, all, prop, topo) != 0)
    return 1;
  CU(cudaStreamSynchronize(st));
  SH(symheap_comm_barrier(comm));
  SH(symheap_free(comm, w));
  SH(symheap_comm_destroy(comm));
  if (wrong && rank == 0)
    printf("FAIL symheap-tune: %d variant(s) gave a wrong result (left out "
           "of the table)\n",
           wrong);
  return wrong ? 1 : 0;
}

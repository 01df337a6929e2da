// symheap-bench-cuda (also `symheap-bench --collectives`): the CUDA
// collectives and peer copies, timed the way ../bench/peers_baseline.py times
// NCCL and PyTorch: per-op time of a launch loop between CUDA events, median
// of 5 repeats, after 3 warm-up calls, every rank synchronised before each
// repeat.  Each figure is the slowest rank's.  Inputs are random bf16 values
// (never zeros); all-reduces run out of place so values stay bounded.
//   symheap-run -n 2 symheap-bench-cuda [--max-size BYTES] [--json FILE]
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include "symheap_cuda.h"

#define CHECK_PROG "symheap-bench-cuda"
#include "cuda_check.h"

/* What AUTO chose, for the sweep's last column.  Every algorithm has its own
 * label: the old three-way label printed "rs+ce" for ll128 and the push
 * kernels (seen at 4 ranks, round 6). */
static const char *auto_label(int algo) {
  switch (algo) {
  case SYMHEAP_ALGO_ONE_SHOT: return "one";
  case SYMHEAP_ALGO_TWO_SHOT: return "two";
  case SYMHEAP_ALGO_RS_COPY_ENGINE: return "rs+ce";
  case SYMHEAP_ALGO_ONE_SHOT_PUSH: return "push1";
  case SYMHEAP_ALGO_TWO_SHOT_PUSH: return "push2";
  case SYMHEAP_ALGO_RS_CE_PIPELINED: return "rs+ce-p";
  case SYMHEAP_ALGO_ONE_SHOT_LL128: return "ll128";
  default: return "?";
  }
}

static symheap_comm_t comm;
static int rank, nranks;
static cudaStream_t stream;

__global__ void fill_random(uint16_t *p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint64_t x = seed ^ (i * 0x9e3779b97f4a7c15ull);
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    // a bf16 in [-2, 2): sign, exponent 126..127, random mantissa
    p[i] = (uint16_t)((x & 0x8000) | ((126 + ((x >> 8) & 1)) << 7) |
                      ((x >> 16) & 0x7f));
  }
}

// Per-op microseconds of fn in a launch loop, the slowest rank's median.
template <typename F> static double time_us(F fn, int iters) {
  for (int i = 0; i < 3; i++)
    fn();
  CU(cudaStreamSynchronize(stream));
  cudaEvent_t a, b;
  CU(cudaEventCreate(&a));
  CU(cudaEventCreate(&b));
  std::vector<double> reps;
  for (int r = 0; r < 5; r++) {
    CU(cudaStreamSynchronize(stream));
    SH(symheap_comm_barrier(comm));
    CU(cudaEventRecord(a, stream));
    for (int i = 0; i < iters; i++)
      fn();
    CU(cudaEventRecord(b, stream));
    CU(cudaEventSynchronize(b));
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, a, b));
    reps.push_back(ms * 1000.0 / iters);
  }
  CU(cudaEventDestroy(a));
  CU(cudaEventDestroy(b));
  std::sort(reps.begin(), reps.end());
  double med = reps[2];
  std::vector<double> all((size_t)nranks);
  SH(symheap_comm_allgather(comm, &med, all.data(), sizeof med));
  return *std::max_element(all.begin(), all.end());
}

// The same, with the loop captured in one CUDA graph: the device's time per
// op without the host's launch cost.
template <typename F> static double time_graph_us(F fn, int iters) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CU(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < iters; i++)
    fn();
  CU(cudaStreamEndCapture(stream, &g));
  CU(cudaGraphInstantiate(&ge, g, 0));
  double t = time_us([&] { CU(cudaGraphLaunch(ge, stream)); }, 1) / iters;
  CU(cudaGraphExecDestroy(ge));
  CU(cudaGraphDestroy(g));
  return t;
}

// For comparison with symheap_cuda_put/get (copy engine): SM loads and
// stores through the same mapping, 8 vectors in flight per thread.
__global__ void sm_copy(uint4 *dst, const uint4 *src, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t st = (size_t)gridDim.x * blockDim.x;
  for (; i + 7 * st < n; i += 8 * st) {
    uint4 v[8];
#pragma unroll
    for (int j = 0; j < 8; j++)
      v[j] = src[i + j * st];
#pragma unroll
    for (int j = 0; j < 8; j++)
      dst[i + j * st] = v[j];
  }
  for (; i < n; i += st)
    dst[i] = src[i];
}

// Small sizes get many calls: per-op times of a few microseconds are
// otherwise at the mercy of one slow launch.
static int g_iters; /* --iters: every size, for a quick pass */
static int iters_for(size_t bytes) {
  if (g_iters)
    return g_iters;
  return bytes <= (1u << 20) ? 1000 : bytes <= (64u << 20) ? 50 : 10;
}

static const char *human(size_t b, char *buf) {
  if (b >= (1u << 30))
    sprintf(buf, "%zu GiB", b >> 30);
  else if (b >= (1u << 20))
    sprintf(buf, "%zu MiB", b >> 20);
  else
    sprintf(buf, "%zu KiB", b >> 10);
  return buf;
}

// The run's buffers: the window (input at [0, max_size), output at
// [max_size, 2 max_size)), this rank's copy of it, and the stream as the
// API takes it.
static symheap_window_t w;
static size_t max_size = 1u << 30;
static char *local;
static symheap_stream_t st;

// The JSON record, "key": value pairs in the order they are put.
struct json_t {
  std::string js = "{";
  void put(const std::string &k, double v) {
    char b[128];
    snprintf(b, sizeof b, "%s\"%s\": %.3f", js.size() > 1 ? ", " : "",
             k.c_str(), v);
    js += b;
  }
};

// The arguments; *json the --json file or NULL.  false: usage said.
static bool parse_args(int argc, char **argv, const char **json) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc)
      max_size = strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
      *json = argv[++i];
    else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
      g_iters = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: symheap-run -n N symheap-bench-cuda "
                      "[--max-size BYTES] [--json FILE] [--iters N]\n");
      return false;
    }
  }
  return true;
}

// The device, the comm, the stream and the window, filled; false: no GPU.
static bool setup(symheap_comm_info_t *info) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    fprintf(stderr, "symheap-bench-cuda: no CUDA device here\n");
    return false;
  }
  const char *lr = getenv("SYMHEAP_LOCAL_RANK");
  CU(cudaSetDevice((lr ? atoi(lr) : 0) % ndev));
  CU(cudaFree(0));
  setenv("SYMHEAP_DEVICE", "cuda", 0);
  SH(symheap_comm_init_env(&comm));
  SH(symheap_comm_rank(comm, &rank));
  SH(symheap_comm_size(comm, &nranks));
  CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  SH(symheap_comm_get_info(comm, info));
  // in at [0, max), out at [max, 2 max); random bf16 everywhere
  SH(symheap_malloc(comm, 2 * max_size, 0, &w));
  SH(symheap_window_local_ptr(w, (void **)&local));
  fill_random<<<1024, 256, 0, stream>>>((uint16_t *)local, max_size,
                                        0x1234567ull + (uint64_t)rank);
  CU(cudaGetLastError());
  CU(cudaStreamSynchronize(stream));
  st = (symheap_stream_t)stream;
  return true;
}

// The all-reduce sweep: AUTO, one-shot, two-shot, AUTO in a graph.
static void bench_all_reduce(const symheap_comm_info_t &info, json_t &j) {
  char hb[32];
  if (rank == 0) {
    printf("# symheap-bench-cuda: %d ranks, %s; per-op time in a launch "
           "loop, median of 5, slowest rank\n",
           nranks, info.device);
    printf("# all-reduce bf16 sum, out of place; busbw = 2(n-1)/n * bytes / "
           "time\n");
    printf("# graph_us: auto, %d calls captured in one CUDA graph\n", 200);
    printf("%-9s %10s %10s %10s %10s %12s %8s\n", "bytes", "auto_us", "one_us",
           "two_us", "graph_us", "busbw_GB/s", "auto");
  }
  for (size_t b = 4096; b <= max_size; b *= 4) {
    size_t count = b / 2;
    double t[3] = {0, 0, 0};
    for (int a = 0; a < 3; a++) {
      if (a == SYMHEAP_ALGO_ONE_SHOT && b > (64u << 20))
        continue; // every rank reads everything: too slow to matter
      t[a] = time_us(
          [&] {
            SH(symheap_cuda_all_reduce(w, 0, w, max_size, count,
                                       SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
                                       (symheap_algo_t)a, st));
          },
          iters_for(b));
    }
    symheap_algo_t chosen;
    SH(symheap_cuda_all_reduce_algo(w, count, SYMHEAP_BFLOAT16, &chosen));
    double tg = 0;
    if (b <= (1u << 20))
      tg = time_graph_us(
          [&] {
            SH(symheap_cuda_all_reduce(w, 0, w, max_size, count,
                                       SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
                                       SYMHEAP_ALGO_AUTO, st));
          },
          g_iters ? g_iters : 200);
    double bus = 2.0 * (nranks - 1) / nranks * (double)b / (t[0] * 1e-6) / 1e9;
    if (rank == 0)
      printf("%-9s %10.2f %10.2f %10.2f %10.2f %12.1f %8s\n", human(b, hb),
             t[0], t[1], t[2], tg, bus, auto_label(chosen));
    j.put("allreduce_auto_us_" + std::to_string(b), t[0]);
    if (t[1] > 0)
      j.put("allreduce_one_us_" + std::to_string(b), t[1]);
    j.put("allreduce_two_us_" + std::to_string(b), t[2]);
    if (tg > 0)
      j.put("allreduce_graph_us_" + std::to_string(b), tg);
  }
}

static void bench_all_gather(json_t &j) {
  char hb[32];
  if (rank == 0)
    printf("# all-gather, bytes per rank; busbw = (n-1)/n * n*bytes / time\n"
           "%-9s %10s %12s\n",
           "bytes", "us", "busbw_GB/s");
  for (size_t b = 4096; b * (size_t)nranks <= max_size; b *= 16) {
    double t =
        time_us([&] { SH(symheap_cuda_all_gather(w, 0, w, max_size, b, st)); },
                iters_for(b * (size_t)nranks));
    double bus = (double)(nranks - 1) * (double)b / (t * 1e-6) / 1e9;
    if (rank == 0)
      printf("%-9s %10.2f %12.1f\n", human(b, hb), t, bus);
    j.put("allgather_us_" + std::to_string(b), t);
  }
}

// Reduce-scatter (bytes: each rank's output block), all-to-all (bytes
// per peer), broadcast from rank 0, all-gather by the copy engines only.
// busbw as nccl-tests: (n-1)/n * n*bytes / time, broadcast bytes / time.
static void bench_xfer(json_t &j) {
  char hb[32];
  if (rank == 0)
    printf("# reduce-scatter bf16 sum (auto), all-to-all, broadcast, zero-SM "
           "all-gather; bytes per rank's block\n%-9s %10s %10s %10s %10s "
           "%10s %10s\n",
           "bytes", "rs_us", "rs_busbw", "a2a_us", "a2a_busbw", "bcast_us",
           "ag0sm_us");
  for (size_t b = 4096; b * (size_t)nranks <= max_size; b *= 16) {
    const size_t n = (size_t)nranks, it = iters_for(b * n);
    double trs = time_us(
        [&] {
          SH(symheap_cuda_reduce_scatter(w, 0, w, max_size, b / 2,
                                         SYMHEAP_BFLOAT16, SYMHEAP_OP_SUM,
                                         SYMHEAP_ALGO_AUTO, st));
        },
        it);
    double ta2a = time_us(
        [&] { SH(symheap_cuda_all_to_all(w, 0, w, max_size, b, st)); }, it);
    double tbc = time_us(
        [&] { SH(symheap_cuda_broadcast(w, 0, w, max_size, b, 0, 0, st)); },
        iters_for(b));
    double tag0 = time_us(
        [&] {
          SH(symheap_cuda_all_gather_flags(w, 0, w, max_size, b,
                                           SYMHEAP_CUDA_ZERO_SM, st));
        },
        it);
    double f = (double)(n - 1) * (double)b / 1e3; /* (n-1)/n * n*b, in kB */
    if (rank == 0)
      printf("%-9s %10.2f %10.1f %10.2f %10.1f %10.2f %10.2f\n", human(b, hb),
             trs, f / trs, ta2a, f / ta2a, tbc, tag0);
    j.put("reducescatter_us_" + std::to_string(b), trs);
    j.put("alltoall_us_" + std::to_string(b), ta2a);
    j.put("broadcast_us_" + std::to_string(b), tbc);
    j.put("allgather_zerosm_us_" + std::to_string(b), tag0);
  }
}

// Peer copies through the flat VA: one peer (the next rank), by the copy
// engines (put, get) and by SM loads and stores (*sm_w, *sm_r, GB/s).
static void bench_peer_copy(void *buf, json_t &j, double *sm_w, double *sm_r) {
  char hb[32];
  int peer = (rank + 1) % nranks;
  double tw = time_us(
      [&] { SH(symheap_cuda_put(w, peer, max_size, buf, max_size, st)); }, 10);
  double tr =
      time_us([&] { SH(symheap_cuda_get(buf, w, peer, 0, max_size, st)); }, 10);
  void *remote;
  SH(symheap_window_peer_ptr(w, peer, &remote));
  int sms = 0, dev = 0;
  CU(cudaGetDevice(&dev));
  CU(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  size_t nv = max_size / 16;
  double cw = time_us(
      [&] {
        sm_copy<<<2 * sms, 1024, 0, stream>>>(
            (uint4 *)((char *)remote + max_size), (const uint4 *)buf, nv);
      },
      10);
  double cr = time_us(
      [&] {
        sm_copy<<<2 * sms, 1024, 0, stream>>>((uint4 *)buf,
                                              (const uint4 *)remote, nv);
      },
      10);
  double gw = (double)max_size / (tw * 1e-6) / 1e9;
  double gr = (double)max_size / (tr * 1e-6) / 1e9;
  *sm_w = (double)max_size / (cw * 1e-6) / 1e9;
  *sm_r = (double)max_size / (cr * 1e-6) / 1e9;
  if (rank == 0)
    printf("# peer copy through the flat VA, %s, every rank to the next at "
           "once\nsymheap_cuda_put %.1f GB/s, symheap_cuda_get %.1f GB/s "
           "(copy engine)\nSM loads and stores on the same addresses: "
           "write %.1f GB/s, read %.1f GB/s\n",
           human(max_size, hb), gw, gr, *sm_w, *sm_r);
  j.put("peer_put_GBps", gw);
  j.put("peer_get_GBps", gr);
}

// Every peer at once (more than 2 ranks): one copy engine stream per peer,
// max_size / (n-1) bytes to (from) each, all started together.
static void bench_all_peers(void *buf, json_t &j) {
  std::vector<cudaStream_t> ps((size_t)nranks);
  std::vector<cudaEvent_t> done((size_t)nranks);
  cudaEvent_t go;
  CU(cudaEventCreateWithFlags(&go, cudaEventDisableTiming));
  for (int p = 0; p < nranks; p++) {
    CU(cudaStreamCreateWithFlags(&ps[(size_t)p], cudaStreamNonBlocking));
    CU(cudaEventCreateWithFlags(&done[(size_t)p], cudaEventDisableTiming));
  }
  size_t each = max_size / (size_t)(nranks - 1) / 256 * 256;
  auto all = [&](bool wr) {
    CU(cudaEventRecord(go, stream));
    for (int k = 1; k < nranks; k++) {
      int p = (rank + k) % nranks;
      cudaStream_t q = ps[(size_t)p];
      CU(cudaStreamWaitEvent(q, go, 0));
      char *lb = (char *)buf + (size_t)(k - 1) * each;
      if (wr)
        SH(symheap_cuda_put(
            w, p, max_size + (size_t)((rank - p + nranks) % nranks - 1) * each,
            lb, each, (symheap_stream_t)q));
      else
        SH(symheap_cuda_get(lb, w, p, 0, each, (symheap_stream_t)q));
      CU(cudaEventRecord(done[(size_t)p], q));
      CU(cudaStreamWaitEvent(stream, done[(size_t)p], 0));
    }
  };
  double aw = time_us([&] { all(true); }, 10);
  double ar = time_us([&] { all(false); }, 10);
  double tot = (double)each * (nranks - 1);
  if (rank == 0)
    printf("every peer at once (%d x %zu MiB): put %.1f GB/s, get %.1f "
           "GB/s out of / into each rank\n",
           nranks - 1, each >> 20, tot / (aw * 1e-6) / 1e9,
           tot / (ar * 1e-6) / 1e9);
  j.put("allpeers_put_GBps", tot / (aw * 1e-6) / 1e9);
  j.put("allpeers_get_GBps", tot / (ar * 1e-6) / 1e9);
  for (int p = 0; p < nranks; p++) {
    CU(cudaStreamSynchronize(ps[(size_t)p]));
    CU(cudaStreamDestroy(ps[(size_t)p]));
    CU(cudaEventDestroy(done[(size_t)p]));
  }
  CU(cudaEventDestroy(go));
}

int main(int argc, char **argv) {
  const char *json = NULL;
  if (!parse_args(argc, argv, &json))
    return 2;
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  if (!setup(&info))
    return 2;
  json_t j;
  bench_all_reduce(info, j);
  bench_all_gather(j);
  bench_xfer(j);
  void *buf;
  CU(cudaMalloc(&buf, max_size));
  CU(cudaMemcpy(buf, local, max_size, cudaMemcpyDeviceToDevice));
  double gcw, gcr;
  bench_peer_copy(buf, j, &gcw, &gcr);
  if (nranks > 2)
    bench_all_peers(buf, j);
  j.put("sm_write_GBps", gcw);
  j.put("sm_read_GBps", gcr);
  j.js += "}\n";
  if (rank == 0 && json) {
    FILE *f = fopen(json, "w");
    if (f) {
      fputs(j.js.c_str(), f);
      fclose(f);
    }
  }
  CU(cudaFree(buf));
  CU(cudaStreamSynchronize(stream));
  SH(symheap_comm_barrier(comm));
  SH(symheap_free(comm, w));
  SH(symheap_comm_destroy(comm));
  return 0;
}

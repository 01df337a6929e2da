// GPU tests of the cuda adaptor on real devices: kernels write and read every
// rank's memory through the flat VA and through peer pointers, on random
// data; windows from 2 MiB to 8 GiB; the legacy-IPC fallback with cudaMalloc
// memory; 1,000 register/deregister cycles with descriptors and free device
// memory unchanged; multicast refused (it must never be created on the shared
// machines).  Ranks as processes (under symheap-run) or, with --threads N, as
// threads.  Without a GPU it prints a SKIP line and exits 0.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness.h"
#include "gpu_suite.cuh"
#include "symheap_cuda_load.h"
#include "symheap_device.h"

static char tag[32];
static int g_threads;

__host__ __device__ static inline uint32_t mix(uint64_t seed, uint64_t i) {
  uint64_t x = seed ^ (i * 0x9e3779b97f4a7c15ull);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return (uint32_t)x;
}

__global__ void fill(uint32_t *p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = mix(seed, i);
}

// Count words of every peer's copy that differ from what that peer wrote,
// reading through the flat VA (via = 0) or the per-peer table (via = 1).
__global__ void check_peers(symheap_device_window_t w, size_t n,
                            const uint64_t *seeds, int via,
                            unsigned long long *bad, size_t step) {
  for (int p = 0; p < w.nranks; p++) {
    const uint32_t *src =
        via == 0
            ? (const uint32_t *)((char *)w.flat_base + (size_t)p * w.stride)
            : (const uint32_t *)w.peer_ptrs[p];
    unsigned long long local = 0;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k * step < n;
         k += (size_t)gridDim.x * blockDim.x) {
      size_t i = k * step;
      local += src[i] != mix(seeds[p], i);
    }
    if (local)
      atomicAdd(&bad[p], local);
  }
}

// Write into the next rank's copy.
__global__ void write_next(symheap_device_window_t w, size_t n, uint64_t seed) {
  uint32_t *dst =
      (uint32_t *)symheap_device_peer_ptr(&w, (w.rank + 1) % w.nranks, 0);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = mix(seed, i);
}

__global__ void count_local(const uint32_t *p, size_t n, uint64_t seed,
                            unsigned long long *bad) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    local += p[i] != mix(seed, i);
  if (local)
    atomicAdd(bad, local);
}

static uint64_t fresh_seed(int rank) {
  uint64_t s = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(&s, sizeof s, 1, f) != 1)
    s = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
  if (f)
    fclose(f);
  return s ^ (uint64_t)rank;
}

// Fill my copy with fresh random data, then check every peer both ways.
static void check_window(th_ctx_t *c, symheap_window_t w, size_t bytes,
                         int flat, size_t step) {
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  void *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, &mine));
  if (!mine)
    return;
  size_t n = bytes / 4;
  uint64_t seed = fresh_seed(c->rank), *seeds = NULL;
  uint64_t *all = (uint64_t *)calloc((size_t)c->n, sizeof *all);
  CHECK_OK(symheap_comm_allgather(c->comm, &seed, all, sizeof seed));
  fill<<<264, 512>>>((uint32_t *)mine, n, seed);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  CHECK_OK(symheap_comm_barrier(c->comm));
  unsigned long long *bad = NULL;
  CUDA_OK(cudaMalloc(&seeds, sizeof(uint64_t) * (size_t)c->n));
  CUDA_OK(cudaMalloc(&bad, sizeof(unsigned long long) * (size_t)c->n));
  CUDA_OK(cudaMemcpy(seeds, all, sizeof(uint64_t) * (size_t)c->n,
                     cudaMemcpyHostToDevice));
  for (int via = flat ? 0 : 1; via < 2; via++) {
    CUDA_OK(cudaMemset(bad, 0, sizeof(unsigned long long) * (size_t)c->n));
    check_peers<<<264, 512>>>(v, n, seeds, via, bad, step);
    CUDA_OK(cudaGetLastError());
    unsigned long long h[64] = {0};
    CUDA_OK(cudaMemcpy(h, bad, sizeof(unsigned long long) * (size_t)c->n,
                       cudaMemcpyDeviceToHost));
    for (int p = 0; p < c->n; p++)
      CHECK(h[p] == 0, "%zu-byte window, peer %d via %s: %llu words wrong",
            bytes, p, via ? "peer pointers" : "flat VA", h[p]);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  cudaFree(seeds);
  cudaFree(bad);
  free(all);
}

static void case_pattern(th_ctx_t *c) {
  symheap_window_t w;
  size_t bytes = 64u << 20;
  CHECK_OK(symheap_malloc(c->comm, bytes, 0, &w));
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(v.flags & SYMHEAP_VIEW_FLAT, "cuda window is not flat");
  check_window(c, w, bytes, 1, 1);
  // Peer stores land in the owner's memory.
  uint64_t seed = fresh_seed(c->rank + 100),
           *all = (uint64_t *)calloc((size_t)c->n, sizeof *all);
  CHECK_OK(symheap_comm_allgather(c->comm, &seed, all, sizeof seed));
  write_next<<<264, 512>>>(v, bytes / 4, seed);
  CUDA_OK(cudaDeviceSynchronize());
  CHECK_OK(symheap_comm_barrier(c->comm));
  void *mine;
  CHECK_OK(symheap_window_local_ptr(w, &mine));
  unsigned long long *bad, h = 1;
  CUDA_OK(cudaMalloc(&bad, sizeof *bad));
  CUDA_OK(cudaMemset(bad, 0, sizeof *bad));
  int writer = (c->rank + c->n - 1) % c->n;
  count_local<<<264, 512>>>((uint32_t *)mine, bytes / 4, all[writer], bad);
  CUDA_OK(cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost));
  CHECK(h == 0, "rank %d's stores into my memory: %llu words wrong", writer, h);
  cudaFree(bad);
  free(all);
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_free(c->comm, w));
}

static void case_sizes(th_ctx_t *c) {
  const size_t sizes[] = {2u << 20, 64u << 20, 1ull << 30, 8ull << 30};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    symheap_window_t w;
    symheap_result_t r = symheap_malloc(c->comm, sizes[i], 0, &w);
    CHECK(r == SYMHEAP_SUCCESS, "%zu-byte window: %s: %s", sizes[i],
          symheap_strerror(r), symheap_last_error());
    if (r != SYMHEAP_SUCCESS)
      continue;
    // Every word of small windows; every 4097th word of large ones.
    check_window(c, w, sizes[i], 1, sizes[i] > (64u << 20) ? 4097 : 1);
    CHECK_OK(symheap_free(c->comm, w));
  }
}

static void case_cudamalloc_fallback(th_ctx_t *c) {
  void *buf = NULL;
  size_t bytes = 16u << 20;
  CUDA_OK(cudaMalloc(&buf, bytes + 4096));
  symheap_window_t w;
  // An interior pointer: the fallback carries the offset.
  char *start = (char *)buf + 4096;
  CHECK_OK(symheap_window_register(c->comm, start, bytes, 0, &w));
  void *base;
  size_t stride;
  CHECK_ERR(symheap_window_flat_base(w, &base, &stride),
            SYMHEAP_ERR_UNSUPPORTED);
  check_window(c, w, bytes, 0, 1);
  CHECK_OK(symheap_window_deregister(c->comm, w));
  CUDA_OK(cudaFree(buf));
}

// symheap_malloc + symheap_free never reuse a kept mapping: each cycle is
// the whole path (create, export, import, map, set access, and back).
static void case_cycles(th_ctx_t *c) {
  const size_t bytes = 2u << 20;
  symheap_window_t w;
  for (int i = 0; i < 10; i++) { // warm the driver's own pools
    CHECK_OK(symheap_malloc(c->comm, bytes, 0, &w));
    CHECK_OK(symheap_free(c->comm, w));
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  size_t free0 = 0, free1 = 0, total = 0;
  // From a trimmed heap, so that what earlier cases committed is not
  // counted as given back.
  CHECK_OK(symheap_heap_trim(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
  CUDA_OK(cudaMemGetInfo(&free0, &total));
  int fds0 = (!g_threads || c->rank == 0) ? th_count_fds() : 0;
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int i = 0; i < 1000; i++) {
    symheap_result_t r = symheap_malloc(c->comm, bytes, 0, &w);
    if (r != SYMHEAP_SUCCESS) {
      CHECK_OK(r);
      break;
    }
    CHECK_OK(symheap_free(c->comm, w));
  }
  // The heap keeps committed chunks for the next allocation: give them back.
  CHECK_OK(symheap_heap_trim(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
  CUDA_OK(cudaMemGetInfo(&free1, &total));
  if (!g_threads || c->rank == 0) {
    int fds1 = th_count_fds();
    CHECK(fds1 == fds0, "fds %d -> %d after 1000 cycles", fds0, fds1);
  }
  // A leak of even one allocation or mapping would cost a 2 MiB granule.
  long long diff = (long long)free0 - (long long)free1;
  CHECK(diff < (2ll << 20) && diff > -(2ll << 20),
        "free device memory %zu -> %zu after 1000 cycles", free0, free1);
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s));
  // Only the comm's own pad is left: SYMHEAP_PAD_BYTES in 2 MiB granules.
  const uint64_t g = 2ull << 20, pad = (SYMHEAP_PAD_BYTES + g - 1) / g * g;
  CHECK(s.windows_live == 0 && s.allocations_live == 1 &&
            s.bytes_mapped == pad * (c->n + 1),
        "accounting after 1000 cycles: windows %llu allocations %llu mapped "
        "%llu",
        (unsigned long long)s.windows_live,
        (unsigned long long)s.allocations_live,
        (unsigned long long)s.bytes_mapped);
}

// Deregistering and registering the same memory again reuses the kept
// mapping: same addresses, fresh data visible.
static void case_reregister(th_ctx_t *c) {
  void *buf = NULL;
  size_t bytes = 64u << 20;
  CHECK_OK(symheap_mem_alloc(c->comm, bytes, &buf));
  symheap_window_t w;
  void *b1 = NULL, *b2 = NULL;
  size_t stride;
  CHECK_OK(symheap_window_register(c->comm, buf, bytes, 0, &w));
  CHECK_OK(symheap_window_flat_base(w, &b1, &stride));
  check_window(c, w, bytes, 1, 1);
  CHECK_OK(symheap_window_deregister(c->comm, w));
  CHECK_OK(symheap_window_register(c->comm, buf, bytes, 0, &w));
  CHECK_OK(symheap_window_flat_base(w, &b2, &stride));
  CHECK(b1 == b2, "kept mapping not reused: %p then %p", b1, b2);
  check_window(c, w, bytes, 1, 1);
  CHECK_OK(symheap_window_deregister(c->comm, w));
  CHECK_OK(symheap_mem_free(c->comm, buf));
}

static void case_multicast_refused(th_ctx_t *c) {
  symheap_window_t w;
  CHECK_ERR(symheap_malloc(c->comm, 2u << 20, SYMHEAP_WINDOW_MULTICAST, &w),
            SYMHEAP_ERR_UNSUPPORTED);
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  CHECK(!info.multicast_available, "multicast reported available");
  CHECK(strcmp(info.device_adaptor, getenv("SYMHEAP_DEVICE")) == 0,
        "adaptor %s", info.device_adaptor);
  if (c->rank == 0)
    printf("# rank 0: %s, granularity %zu\n", info.device, info.granularity);
}

// SYMHEAP_WINDOW_PATH=nccl: windows are NCCL's; the same checks read them
// through the same view.  Memory NCCL cannot register (cudaMalloc) is
// refused with NCCL's reason, and NCCL's mappings are not reused.
static int g_nccl;

static void case_window_path(th_ctx_t *c) {
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  CHECK(strcmp(info.window_path, g_nccl ? "nccl" : "symheap") == 0,
        "window path '%s'", info.window_path);
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 4u << 20, 0, &w));
  void *base = NULL, *mine = NULL;
  size_t stride = 0;
  CHECK_OK(symheap_window_flat_base(w, &base, &stride));
  CHECK_OK(symheap_window_local_ptr(w, &mine));
  if (g_nccl) // NCCL's range: its own VA, ranks 4 GiB-aligned apart
    CHECK(stride % (1ull << 32) == 0 && base != mine,
          "NCCL window: stride %zu, flat base %p, local %p", stride, base,
          mine);
  symheap_rdma_info_t rdma = {sizeof rdma, 0, "", NULL, NULL, ""};
  CHECK_OK(symheap_comm_rdma_info(c->comm, &rdma));
  const char *net = getenv("SYMHEAP_NET");
  if (net && strcmp(net, "ibverbs") == 0) { // asked for: must be on
    uint64_t a = 0;
    uint32_t k = 0;
    CHECK(rdma.enabled, "SYMHEAP_NET=ibverbs but RDMA is off: %s",
          rdma.why_not);
    CHECK_OK(symheap_window_rdma_key(w, c->rank, &a, &k));
    CHECK(a == (uint64_t)(uintptr_t)mine, "RDMA address %#llx, window %p",
          (unsigned long long)a, mine);
  }
  if (c->rank == 0)
    printf("# window path %s: flat base %p, stride %zu; RDMA %s%s\n",
           info.window_path, base, stride, rdma.enabled ? "on " : "off: ",
           rdma.enabled ? rdma.device : rdma.why_not);
  CHECK_OK(symheap_free(c->comm, w));
}

typedef struct {
  const char *name;
  void (*fn)(th_ctx_t *);
  int symheap_only;
} case_t;
static const case_t cases[] = {
    {"window_path", case_window_path, 0},
    {"multicast_refused", case_multicast_refused, 0},
    {"pattern_flat_and_peer_ptrs", case_pattern, 0},
    {"sizes_2MiB_to_8GiB", case_sizes, 0},
    {"cudamalloc_ipc_fallback", case_cudamalloc_fallback, 1},
    {"reregister_reuses_mapping", case_reregister, 1},
    {"malloc_free_cycles_1000", case_cycles, 0},
};

static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (g_nccl && cases[i].symheap_only)
      continue;
    th_begin(tag, cases[i].name, c->rank);
    cases[i].fn(c);
    CHECK_OK(symheap_comm_barrier(c->comm));
    th_end();
  }
}

// Thread-ranks share the GPU's context: this file's kernels are loaded
// before any rank launches one that waits for a peer (symheap_cuda_load.h).
static void threads_body(th_ctx_t *c, void *arg) {
  CHECK_OK(symheap_cuda_load_module((const void *)fill));
  CHECK_OK(symheap_comm_barrier(c->comm));
  run_cases(c, arg);
}

// SYMHEAP_TEST_NCCL_COMM=1: the cases on a comm made by
// symheap_comm_init_nccl over an NCCL communicator this test makes itself
// (NCCL by dlopen, its id passed over the first comm), as a framework would.
typedef struct {
  char internal[128];
} ncclid_t;
typedef int (*nccl_get_id_t)(void *id);
typedef int (*nccl_init_t)(void **comm, int n, ncclid_t id, int rank);
static int run_on_nccl_comm(th_ctx_t *c) {
  void *dl = dlopen("libnccl.so.2", RTLD_NOW);
  nccl_get_id_t get_id = dl ? (nccl_get_id_t)dlsym(dl, "ncclGetUniqueId") : 0;
  nccl_init_t init = dl ? (nccl_init_t)dlsym(dl, "ncclCommInitRank") : 0;
  int (*destroy)(void *) =
      dl ? (int (*)(void *))dlsym(dl, "ncclCommDestroy") : 0;
  if (!get_id || !init || !destroy) {
    printf("FAIL gpu/nccl_comm: cannot load NCCL: %s\n", dlerror());
    return 1;
  }
  ncclid_t id, *all = (ncclid_t *)calloc((size_t)c->n, sizeof id);
  memset(&id, 0, sizeof id);
  if (c->rank == 0 && get_id(&id) != 0) {
    printf("FAIL gpu/nccl_comm: ncclGetUniqueId\n");
    return 1;
  }
  CHECK_OK(symheap_comm_allgather(c->comm, &id, all, sizeof id));
  void *ncomm = NULL;
  if (init(&ncomm, c->n, all[0], c->rank) != 0) {
    printf("FAIL gpu/nccl_comm: ncclCommInitRank\n");
    return 1;
  }
  free(all);
  th_ctx_t b = {NULL, c->rank, c->n};
  th_begin(tag, "init_nccl_comm", c->rank);
  CHECK_OK(symheap_comm_init_nccl(&b.comm, ncomm));
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  if (b.comm) {
    CHECK_OK(symheap_comm_get_info(b.comm, &info));
    CHECK(strcmp(info.ccl_adaptor, "nccl") == 0 && info.rank == c->rank &&
              info.nranks == c->n,
          "ccl '%s', rank %d of %d", info.ccl_adaptor, info.rank, info.nranks);
  }
  th_end();
  if (!b.comm)
    return 1;
  snprintf(tag, sizeof tag, "gpu_ncclcomm%s_procs%d", g_nccl ? "_win" : "",
           c->n);
  run_cases(&b, NULL);
  CHECK_OK(symheap_comm_destroy(b.comm));
  destroy(ncomm);
  CHECK_OK(symheap_comm_destroy(c->comm));
  return th_total_failures() ? 1 : 0;
}

int main(int argc, char **argv) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("SKIP gpu: no CUDA device here (cudaGetDeviceCount found none); "
           "the GPU tests run on the GPU machine\n");
    return 0;
  }
  const char *mc = getenv("SYMHEAP_DISABLE_MULTICAST");
  if (!mc || strcmp(mc, "1") != 0) {
    printf("FAIL gpu/refuse_to_run: set SYMHEAP_DISABLE_MULTICAST=1 (and "
           "NCCL_NVLS_ENABLE=0) on shared GPU machines\n");
    return 1;
  }
  // The cuda adaptor, or another CUDA adaptor named by the caller (the cuda
  // adaptor built out of the tree as a plugin, under another name).
  setenv("SYMHEAP_DEVICE", "cuda", 0);
  const char *path = getenv("SYMHEAP_WINDOW_PATH");
  g_nccl = path && strcmp(path, "nccl") == 0;
  if (argc == 3 && strcmp(argv[1], "--threads") == 0) {
    g_threads = 1;
    int n = atoi(argv[2]);
    snprintf(tag, sizeof tag, "gpu%s_threads%d", g_nccl ? "_nccl" : "", n);
    // Each thread-rank gets its device from the adaptor's default (local rank
    // modulo device count); the runtime then uses that current context.
    int rc = th_run_threads(n, threads_body, NULL);
    return rc || th_total_failures() ? 1 : 0;
  }
  th_ctx_t c = {NULL, 0, 0};
  const char *lr = getenv("SYMHEAP_LOCAL_RANK");
  int local = lr ? atoi(lr) : 0;
  cudaSetDevice(local % ndev);
  cudaFree(0);
  symheap_result_t r = symheap_comm_init_env(&c.comm);
  if (r != SYMHEAP_SUCCESS) {
    printf("FAIL gpu/comm_init: %s: %s\n", symheap_strerror(r),
           symheap_last_error());
    return 1;
  }
  symheap_comm_rank(c.comm, &c.rank);
  symheap_comm_size(c.comm, &c.n);
  snprintf(tag, sizeof tag, "gpu%s_procs%d", g_nccl ? "_nccl" : "", c.n);
  const char *own = getenv("SYMHEAP_TEST_NCCL_COMM");
  if (own && strcmp(own, "1") == 0)
    return run_on_nccl_comm(&c);
  run_cases(&c, NULL);
  CHECK_OK(symheap_comm_destroy(c.comm));
  return th_total_failures() ? 1 : 0;
}

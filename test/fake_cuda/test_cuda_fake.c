/* The cuda adaptor against the fake CUDA driver (build/fake_cuda): loading
 * and refusing drivers, device choice, a failure injected at every driver
 * call of a registration on every rank (undone everywhere), the multicast
 * call sequence, and the legacy-IPC fallback for non-VMM memory in threads
 * and in processes.  Usage: test_cuda_fake PATH/TO/fake/libcuda.so.1 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../adaptors/common/cuda_api.h"
#include "../harness.h"
#include "fake_cuda.h"

static const char *fake_path;
static fake_cuda_set_fault_t set_fault;
static fake_cuda_live_fn_t live;
static fake_cuda_log_t call_log;
static fake_cuda_log_reset_t log_reset;
static fake_cuda_set_capturing_t set_capturing;
static cu_get_proc_address_t gpa;
static cu_result_t (*mem_alloc)(cu_deviceptr_t *, size_t);
static cu_result_t (*mem_free)(cu_deviceptr_t);

/* --- in a child process, so each sees a fresh driver load ----------------- */
static int child_expect(const char *lib, const char *device, const char *extra,
                        symheap_result_t want, const char *needle) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("SYMHEAP_CUDA_LIBRARY", lib, 1);
    setenv("SYMHEAP_DEVICE", device, 1);
    if (extra)
      putenv((char *)extra);
    symheap_unique_id_t id;
    symheap_comm_t c = NULL;
    symheap_result_t r = symheap_get_unique_id(&id);
    if (r == SYMHEAP_SUCCESS)
      r = symheap_comm_init(&c, 1, &id, 0);
    int ok = r == want &&
             (r == SYMHEAP_SUCCESS || strstr(symheap_last_error(), needle));
    if (r == SYMHEAP_SUCCESS) {
      symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
      symheap_comm_get_info(c, &info);
      ok = ok && strstr(info.device_adaptor, needle) != NULL;
      symheap_comm_destroy(c);
    }
    if (!ok)
      printf("# child: %s -> %s: %s\n", device, symheap_strerror(r),
             symheap_last_error());
    fflush(stdout);
    _exit(ok ? 0 : 1);
  }
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void test_loading(void) {
  th_begin("cuda", "driver_loading", 0);
  CHECK(child_expect("/nonexistent/libcuda.so.1", "cuda", NULL,
                     SYMHEAP_ERR_UNSUPPORTED,
                     "cannot load the CUDA driver /nonexistent/libcuda.so.1"),
        "a missing driver is not a clear UNSUPPORTED");
  CHECK(child_expect("/nonexistent/libcuda.so.1", "auto", NULL, SYMHEAP_SUCCESS,
                     "host"),
        "auto without a driver did not fall back to host");
  CHECK(child_expect(fake_path, "auto", NULL, SYMHEAP_SUCCESS, "cuda"),
        "auto with a driver did not choose cuda");
  CHECK(child_expect(fake_path, "cuda", "FAKE_CUDA_DRIVER_VERSION=11080",
                     SYMHEAP_ERR_UNSUPPORTED, "symheap needs 12.0"),
        "an old driver is not refused clearly");
  CHECK(child_expect(fake_path, "cuda", "FAKE_CUDA_DEVICES=0",
                     SYMHEAP_ERR_UNSUPPORTED, "sees no device"),
        "a driver without devices is not refused clearly");
  CHECK(child_expect(fake_path, "cuda", "SYMHEAP_CUDA_DEVICE=5",
                     SYMHEAP_ERR_INVALID_ARG, "SYMHEAP_CUDA_DEVICE=5"),
        "a device ordinal out of range is not refused");
  th_end();
}

/* --- device choice ------------------------------------------------------ */
static void device_of(th_ctx_t *c, void *arg) {
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  snprintf((char *)arg + 64 * c->rank, 64, "%s", info.device);
}

static void *with_context(void *arg) {
  /* A framework thread that already made device 1 current. */
  cu_result_t (*retain)(cu_context_t *, cu_device_t);
  cu_result_t (*set)(cu_context_t);
  int st;
  gpa("cuDevicePrimaryCtxRetain", (void **)&retain, 12000, 0, &st);
  gpa("cuCtxSetCurrent", (void **)&set, 12000, 0, &st);
  cu_context_t ctx;
  retain(&ctx, 1);
  set(ctx);
  symheap_unique_id_t id;
  symheap_comm_t c;
  symheap_get_unique_id(&id);
  if (symheap_comm_init(&c, 1, &id, 0) == SYMHEAP_SUCCESS) {
    symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
    symheap_comm_get_info(c, &info);
    snprintf(arg, 64, "%s", info.device);
    symheap_comm_destroy(c);
  }
  return NULL;
}

static void test_device_choice(void) {
  th_begin("cuda", "device_choice", 0);
  char devs[4 * 64] = "";
  th_run_threads(4, device_of, devs);
  CHECK(strstr(devs, "(device 0)") && strstr(devs + 64, "(device 1)") &&
            strstr(devs + 128, "(device 0)") &&
            strstr(devs + 192, "(device 1)"),
        "local rank modulo device count: %s %s %s %s", devs, devs + 64,
        devs + 128, devs + 192);
  setenv("SYMHEAP_CUDA_DEVICE", "1", 1);
  memset(devs, 0, sizeof devs);
  th_run_threads(2, device_of, devs);
  CHECK(strstr(devs, "(device 1)") && strstr(devs + 64, "(device 1)"),
        "SYMHEAP_CUDA_DEVICE=1: %s %s", devs, devs + 64);
  unsetenv("SYMHEAP_CUDA_DEVICE");
  char dev[64] = "";
  pthread_t t;
  pthread_create(&t, NULL, with_context, dev);
  pthread_join(t, NULL);
  CHECK(strstr(dev, "(device 1)") != NULL,
        "the caller's current context was not followed: %s", dev);
  th_end();
}

/* --- a fault at every driver call of a registration ---------------------- */
static const char *reg_calls[] = {"cuMemCreate",
                                  "cuMemAddressReserve",
                                  "cuMemMap",
                                  "cuMemSetAccess",
                                  "cuMemExportToShareableHandle",
                                  "cuMemImportFromShareableHandle",
                                  "cuMulticastCreate",
                                  "cuMulticastAddDevice",
                                  "cuMulticastBindMem"};
#define NCALLS (sizeof reg_calls / sizeof reg_calls[0])

static int count_calls(const char *log, const char *fn, int dev) {
  char needle[96];
  snprintf(needle, sizeof needle, "%s@%d", fn, dev);
  int n = 0;
  size_t len = strlen(needle);
  for (const char *p = log; (p = strstr(p, needle)); p += len)
    if ((p == log || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
      n++;
  return n;
}

typedef struct {
  unsigned flags;
  int injected;
  int heap; /* sweep the heap's growth (trimmed between tries) */
} sweep_t;

/* With the heap: release its chunks, so that the next malloc grows it. */
static void trim(th_ctx_t *c, const sweep_t *sw) {
  if (sw->heap)
    CHECK_OK(symheap_heap_trim(c->comm));
}

static void sweep(th_ctx_t *c, void *arg) {
  sweep_t *sw = arg;
  th_begin("cuda",
           sw->heap    ? "fault_at_every_driver_call_heap_growth"
           : sw->flags ? "fault_at_every_driver_call_multicast"
                       : "fault_at_every_driver_call",
           c->rank);
  static int calls[2][NCALLS];
  symheap_window_t w;
  if (sw->heap) { /* the reservation first: the sweep is of growth alone */
    CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
    CHECK_OK(symheap_free(c->comm, w));
    trim(c, sw);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    log_reset();
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_malloc(c->comm, 3 << 20, sw->flags, &w));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    for (int d = 0; d < 2; d++)
      for (size_t i = 0; i < NCALLS; i++)
        calls[d][i] = count_calls(call_log(), reg_calls[i], d);
  CHECK_OK(symheap_free(c->comm, w));
  trim(c, sw);
  CHECK_OK(symheap_comm_barrier(c->comm));
  fake_cuda_live_t base, now;
  int fds0 = 0;
  if (c->rank == 0) { /* one counter: counting opens a descriptor */
    live(&base);
    fds0 = th_count_fds();
  }
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT,
                       s1 = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < NCALLS; i++)
      for (int nth = 1; nth <= calls[d][i]; nth++) {
        CHECK_OK(symheap_comm_barrier(c->comm));
        if (c->rank == 0) {
          set_fault(reg_calls[i], d, nth, CU_ERR_UNKNOWN);
          sw->injected++;
        }
        CHECK_OK(symheap_comm_barrier(c->comm));
        symheap_result_t r = symheap_malloc(c->comm, 3 << 20, sw->flags, &w);
        CHECK(r == SYMHEAP_ERR_DEVICE &&
                  strstr(symheap_last_error(), reg_calls[i]),
              "%s #%d on device %d: got %s (%s)", reg_calls[i], nth, d,
              symheap_strerror(r), symheap_last_error());
        if (r == SYMHEAP_SUCCESS)
          CHECK_OK(symheap_free(c->comm, w));
        if (r == SYMHEAP_SUCCESS)
          trim(c, sw);
        CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
        CHECK(memcmp(&s0, &s1, sizeof s0) == 0,
              "%s #%d on device %d: accounting moved", reg_calls[i], nth, d);
        CHECK_OK(symheap_comm_barrier(c->comm));
        if (c->rank == 0) {
          live(&now);
          CHECK(memcmp(&now, &base, sizeof now) == 0 && th_count_fds() == fds0,
                "%s #%d on device %d left: handles %d->%d mappings %d->%d "
                "reservations %d->%d multicast %d->%d fds %d->%d",
                reg_calls[i], nth, d, base.handles, now.handles, base.mappings,
                now.mappings, base.reservations, now.reservations,
                base.mc_objects, now.mc_objects, fds0, th_count_fds());
          set_fault(NULL, 0, 0, 0);
        }
      }
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_malloc(c->comm, 3 << 20, sw->flags, &w));
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* --- multicast order ----------------------------------------------------- */
/* The calls appear in this order (each after the one before it). */
static int in_order(const char *log, const char *const *calls) {
  const char *p = log;
  for (; *calls; calls++) {
    p = strstr(p, *calls);
    if (!p)
      return 0;
    p += strlen(*calls);
  }
  return 1;
}
#define IN_ORDER(log, ...)                                                     \
  in_order(log, (const char *const[]){__VA_ARGS__, NULL})

static void mc_sequence(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("cuda", "multicast_call_sequence", c->rank);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    log_reset();
  CHECK_OK(symheap_comm_barrier(c->comm));
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 1 << 20, SYMHEAP_WINDOW_MULTICAST, &w));
  void *mc = NULL;
  CHECK_OK(symheap_window_multicast_ptr(w, &mc));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    const char *l = call_log();
    CHECK(count_calls(l, "cuMulticastCreate", 0) == 1 &&
              count_calls(l, "cuMulticastCreate", 1) == 0,
          "exactly one rank creates the object: %s", l);
    CHECK(IN_ORDER(l, "cuMulticastCreate@0", "cuMemExportToShareableHandle@0",
                   "cuMulticastAddDevice@0"),
          "create, export, add on rank 0: %s", l);
    CHECK(IN_ORDER(l, "cuMulticastCreate@0", "cuMemImportFromShareableHandle@1",
                   "cuMulticastAddDevice@1"),
          "import, add on rank 1: %s", l);
    const char *first_bind = strstr(l, "cuMulticastBindMem");
    const char *add0 = strstr(l, "cuMulticastAddDevice@0");
    const char *add1 = strstr(l, "cuMulticastAddDevice@1");
    CHECK(first_bind && add0 && add1 && add0 < first_bind && add1 < first_bind,
          "every device is added before any binds: %s", l);
    CHECK(IN_ORDER(l, "cuMulticastBindMem@0", "cuMemAddressReserve@0",
                   "cuMemMap@0", "cuMemSetAccess@0") &&
              IN_ORDER(l, "cuMulticastBindMem@1", "cuMemAddressReserve@1",
                       "cuMemMap@1", "cuMemSetAccess@1") &&
              count_calls(l, "cuMulticastBindMem", 1) == 1,
          "bind, then map and set access: %s", l);
    log_reset();
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_free(c->comm, w));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    const char *l = call_log();
    CHECK(IN_ORDER(l, "cuMemUnmap@0", "cuMemAddressFree@0",
                   "cuMulticastUnbind@0", "cuMemRelease@0") &&
              IN_ORDER(l, "cuMemUnmap@1", "cuMemAddressFree@1",
                       "cuMulticastUnbind@1", "cuMemRelease@1") &&
              count_calls(l, "cuMulticastUnbind", 1) == 1,
          "teardown runs in reverse: %s", l);
    fake_cuda_live_t now;
    live(&now);
    CHECK(now.mc_objects == 0, "%d multicast objects left", now.mc_objects);
  }
  th_end();
}

static void mc_refused(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("cuda", "multicast_refused_when_disabled", c->rank);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    log_reset();
  CHECK_OK(symheap_comm_barrier(c->comm));
  symheap_window_t w;
  CHECK_ERR(symheap_malloc(c->comm, 1 << 20, SYMHEAP_WINDOW_MULTICAST, &w),
            SYMHEAP_ERR_UNSUPPORTED);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    CHECK(strstr(call_log(), "cuMulticastCreate") == NULL,
          "a multicast object was created: %s", call_log());
  th_end();
}

/* --- VMM memory the caller made itself (cuMemCreate + map) -----------------
 */
typedef struct {
  cu_result_t (*create)(cu_mem_handle_t *, size_t, const cu_mem_prop_t *,
                        unsigned long long);
  cu_result_t (*release)(cu_mem_handle_t);
  cu_result_t (*reserve)(cu_deviceptr_t *, size_t, size_t, cu_deviceptr_t,
                         unsigned long long);
  cu_result_t (*addr_free)(cu_deviceptr_t, size_t);
  cu_result_t (*map)(cu_deviceptr_t, size_t, size_t, cu_mem_handle_t,
                     unsigned long long);
  cu_result_t (*unmap)(cu_deviceptr_t, size_t);
  cu_result_t (*access)(cu_deviceptr_t, size_t, const cu_access_desc_t *,
                        size_t);
  cu_result_t (*get_device)(cu_device_t *);
} vmm_fns_t;

static void foreign_vmm(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("cuda", "foreign_vmm_memory", c->rank);
  vmm_fns_t f;
  int st;
  gpa("cuMemCreate", (void **)&f.create, 12000, 0, &st);
  gpa("cuMemRelease", (void **)&f.release, 12000, 0, &st);
  gpa("cuMemAddressReserve", (void **)&f.reserve, 12000, 0, &st);
  gpa("cuMemAddressFree", (void **)&f.addr_free, 12000, 0, &st);
  gpa("cuMemMap", (void **)&f.map, 12000, 0, &st);
  gpa("cuMemUnmap", (void **)&f.unmap, 12000, 0, &st);
  gpa("cuMemSetAccess", (void **)&f.access, 12000, 0, &st);
  gpa("cuCtxGetDevice", (void **)&f.get_device, 12000, 0, &st);
  /* The thread's context is the one the adaptor made current at init. */
  cu_device_t dev = 0;
  CHECK(f.get_device(&dev) == CU_OK, "cuCtxGetDevice");
  const size_t size = 4u << 20;
  cu_mem_prop_t prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_ALLOC_TYPE_PINNED;
  prop.requested_handle_types = CU_MEM_HANDLE_TYPE_POSIX_FD;
  prop.location.type = CU_LOCATION_DEVICE;
  prop.location.id = dev;
  cu_mem_handle_t h = 0;
  cu_deviceptr_t va = 0;
  cu_access_desc_t d = {{CU_LOCATION_DEVICE, dev}, CU_MEM_ACCESS_READWRITE};
  CHECK(f.create(&h, size, &prop, 0) == CU_OK &&
            f.reserve(&va, size, 0, 0, 0) == CU_OK &&
            f.map(va, size, 0, h, 0) == CU_OK &&
            f.access(va, size, &d, 1) == CU_OK,
        "making VMM memory by hand");
  int *mine = (int *)(uintptr_t)va;
  for (int i = 0; i < 1024; i++)
    mine[1024 + i] = c->rank * 1000 + i;
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT,
                       s1 = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  /* An interior pointer of memory symheap did not allocate. */
  symheap_window_t w;
  CHECK_OK(symheap_window_register(c->comm, mine + 1024, 4096, 0, &w));
  void *base = NULL;
  size_t stride = 0;
  CHECK_OK(symheap_window_flat_base(w, &base, &stride));
  for (int p = 0; p < c->n && base; p++) {
    int *pp = (int *)((char *)base + (size_t)p * stride);
    CHECK(pp[0] == p * 1000 && pp[1023] == p * 1000 + 1023,
          "peer %d through the flat VA: %d", p, pp[0]);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_window_deregister(c->comm, w));
  CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
  CHECK(memcmp(&s0, &s1, sizeof s0) == 0,
        "registering foreign memory left something behind (handles %llu -> "
        "%llu, kept mappings %llu)",
        (unsigned long long)s0.descriptors_held,
        (unsigned long long)s1.descriptors_held,
        (unsigned long long)s1.mappings_cached);
  CHECK(f.unmap(va, size) == CU_OK && f.addr_free(va, size) == CU_OK &&
            f.release(h) == CU_OK,
        "tearing the memory down: the adaptor kept a mapping or handle");
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    fake_cuda_live_t now;
    live(&now);
    /* Only the two comms' pads remain (one allocation each, mapped twice
     * each: its own mapping and the two-rank flat range). */
    CHECK(now.handles == 2 && now.reservations == 4 && now.mappings == 6,
          "driver objects left: handles %d reservations %d mappings %d",
          now.handles, now.reservations, now.mappings);
  }
  th_end();
}

/* --- legacy IPC fallback -------------------------------------------------- */
static void asym_body(th_ctx_t *c, const char *tag) {
  th_begin("cuda", tag, c->rank);
  cu_deviceptr_t d = 0;
  CHECK(mem_alloc(&d, 1 << 16) == CU_OK, "cuMemAlloc");
  int *mine = (int *)(uintptr_t)d;
  for (int i = 0; i < 1024; i++)
    mine[i] = c->rank * 100000 + i;
  symheap_window_t w;
  /* An interior pointer: the offset travels with the handle. */
  CHECK_OK(symheap_window_register(c->comm, mine + 16, 4096, 0, &w));
  void *base;
  size_t stride;
  CHECK_ERR(symheap_window_flat_base(w, &base, &stride),
            SYMHEAP_ERR_UNSUPPORTED);
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(!(v.flags & SYMHEAP_VIEW_FLAT), "view claims a flat VA");
  for (int p = 0; p < c->n; p++) {
    int *pp = NULL;
    CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&pp));
    CHECK(pp && pp == symheap_device_peer_ptr(&v, p, 0), "peer %d pointer", p);
    CHECK(pp && pp[0] == p * 100000 + 16 && pp[100] == p * 100000 + 116,
          "peer %d data: %d", p, pp ? pp[0] : -1);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_window_deregister(c->comm, w));
  CHECK(mem_free(d) == CU_OK, "cuMemFree");
  fake_cuda_live_t now;
  live(&now);
  CHECK(now.ipc_opened == 0, "%d IPC mappings left open", now.ipc_opened);
  th_end();
}

static void asym_threads(th_ctx_t *c, void *arg) {
  (void)arg;
  asym_body(c, "ipc_fallback_threads");
}

static void asym_processes(void) {
  int failures_before = th_total_failures();
  symheap_unique_id_t id;
  symheap_get_unique_id(&id);
  fflush(stdout);
  pid_t pids[2];
  for (int r = 0; r < 2; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      th_ctx_t c = {NULL, r, 2};
      if (symheap_comm_init(&c.comm, 2, &id, r) != SYMHEAP_SUCCESS) {
        printf("FAIL cuda/ipc_fallback_processes [rank %d] init: %s\n", r,
               symheap_last_error());
        fflush(stdout);
        _exit(1);
      }
      asym_body(&c, "ipc_fallback_processes");
      symheap_comm_destroy(c.comm);
      fflush(stdout);
      _exit(th_total_failures() > failures_before ? 1 : 0);
    }
  }
  th_begin("cuda", "ipc_fallback_processes_exit", 0);
  for (int r = 0; r < 2; r++) {
    int st;
    waitpid(pids[r], &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d status 0x%x", r, st);
  }
  th_end();
}

/* --- graph capture ------------------------------------------------------ */
/* While one rank's device is capturing (a blocking stream, then the
 * per-thread stream), every call that maps or unmaps is refused on every
 * rank, saying why, and nothing changes; afterwards all of it works. */
static void capture_refused(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("cuda", "graph_capture_refused", c->rank);
  symheap_window_t w, x;
  CHECK_OK(symheap_malloc(c->comm, 1 << 20, 0, &w));
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  fake_cuda_live_t l0, l1;
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    live(&l0);
  for (int mode = 1; mode <= 2; mode++) {
    int dev = mode == 1 ? 0 : 1; /* rank r runs on device r */
    if (c->rank == 0)
      set_capturing(dev, mode);
    CHECK_OK(symheap_comm_barrier(c->comm));
    symheap_result_t r = symheap_malloc(c->comm, 1 << 20, 0, &x);
    CHECK(r == SYMHEAP_ERR_UNSUPPORTED &&
              strstr(symheap_last_error(), "capturing a CUDA graph"),
          "malloc while device %d captures (mode %d): %s (%s)", dev, mode,
          symheap_strerror(r), symheap_last_error());
    void *p = NULL;
    CHECK_ERR(symheap_window_deregister(c->comm, w), SYMHEAP_ERR_UNSUPPORTED);
    if (c->rank == dev)
      CHECK_ERR(symheap_mem_alloc(c->comm, 4096, &p), SYMHEAP_ERR_UNSUPPORTED);
    CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
    CHECK(memcmp(&s0, &s1, sizeof s0) == 0,
          "a refused call changed the accounting");
    CHECK_OK(symheap_comm_barrier(c->comm));
    if (c->rank == 0) {
      live(&l1);
      CHECK(memcmp(&l0, &l1, sizeof l0) == 0, "a refused call left objects");
      set_capturing(dev, 0);
    }
    CHECK_OK(symheap_comm_barrier(c->comm));
  }
  size_t sz = 0;
  CHECK_OK(symheap_window_size(w, &sz));
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* The heap under graph capture: an allocation that fits succeeds (no driver
 * call at all), one that would grow is refused on every rank with a message
 * naming symheap_heap_reserve and changes nothing; reserved ahead, it fits. */
static void capture_heap(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("cuda", "graph_capture_heap", c->rank);
  symheap_window_t w, x = NULL, big = NULL;
  CHECK_OK(symheap_malloc(c->comm, 1 << 20, 0, &w));
  symheap_heap_info_t h0 = SYMHEAP_HEAP_INFO_INIT, h1 = h0;
  CHECK_OK(symheap_heap_get_info(c->comm, &h0));
  CHECK(h0.enabled && h0.chunks >= 1, "heap: enabled %d chunks %llu",
        h0.enabled, (unsigned long long)h0.chunks);
  const size_t beyond = (size_t)h0.committed + (1u << 20); /* must grow */
  for (int mode = 1; mode <= 2; mode++) {
    int dev = mode == 1 ? 0 : 1; /* only that rank captures */
    CHECK_OK(symheap_comm_barrier(c->comm));
    if (c->rank == 0) {
      log_reset();
      set_capturing(dev, mode);
    }
    CHECK_OK(symheap_comm_barrier(c->comm));
    CHECK_OK(symheap_malloc(c->comm, 1 << 20, 0, &x));
    unsigned char *p = NULL;
    CHECK_OK(symheap_window_peer_ptr(x, 1 - c->rank, (void **)&p));
    CHECK_OK(symheap_free(c->comm, x));
    symheap_result_t r = symheap_malloc(c->comm, beyond, 0, &big);
    CHECK(r == SYMHEAP_ERR_UNSUPPORTED &&
              strstr(symheap_last_error(), "symheap_heap_reserve"),
          "growth while device %d captures: %s (%s)", dev,
          symheap_strerror(r), symheap_last_error());
    CHECK_ERR(symheap_heap_reserve(c->comm, beyond), SYMHEAP_ERR_UNSUPPORTED);
    CHECK_OK(symheap_heap_get_info(c->comm, &h1));
    CHECK(memcmp(&h0, &h1, sizeof h0) == 0, "a refused growth moved the heap");
    CHECK_OK(symheap_comm_barrier(c->comm));
    if (c->rank == 0) {
      CHECK(count_calls(call_log(), "cuMemCreate", dev) == 0 &&
                count_calls(call_log(), "cuMemMap", dev) == 0 &&
                count_calls(call_log(), "cuMemSetAccess", dev) == 0,
            "driver calls during capture: %s", call_log());
      set_capturing(dev, 0);
    }
    CHECK_OK(symheap_comm_barrier(c->comm));
  }
  /* Reserved before capture, the same allocation fits during it. */
  CHECK_OK(symheap_heap_reserve(c->comm, beyond));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    set_capturing(0, 1);
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_malloc(c->comm, beyond, 0, &big));
  CHECK_OK(symheap_free(c->comm, big));
  CHECK_ERR(symheap_heap_trim(c->comm), SYMHEAP_ERR_UNSUPPORTED);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    set_capturing(0, 0);
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_free(c->comm, w));
  CHECK_OK(symheap_heap_trim(c->comm));
  CHECK_OK(symheap_heap_get_info(c->comm, &h1));
  CHECK(h1.chunks == 0 && h1.allocations == 0 && h1.used == 0,
        "after trim: chunks %llu allocations %llu",
        (unsigned long long)h1.chunks, (unsigned long long)h1.allocations);
  th_end();
}

/* SYMHEAP_WINDOW_PATH=nccl refuses, saying why, where it cannot work: no
 * NCCL library, a device adaptor other than cuda.  (The path itself runs on
 * GPUs: test/gpu/test_gpu.cu under bench/gpu_run.sh.) */
static void init_one(symheap_result_t want, const char *text) {
  symheap_unique_id_t id;
  symheap_comm_t comm = NULL;
  CHECK_OK(symheap_get_unique_id(&id));
  symheap_result_t r = symheap_comm_init(&comm, 1, &id, 0);
  CHECK(r == want && strstr(symheap_last_error(), text) != NULL,
        "comm init -> %s: %s (expected %s, '%s')", symheap_strerror(r),
        symheap_last_error(), symheap_strerror(want), text);
  if (comm) {
    symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
    CHECK_OK(symheap_comm_get_info(comm, &info));
    CHECK(strcmp(info.window_path, "symheap") == 0, "window path '%s'",
          info.window_path);
    CHECK_OK(symheap_comm_destroy(comm));
  }
}

static void nccl_path_refusals(void) {
  th_begin("cuda", "nccl_window_path_refusals", 0);
  init_one(SYMHEAP_SUCCESS, "");
  setenv("SYMHEAP_WINDOW_PATH", "nccl", 1);
  setenv("SYMHEAP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  init_one(SYMHEAP_ERR_UNSUPPORTED, "cannot load /nonexistent/libnccl.so.2");
  setenv("SYMHEAP_DEVICE", "host", 1);
  init_one(SYMHEAP_ERR_UNSUPPORTED, "needs the cuda device adaptor");
  static int not_a_nccl_comm;
  CHECK_ERR(symheap_comm_init_nccl(NULL, &not_a_nccl_comm),
            SYMHEAP_ERR_INVALID_ARG);
  symheap_comm_t nc = NULL;
  CHECK_ERR(symheap_comm_init_nccl(&nc, NULL), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_comm_init_nccl(&nc, &not_a_nccl_comm),
            SYMHEAP_ERR_UNSUPPORTED); /* no NCCL library here */
  CHECK(strstr(symheap_last_error(), "cannot load") != NULL, "message: %s",
        symheap_last_error());
  setenv("SYMHEAP_DEVICE", "cuda", 1);
  setenv("SYMHEAP_WINDOW_PATH", "vendor", 1);
  init_one(SYMHEAP_ERR_INVALID_ARG, "symheap|nccl");
  unsetenv("SYMHEAP_WINDOW_PATH");
  unsetenv("SYMHEAP_NCCL_LIBRARY");
  fake_cuda_live_t l;
  live(&l);
  CHECK(l.handles == 0 && l.mappings == 0 && l.reservations == 0 &&
            l.streams == 0,
        "left: %d handles, %d mappings, %d reservations, %d streams", l.handles,
        l.mappings, l.reservations, l.streams);
  th_end();
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_cuda_fake PATH/libcuda.so.1\n");
    return 2;
  }
  fake_path = argv[1];
  test_loading();
  void *h = dlopen(fake_path, RTLD_NOW);
  if (!h) {
    printf("FAIL cuda/load_fake: %s\n", dlerror());
    return 1;
  }
  set_fault = (fake_cuda_set_fault_t)dlsym(h, "fake_cuda_set_fault");
  live = (fake_cuda_live_fn_t)dlsym(h, "fake_cuda_live");
  call_log = (fake_cuda_log_t)dlsym(h, "fake_cuda_log");
  log_reset = (fake_cuda_log_reset_t)dlsym(h, "fake_cuda_log_reset");
  gpa = (cu_get_proc_address_t)dlsym(h, "cuGetProcAddress_v2");
  set_capturing =
      (fake_cuda_set_capturing_t)dlsym(h, "fake_cuda_set_capturing");
  mem_alloc = dlsym(h, "cuMemAlloc_v2");
  mem_free = dlsym(h, "cuMemFree_v2");
  setenv("SYMHEAP_CUDA_LIBRARY", fake_path, 1);
  setenv("SYMHEAP_DEVICE", "cuda", 1);

  /* Processes first, before this process has threads. */
  asym_processes();
  test_device_choice();
  sweep_t plain = {0, 0, 0}, mc = {SYMHEAP_WINDOW_MULTICAST, 0, 0},
          heap = {0, 0, 1};
  th_run_threads(2, sweep, &heap);
  setenv("SYMHEAP_HEAP", "0", 1); /* the registration path */
  th_run_threads(2, sweep, &plain);
  th_run_threads(2, sweep, &mc);
  unsetenv("SYMHEAP_HEAP");
  printf("# injected %d, %d and %d (heap growth) driver faults\n",
         plain.injected, mc.injected, heap.injected);
  th_run_threads(2, mc_sequence, NULL);
  setenv("SYMHEAP_DISABLE_MULTICAST", "1", 1);
  th_run_threads(2, mc_refused, NULL);
  unsetenv("SYMHEAP_DISABLE_MULTICAST");
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  th_run_threads(2, mc_refused, NULL);
  unsetenv("NCCL_NVLS_ENABLE");
  th_run_threads(2, asym_threads, NULL);
  th_run_threads(2, foreign_vmm, NULL);
  setenv("SYMHEAP_HEAP", "0", 1); /* registrations are refused */
  th_run_threads(2, capture_refused, NULL);
  unsetenv("SYMHEAP_HEAP");
  th_run_threads(2, capture_heap, NULL);
  nccl_path_refusals();
  return th_total_failures() ? 1 : 0;
}

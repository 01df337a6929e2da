/* test_cuda_fake: memory the adaptor did not make: VMM memory of the
 * caller's own, and non-VMM memory through the legacy-IPC fallback, in
 * threads and in processes. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_fake_test.h"

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

void foreign_vmm(th_ctx_t *c, void *arg) {
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

void asym_threads(th_ctx_t *c, void *arg) {
  (void)arg;
  asym_body(c, "ipc_fallback_threads");
}

void asym_processes(void) {
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

/* The hip adaptor over the fake HIP runtime: a clear refusal without the
 * runtime, a failure injected at every runtime call of a registration on
 * each rank (every rank fails, nothing leaks, the comm goes on), and the
 * legacy-IPC fallback with hipMalloc memory, as threads and as processes.
 * (The multi-rank suite runs over it too: test/run.sh.)
 *   test_hip_fake PATH/libamdhip64.so */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "fake_hip.h"

static fake_hip_set_fault_t set_fault;
static fake_hip_live_fn_t live;
static int (*hip_malloc)(void **, size_t);
static int (*hip_free)(void *);
static int (*hip_set_device)(int);

static void refused_without_runtime(void) {
  th_begin("hip", "no_runtime_is_a_clear_unsupported", 0);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("SYMHEAP_HIP_LIBRARY", "/nonexistent/libamdhip64.so", 1);
    symheap_unique_id_t id;
    symheap_comm_t c;
    symheap_get_unique_id(&id);
    symheap_result_t r = symheap_comm_init(&c, 1, &id, 0);
    _exit(r == SYMHEAP_ERR_UNSUPPORTED &&
                  strstr(symheap_last_error(), "cannot load the HIP runtime")
              ? 0
              : 1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "SYMHEAP_DEVICE=hip without the runtime is not a clear UNSUPPORTED");
  th_end();
}

static const char *calls[] = {"hipMemCreate", "hipMemExportToShareableHandle",
                              "hipMemImportFromShareableHandle",
                              "hipMemAddressReserve", "hipMemMap",
                              "hipMemSetAccess"};

static void sweep(th_ctx_t *c, void *arg) {
  int *injected = arg;
  th_begin("hip", "fault_at_every_runtime_call", c->rank);
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 1 << 20, 0, &w)); /* warm */
  CHECK_OK(symheap_free(c->comm, w));
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  fake_hip_live_t l0, l1;
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    live(&l0);
  for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++)
    for (int dev = 0; dev < c->n; dev++)
      for (int nth = 1; nth <= 3; nth++) {
        CHECK_OK(symheap_comm_barrier(c->comm));
        if (c->rank == 0)
          set_fault(calls[k], dev, nth);
        CHECK_OK(symheap_comm_barrier(c->comm));
        symheap_result_t r = symheap_malloc(c->comm, 1 << 20, 0, &w);
        CHECK_OK(symheap_comm_barrier(c->comm));
        if (c->rank == 0)
          set_fault(NULL, 0, 0);
        int ok = r == SYMHEAP_SUCCESS, all[8] = {0};
        CHECK_OK(symheap_comm_allgather(c->comm, &ok, all, sizeof ok));
        for (int p = 0; p < c->n; p++)
          CHECK(all[p] == ok, "%s#%d on device %d: ranks disagree", calls[k],
                nth, dev);
        if (ok) {
          CHECK_OK(symheap_free(c->comm, w));
        } else if (c->rank == 0) {
          ++*injected;
        }
        CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
        CHECK(memcmp(&s0, &s1, sizeof s0) == 0, "%s#%d: accounting moved",
              calls[k], nth);
        CHECK_OK(symheap_comm_barrier(c->comm));
        if (c->rank == 0) {
          live(&l1);
          CHECK(memcmp(&l0, &l1, sizeof l0) == 0,
                "%s#%d on device %d: runtime objects left", calls[k], nth,
                dev);
        }
      }
  th_end();
}

/* hipMalloc memory: per-peer pointers; data through them. */
static void ipc_body(th_ctx_t *c, const char *name) {
  th_begin("hip", name, c->rank);
  hip_set_device(c->rank);
  int *buf = NULL;
  CHECK(hip_malloc((void **)&buf, 1 << 16) == 0, "hipMalloc");
  if (!buf)
    return;
  buf[3] = 500 + c->rank;
  symheap_window_t w;
  CHECK_OK(symheap_window_register(c->comm, buf, 1 << 16, 0, &w));
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(!(v.flags & SYMHEAP_VIEW_FLAT), "hipMalloc memory is not VMM");
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int p = 0; p < c->n; p++) {
    int *pp = symheap_device_peer_ptr(&v, p, 0);
    CHECK(pp && pp[3] == 500 + p, "peer %d holds %d", p, pp ? pp[3] : -1);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_window_deregister(c->comm, w));
  hip_free(buf);
  fake_hip_live_t l;
  live(&l);
  CHECK(l.ipc_opened == 0, "%d IPC mappings left open", l.ipc_opened);
  th_end();
}
static void ipc_threads(th_ctx_t *c, void *arg) {
  (void)arg;
  ipc_body(c, "ipc_fallback_threads");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_hip_fake PATH/libamdhip64.so\n");
    return 2;
  }
  setenv("SYMHEAP_DEVICE", "hip", 1);
  refused_without_runtime();
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    printf("FAIL hip/load_fake: %s\n", dlerror());
    return 1;
  }
  set_fault = (fake_hip_set_fault_t)dlsym(h, "fake_hip_set_fault");
  live = (fake_hip_live_fn_t)dlsym(h, "fake_hip_live");
  *(void **)&hip_malloc = dlsym(h, "hipMalloc");
  *(void **)&hip_free = dlsym(h, "hipFree");
  *(void **)&hip_set_device = dlsym(h, "hipSetDevice");
  setenv("SYMHEAP_HIP_LIBRARY", argv[1], 1);
  /* Processes first, before this process has threads. */
  fflush(stdout);
  symheap_unique_id_t id;
  symheap_get_unique_id(&id);
  pid_t pids[2];
  for (int r = 0; r < 2; r++)
    if ((pids[r] = fork()) == 0) {
      th_ctx_t c = {NULL, r, 2};
      if (symheap_comm_init(&c.comm, 2, &id, r) != SYMHEAP_SUCCESS) {
        printf("FAIL hip/ipc_fallback_processes [rank %d] init: %s\n", r,
               symheap_last_error());
        _exit(1);
      }
      ipc_body(&c, "ipc_fallback_processes");
      symheap_comm_destroy(c.comm);
      fflush(stdout);
      _exit(th_total_failures() ? 1 : 0);
    }
  int rc = 0;
  for (int r = 0; r < 2; r++) {
    int st;
    waitpid(pids[r], &st, 0);
    rc |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  int injected = 0;
  rc |= th_run_threads(2, sweep, &injected);
  printf("# %d runtime faults injected into registrations\n", injected);
  rc |= th_run_threads(2, ipc_threads, NULL);
  return rc || th_total_failures() ? 1 : 0;
}

/* The cuda adaptor against the fake CUDA driver (build/fake_cuda): loading
 * and refusing drivers, device choice, a failure injected at every driver
 * call of a registration on every rank (undone everywhere), the multicast
 * call sequence, and the legacy-IPC fallback for non-VMM memory in threads
 * and in processes.  Usage: test_cuda_fake PATH/TO/fake/libcuda.so.1
 * This file: loading, device choice and the order of the cases; the others
 * are cuda_fake_sweep.c (faults at every call, multicast order),
 * cuda_fake_foreign.c (memory the adaptor did not make) and
 * cuda_fake_refusals.c (graph capture, the nccl path). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_fake_test.h"

static const char *fake_path;
fake_cuda_set_fault_t set_fault;
fake_cuda_live_fn_t live;
fake_cuda_log_t call_log;
fake_cuda_log_reset_t log_reset;
fake_cuda_set_capturing_t set_capturing;
cu_get_proc_address_t gpa;
cu_result_t (*mem_alloc)(cu_deviceptr_t *, size_t);
cu_result_t (*mem_free)(cu_deviceptr_t);

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

/* A heap chunk is device memory here, and a GPU's memory may be more than
 * this host's: SYMHEAP_HEAP_CHUNK above the host's physical memory is
 * taken (the cap is the host adaptor's, whose chunks are host memory).
 * Before, every comm init refused it, whatever the device. */
static void test_chunk_above_host_memory(void) {
  th_begin("cuda", "heap_chunk_above_host_memory_taken", 0);
  unsigned long long phys = (unsigned long long)sysconf(_SC_PHYS_PAGES) *
                            (unsigned long long)sysconf(_SC_PAGESIZE);
  unsigned long long gib = (phys >> 30) + 2; /* whole GiB: whole granules */
  char keep[64] = "", chunk[32], reserve[32];
  if (getenv("SYMHEAP_HEAP_RESERVE"))
    snprintf(keep, sizeof keep, "%s", getenv("SYMHEAP_HEAP_RESERVE"));
  snprintf(chunk, sizeof chunk, "%lluG", gib);
  snprintf(reserve, sizeof reserve, "%lluG", 2 * gib);
  setenv("SYMHEAP_HEAP_CHUNK", chunk, 1);
  setenv("SYMHEAP_HEAP_RESERVE", reserve, 1);
  symheap_unique_id_t id;
  symheap_comm_t c = NULL;
  CHECK_OK(symheap_get_unique_id(&id));
  symheap_result_t r = symheap_comm_init(&c, 1, &id, 0);
  CHECK(r == SYMHEAP_SUCCESS,
        "SYMHEAP_HEAP_CHUNK=%s (host memory: %llu bytes) on cuda: %s: %s",
        chunk, phys, symheap_strerror(r), symheap_last_error());
  symheap_heap_info_t h = SYMHEAP_HEAP_INFO_INIT;
  if (c)
    CHECK_OK(symheap_heap_get_info(c, &h));
  CHECK(!c || h.chunk_size == gib << 30, "chunk size %llu, not %s",
        (unsigned long long)h.chunk_size, chunk);
  if (c)
    CHECK_OK(symheap_comm_destroy(c));
  unsetenv("SYMHEAP_HEAP_CHUNK");
  if (keep[0])
    setenv("SYMHEAP_HEAP_RESERVE", keep, 1);
  else
    unsetenv("SYMHEAP_HEAP_RESERVE");
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
  test_chunk_above_host_memory();
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

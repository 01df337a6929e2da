/* The cuda adaptor's part of the device host proxy against the fake driver:
 * host_alloc (cuMemHostAlloc mapped into the device, zeroed), copy_to_host
 * (cuMemcpyDtoHAsync on a non-blocking stream of its own: a copy on the
 * legacy stream would wait for the kernel waiting for it), host_free, and a
 * driver failure half way that leaves nothing behind.
 *   test_cuda_proxy PATH/libcuda.so.1 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "../../adaptors/common/cuda_api.h"
#include "../harness.h"
#include "base/plugin.h"
#include "base/registry.h"
#include "fake_cuda.h"

static fake_cuda_set_fault_t set_fault;
static fake_cuda_live_fn_t live;
static fake_cuda_log_t call_log;
static fake_cuda_log_reset_t log_reset;
static cu_result_t (*mem_alloc)(cu_deviceptr_t *, size_t);
static cu_result_t (*mem_free)(cu_deviceptr_t);

static void run(const symheap_device_ops *o, void *ctx) {
  fake_cuda_live_t before, after;
  live(&before);
  th_begin("cuda_proxy", "host_alloc_copy_free", 0);
  void *host = NULL, *dev = NULL;
  CHECK_OK(o->host_alloc(ctx, 1 << 16, &host, &dev));
  CHECK(host && dev, "host %p dev %p", host, dev);
  live(&after);
  CHECK(after.host_allocs == before.host_allocs + 1, "host allocations %d",
        after.host_allocs);
  int zero = 1;
  for (size_t i = 0; host && i < (1u << 16); i++)
    zero &= ((unsigned char *)host)[i] == 0;
  CHECK(zero, "host_alloc's memory is not zeroed");
  cu_deviceptr_t d = 0;
  CHECK(mem_alloc(&d, 4096) == CU_OK, "cuMemAlloc");
  memset((void *)(uintptr_t)d, 0x5a, 4096);
  log_reset();
  CHECK_OK(o->copy_to_host(ctx, host, (void *)(uintptr_t)d, 4096));
  CHECK_OK(
      o->copy_to_host(ctx, (char *)host + 4096, (void *)(uintptr_t)d, 100));
  CHECK(((unsigned char *)host)[4095] == 0x5a &&
            ((unsigned char *)host)[4096 + 99] == 0x5a &&
            ((unsigned char *)host)[4096 + 100] == 0,
        "copy_to_host copied the wrong bytes");
  const char *log = call_log();
  CHECK(strstr(log, "cuMemcpyDtoHAsync") && !strstr(log, "cuMemcpyDtoH@") &&
            strstr(log, "cuStreamSynchronize"),
        "copies not on a stream of their own: %s", log);
  /* copy_from_host (staging's landing): on the same stream of its own. */
  CHECK(o->copy_from_host != NULL, "the cuda adaptor has no copy_from_host");
  memset(host, 0x3c, 256);
  log_reset();
  if (o->copy_from_host)
    CHECK_OK(o->copy_from_host(ctx, (char *)(uintptr_t)d + 8, host, 256));
  CHECK(((unsigned char *)(uintptr_t)d)[7] == 0x5a &&
            ((unsigned char *)(uintptr_t)d)[8] == 0x3c &&
            ((unsigned char *)(uintptr_t)d)[263] == 0x3c &&
            ((unsigned char *)(uintptr_t)d)[264] == 0x5a,
        "copy_from_host copied the wrong bytes");
  log = call_log();
  CHECK(strstr(log, "cuMemcpyHtoDAsync") && !strstr(log, "cuMemcpyHtoD@") &&
            strstr(log, "cuStreamSynchronize"),
        "copy_from_host not on a stream of its own: %s", log);
  set_fault("cuMemcpyHtoDAsync", 0, 1, CU_ERR_INVALID_VALUE);
  if (o->copy_from_host)
    CHECK_ERR(o->copy_from_host(ctx, (void *)(uintptr_t)d, host, 8),
              SYMHEAP_ERR_DEVICE);
  set_fault(NULL, 0, 0, 0);
  CHECK(mem_free(d) == CU_OK, "cuMemFree");
  CHECK_OK(o->host_free(ctx, host));
  live(&after);
  CHECK(after.host_allocs == before.host_allocs, "host allocations %d",
        after.host_allocs);
  th_end();

  th_begin("cuda_proxy", "device_pointer_failure_undone", 0);
  live(&before);
  set_fault("cuMemHostGetDevicePointer", 0, 1, CU_ERR_INVALID_VALUE);
  host = dev = NULL;
  CHECK_ERR(o->host_alloc(ctx, 4096, &host, &dev), SYMHEAP_ERR_DEVICE);
  CHECK(strstr(symheap_last_error(), "cuMemHostGetDevicePointer") != NULL,
        "message: %s", symheap_last_error());
  set_fault(NULL, 0, 0, 0);
  live(&after);
  CHECK(after.host_allocs == before.host_allocs,
        "a failed host_alloc left %d host allocations", after.host_allocs);
  th_end();

  th_begin("cuda_proxy", "copy_failure_reported", 0);
  set_fault("cuMemcpyDtoHAsync", 0, 1, CU_ERR_INVALID_VALUE);
  char buf[8];
  CHECK_OK(o->host_alloc(ctx, 4096, &host, &dev));
  CHECK_ERR(o->copy_to_host(ctx, buf, host, sizeof buf), SYMHEAP_ERR_DEVICE);
  set_fault(NULL, 0, 0, 0);
  CHECK_OK(o->copy_to_host(ctx, buf, host, sizeof buf));
  CHECK_OK(o->host_free(ctx, host));
  th_end();
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_cuda_proxy PATH/libcuda.so.1\n");
    return 2;
  }
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    printf("FAIL cuda_proxy/load_fake: %s\n", dlerror());
    return 1;
  }
  set_fault = (fake_cuda_set_fault_t)dlsym(h, "fake_cuda_set_fault");
  live = (fake_cuda_live_fn_t)dlsym(h, "fake_cuda_live");
  call_log = (fake_cuda_log_t)dlsym(h, "fake_cuda_log");
  log_reset = (fake_cuda_log_reset_t)dlsym(h, "fake_cuda_log_reset");
  mem_alloc = dlsym(h, "cuMemAlloc_v2");
  mem_free = dlsym(h, "cuMemFree_v2");
  setenv("SYMHEAP_CUDA_LIBRARY", argv[1], 1);
  symheap__builtins_load();
  symheap__device_table_t t;
  char why[256];
  th_begin("cuda_proxy", "adaptor", 0);
  symheap_result_t r = symheap__device_select("cuda", &t, why, sizeof why);
  CHECK_OK(r);
  CHECK(r != SYMHEAP_SUCCESS || t.ops.host_alloc,
        "the cuda adaptor has no host_alloc/host_free/copy_to_host");
  symheap_device_init_t args = {sizeof args, 0, 1, 0, 1};
  void *ctx = NULL;
  if (r == SYMHEAP_SUCCESS)
    CHECK_OK(t.ops.init(&symheap__host_services, &args, &ctx));
  th_end();
  if (ctx && t.ops.host_alloc)
    run(&t.ops, ctx);
  if (ctx) {
    fake_cuda_live_t l;
    t.ops.fini(ctx);
    live(&l);
    th_begin("cuda_proxy", "fini_releases_stream", 0);
    CHECK(l.streams == 0 && l.host_allocs == 0,
          "%d streams, %d host "
          "allocations live after fini",
          l.streams, l.host_allocs);
    th_end();
  }
  return th_total_failures() ? 1 : 0;
}

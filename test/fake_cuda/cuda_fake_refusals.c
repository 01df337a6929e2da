/* test_cuda_fake: what is refused, saying why: registration and allocation
 * during graph capture (the heap's fast path allowed), and the nccl window
 * path without NCCL. */
#include <stdlib.h>
#include <string.h>

#include "cuda_fake_test.h"

/* --- graph capture ------------------------------------------------------ */
/* While one rank's device is capturing (a blocking stream, then the
 * per-thread stream), every call that maps or unmaps is refused on every
 * rank, saying why, and nothing changes; afterwards all of it works. */
void capture_refused(th_ctx_t *c, void *arg) {
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
void capture_heap(th_ctx_t *c, void *arg) {
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

void nccl_path_refusals(void) {
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

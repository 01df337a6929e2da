/* A vendor window path (SYMHEAP_WINDOW_PATH=ccl): a comm made with
 * symheap_comm_init_ccl whose ccl adaptor registers windows itself.  The
 * "vendor" here is another symheap comm (A): its window_register registers
 * the memory on A and hands back A's flat range, so the test can check that
 * comm B's handles, peer pointers and views are exactly the vendor's, that a
 * vendor failure on one rank fails the registration on all and is undone,
 * and that deregistration reaches the vendor.  Run under symheap-run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

typedef struct {
  symheap_comm_t a;
  int rank, n;
  int regs, deregs, live;
  int fail_at; /* this rank's nth registration fails (before A's) */
  int skew_at; /* this rank's nth registration reports a wrong stride */
} vendor_t;

static int v_rank(void *ctx) { return ((vendor_t *)ctx)->rank; }
static int v_size(void *ctx) { return ((vendor_t *)ctx)->n; }
static symheap_result_t v_allgather(void *ctx, const void *in, void *out,
                                    size_t bytes, int timeout_ms) {
  (void)timeout_ms;
  return symheap_comm_allgather(((vendor_t *)ctx)->a, in, out, bytes);
}

static symheap_result_t v_register(void *ctx, void *ptr, size_t size,
                                   symheap_vendor_window_t *out) {
  vendor_t *v = ctx;
  /* A's calls are collective over the same ranks: a failure injected here
   * must happen on every rank alike, before A is touched. */
  if (++v->regs == v->fail_at)
    return symheap_host_services()->error(SYMHEAP_ERR_DEVICE,
                                          "vendor: injected failure");
  symheap_window_t w;
  symheap_result_t r = symheap_window_register(v->a, ptr, size, 0, &w);
  if (r != SYMHEAP_SUCCESS)
    return r;
  void *base;
  size_t stride;
  r = symheap_window_flat_base(w, &base, &stride);
  if (r != SYMHEAP_SUCCESS)
    return r;
  out->handle = w;
  out->flat_base = base;
  out->stride = stride + (v->regs == v->skew_at ? 4096 : 0);
  v->live++;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t v_deregister(void *ctx, void *handle) {
  vendor_t *v = ctx;
  v->deregs++;
  v->live--;
  return symheap_window_deregister(v->a, handle);
}

static const symheap_ccl_ops vendor_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_ccl_ops),
    .name = "vendor",
    .rank = v_rank,
    .size = v_size,
    .allgather = v_allgather,
    .window_register = v_register,
    .window_deregister = v_deregister,
};

int main(void) {
  th_ctx_t c = {NULL, 0, 0};
  if (symheap_comm_init_env(&c.comm) != SYMHEAP_SUCCESS) {
    printf("FAIL window_path/comm_init: %s\n", symheap_last_error());
    return 1;
  }
  symheap_comm_rank(c.comm, &c.rank);
  symheap_comm_size(c.comm, &c.n);
  setenv("SYMHEAP_WINDOW_PATH", "ccl", 1);

  th_begin("window_path", "ccl_vendor_path", c.rank);
  vendor_t v = {c.comm, c.rank, c.n, 0, 0, 0, 0, 0};
  symheap_comm_t b = NULL;
  CHECK_OK(symheap_comm_init_ccl(&b, &vendor_ops, &v));
  if (!b)
    return 1;
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(b, &info));
  CHECK(strcmp(info.window_path, "vendor") == 0, "window path '%s'",
        info.window_path);
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  CHECK_OK(symheap_comm_get_stats(b, &s0));
  /* The vendor's memory (A's), registered on B. */
  const size_t size = 3 * 4096 + 8;
  char *mem = NULL;
  CHECK_OK(symheap_mem_alloc(c.comm, 4 * 4096, (void **)&mem));
  symheap_window_t w = NULL;
  CHECK_OK(symheap_window_register(b, mem, size, 0, &w));
  CHECK(v.regs == 1 && v.live == 1, "vendor saw %d registrations", v.regs);
  if (w) {
    void *base = NULL;
    size_t stride = 0;
    CHECK_OK(symheap_window_flat_base(w, &base, &stride));
    memset(mem, 'a' + c.rank, size);
    CHECK_OK(symheap_comm_barrier(b));
    for (int p = 0; p < c.n; p++) {
      char *pp = NULL;
      CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&pp));
      CHECK(pp == (char *)base + (size_t)p * stride, "peer %d at %p", p,
            (void *)pp);
      CHECK(pp && pp[0] == 'a' + p && pp[size - 1] == 'a' + p,
            "peer %d's copy reads '%c'", p, pp ? pp[0] : '?');
    }
    symheap_device_window_t view;
    CHECK_OK(symheap_window_device_view(w, &view));
    CHECK((view.flags & SYMHEAP_VIEW_FLAT) && view.flat_base == base &&
              view.stride == stride && view.size == size,
          "view: flat base %p stride %llu", view.flat_base,
          (unsigned long long)view.stride);
  }
  /* Multicast is not offered on a vendor path. */
  symheap_window_t mw = NULL;
  CHECK_ERR(
      symheap_window_register(b, mem, 4096, SYMHEAP_WINDOW_MULTICAST, &mw),
      SYMHEAP_ERR_UNSUPPORTED);
  /* The vendor fails: every rank fails, saying so; nothing stays. */
  v.fail_at = v.regs + 1;
  symheap_window_t f = NULL;
  CHECK_ERR(symheap_window_register(b, mem + 4096, 4096, 0, &f),
            SYMHEAP_ERR_DEVICE);
  CHECK(strstr(symheap_last_error(), "injected failure") != NULL, "message: %s",
        symheap_last_error());
  CHECK(v.live == 1, "vendor windows live after the failure: %d", v.live);
  /* The vendor succeeds everywhere but the last rank's range disagrees:
   * the core refuses on every rank and hands every window back. */
  int deregs = v.deregs;
  if (c.rank == c.n - 1)
    v.skew_at = v.regs + 1;
  if (c.n > 1) {
    CHECK_ERR(symheap_window_register(b, mem + 4096, 4096, 0, &f),
              SYMHEAP_ERR_MISMATCH);
    CHECK(strstr(symheap_last_error(), "different strides"), "message: %s",
          symheap_last_error());
    CHECK(v.live == 1 && v.deregs == deregs + 1,
          "after the refusal: %d vendor windows live, %d handed back", v.live,
          v.deregs - deregs);
  }
  if (w)
    CHECK_OK(symheap_window_deregister(b, w));
  CHECK(v.live == 0 && v.deregs >= 1, "vendor windows live: %d", v.live);
  CHECK_OK(symheap_comm_get_stats(b, &s1));
  CHECK(memcmp(&s0, &s1, sizeof s0) == 0, "comm B's counts changed");
  CHECK_OK(symheap_comm_destroy(b));
  CHECK_OK(symheap_mem_free(c.comm, mem));
  th_end();

  th_begin("window_path", "ccl_path_needs_window_register", c.rank);
  symheap_unique_id_t id;
  symheap_comm_t one = NULL;
  CHECK_OK(symheap_get_unique_id(&id));
  CHECK_ERR(symheap_comm_init(&one, 1, &id, 0), SYMHEAP_ERR_UNSUPPORTED);
  CHECK(strstr(symheap_last_error(), "has no window path") != NULL,
        "message: %s", symheap_last_error());
  th_end();

  unsetenv("SYMHEAP_WINDOW_PATH");
  CHECK_OK(symheap_comm_destroy(c.comm));
  return th_total_failures() ? 1 : 0;
}

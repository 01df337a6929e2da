/* RDMA registration against the fake libibverbs (test/fake_ibverbs):
 *   test_rdma FAKE                 cases with ranks as threads
 *   test_rdma FAKE --procs         under symheap-run -n 4: two pretend hosts
 *   test_rdma FAKE --procs-nodev   the same with no RDMA device (auto: off)
 *   test_rdma FAKE --dmabuf        threads on the cuda adaptor (fake driver):
 *                                  device memory goes through a dma-buf
 * The test holds its own reference to the fake, so its counts outlive every
 * comm that loads it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_ibverbs/fake_ibverbs.h"
#include "harness.h"

static fake_ibv_counts_fn counts_fn;
static fake_ibv_find_fn find_fn;
static const char *fake_path;

static fake_ibv_counts_t counts(void) {
  fake_ibv_counts_t k;
  counts_fn(&k);
  return k;
}

typedef struct {
  uint64_t addr;
  uint32_t rkey, lkey;
} key_t_;

/* Checks every rank's key of w against what each rank's own fake says. */
static void check_keys(th_ctx_t *c, symheap_window_t w, size_t size,
                       int want_dmabuf) {
  void *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, &mine));
  key_t_ me = {0, 0, 0}, all[16];
  CHECK_OK(symheap_window_rdma_key(w, c->rank, &me.addr, &me.rkey));
  CHECK_OK(symheap_window_rdma_lkey(w, &me.lkey));
  uint64_t addr = 0;
  size_t len = 0;
  uint32_t lkey = 0;
  int dmabuf = -1;
  CHECK(find_fn(me.rkey, &addr, &len, &lkey, &dmabuf),
        "rkey 0x%x is no live region of the fake", me.rkey);
  CHECK(addr == (uint64_t)(uintptr_t)mine && me.addr == addr && len == size &&
            lkey == me.lkey && dmabuf == want_dmabuf,
        "region: addr %#llx (window %p, key %#llx), %zu bytes (window %zu), "
        "lkey %u/%u, dmabuf %d",
        (unsigned long long)addr, mine, (unsigned long long)me.addr, len, size,
        lkey, me.lkey, dmabuf);
  CHECK_OK(symheap_comm_allgather(c->comm, &me, all, sizeof me));
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(v.flags & SYMHEAP_VIEW_RDMA, "view has no RDMA keys");
  for (int p = 0; p < c->n && p < 16; p++) {
    uint64_t a = 0;
    uint32_t k = 0;
    CHECK_OK(symheap_window_rdma_key(w, p, &a, &k));
    CHECK(a == all[p].addr && k == all[p].rkey,
          "rank %d's key: %#llx/%#x here, %#llx/%#x there", p,
          (unsigned long long)a, k, (unsigned long long)all[p].addr,
          all[p].rkey);
    CHECK(v.rdma_addr[p] == a && v.rdma_rkey[p] == k,
          "view disagrees on rank %d's key", p);
    for (int q = 0; q < p; q++)
      CHECK(all[q].rkey != all[p].rkey, "ranks %d and %d share rkey %#x", q, p,
            all[p].rkey);
  }
  uint64_t a;
  uint32_t k;
  CHECK_ERR(symheap_window_rdma_key(w, c->n, &a, &k), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_rdma_key(w, 0, NULL, &k), SYMHEAP_ERR_INVALID_ARG);
}

static void case_keys(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("rdma", "keys_views_sharing_cycles", c->rank);
  symheap_rdma_info_t info = {sizeof info, 0, "", NULL, NULL, ""};
  CHECK_OK(symheap_comm_rdma_info(c->comm, &info));
  CHECK(info.enabled && strcmp(info.device, "fake_0") == 0 &&
            info.ibv_context && info.ibv_pd,
        "rdma info: enabled %d, device '%s'", info.enabled, info.device);
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  const size_t size = 65536 + 5;
  symheap_window_t w = NULL, again = NULL;
  CHECK_OK(symheap_malloc(c->comm, size, 0, &w));
  if (w)
    check_keys(c, w, size, 0);
  /* The same range again shares the mapping and the region. */
  void *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, &mine));
  CHECK_OK(symheap_window_register(c->comm, mine, size, 0, &again));
  uint64_t a1 = 0, a2 = 1;
  uint32_t k1 = 0, k2 = 1;
  CHECK_OK(symheap_window_rdma_key(w, 0, &a1, &k1));
  CHECK_OK(symheap_window_rdma_key(again, 0, &a2, &k2));
  CHECK(a1 == a2 && k1 == k2, "a shared registration has its own key");
  CHECK_OK(symheap_window_deregister(c->comm, again));
  CHECK_OK(symheap_free(c->comm, w));
  CHECK_ERR(symheap_window_rdma_key(w, 0, &a1, &k1), SYMHEAP_ERR_INVALID_ARG);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    fake_ibv_counts_t k = counts();
    CHECK(k.mrs == 0, "%d regions live after every window went", k.mrs);
  }
  /* Thousands of registrations: regions, descriptors and counts stay flat. */
  CHECK_OK(symheap_comm_barrier(c->comm));
  int fds0 = c->rank == 0 ? th_count_fds() : 0;
  fake_ibv_counts_t k0 = counts();
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int i = 0; i < 1000; i++) {
    symheap_window_t x = NULL;
    CHECK_OK(symheap_malloc(c->comm, 4096, 0, &x));
    if (x)
      CHECK_OK(symheap_free(c->comm, x));
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    fake_ibv_counts_t k1c = counts();
    CHECK(k1c.mrs == 0 && k1c.regs - k0.regs == 1000 * c->n &&
              k1c.deregs - k0.deregs == 1000 * c->n && th_count_fds() == fds0,
          "1000 cycles: %d regions live, %d registrations, %d "
          "deregistrations, fds %d -> %d",
          k1c.mrs, k1c.regs - k0.regs, k1c.deregs - k0.deregs, fds0,
          th_count_fds());
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  /* The heap's chunks go with a trim; its reservation stays with the comm. */
  CHECK_OK(symheap_heap_trim(c->comm));
  CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
  s1.va_reserved -= s1.heap_reserved * (uint64_t)c->n;
  s1.heap_reserved = 0;
  CHECK(memcmp(&s0, &s1, sizeof s0) == 0, "comm counts changed");
  th_end();
}

/* FAKE_IBV_FAIL_REG makes the first registration of the case fail on one
 * rank: every rank fails the call and nothing stays. */
static void case_reg_fails(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("rdma", "registration_fails_on_one_rank", c->rank);
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  symheap_window_t w = NULL;
  CHECK_ERR(symheap_malloc(c->comm, 8192, 0, &w), SYMHEAP_ERR_DEVICE);
  CHECK(strstr(symheap_last_error(), "ibv_reg_mr") != NULL, "message: %s",
        symheap_last_error());
  CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
  CHECK(memcmp(&s0, &s1, sizeof s0) == 0,
        "a failed registration left state: windows %llu, allocations %llu, "
        "VA %llu -> %llu, mapped %llu -> %llu, descriptors %llu -> %llu",
        (unsigned long long)s1.windows_live,
        (unsigned long long)s1.allocations_live,
        (unsigned long long)s0.va_reserved, (unsigned long long)s1.va_reserved,
        (unsigned long long)s0.bytes_mapped,
        (unsigned long long)s1.bytes_mapped,
        (unsigned long long)s0.descriptors_held,
        (unsigned long long)s1.descriptors_held);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    CHECK(counts().mrs == 0, "%d regions left", counts().mrs);
  CHECK_OK(symheap_malloc(c->comm, 8192, 0, &w));
  if (w)
    CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

static void case_off(th_ctx_t *c, void *arg) {
  const char *why = arg;
  th_begin("rdma", why[0] == 'o' ? "auto_on_one_host_is_off" : "none_is_off",
           c->rank);
  symheap_rdma_info_t info = {sizeof info, 1, "", NULL, NULL, ""};
  CHECK_OK(symheap_comm_rdma_info(c->comm, &info));
  CHECK(!info.enabled && strstr(info.why_not, why) != NULL,
        "enabled %d, why not: '%s'", info.enabled, info.why_not);
  symheap_window_t w = NULL;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  uint64_t a;
  uint32_t k;
  CHECK_ERR(symheap_window_rdma_key(w, 0, &a, &k), SYMHEAP_ERR_UNSUPPORTED);
  CHECK(strstr(symheap_last_error(), why) != NULL, "message: %s",
        symheap_last_error());
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(!(v.flags & SYMHEAP_VIEW_RDMA), "view says RDMA");
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* One rank alone: comm init under the given environment fails with `want`
 * and a message containing `text`, leaving no verbs object behind. */
static void init_fails(const char *name, symheap_result_t want,
                       const char *text) {
  th_begin("rdma", name, 0);
  symheap_unique_id_t id;
  symheap_comm_t comm = NULL;
  CHECK_OK(symheap_get_unique_id(&id));
  symheap_result_t r = symheap_comm_init(&comm, 1, &id, 0);
  CHECK(r == want && strstr(symheap_last_error(), text) != NULL,
        "comm init -> %s: %s (expected %s, '%s')", symheap_strerror(r),
        symheap_last_error(), symheap_strerror(want), text);
  if (r == SYMHEAP_SUCCESS)
    symheap_comm_destroy(comm);
  fake_ibv_counts_t k = counts();
  CHECK(k.contexts == 0 && k.pds == 0, "left: %d contexts, %d pds", k.contexts,
        k.pds);
  th_end();
}

static void device_choice(void) {
  th_begin("rdma", "device_by_name", 0);
  setenv("FAKE_IBV_DEVICES", "3", 1);
  setenv("SYMHEAP_IB_DEVICE", "fake_2", 1);
  symheap_unique_id_t id;
  symheap_comm_t comm = NULL;
  CHECK_OK(symheap_get_unique_id(&id));
  CHECK_OK(symheap_comm_init(&comm, 1, &id, 0));
  symheap_rdma_info_t info = {sizeof info, 0, "", NULL, NULL, ""};
  if (comm) {
    CHECK_OK(symheap_comm_rdma_info(comm, &info));
    CHECK(info.enabled && strcmp(info.device, "fake_2") == 0, "device '%s'",
          info.device);
    info.struct_size = 2;
    CHECK_ERR(symheap_comm_rdma_info(comm, &info), SYMHEAP_ERR_INVALID_ARG);
    CHECK_OK(symheap_comm_destroy(comm));
  }
  th_end();
  setenv("SYMHEAP_IB_DEVICE", "mlx5_9", 1);
  init_fails("unknown_device_refused", SYMHEAP_ERR_INVALID_ARG,
             "no such RDMA device");
  unsetenv("SYMHEAP_IB_DEVICE");
  unsetenv("FAKE_IBV_DEVICES");
}

/* Two pretend hosts of n/2 processes each (SYMHEAP_HOST_ID by rank). */
static int run_procs(int expect_rdma) {
  /* The rank is needed before joining, to pick the pretend host. */
  const char *rk = getenv("SYMHEAP_RANK"), *nr = getenv("SYMHEAP_NRANKS");
  if (!rk || !nr) {
    rk = getenv("OMPI_COMM_WORLD_RANK");
    nr = getenv("OMPI_COMM_WORLD_SIZE");
  }
  if (!rk || !nr) {
    printf("FAIL rdma/procs: run under symheap-run or Open MPI's mpirun\n");
    return 1;
  }
  int rank = atoi(rk), n = atoi(nr);
  setenv("SYMHEAP_HOST_ID", rank < n / 2 ? "host-a" : "host-b", 1);
  th_ctx_t c = {NULL, rank, n};
  th_begin("rdma", expect_rdma ? "two_hosts_auto_on" : "two_hosts_no_device",
           rank);
  CHECK_OK(symheap_comm_init_env(&c.comm));
  if (!c.comm)
    return 1;
  symheap_rdma_info_t info = {sizeof info, 0, "", NULL, NULL, ""};
  CHECK_OK(symheap_comm_rdma_info(c.comm, &info));
  CHECK(info.enabled == expect_rdma, "enabled %d: %s", info.enabled,
        info.why_not);
  if (!expect_rdma)
    CHECK(strstr(info.why_not, "no RDMA device") ||
              strstr(info.why_not, "has no usable RDMA device"),
          "why not: %s", info.why_not);
  const size_t size = 3 * 4096;
  symheap_window_t w = NULL;
  CHECK_OK(symheap_malloc(c.comm, size, 0, &w));
  if (w && expect_rdma) {
    check_keys(&c, w, size, 0);
  } else if (w) {
    uint64_t a;
    uint32_t k;
    CHECK_ERR(symheap_window_rdma_key(w, 0, &a, &k), SYMHEAP_ERR_UNSUPPORTED);
  }
  /* Load/store stays inside the host either way. */
  for (int p = 0; w && p < n; p++) {
    void *pp = NULL;
    symheap_result_t r = symheap_window_peer_ptr(w, p, &pp);
    int same = (p < n / 2) == (rank < n / 2);
    CHECK(same ? r == SYMHEAP_SUCCESS : r == SYMHEAP_ERR_UNSUPPORTED,
          "peer_ptr of rank %d -> %s", p, symheap_strerror(r));
  }
  if (w)
    CHECK_OK(symheap_free(c.comm, w));
  CHECK(counts().mrs == 0, "%d regions left", counts().mrs);
  CHECK_OK(symheap_comm_destroy(c.comm));
  fake_ibv_counts_t k = counts();
  CHECK(k.contexts == 0 && k.pds == 0 && k.mrs == 0,
        "after destroy: %d contexts, %d pds, %d regions", k.contexts, k.pds,
        k.mrs);
  th_end();
  return th_total_failures() ? 1 : 0;
}

static void case_dmabuf(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("rdma", "device_memory_by_dmabuf", c->rank);
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  CHECK(strcmp(info.device_adaptor, "cuda") == 0 && !info.cpu_access,
        "adaptor '%s' (cpu access %d): run with SYMHEAP_DEVICE=cuda over "
        "the fake driver",
        info.device_adaptor, info.cpu_access);
  fake_ibv_counts_t k0 = counts();
  const size_t size = 2 * 65536 + 300;
  symheap_window_t w = NULL;
  CHECK_OK(symheap_malloc(c->comm, size, 0, &w));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (w)
    check_keys(c, w, size, 1);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    CHECK(counts().dmabuf_regs - k0.dmabuf_regs == c->n,
          "%d dma-buf registrations for %d ranks",
          counts().dmabuf_regs - k0.dmabuf_regs, c->n);
  if (w)
    CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

int main(int argc, char **argv) {
  if (argc < 2) {
    printf("FAIL rdma/usage: test_rdma FAKE_LIBIBVERBS [--procs|--procs-nodev|"
           "--dmabuf]\n");
    return 1;
  }
  fake_path = argv[1];
  void *fake = dlopen(fake_path, RTLD_NOW | RTLD_LOCAL);
  if (fake) {
    *(void **)&counts_fn = dlsym(fake, "fake_ibv_counts");
    *(void **)&find_fn = dlsym(fake, "fake_ibv_find");
  }
  if (!fake || !counts_fn || !find_fn) {
    printf("FAIL rdma/load_fake: %s\n", dlerror());
    return 1;
  }
  setenv("SYMHEAP_IBVERBS_LIBRARY", fake_path, 1);
  const char *mode = argc > 2 ? argv[2] : "";
  if (strcmp(mode, "--procs") == 0)
    return run_procs(1);
  if (strcmp(mode, "--procs-nodev") == 0)
    return run_procs(0);
  if (strcmp(mode, "--dmabuf") == 0) {
    setenv("SYMHEAP_NET", "ibverbs", 1);
    int rc = th_run_threads(2, case_dmabuf, NULL);
    return rc || th_total_failures() ? 1 : 0;
  }
  int rc = 0;
  setenv("SYMHEAP_NET", "ibverbs", 1);
  rc |= th_run_threads(3, case_keys, NULL);
  char nth[16];
  snprintf(nth, sizeof nth, "%d", counts().regs + 1);
  setenv("FAKE_IBV_FAIL_REG", nth, 1);
  rc |= th_run_threads(2, case_reg_fails, NULL);
  unsetenv("FAKE_IBV_FAIL_REG");
  device_choice();
  setenv("FAKE_IBV_DEVICES", "0", 1);
  init_fails("no_device_refused", SYMHEAP_ERR_UNSUPPORTED, "no RDMA device");
  unsetenv("FAKE_IBV_DEVICES");
  setenv("SYMHEAP_IBVERBS_LIBRARY", "/nonexistent/libibverbs.so.1", 1);
  init_fails("no_library_refused", SYMHEAP_ERR_UNSUPPORTED, "cannot load");
  setenv("SYMHEAP_IBVERBS_LIBRARY", fake_path, 1);
  unsetenv("SYMHEAP_NET");
  rc |= th_run_threads(2, case_off, "one host");
  setenv("SYMHEAP_NET", "none", 1);
  rc |= th_run_threads(2, case_off, "SYMHEAP_NET=none");
  unsetenv("SYMHEAP_NET");
  th_begin("rdma", "nothing_left", 0);
  fake_ibv_counts_t k = counts();
  CHECK(k.contexts == 0 && k.pds == 0 && k.mrs == 0,
        "left: %d contexts, %d pds, %d regions", k.contexts, k.pds, k.mrs);
  th_end();
  return rc || th_total_failures() ? 1 : 0;
}

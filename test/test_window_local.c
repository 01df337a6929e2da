/* symheap_window_release_local (issue 30): a rank lets go of a registered
 * window alone, the way PyTorch frees symmetric tensors (locally, in a
 * different order on each rank).  Peers keep reading and writing a released
 * rank's memory without fault, also after its symheap_mem_free; the same
 * range registered again is the cached re-registration; later registrations
 * map and read correctly; refusals change nothing.
 *   build/test/test_window_local --threads 2
 *   build/bin/symheap-run -n 3 build/test/test_window_local */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define SZ (64u << 10)
#define NW 4

static int cpu; /* the CPU can read window memory (host backend): else the
                   data checks are left to the GPU tests */

static void find_cpu_access(th_ctx_t *c) {
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  cpu = info.cpu_access;
}

static void fill(void *p, int rank, int salt) {
  if (!cpu)
    return;
  uint32_t *q = p;
  for (size_t i = 0; i < SZ / 4; i++)
    q[i] = (uint32_t)(rank * 1000003 + salt * 7919 + (int)i);
}

static int check_peer(symheap_window_t w, int peer, int salt) {
  void *p = NULL;
  if (symheap_window_peer_ptr(w, peer, &p) != SYMHEAP_SUCCESS)
    return 0;
  if (!cpu)
    return p != NULL;
  const uint32_t *q = p;
  for (size_t i = 0; i < SZ / 4; i += 97)
    if (q[i] != (uint32_t)(peer * 1000003 + salt * 7919 + (int)i))
      return 0;
  return 1;
}

static uint64_t live(th_ctx_t *c) {
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s));
  return s.windows_live;
}

/* NW windows released in a rank-dependent order, each rank still reading
 * the others' memory (released there, then freed there) without fault;
 * then new allocations that map and read correctly. */
static void case_order(th_ctx_t *c) {
  void *mem[NW];
  symheap_window_t w[NW];
  for (int i = 0; i < NW; i++) {
    CHECK_OK(symheap_mem_alloc(c->comm, SZ, &mem[i]));
    fill(mem[i], c->rank, i);
    CHECK_OK(symheap_window_register(c->comm, mem[i], SZ, 0, &w[i]));
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int step = 0; step < NW; step++) {
    int i = (step + c->rank) % NW; /* every rank its own order */
    for (int p = 0; p < c->n; p++)
      CHECK(check_peer(w[i], p, i), "window %d, rank %d's copy", i, p);
    CHECK_OK(symheap_window_release_local(c->comm, w[i]));
    CHECK_OK(symheap_mem_free(c->comm, mem[i]));
    /* Peers may have released and freed window j: still readable here. */
    CHECK_OK(symheap_comm_barrier(c->comm));
    for (int k = step + 1; k < NW; k++) {
      int j = (k + c->rank) % NW;
      for (int p = 0; p < c->n; p++)
        CHECK(check_peer(w[j], p, j), "window %d after peers freed theirs: "
              "rank %d's copy", j, p);
    }
  }
  CHECK(live(c) == 0, "%llu windows live", (unsigned long long)live(c));
  CHECK_ERR(symheap_window_release_local(c->comm, w[0]),
            SYMHEAP_ERR_INVALID_ARG); /* released already */
  for (int i = 0; i < NW; i++) { /* more allocations after the releases */
    CHECK_OK(symheap_mem_alloc(c->comm, SZ, &mem[i]));
    fill(mem[i], c->rank, 10 + i);
    CHECK_OK(symheap_window_register(c->comm, mem[i], SZ, 0, &w[i]));
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int i = 0; i < NW; i++)
    for (int p = 0; p < c->n; p++)
      CHECK(check_peer(w[i], p, 10 + i), "new window %d, rank %d", i, p);
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int i = NW - 1; i >= 0; i--) {
    CHECK_OK(symheap_window_deregister(c->comm, w[i]));
    CHECK_OK(symheap_mem_free(c->comm, mem[i]));
  }
}

/* Released locally on every rank, registered again: the kept mapping is
 * shared (cached), and the data is still there. */
static void case_reregister(th_ctx_t *c) {
  void *mem;
  symheap_window_t w;
  CHECK_OK(symheap_mem_alloc(c->comm, SZ, &mem));
  fill(mem, c->rank, 42);
  CHECK_OK(symheap_window_register(c->comm, mem, SZ, 0, &w));
  CHECK_OK(symheap_window_release_local(c->comm, w));
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s));
  CHECK(s.mappings_cached >= 1 || c->n == 1,
        "the released mapping was not kept (%llu cached)",
        (unsigned long long)s.mappings_cached);
  uint64_t mapped = s.bytes_mapped;
  CHECK_OK(symheap_window_register(c->comm, mem, SZ, 0, &w));
  CHECK_OK(symheap_comm_get_stats(c->comm, &s));
  CHECK(s.bytes_mapped == mapped, "re-registration mapped again: %llu -> %llu",
        (unsigned long long)mapped, (unsigned long long)s.bytes_mapped);
  for (int p = 0; p < c->n; p++)
    CHECK(check_peer(w, p, 42), "re-registered, rank %d's copy", p);
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_window_release_local(c->comm, w));
  CHECK_OK(symheap_mem_free(c->comm, mem));
  CHECK_OK(symheap_comm_barrier(c->comm));
}

/* Refusals: NULL, another comm's window, symheap_malloc's; the window
 * stays usable and is released collectively after. */
static void case_refusals(th_ctx_t *c) {
  CHECK_ERR(symheap_window_release_local(c->comm, NULL),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_release_local(NULL, NULL), SYMHEAP_ERR_INVALID_ARG);
  symheap_window_t h;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &h));
  CHECK_ERR(symheap_window_release_local(c->comm, h), SYMHEAP_ERR_INVALID_ARG);
  CHECK(strstr(symheap_last_error(), "symheap_free") != NULL,
        "message does not say what to use: %s", symheap_last_error());
  void *p = NULL;
  CHECK_OK(symheap_window_local_ptr(h, &p));
  CHECK_OK(symheap_free(c->comm, h));
  symheap_comm_t sub = NULL;
  CHECK_OK(symheap_comm_split(c->comm, 0, c->rank, &sub));
  void *mem;
  CHECK_OK(symheap_mem_alloc(sub, SZ, &mem));
  CHECK_OK(symheap_window_register(sub, mem, SZ, 0, &h));
  CHECK_ERR(symheap_window_release_local(c->comm, h), SYMHEAP_ERR_INVALID_ARG);
  CHECK_OK(symheap_window_release_local(sub, h));
  CHECK_OK(symheap_mem_free(sub, mem));
  CHECK_OK(symheap_comm_destroy(sub));
}

int main(int argc, char **argv) {
  static const th_case_t cases[] = {{"order", case_order},
                                    {"reregister", case_reregister},
                                    {"refusals", case_refusals}};
  static const th_suite_t suite = {"window_local ", find_cpu_access, cases,
                                   sizeof cases / sizeof cases[0]};
  return th_main_suite(argc, argv, &suite);
}

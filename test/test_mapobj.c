/* The mapping object's contract (core/mapobj.c), seen from the public API:
 * two registrations of the same memory are one mapping behind two handles,
 * which goes with the last of them (kept for reuse when the window cache is
 * on, up to SYMHEAP_WINDOW_CACHE, the least recently used evicted first),
 * a symheap_malloc window's memory goes with the last handle of its mapping,
 * and comm destroy leaves no mapping and no descriptor behind, live, shared
 * or kept (it warns about the windows it finds live: expected here).  Run under
 * symheap-run (ranks as processes) or with --threads N; test/run.sh runs it
 * with the cache off and with a cache of 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static char tag[32];
static int g_threads;

static void barrier(th_ctx_t *c) { CHECK_OK(symheap_comm_barrier(c->comm)); }

static symheap_comm_stats_t stats(th_ctx_t *c) {
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s));
  return s;
}

/* Process-wide counts, taken while no rank works (between two barriers)
 * and, with thread-ranks, by rank 0 alone: -1 on the other ranks. */
typedef struct {
  int fds, maps, memfd_maps;
} counts_t;

static counts_t quiet_counts(th_ctx_t *c) {
  counts_t k = {-1, -1, -1};
  barrier(c);
  if (!g_threads || c->rank == 0) {
    k.fds = th_count_fds();
    k.maps = th_count_maps();
    k.memfd_maps = th_count_symheap_maps();
  }
  barrier(c);
  return k;
}

static int same_counts(counts_t a, counts_t b) {
  return a.fds == b.fds && a.maps == b.maps && a.memfd_maps == b.memfd_maps;
}

static int cache_limit(th_ctx_t *c) {
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  return (int)info.window_cache;
}

/* A symheap_malloc size the heap does not serve: a registration of its
 * own (above SYMHEAP_HEAP_THRESHOLD, or any size with the heap off). */
static size_t outside_heap(th_ctx_t *c) {
  symheap_heap_info_t h = SYMHEAP_HEAP_INFO_INIT;
  CHECK_OK(symheap_heap_get_info(c->comm, &h));
  return h.enabled ? (size_t)h.threshold + 4096 : (size_t)65536;
}

/* Every rank's first byte of the window, as written by its owner. */
static void check_peers(th_ctx_t *c, symheap_window_t w, const char *when) {
  for (int p = 0; p < c->n; p++) {
    char *pp = NULL;
    CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&pp));
    CHECK(pp && pp[0] == (char)('A' + p), "%s: rank %d's byte is %d", when, p,
          pp ? pp[0] : -1);
  }
}

/* Two handles, one mapping: the second registration maps nothing, the
 * first handle's going unmaps nothing, the last one's unmaps it all (or,
 * with the cache on, keeps it for the next registration, which maps
 * nothing again). */
static void case_two_handles_one_mapping(th_ctx_t *c) {
  const size_t size = 65536;
  int limit = cache_limit(c);
  symheap_comm_stats_t start = stats(c);
  counts_t kstart = quiet_counts(c);
  char *buf = NULL;
  CHECK_OK(symheap_mem_alloc(c->comm, size, (void **)&buf));
  if (!buf)
    return;
  buf[0] = (char)('A' + c->rank);
  counts_t k0 = quiet_counts(c);
  symheap_comm_stats_t s0 = stats(c);
  symheap_window_t w1 = NULL, w2 = NULL;
  CHECK_OK(symheap_window_register(c->comm, buf, size, 0, &w1));
  counts_t k1 = quiet_counts(c);
  symheap_comm_stats_t s1 = stats(c);
  CHECK(s1.va_reserved > s0.va_reserved && s1.bytes_mapped > s0.bytes_mapped,
        "the first registration mapped nothing: VA %llu -> %llu",
        (unsigned long long)s0.va_reserved, (unsigned long long)s1.va_reserved);
  CHECK_OK(symheap_window_register(c->comm, buf, size, 0, &w2));
  counts_t k2 = quiet_counts(c);
  symheap_comm_stats_t s2 = stats(c);
  CHECK(w1 && w2 && w1 != w2, "the second registration gave no new handle");
  void *b1 = NULL, *b2 = NULL;
  size_t st1 = 0, st2 = 0;
  CHECK_OK(symheap_window_flat_base(w1, &b1, &st1));
  CHECK_OK(symheap_window_flat_base(w2, &b2, &st2));
  CHECK(b1 && b1 == b2 && st1 == st2,
        "two handles of one range see two mappings (%p, %p)", b1, b2);
  CHECK(
      s2.va_reserved == s1.va_reserved && s2.bytes_mapped == s1.bytes_mapped &&
          s2.windows_live == s1.windows_live + 1,
      "the second registration mapped again: VA %llu -> %llu, mapped %llu "
      "-> %llu",
      (unsigned long long)s1.va_reserved, (unsigned long long)s2.va_reserved,
      (unsigned long long)s1.bytes_mapped, (unsigned long long)s2.bytes_mapped);
  CHECK(same_counts(k1, k2),
        "the second registration changed the process: fds %d -> %d, memfd "
        "mappings %d -> %d",
        k1.fds, k2.fds, k1.memfd_maps, k2.memfd_maps);
  /* The first handle goes: the mapping stays for the second. */
  CHECK_OK(symheap_window_deregister(c->comm, w1));
  counts_t k3 = quiet_counts(c);
  symheap_comm_stats_t s3 = stats(c);
  CHECK(s3.va_reserved == s1.va_reserved &&
            s3.bytes_mapped == s1.bytes_mapped &&
            s3.mappings_cached == s0.mappings_cached && same_counts(k3, k1),
        "the mapping changed while a handle held it: VA %llu -> %llu, kept "
        "%llu, memfd mappings %d -> %d",
        (unsigned long long)s1.va_reserved, (unsigned long long)s3.va_reserved,
        (unsigned long long)s3.mappings_cached, k1.memfd_maps, k3.memfd_maps);
  check_peers(c, w2, "after the first handle went");
  barrier(c);
  /* The last handle goes. */
  CHECK_OK(symheap_window_deregister(c->comm, w2));
  counts_t k4 = quiet_counts(c);
  symheap_comm_stats_t s4 = stats(c);
  if (limit == 0) {
    /* (The allocation's exported descriptor stays until it is freed.) */
    CHECK(s4.va_reserved == s0.va_reserved &&
              s4.bytes_mapped == s0.bytes_mapped && s4.mappings_cached == 0 &&
              k4.maps == k0.maps && k4.memfd_maps == k0.memfd_maps,
          "cache off: the last handle left VA %llu (was %llu), mapped %llu "
          "(was %llu), mappings %d (were %d), memfd mappings %d (were %d)",
          (unsigned long long)s4.va_reserved,
          (unsigned long long)s0.va_reserved,
          (unsigned long long)s4.bytes_mapped,
          (unsigned long long)s0.bytes_mapped, k4.maps, k0.maps, k4.memfd_maps,
          k0.memfd_maps);
  } else {
    CHECK(s4.va_reserved == s1.va_reserved &&
              s4.mappings_cached == s0.mappings_cached + 1,
          "cache %d: the last handle's mapping was not kept (VA %llu, kept "
          "%llu)",
          limit, (unsigned long long)s4.va_reserved,
          (unsigned long long)s4.mappings_cached);
    symheap_window_t w3 = NULL;
    CHECK_OK(symheap_window_register(c->comm, buf, size, 0, &w3));
    void *b3 = NULL;
    size_t st3 = 0;
    CHECK_OK(symheap_window_flat_base(w3, &b3, &st3));
    symheap_comm_stats_t s5 = stats(c);
    CHECK(b3 == b1 && s5.va_reserved == s1.va_reserved &&
              s5.mappings_cached == s0.mappings_cached,
          "the kept mapping did not serve the same range again (%p, was %p; "
          "kept %llu)",
          b3, b1, (unsigned long long)s5.mappings_cached);
    if (w3)
      check_peers(c, w3, "through the kept mapping");
    barrier(c);
    CHECK_OK(symheap_window_deregister(c->comm, w3));
  }
  /* Freeing the memory drops a kept mapping of it: back to the start. */
  CHECK_OK(symheap_mem_free(c->comm, buf));
  counts_t kend = quiet_counts(c);
  CHECK(same_counts(kstart, kend),
        "after the free: fds %d (were %d), mappings %d (were %d), memfd "
        "mappings %d (were %d)",
        kend.fds, kstart.fds, kend.maps, kstart.maps, kend.memfd_maps,
        kstart.memfd_maps);
  symheap_comm_stats_t s6 = stats(c);
  CHECK(s6.va_reserved == start.va_reserved &&
            s6.bytes_mapped == start.bytes_mapped &&
            s6.mappings_cached == start.mappings_cached &&
            s6.descriptors_held == start.descriptors_held,
        "after the free: VA %llu (was %llu), mapped %llu (was %llu), kept "
        "%llu, descriptors %llu (were %llu)",
        (unsigned long long)s6.va_reserved,
        (unsigned long long)start.va_reserved,
        (unsigned long long)s6.bytes_mapped,
        (unsigned long long)start.bytes_mapped,
        (unsigned long long)s6.mappings_cached,
        (unsigned long long)s6.descriptors_held,
        (unsigned long long)start.descriptors_held);
}

/* The cache holds at most SYMHEAP_WINDOW_CACHE mappings: one more evicts
 * the least recently used, so its range maps anew while the most recent
 * one is reused. */
static void case_kept_then_evicted(th_ctx_t *c) {
  int limit = cache_limit(c); /* 1 to 16: run_cases sees to it */
  const size_t size = 16384;
  int n = limit + 1;
  char *buf[17] = {0};
  symheap_comm_stats_t s0 = stats(c);
  for (int i = 0; i < n; i++) {
    CHECK_OK(symheap_mem_alloc(c->comm, size, (void **)&buf[i]));
    if (!buf[i])
      return;
    buf[i][0] = (char)('A' + c->rank);
  }
  for (int i = 0; i < n; i++) {
    symheap_window_t w = NULL;
    CHECK_OK(symheap_window_register(c->comm, buf[i], size, 0, &w));
    CHECK_OK(symheap_window_deregister(c->comm, w));
    symheap_comm_stats_t s = stats(c);
    uint64_t want = (uint64_t)(i + 1 < limit ? i + 1 : limit);
    CHECK(s.mappings_cached == s0.mappings_cached + want,
          "after %d deregistrations %llu mappings kept, expected %llu (limit "
          "%d)",
          i + 1, (unsigned long long)(s.mappings_cached - s0.mappings_cached),
          (unsigned long long)want, limit);
  }
  /* The most recent is kept: no new VA, one fewer kept while in use. */
  symheap_comm_stats_t a = stats(c);
  symheap_window_t w = NULL;
  CHECK_OK(symheap_window_register(c->comm, buf[n - 1], size, 0, &w));
  symheap_comm_stats_t b = stats(c);
  CHECK(b.va_reserved == a.va_reserved &&
            b.mappings_cached == a.mappings_cached - 1,
        "the most recent mapping was not reused: VA %llu -> %llu, kept %llu "
        "-> %llu",
        (unsigned long long)a.va_reserved, (unsigned long long)b.va_reserved,
        (unsigned long long)a.mappings_cached,
        (unsigned long long)b.mappings_cached);
  if (w)
    check_peers(c, w, "the most recent kept mapping");
  barrier(c);
  CHECK_OK(symheap_window_deregister(c->comm, w));
  /* The first was evicted: its range maps anew (more VA, nothing taken
   * from the cache). */
  a = stats(c);
  CHECK_OK(symheap_window_register(c->comm, buf[0], size, 0, &w));
  b = stats(c);
  CHECK(b.va_reserved > a.va_reserved && b.mappings_cached == a.mappings_cached,
        "the least recently used mapping was not evicted: VA %llu -> %llu, "
        "kept %llu -> %llu",
        (unsigned long long)a.va_reserved, (unsigned long long)b.va_reserved,
        (unsigned long long)a.mappings_cached,
        (unsigned long long)b.mappings_cached);
  if (w)
    check_peers(c, w, "the evicted range mapped anew");
  barrier(c);
  CHECK_OK(symheap_window_deregister(c->comm, w));
  barrier(c);
  for (int i = 0; i < n; i++)
    CHECK_OK(symheap_mem_free(c->comm, buf[i]));
  barrier(c);
  symheap_comm_stats_t s = stats(c);
  CHECK(s.mappings_cached == s0.mappings_cached &&
            s.va_reserved == s0.va_reserved &&
            s.bytes_mapped == s0.bytes_mapped,
        "after every free: kept %llu, VA %llu (was %llu)",
        (unsigned long long)s.mappings_cached,
        (unsigned long long)s.va_reserved, (unsigned long long)s0.va_reserved);
}

/* symheap_malloc's own registration (outside the heap) registered again,
 * then freed first: the memory and its mapping stay for the other handle,
 * and go with it. */
static void case_malloc_shared_freed_first(th_ctx_t *c) {
  size_t size = outside_heap(c);
  counts_t k0 = quiet_counts(c);
  symheap_comm_stats_t s0 = stats(c);
  symheap_window_t m = NULL, sh = NULL;
  CHECK_OK(symheap_malloc(c->comm, size, 0, &m));
  if (!m)
    return;
  char *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(m, (void **)&mine));
  if (mine)
    mine[0] = (char)('A' + c->rank);
  symheap_comm_stats_t s1 = stats(c);
  CHECK(s1.allocations_live == s0.allocations_live + 1,
        "%zu bytes did not make an allocation of their own (the heap took "
        "them?)",
        size);
  CHECK_OK(symheap_window_register(c->comm, mine, size, 0, &sh));
  barrier(c);
  CHECK_OK(symheap_free(c->comm, m));
  symheap_comm_stats_t s2 = stats(c);
  CHECK(s2.allocations_live == s1.allocations_live &&
            s2.va_reserved == s1.va_reserved &&
            s2.bytes_mapped == s1.bytes_mapped,
        "freed while another handle maps it: allocations %llu -> %llu, VA "
        "%llu -> %llu",
        (unsigned long long)s1.allocations_live,
        (unsigned long long)s2.allocations_live,
        (unsigned long long)s1.va_reserved, (unsigned long long)s2.va_reserved);
  if (sh)
    check_peers(c, sh, "after symheap_free of the first handle");
  barrier(c);
  CHECK_OK(symheap_window_deregister(c->comm, sh));
  counts_t k1 = quiet_counts(c);
  symheap_comm_stats_t s3 = stats(c);
  /* Never kept: the memory itself went. */
  CHECK(s3.allocations_live == s0.allocations_live &&
            s3.va_reserved == s0.va_reserved &&
            s3.bytes_mapped == s0.bytes_mapped &&
            s3.mappings_cached == s0.mappings_cached &&
            s3.descriptors_held == s0.descriptors_held && same_counts(k0, k1),
        "after the last handle: allocations %llu (were %llu), VA %llu (was "
        "%llu), kept %llu, fds %d (were %d), memfd mappings %d (were %d)",
        (unsigned long long)s3.allocations_live,
        (unsigned long long)s0.allocations_live,
        (unsigned long long)s3.va_reserved, (unsigned long long)s0.va_reserved,
        (unsigned long long)s3.mappings_cached, k1.fds, k0.fds, k1.memfd_maps,
        k0.memfd_maps);
}

/* A comm destroyed while it holds every kind of mapping (a registration
 * with two handles, a kept one, heap windows, a symheap_malloc window
 * outside the heap) leaves the process's descriptors and mappings where
 * they were before the comm was made. */
static void case_destroy_with_live_and_kept(th_ctx_t *c) {
  counts_t k0 = quiet_counts(c);
  symheap_comm_t sub = NULL;
  CHECK_OK(symheap_comm_split(c->comm, 0, c->rank, &sub));
  if (!sub)
    return;
  char *a = NULL, *b = NULL;
  symheap_window_t w1 = NULL, w2 = NULL, wk = NULL, h1 = NULL, h2 = NULL,
                   big = NULL;
  CHECK_OK(symheap_mem_alloc(sub, 65536, (void **)&a));
  CHECK_OK(symheap_mem_alloc(sub, 65536, (void **)&b));
  CHECK_OK(symheap_window_register(sub, a, 65536, 0, &w1));
  CHECK_OK(symheap_window_register(sub, a, 65536, 0, &w2));
  CHECK_OK(symheap_window_register(sub, b, 65536, 0, &wk));
  CHECK_OK(symheap_window_deregister(sub, wk)); /* kept, when the cache is on */
  CHECK_OK(symheap_malloc(sub, 4096, 0, &h1));
  CHECK_OK(symheap_malloc(sub, 100000, 0, &h2));
  CHECK_OK(symheap_malloc(sub, outside_heap(c), 0, &big));
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(sub, &s));
  CHECK(s.windows_live == 5, "the sub-comm has %llu windows, expected 5",
        (unsigned long long)s.windows_live);
  if (cache_limit(c) > 0)
    CHECK(s.mappings_cached == 1, "the sub-comm keeps %llu mappings",
          (unsigned long long)s.mappings_cached);
  CHECK_OK(symheap_comm_barrier(sub));
  CHECK_OK(symheap_comm_destroy(sub));
  counts_t k1 = quiet_counts(c);
  CHECK(same_counts(k0, k1),
        "comm destroy left fds %d -> %d, mappings %d -> %d, memfd mappings "
        "%d -> %d",
        k0.fds, k1.fds, k0.maps, k1.maps, k0.memfd_maps, k1.memfd_maps);
}

typedef struct {
  const char *name;
  void (*fn)(th_ctx_t *);
  int needs_cache; /* runs with a window cache of 1 to 16 only */
} case_t;

static const case_t cases[] = {
    {"two_handles_one_mapping", case_two_handles_one_mapping, 0},
    {"kept_then_evicted", case_kept_then_evicted, 1},
    {"malloc_shared_freed_first", case_malloc_shared_freed_first, 0},
    {"destroy_with_live_and_kept", case_destroy_with_live_and_kept, 0},
};

static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  int limit = cache_limit(c);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].needs_cache && (limit < 1 || limit > 16)) {
      if (c->rank == 0)
        printf("SKIP %s/%s the window cache is %d (run with "
               "SYMHEAP_WINDOW_CACHE between 1 and 16)\n",
               tag, cases[i].name, limit);
      continue;
    }
    th_begin(tag, cases[i].name, c->rank);
    cases[i].fn(c);
    CHECK_OK(symheap_comm_barrier(c->comm));
    th_end();
  }
}

int main(int argc, char **argv) {
  return th_main(argc, argv, "", tag, sizeof tag, &g_threads, run_cases, NULL);
}

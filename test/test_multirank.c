/* The multi-rank suite on the host backend: run under symheap-run (ranks as
 * processes) or with --threads N (ranks as threads of one process).  Every
 * rank runs every case; see harness.h for how results are counted.
 * This file: the helpers every case uses (multirank.h), the cases of one
 * window (its pattern, peers' writes, mismatches, bad arguments, interior
 * pointers, many windows) and the list of cases; the others are
 * multirank_split.c (sub-communicators, two hosts), multirank_reuse.c
 * (registering again, the window cache, cycles), multirank_pad.c (the pad
 * and signal slots) and multirank_state.c (info and stats, stale handles,
 * fork). */
#include "multirank.h"

char tag[32];
int g_threads;

int g_first_rank; /* first rank of this process (mixed mode) */

/* Process-wide counts are only stable while no rank is working: take them
 * between two barriers, and with thread-ranks on the process's first rank
 * alone (the count itself opens a descriptor). */
int counts_here(th_ctx_t *c) { return !g_threads || c->rank == g_first_rank; }
void quiet_counts(th_ctx_t *c, int *fds, int *maps) {
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (counts_here(c)) {
    *fds = th_count_fds();
    /* Every mapping, and the memfd mappings alone (kept apart so that the
     * check still bites where a tool makes the total move). */
    *maps = th_count_maps() * 100000 + th_count_symheap_maps();
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
}

unsigned char pattern(int rank, size_t i) {
  return (unsigned char)(i * 2654435761u >> 13) ^
         (unsigned char)(rank * 37 + 11);
}

void barrier(th_ctx_t *c) { CHECK_OK(symheap_comm_barrier(c->comm)); }

/* A comm's stats with its heap trimmed and its reservation (made at the
 * first symheap_malloc, kept until the comm goes) left out: what must
 * return to where it was once every window is freed. */
symheap_comm_stats_t settled(symheap_comm_t comm, int n) {
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_heap_trim(comm));
  CHECK_OK(symheap_comm_get_stats(comm, &s));
  s.va_reserved -= s.heap_reserved * (uint64_t)n;
  s.heap_reserved = 0;
  return s;
}

symheap_comm_stats_t stats(th_ctx_t *c) {
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s));
  return s;
}

/* Every rank writes a pattern; every rank reads every peer through the flat
 * base, symheap_window_peer_ptr and the device view. */
static void case_pattern(th_ctx_t *c) {
  const size_t size = (1u << 20) + 12; /* not a multiple of a page */
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, size, 0, &w));
  unsigned char *mine = NULL, *base = NULL;
  size_t stride = 0, wsize = 0;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  CHECK_OK(symheap_window_flat_base(w, (void **)&base, &stride));
  CHECK_OK(symheap_window_size(w, &wsize));
  CHECK(wsize == size, "window size %zu, expected %zu", wsize, size);
  CHECK(stride >= size && stride % 4096 == 0, "stride %zu", stride);
  if (!mine || !base)
    return;
  for (size_t i = 0; i < size; i++)
    mine[i] = pattern(c->rank, i);
  barrier(c);
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(v.flags & SYMHEAP_VIEW_FLAT, "view is not flat");
  CHECK(v.rank == c->rank && v.nranks == c->n && v.size == size,
        "view rank %d nranks %d size %llu", v.rank, v.nranks,
        (unsigned long long)v.size);
  CHECK(symheap_device_local_ptr(&v, 0) == base + (size_t)c->rank * stride,
        "device local pointer is not this rank's slot of the flat VA");
  for (int p = 0; p < c->n; p++) {
    unsigned char *pp = NULL;
    CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&pp));
    unsigned char *flat = base + (size_t)p * stride;
    CHECK(pp == flat, "peer %d: peer_ptr %p, flat %p", p, (void *)pp,
          (void *)flat);
    CHECK(symheap_device_peer_ptr(&v, p, 5) == flat + 5,
          "peer %d: device view disagrees", p);
    size_t bad = size;
    for (size_t i = 0; i < size && bad == size; i++)
      if (flat[i] != pattern(p, i))
        bad = i;
    CHECK(bad == size, "peer %d: byte %zu is 0x%02x, expected 0x%02x", p, bad,
          flat[bad == size ? 0 : bad], pattern(p, bad == size ? 0 : bad));
  }
  barrier(c);
  CHECK_OK(symheap_free(c->comm, w));
}

/* Stores into a peer's copy land in the peer's own memory. */
static void case_peer_writes(th_ctx_t *c) {
  const size_t slot = 4096;
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, slot * (size_t)c->n, 0, &w));
  unsigned char *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  if (!mine)
    return;
  memset(mine, 0, slot * (size_t)c->n);
  barrier(c);
  for (int p = 0; p < c->n; p++) {
    unsigned char *pp = NULL;
    CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&pp));
    if (pp)
      for (size_t i = 0; i < slot; i++)
        pp[(size_t)c->rank * slot + i] = pattern(c->rank * 100 + p, i);
  }
  barrier(c);
  for (int q = 0; q < c->n; q++) {
    size_t bad = slot;
    for (size_t i = 0; i < slot && bad == slot; i++)
      if (mine[(size_t)q * slot + i] != pattern(q * 100 + c->rank, i))
        bad = i;
    CHECK(bad == slot, "rank %d's write to me is wrong at byte %zu", q, bad);
  }
  barrier(c);
  CHECK_OK(symheap_free(c->comm, w));
}

/* Ranks that disagree all get MISMATCH, nothing stays, the comm goes on. */
static void case_mismatch(th_ctx_t *c) {
  symheap_comm_stats_t before = stats(c);
  int fds = 0, maps = 0, fds2 = 0, maps2 = 0;
  quiet_counts(c, &fds, &maps);
  symheap_window_t w = NULL;
  size_t size = c->rank == c->n - 1 ? 8192 : 4096;
  CHECK_ERR(symheap_malloc(c->comm, size, 0, &w), SYMHEAP_ERR_MISMATCH);
  CHECK(strstr(symheap_last_error(), "disagree") != NULL,
        "message does not say the ranks disagree: %s", symheap_last_error());
  symheap_comm_stats_t after = stats(c);
  CHECK(after.windows_live == before.windows_live &&
            after.va_reserved == before.va_reserved &&
            after.bytes_mapped == before.bytes_mapped &&
            after.allocations_live == before.allocations_live,
        "something stayed mapped after MISMATCH");
  quiet_counts(c, &fds2, &maps2);
  CHECK(fds2 == fds && maps2 == maps,
        "after MISMATCH: fds %d -> %d, mappings %d -> %d", fds, fds2, maps,
        maps2);
  /* Offsets into the allocation that differ: MISMATCH too. */
  void *buf = NULL;
  CHECK_OK(symheap_mem_alloc(c->comm, 3 * 4096, &buf));
  if (buf) {
    size_t off = c->rank == 0 ? 0 : 64;
    CHECK_ERR(symheap_window_register(c->comm, (char *)buf + off, 4096, 0, &w),
              SYMHEAP_ERR_MISMATCH);
    CHECK_OK(symheap_mem_free(c->comm, buf));
  }
  /* The next call with equal arguments succeeds. */
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  CHECK_OK(symheap_free(c->comm, w));
}

/* A bad argument on one rank fails the call on every rank. */
static void case_invalid_args(th_ctx_t *c) {
  symheap_window_t w = NULL;
  int last = c->n - 1;
  void *buf = NULL;
  CHECK_OK(symheap_mem_alloc(c->comm, 8192, &buf));
  CHECK_ERR(
      symheap_window_register(c->comm, c->rank == 0 ? NULL : buf, 4096, 0, &w),
      SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(
      symheap_window_register(c->comm, buf, c->rank == last ? 0 : 4096, 0, &w),
      SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_register(c->comm, buf, 4096, 0x80, &w),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_register(c->comm, buf, 4096, 0,
                                    c->rank == last ? NULL : &w),
            SYMHEAP_ERR_INVALID_ARG);
  /* Past the end of the allocation (rounded up to the granularity). */
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  size_t g = info.granularity ? info.granularity : 4096;
  CHECK_ERR(
      symheap_window_register(c->comm, buf, (8192 + g - 1) / g * g + 1, 0, &w),
      SYMHEAP_ERR_INVALID_ARG);
  /* Memory that symheap did not allocate. */
  char *plain = malloc(4096);
  CHECK_ERR(symheap_window_register(c->comm, plain, 4096, 0, &w),
            SYMHEAP_ERR_INVALID_ARG);
  free(plain);
  CHECK_ERR(symheap_malloc(c->comm, 0, 0, &w), SYMHEAP_ERR_INVALID_ARG);
  /* Sizes whose rounding to granules wraps: refused as too large on every
   * rank, nothing made (before: the size wrapped to 0 in the allocation
   * and the failure spoke of reserving 0 bytes). */
  for (size_t huge = SIZE_MAX; huge > SIZE_MAX - 8; huge -= 4) {
    symheap_comm_stats_t st0 = SYMHEAP_COMM_STATS_INIT;
    symheap_comm_stats_t st1 = SYMHEAP_COMM_STATS_INIT;
    CHECK_OK(symheap_comm_get_stats(c->comm, &st0));
    CHECK_ERR(symheap_malloc(c->comm, huge, 0, &w), SYMHEAP_ERR_INVALID_ARG);
    CHECK(strstr(symheap_last_error(), "too large") != NULL, "%zu: %s", huge,
          symheap_last_error());
    CHECK_OK(symheap_comm_get_stats(c->comm, &st1));
    CHECK(st0.allocations_live == st1.allocations_live &&
              st0.va_reserved == st1.va_reserved,
          "a refused malloc(%zu) left an allocation", huge);
  }
  /* Multicast on the host backend: unsupported on every rank. */
  CHECK_ERR(symheap_malloc(c->comm, 4096, SYMHEAP_WINDOW_MULTICAST, &w),
            SYMHEAP_ERR_UNSUPPORTED);
  CHECK_OK(symheap_window_register(c->comm, buf, 4096, 0, &w));
  void *p = NULL;
  CHECK_ERR(symheap_window_peer_ptr(w, c->n, &p), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_peer_ptr(w, -1, &p), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_peer_ptr(w, 0, NULL), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_multicast_ptr(w, &p), SYMHEAP_ERR_UNSUPPORTED);
  /* Memory still registered cannot be freed; a window over caller memory is
   * not symheap_free's. */
  CHECK_ERR(symheap_mem_free(c->comm, buf), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_free(c->comm, w), SYMHEAP_ERR_INVALID_ARG);
  CHECK_OK(symheap_window_deregister(c->comm, w));
  /* Double release, and a stale handle. */
  CHECK_ERR(symheap_window_deregister(c->comm, w), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_peer_ptr(w, 0, &p), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_local_ptr((symheap_window_t)(uintptr_t)0x1000, &p),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  CHECK_OK(symheap_free(c->comm, w));
  CHECK_ERR(symheap_free(c->comm, w), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_free(c->comm, NULL), SYMHEAP_ERR_INVALID_ARG);
  CHECK_OK(symheap_mem_free(c->comm, buf));
  CHECK_ERR(symheap_mem_free(c->comm, buf), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_mem_alloc(c->comm, 0, &buf), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_mem_alloc(NULL, 4096, &buf), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_comm_barrier(NULL), SYMHEAP_ERR_INVALID_ARG);
  /* After all that, the comm still works. */
  CHECK_OK(symheap_comm_barrier(c->comm));
}

/* A window that starts inside an allocation: every rank's view points at the
 * same offset of each peer's allocation. */
static void case_interior_pointer(th_ctx_t *c) {
  const size_t off = 4096 + 100, size = 2 * 4096;
  char *buf = NULL;
  CHECK_OK(symheap_mem_alloc(c->comm, 4 * 4096, (void **)&buf));
  if (!buf)
    return;
  for (size_t i = 0; i < 4 * 4096; i++)
    buf[i] = (char)pattern(c->rank, i);
  symheap_window_t w;
  CHECK_OK(symheap_window_register(c->comm, buf + off, size, 0, &w));
  void *local = NULL;
  CHECK_OK(symheap_window_local_ptr(w, &local));
  CHECK(local == buf + off, "local pointer %p, expected %p", local,
        (void *)(buf + off));
  for (int p = 0; p < c->n; p++) {
    unsigned char *pp = NULL;
    CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&pp));
    if (!pp)
      continue;
    CHECK(pp[0] == pattern(p, off) &&
              pp[size - 1] == pattern(p, off + size - 1),
          "peer %d: window does not start at offset %zu of its allocation", p,
          off);
  }
  barrier(c);
  CHECK_OK(symheap_window_deregister(c->comm, w));
  CHECK_OK(symheap_mem_free(c->comm, buf));
}

/* Deregistering different windows on different ranks is refused. */
static void case_deregister_mismatch(th_ctx_t *c) {
  symheap_comm_stats_t s0 = stats(c);
  symheap_window_t a, b;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &a));
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &b));
  CHECK_ERR(symheap_free(c->comm, c->rank == 0 ? b : a), SYMHEAP_ERR_MISMATCH);
  /* Both still work, and release in any order. */
  void *p;
  CHECK_OK(symheap_window_peer_ptr(a, c->n - 1, &p));
  CHECK_OK(symheap_free(c->comm, a));
  CHECK_OK(symheap_free(c->comm, b));
  symheap_comm_stats_t s = stats(c);
  CHECK(s.windows_live == s0.windows_live &&
            s.allocations_live == s0.allocations_live,
        "windows %llu allocations %llu left",
        (unsigned long long)s.windows_live,
        (unsigned long long)s.allocations_live);
}

/* Many windows live at once; deregistering one keeps the others intact. */
static void case_many_windows(th_ctx_t *c) {
  enum { N = 16 };
  symheap_window_t w[N];
  for (int i = 0; i < N; i++) {
    CHECK_OK(symheap_malloc(c->comm, 4096 * (size_t)(i + 1), 0, &w[i]));
    int *mine = NULL;
    CHECK_OK(symheap_window_local_ptr(w[i], (void **)&mine));
    if (mine)
      *mine = c->rank * 1000 + i;
  }
  barrier(c);
  for (int i = 0; i < N; i += 2)
    CHECK_OK(symheap_free(c->comm, w[i]));
  for (int i = 1; i < N; i += 2)
    for (int p = 0; p < c->n; p++) {
      int *pp = NULL;
      CHECK_OK(symheap_window_peer_ptr(w[i], p, (void **)&pp));
      CHECK(pp && *pp == p * 1000 + i, "window %d peer %d holds %d", i, p,
            pp ? *pp : -1);
    }
  barrier(c);
  for (int i = N - 1; i > 0; i -= 2)
    CHECK_OK(symheap_free(c->comm, w[i]));
}

static const th_case_t cases[] = {
    {"pattern", case_pattern},
    {"peer_writes", case_peer_writes},
    {"mismatch", case_mismatch},
    {"invalid_args", case_invalid_args},
    {"interior_pointer", case_interior_pointer},
    {"deregister_mismatch", case_deregister_mismatch},
    {"many_windows", case_many_windows},
    {"info_and_stats", case_info},
    {"window_cache", case_window_cache},
    {"signals", case_signals},
    {"slots_exhausted", case_slots_exhausted},
    {"device_timeout_breaks_comm", case_device_timeout},
    {"device_timeout_after_break", case_device_timeout_after_break},
    {"split_pairs_halves_strided", case_split},
    {"split_local", case_split_local},
    {"two_hosts", case_two_hosts},
    {"reregister_shared", case_reregister_shared},
    {"reregister_1GiB_many", case_reregister_many},
    {"cycles_2000", case_cycles},
    {"fork_child_refused", case_fork},
    {"stale_handles_refused", case_stale_handles},
};

/* th_run_cases keeps the ranks in step between cases (a barrier after
 * each), even after a failure. */
static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  th_run_cases(c, tag, cases, sizeof cases / sizeof cases[0]);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--mixed") == 0)
    return th_run_mixed(atoi(argv[2]), "", tag, sizeof tag, &g_threads,
                        &g_first_rank, run_cases, NULL);
  return th_main(argc, argv, "", tag, sizeof tag, &g_threads, run_cases, NULL);
}

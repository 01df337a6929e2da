/* The multi-rank suite on the host backend: run under symheap-run (ranks as
 * processes) or with --threads N (ranks as threads of one process).  Every
 * rank runs every case; see harness.h for how results are counted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"

static char tag[32];
static int g_threads;

static int g_first_rank; /* first rank of this process (mixed mode) */

/* Process-wide counts are only stable while no rank is working: take them
 * between two barriers, and with thread-ranks on the process's first rank
 * alone (the count itself opens a descriptor). */
static int counts_here(th_ctx_t *c) {
  return !g_threads || c->rank == g_first_rank;
}
static void quiet_counts(th_ctx_t *c, int *fds, int *maps) {
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (counts_here(c)) {
    *fds = th_count_fds();
    /* Every mapping, and the memfd mappings alone (kept apart so that the
     * check still bites where a tool makes the total move). */
    *maps = th_count_maps() * 100000 + th_count_symheap_maps();
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
}

static unsigned char pattern(int rank, size_t i) {
  return (unsigned char)(i * 2654435761u >> 13) ^
         (unsigned char)(rank * 37 + 11);
}

static void barrier(th_ctx_t *c) { CHECK_OK(symheap_comm_barrier(c->comm)); }

/* A comm's stats with its heap trimmed and its reservation (made at the
 * first symheap_malloc, kept until the comm goes) left out: what must
 * return to where it was once every window is freed. */
static symheap_comm_stats_t settled(symheap_comm_t comm, int n) {
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_heap_trim(comm));
  CHECK_OK(symheap_comm_get_stats(comm, &s));
  s.va_reserved -= s.heap_reserved * (uint64_t)n;
  s.heap_reserved = 0;
  return s;
}

static symheap_comm_stats_t stats(th_ctx_t *c) {
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

/* The comm pad and the windows' signal slots, through the device view: the
 * pad starts clear, two live windows get different slots, a store into a
 * peer's signal lands in the peer's slot, and a slot is clear again for the
 * next window that gets it.  CPU stores stand in for a kernel's. */
static void case_signals(th_ctx_t *c) {
  symheap_window_t a, b;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &a));
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &b));
  symheap_device_window_t va, vb;
  CHECK_OK(symheap_window_device_view(a, &va));
  CHECK_OK(symheap_window_device_view(b, &vb));
  unsigned want = SYMHEAP_VIEW_FLAT | SYMHEAP_VIEW_PAD | SYMHEAP_VIEW_SIGNALS;
  CHECK((va.flags & want) == want && (vb.flags & want) == want,
        "view flags 0x%x / 0x%x", va.flags, vb.flags);
  CHECK(va.version == SYMHEAP_DEVICE_WINDOW_VERSION &&
            va.struct_size == sizeof va,
        "view version %u size %u", va.version, va.struct_size);
  CHECK(va.pad_base == vb.pad_base && va.pad_stride == vb.pad_stride &&
            va.pad_stride >= SYMHEAP_PAD_BYTES,
        "windows of one comm see different pads");
  CHECK(va.signal_offset != vb.signal_offset &&
            va.signal_count == SYMHEAP_SLOT_SIGNALS,
        "slots: offsets %llu / %llu, %u signals",
        (unsigned long long)va.signal_offset,
        (unsigned long long)vb.signal_offset, va.signal_count);
  if ((va.flags & want) != want || (vb.flags & want) != want)
    goto out;
  const unsigned char *pad = symheap_device_pad_ptr(&va, c->rank, 0);
  size_t nonzero = 0;
  for (size_t i = 0; i < SYMHEAP_PAD_BYTES; i++)
    nonzero += pad[i] != 0;
  CHECK(nonzero == 0, "%zu bytes of a fresh pad are not zero", nonzero);
  barrier(c);
  /* Rank r sets signal r of every peer's slot of a, and signal 7 of b. */
  for (int p = 0; p < c->n; p++) {
    __atomic_store_n(symheap_device_signal_ptr(&va, p, (unsigned)c->rank),
                     1000u + (unsigned)c->rank, __ATOMIC_RELEASE);
    __atomic_fetch_add(symheap_device_signal_ptr(&vb, p, 7), 1,
                       __ATOMIC_ACQ_REL);
  }
  barrier(c);
  for (int p = 0; p < c->n; p++) {
    uint64_t got = __atomic_load_n(
        symheap_device_signal_ptr(&va, c->rank, (unsigned)p), __ATOMIC_ACQUIRE);
    CHECK(got == 1000u + (unsigned)p, "signal from rank %d: %llu", p,
          (unsigned long long)got);
  }
  uint64_t adds = *symheap_device_signal_ptr(&vb, c->rank, 7);
  CHECK(adds == (uint64_t)c->n, "signal 7 of b counted %llu adds, not %d",
        (unsigned long long)adds, c->n);
  barrier(c);
out:
  CHECK_OK(symheap_free(c->comm, a));
  /* The next window takes a's slot (the lowest free), cleared. */
  symheap_window_t d;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &d));
  symheap_device_window_t vd;
  CHECK_OK(symheap_window_device_view(d, &vd));
  CHECK(vd.signal_offset == va.signal_offset, "slot not reused: %llu vs %llu",
        (unsigned long long)vd.signal_offset,
        (unsigned long long)va.signal_offset);
  if (vd.flags & SYMHEAP_VIEW_SIGNALS) {
    const uint64_t *sig = symheap_device_signal_ptr(&vd, c->rank, 0);
    size_t left = 0;
    for (size_t i = 0; i < SYMHEAP_PAD_SLOT_BYTES / 8; i++)
      left += sig[i] != 0;
    CHECK(left == 0, "%zu words of a reused slot are not clear", left);
  }
  barrier(c);
  CHECK_OK(symheap_free(c->comm, d));
  CHECK_OK(symheap_free(c->comm, b));
}

/* More windows than slots: the extra ones work, without signals. */
static void case_slots_exhausted(th_ctx_t *c) {
  enum { N = SYMHEAP_PAD_SLOTS + 2 };
  static __thread symheap_window_t w[N];
  int with = 0, without = 0;
  for (int i = 0; i < N; i++) {
    CHECK_OK(symheap_malloc(c->comm, 64, 0, &w[i]));
    symheap_device_window_t v;
    CHECK_OK(symheap_window_device_view(w[i], &v));
    if (v.flags & SYMHEAP_VIEW_SIGNALS)
      with++;
    else
      without++;
  }
  CHECK(with == SYMHEAP_PAD_SLOTS && without == 2,
        "%d windows with slots, %d without", with, without);
  for (int i = 0; i < N; i++)
    CHECK_OK(symheap_free(c->comm, w[i]));
}

/* One sub-communicator: sizes, ranks, world ranks, and a window on it that
 * maps its members only and carries their world ranks. */
static void check_split(th_ctx_t *c, symheap_comm_t sub, int color,
                        const int *colors, const char *what) {
  int m = 0, want_rank = -1, want_world[64];
  for (int p = 0; p < c->n; p++)
    if (colors[p] == color) {
      if (p == c->rank)
        want_rank = m;
      want_world[m++] = p;
    }
  int rank = -1, size = -1;
  CHECK_OK(symheap_comm_rank(sub, &rank));
  CHECK_OK(symheap_comm_size(sub, &size));
  CHECK(rank == want_rank && size == m, "%s: rank %d of %d, expected %d of %d",
        what, rank, size, want_rank, m);
  if (rank != want_rank || size != m)
    return;
  for (int r = 0; r < m; r++) {
    int wr = -1;
    CHECK_OK(symheap_comm_world_rank(sub, r, &wr));
    CHECK(wr == want_world[r], "%s: rank %d is world rank %d, not %d", what, r,
          wr, want_world[r]);
  }
  symheap_window_t w;
  CHECK_OK(symheap_malloc(sub, 8192, 0, &w));
  int *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  if (mine)
    mine[7] = 1000 + c->rank;
  CHECK_OK(symheap_comm_barrier(sub));
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(v.nranks == m && v.rank == rank, "%s: view of %d ranks", what,
        v.nranks);
  for (int r = 0; r < m && r < SYMHEAP_DEVICE_MAX_PEERS; r++) {
    const int *pp = symheap_device_peer_ptr(&v, r, 0);
    CHECK(v.world_ranks[r] == want_world[r] && pp[7] == 1000 + want_world[r],
          "%s: view rank %d: world %d, data %d", what, r, v.world_ranks[r],
          pp[7]);
  }
  CHECK(m >= SYMHEAP_DEVICE_MAX_PEERS || v.world_ranks[m] == -1,
        "%s: world_ranks past nranks", what);
  uint64_t per[64];
  CHECK_OK(symheap_comm_get_mapped_per_peer(sub, per, m));
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(sub, &info));
  for (int r = 0; r < m; r++) /* pad + this window, every member */
    CHECK(per[r] >= 2 * info.granularity, "%s: %llu bytes of rank %d mapped",
          what, (unsigned long long)per[r], r);
  CHECK_ERR(symheap_comm_get_mapped_per_peer(sub, per, m + 1),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_OK(symheap_comm_barrier(sub));
  CHECK_OK(symheap_free(sub, w));
}

/* Pairs, halves, strided groups, and a rank that opts out. */
static void case_split(th_ctx_t *c) {
  int fds0 = 0, maps0 = 0;
  quiet_counts(c, &fds0, &maps0);
  symheap_comm_stats_t s0 = stats(c);
  const char *names[] = {"pairs", "halves", "strided", "opt-out"};
  for (int kind = 0; kind < 4; kind++) {
    int colors[64];
    for (int p = 0; p < c->n; p++)
      colors[p] = kind == 0   ? p / 2
                  : kind == 1 ? (p < c->n / 2)
                  : kind == 2 ? p % 2
                              : (p == 0 ? SYMHEAP_COLOR_NONE : 5);
    /* key reverses nothing here but must be honoured: strided groups are
     * keyed by descending rank and checked in that order below */
    symheap_comm_t sub = NULL;
    CHECK_OK(symheap_comm_split(c->comm, colors[c->rank], 0, &sub));
    if (colors[c->rank] == SYMHEAP_COLOR_NONE) {
      CHECK(sub == NULL, "opted out but got a comm");
    } else if (sub) {
      check_split(c, sub, colors[c->rank], colors, names[kind]);
      CHECK_OK(symheap_comm_destroy(sub));
    }
    barrier(c);
  }
  /* key orders the members: descending world rank */
  symheap_comm_t rev = NULL;
  CHECK_OK(symheap_comm_split(c->comm, 0, c->n - c->rank, &rev));
  if (rev) {
    int r = -1, wr = -1;
    CHECK_OK(symheap_comm_rank(rev, &r));
    CHECK_OK(symheap_comm_world_rank(rev, 0, &wr));
    CHECK(r == c->n - 1 - c->rank && wr == c->n - 1,
          "split by descending key: rank %d, rank 0 is world %d", r, wr);
    CHECK_OK(symheap_comm_destroy(rev));
  }
  CHECK_ERR(symheap_comm_split(c->comm, -7, 0, &rev), SYMHEAP_ERR_INVALID_ARG);
  barrier(c);
  int fds1 = 0, maps1 = 0;
  quiet_counts(c, &fds1, &maps1);
  symheap_comm_stats_t s1 = stats(c);
  CHECK(fds1 == fds0 && maps1 == maps0 && memcmp(&s0, &s1, sizeof s0) == 0,
        "after splits: fds %d -> %d, mappings %d -> %d", fds0, fds1, maps0,
        maps1);
}

/* The node-local team: every rank here shares a host; as processes, ranks
 * pretend to be two hosts of n/2 with SYMHEAP_HOST_ID. */
static void case_split_local(th_ctx_t *c) {
  int colors[64];
  int pretend = !g_threads && c->n >= 4;
  for (int p = 0; p < c->n; p++)
    colors[p] = pretend ? p / (c->n / 2) : 0;
  if (pretend)
    setenv("SYMHEAP_HOST_ID", colors[c->rank] ? "host-b" : "host-a", 1);
  symheap_comm_t local = NULL;
  CHECK_OK(symheap_comm_split_local(c->comm, &local));
  if (pretend)
    unsetenv("SYMHEAP_HOST_ID");
  if (local) {
    check_split(c, local, colors[c->rank], colors, "local");
    CHECK_OK(symheap_comm_destroy(local));
  }
}

/* Whether addr lies in a mapping of this process with no access ("---p"):
 * another host's place in a flat range must fault, not read zeros. */
static int inaccessible(const void *addr) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  int found = 0;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 &&
        (unsigned long)addr >= lo && (unsigned long)addr < hi)
      found = strncmp(perms, "---", 3) == 0 ? 1 : -1;
  }
  if (f)
    fclose(f);
  return found == 1;
}

/* A comm over two hosts: as processes (n >= 4), the first half of the ranks
 * pretend to be host A and the rest host B (SYMHEAP_HOST_ID).  Each rank maps
 * and reaches only its own host's ranks; the comm, its agreements and its
 * windows span both.  As threads every rank shares one host. */
static void case_two_hosts(th_ctx_t *c) {
  int pretend = !g_threads && c->n >= 4;
  int half = c->n / 2, mine_host = pretend ? c->rank >= half : 0;
  symheap_comm_stats_t s0 = stats(c);
  if (pretend)
    setenv("SYMHEAP_HOST_ID", mine_host ? "host-b" : "host-a", 1);
  symheap_comm_t two = NULL;
  CHECK_OK(symheap_comm_split(c->comm, 0, c->rank, &two));
  if (pretend)
    unsetenv("SYMHEAP_HOST_ID");
  if (!two)
    return;
  int n = c->n, team_n = pretend ? (mine_host ? n - half : half) : n;
  int first = pretend && mine_host ? half : 0;
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(two, &info));
  CHECK(info.local_nranks == team_n && info.nhosts == (pretend ? 2 : 1) &&
            info.local_rank == c->rank - first,
        "team: local rank %d of %d on %d hosts (expected %d of %d on %d)",
        info.local_rank, info.local_nranks, info.nhosts, c->rank - first,
        team_n, pretend ? 2 : 1);
  int ranks[64], count = -1;
  CHECK_OK(symheap_comm_local_ranks(two, ranks, 64, &count));
  CHECK(count == team_n, "local_ranks: %d ranks, expected %d", count, team_n);
  for (int i = 0; i < count && i < 64; i++)
    CHECK(ranks[i] == first + i, "local_ranks[%d] = %d", i, ranks[i]);
  CHECK_ERR(symheap_comm_local_ranks(two, NULL, 4, &count),
            SYMHEAP_ERR_INVALID_ARG);
  const size_t size = 3 * 4096 + 100;
  symheap_comm_stats_t t0 = SYMHEAP_COMM_STATS_INIT, t1 = t0;
  CHECK_OK(symheap_comm_get_stats(two, &t0));
  symheap_window_t w = NULL;
  CHECK_OK(symheap_malloc(two, size, 0, &w));
  unsigned char *mine = NULL, *base = NULL;
  size_t stride = 0;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  CHECK_OK(symheap_window_flat_base(w, (void **)&base, &stride));
  if (!w || !mine || !base) {
    CHECK_OK(symheap_comm_destroy(two));
    return;
  }
  for (size_t i = 0; i < size; i++)
    mine[i] = pattern(c->rank, i);
  CHECK_OK(symheap_comm_barrier(two));
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(v.version == 3 && v.local_rank == c->rank - first &&
            v.local_nranks == team_n,
        "view v%u: local rank %d of %d", v.version, v.local_rank,
        v.local_nranks);
  CHECK(!!(v.flags & SYMHEAP_VIEW_PARTIAL) == pretend,
        "view PARTIAL flag %d with %d hosts",
        !!(v.flags & SYMHEAP_VIEW_PARTIAL), pretend ? 2 : 1);
  uint64_t per[64] = {0};
  CHECK_OK(symheap_comm_get_mapped_per_peer(two, per, n));
  for (int p = 0; p < n; p++) {
    int here = p >= first && p < first + team_n;
    CHECK(symheap_device_reachable(&v, p) == here,
          "view says rank %d is %sreachable", p, here ? "not " : "");
    CHECK((v.peer_ptrs[p] != NULL) == here, "view peer_ptrs[%d] = %p", p,
          v.peer_ptrs[p]);
    CHECK((per[p] != 0) == here, "%llu bytes of rank %d mapped here",
          (unsigned long long)per[p], p);
    unsigned char *pp = NULL;
    if (!here) {
      CHECK_ERR(symheap_window_peer_ptr(w, p, (void **)&pp),
                SYMHEAP_ERR_UNSUPPORTED);
      CHECK(strstr(symheap_last_error(), "another host") != NULL,
            "peer_ptr of a remote rank: '%s'", symheap_last_error());
      CHECK(inaccessible(base + (size_t)p * stride),
            "rank %d's place in the flat range is accessible", p);
      continue;
    }
    CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&pp));
    CHECK(pp == base + (size_t)p * stride, "rank %d: peer_ptr %p", p,
          (void *)pp);
    size_t bad = size;
    for (size_t i = 0; pp && i < size && bad == size; i++)
      if (pp[i] != pattern(p, i))
        bad = i;
    CHECK(bad == size, "rank %d's copy differs at byte %zu", p, bad);
  }
  /* Multicast spans one host. */
  symheap_window_t mw = NULL;
  if (pretend) {
    CHECK_ERR(symheap_malloc(two, 4096, SYMHEAP_WINDOW_MULTICAST, &mw),
              SYMHEAP_ERR_UNSUPPORTED);
  }
  /* Allgather and agreement still span both hosts. */
  int all[64];
  CHECK_OK(symheap_comm_allgather(two, &c->rank, all, sizeof(int)));
  for (int p = 0; p < n && p < 64; p++)
    CHECK(all[p] == p, "allgather[%d] = %d", p, all[p]);
  CHECK_OK(symheap_comm_barrier(two));
  CHECK_OK(symheap_free(two, w));
  t1 = settled(two, n);
  CHECK(memcmp(&t0, &t1, sizeof t0) == 0,
        "left over: %llu windows, %llu bytes mapped (%llu before)",
        (unsigned long long)t1.windows_live,
        (unsigned long long)t1.bytes_mapped,
        (unsigned long long)t0.bytes_mapped);
  CHECK_OK(symheap_comm_destroy(two));
  symheap_comm_stats_t s1 = stats(c);
  CHECK(memcmp(&s0, &s1, sizeof s0) == 0, "parent comm's counts changed");
}

/* Registering a live range again shares its mapping; the mapping goes with
 * the last handle, whichever order they go in. */
static void case_reregister_shared(th_ctx_t *c) {
  symheap_comm_stats_t s0 = stats(c);
  char *buf = NULL;
  CHECK_OK(symheap_mem_alloc(c->comm, 1 << 20, (void **)&buf));
  if (!buf)
    return;
  symheap_window_t w[3];
  CHECK_OK(symheap_window_register(c->comm, buf + 4096, 65536, 0, &w[0]));
  symheap_comm_stats_t s1 = stats(c);
  CHECK_OK(symheap_window_register(c->comm, buf + 4096, 65536, 0, &w[1]));
  CHECK_OK(symheap_window_register(c->comm, buf + 4096, 65536, 0, &w[2]));
  symheap_comm_stats_t s2 = stats(c);
  CHECK(w[1] != w[0] && w[2] != w[1], "re-registration returned an old handle");
  CHECK(
      s2.va_reserved == s1.va_reserved && s2.bytes_mapped == s1.bytes_mapped &&
          s2.windows_live == s1.windows_live + 2 &&
          s2.bytes_registered == s1.bytes_registered + 2 * 65536,
      "sharing: VA %llu -> %llu, mapped %llu -> %llu, windows %llu -> %llu",
      (unsigned long long)s1.va_reserved, (unsigned long long)s2.va_reserved,
      (unsigned long long)s1.bytes_mapped, (unsigned long long)s2.bytes_mapped,
      (unsigned long long)s1.windows_live, (unsigned long long)s2.windows_live);
  void *b0 = NULL, *b2 = NULL;
  size_t st0 = 0, st2 = 0;
  CHECK_OK(symheap_window_flat_base(w[0], &b0, &st0));
  CHECK_OK(symheap_window_flat_base(w[2], &b2, &st2));
  CHECK(b0 == b2 && st0 == st2, "shared handles see different mappings");
  buf[4096 + 10] = (char)(c->rank + 1);
  barrier(c);
  /* The first handle goes; the others still reach every peer. */
  CHECK_OK(symheap_window_deregister(c->comm, w[0]));
  CHECK_ERR(symheap_window_size(w[0], &st0), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_mem_free(c->comm, buf), SYMHEAP_ERR_INVALID_ARG);
  for (int p = 0; p < c->n; p++) {
    char *pp = NULL;
    CHECK_OK(symheap_window_peer_ptr(w[2], p, (void **)&pp));
    CHECK(pp && pp[10] == (char)(p + 1), "after the owner went: peer %d", p);
  }
  symheap_comm_stats_t s3 = stats(c);
  CHECK(s3.va_reserved == s1.va_reserved &&
            s3.windows_live == s1.windows_live + 1,
        "owner gone: VA %llu, windows %llu", (unsigned long long)s3.va_reserved,
        (unsigned long long)s3.windows_live);
  barrier(c);
  CHECK_OK(symheap_window_deregister(c->comm, w[2]));
  CHECK_OK(symheap_window_deregister(c->comm, w[1]));
  /* A different range of the same memory: its own mapping of that range. */
  symheap_window_t x, y;
  CHECK_OK(symheap_window_register(c->comm, buf, 8192, 0, &x));
  symheap_comm_stats_t s4 = stats(c);
  CHECK_OK(symheap_window_register(c->comm, buf + 4096, 8192, 0, &y));
  symheap_comm_stats_t s5 = stats(c);
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  size_t g = info.granularity;
  /* the granules [4096, 4096 + 8192) touches, for every rank; or, where
   * the adaptor maps whole allocations only, the allocation's */
  size_t want = ((4096 + 8192 + g - 1) / g - 4096 / g) * g;
  size_t whole = ((1u << 20) + g - 1) / g * g;
  uint64_t got = s5.va_reserved - s4.va_reserved;
  CHECK(got == want * (size_t)c->n || got == whole * (size_t)c->n,
        "overlapping range reserved %llu bytes, expected %zu (its granules) "
        "or %zu (the whole allocation)",
        (unsigned long long)got, want * (size_t)c->n, whole * (size_t)c->n);
  CHECK_OK(symheap_window_deregister(c->comm, y));
  CHECK_OK(symheap_window_deregister(c->comm, x));
  CHECK_OK(symheap_mem_free(c->comm, buf));
  /* symheap_malloc's window shared, then freed first: the memory stays
   * until the sharer goes. */
  symheap_window_t m, sh;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &m));
  void *mp = NULL;
  CHECK_OK(symheap_window_local_ptr(m, &mp));
  CHECK_OK(symheap_window_register(c->comm, mp, 4096, 0, &sh));
  CHECK_OK(symheap_free(c->comm, m));
  symheap_comm_stats_t s6 = stats(c);
  /* Heap or not, the block stays. */
  CHECK(s6.allocations_live + s6.heap_allocations ==
            s0.allocations_live + s0.heap_allocations + 1,
        "memory freed while a sharer maps it");
  CHECK_OK(symheap_window_deregister(c->comm, sh));
  symheap_comm_stats_t s7 = stats(c);
  CHECK(s7.allocations_live == s0.allocations_live &&
            s7.heap_allocations == s0.heap_allocations &&
            s7.va_reserved == s0.va_reserved &&
            s7.windows_live == s0.windows_live &&
            s7.bytes_registered == s0.bytes_registered,
        "after every handle: allocations %llu, VA %llu",
        (unsigned long long)s7.allocations_live,
        (unsigned long long)s7.va_reserved);
}

/* One 1 GiB buffer registered 10,000 times (1,000 with more than 2 ranks,
 * and a 64 MiB buffer 500 times under ASan or valgrind, whose bookkeeping of
 * every mapping is slow): the reserved VA does not grow. */
static void case_reregister_many(th_ctx_t *c) {
  const char *tool = getenv("SYMHEAP_TEST_UNDER_TOOL");
  int n = tool ? 500 : c->n == 2 ? 10000 : 1000;
  const size_t size = tool ? (size_t)64 << 20 : (size_t)1 << 30;
  int fds0 = 0, maps0 = 0;
  quiet_counts(c, &fds0, &maps0);
  symheap_comm_stats_t s0 = stats(c);
  void *buf = NULL;
  CHECK_OK(symheap_mem_alloc(c->comm, size, &buf));
  if (!buf)
    return;
  symheap_window_t *w = calloc((size_t)n, sizeof *w);
  CHECK_OK(symheap_window_register(c->comm, buf, size, 0, &w[0]));
  symheap_comm_stats_t s1 = stats(c);
  int ok = 1;
  for (int i = 1; i < n && ok; i++) {
    symheap_result_t r = symheap_window_register(c->comm, buf, size, 0, &w[i]);
    CHECK_OK(r);
    ok = r == SYMHEAP_SUCCESS;
  }
  symheap_comm_stats_t s2 = stats(c);
  CHECK(
      s2.va_reserved == s1.va_reserved && s2.bytes_mapped == s1.bytes_mapped &&
          s2.windows_live == s0.windows_live + (uint64_t)n,
      "%d registrations of %zu MiB: VA reserved %llu -> %llu, windows %llu", n,
      size >> 20, (unsigned long long)s1.va_reserved,
      (unsigned long long)s2.va_reserved, (unsigned long long)s2.windows_live);
  if (c->rank == 0)
    printf("# %d live registrations of one %zu MiB buffer: VA reserved "
           "%llu MiB after the first, %llu MiB after the last\n",
           n, size >> 20, (unsigned long long)(s1.va_reserved >> 20),
           (unsigned long long)(s2.va_reserved >> 20));
  for (int i = 0; i < n; i++) /* owner first, then every sharer */
    if (w[i])
      CHECK_OK(symheap_window_deregister(c->comm, w[i]));
  free(w);
  CHECK_OK(symheap_mem_free(c->comm, buf));
  int fds1 = 0, maps1 = 0;
  quiet_counts(c, &fds1, &maps1);
  symheap_comm_stats_t s3 = stats(c);
  s3.mappings_cached = s0.mappings_cached = 0;
  CHECK(fds1 == fds0 && maps1 == maps0 && s3.va_reserved == s0.va_reserved &&
            s3.windows_live == s0.windows_live &&
            s3.bytes_mapped == s0.bytes_mapped,
        "after: fds %d -> %d, maps %d -> %d, VA %llu -> %llu", fds0, fds1,
        maps0, maps1, (unsigned long long)s0.va_reserved,
        (unsigned long long)s3.va_reserved);
}

/* 2,000 malloc/free cycles leave fds, mappings and accounting where they
 * were. */
static void case_cycles(th_ctx_t *c) {
  int fds = 0, maps = 0, fds2 = 0, maps2 = 0;
  quiet_counts(c, &fds, &maps);
  symheap_comm_stats_t before = stats(c);
  for (int i = 0; i < 2000; i++) {
    symheap_window_t w;
    symheap_result_t r = symheap_malloc(c->comm, 65536, 0, &w);
    if (r != SYMHEAP_SUCCESS) {
      CHECK_OK(r);
      break;
    }
    int *mine = NULL;
    CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
    if (mine)
      *mine = i;
    CHECK_OK(symheap_free(c->comm, w));
  }
  quiet_counts(c, &fds2, &maps2);
  symheap_comm_stats_t after = stats(c);
  CHECK(fds2 == fds, "fd count %d -> %d after 2000 cycles", fds, fds2);
  CHECK(maps2 == maps,
        "mappings (all x 100000 + memfd) %d -> %d after 2000 cycles", maps,
        maps2);
  CHECK(memcmp(&before, &after, sizeof before) == 0,
        "accounting moved after 2000 cycles");
}

static void case_info(th_ctx_t *c) {
  const char *want = getenv("SYMHEAP_DEVICE");
  if (!want || strcmp(want, "auto") == 0)
    want = "host";
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  CHECK(info.rank == c->rank && info.nranks == c->n, "info rank %d/%d",
        info.rank, info.nranks);
  CHECK(strcmp(info.device_adaptor, want) == 0,
        "device adaptor '%s', "
        "expected '%s'",
        info.device_adaptor, want);
  /* Under mpirun, symheap_comm_init_env joins through the MPI ccl; with
   * SYMHEAP_CCL naming a plugin's ccl, through that. */
  const char *named = getenv("SYMHEAP_CCL");
  const char *ccl = g_threads ? "local"
                    : named && strcmp(named, "auto") && strcmp(named, "local")
                        ? named
                    : getenv("OMPI_COMM_WORLD_SIZE") ? "mpi"
                                                     : "local";
  CHECK(strcmp(info.ccl_adaptor, ccl) == 0, "ccl '%s', expected '%s'",
        info.ccl_adaptor, ccl);
  CHECK(info.granularity >= 4096 &&
            (info.granularity & (info.granularity - 1)) == 0,
        "granularity %zu", info.granularity);
  CHECK(info.device[0] != '\0', "no device name");
  if (strcmp(want, "host") == 0)
    CHECK(!info.multicast_available, "host backend claims multicast");
  symheap_comm_info_t bad = SYMHEAP_COMM_INFO_INIT;
  bad.struct_size = 0;
  CHECK_ERR(symheap_comm_get_info(c->comm, &bad), SYMHEAP_ERR_INVALID_ARG);
  /* Earlier cases left heap chunks committed: release them, so that the
   * heap's growth below is counted from none. */
  CHECK_OK(symheap_heap_trim(c->comm));
  symheap_heap_info_t hi = SYMHEAP_HEAP_INFO_INIT;
  CHECK_OK(symheap_heap_get_info(c->comm, &hi));
  symheap_comm_stats_t s0 = stats(c), s;
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 10000, 0, &w));
  s = stats(c);
  uint64_t g = info.granularity, alloc = (10000 + g - 1) / g * g;
  if (hi.enabled) {
    /* A heap allocation: the heap commits its first chunk (mapped from
     * every rank, one handle here); no allocation of its own. */
    CHECK(s.windows_live == s0.windows_live + 1 &&
              s.bytes_registered == s0.bytes_registered + 10000 &&
              s.allocations_live == s0.allocations_live &&
              s.heap_allocations == s0.heap_allocations + 1 &&
              s.heap_used == s0.heap_used + 10240 &&
              s.heap_committed == s0.heap_committed + hi.chunk_size &&
              s.bytes_mapped == s0.bytes_mapped + hi.chunk_size * c->n &&
              s.descriptors_held == s0.descriptors_held + 1,
          "heap stats: windows %llu registered %llu allocs %llu heap used "
          "%llu committed %llu mapped %llu fds %llu",
          (unsigned long long)s.windows_live,
          (unsigned long long)s.bytes_registered,
          (unsigned long long)s.allocations_live,
          (unsigned long long)s.heap_used, (unsigned long long)s.heap_committed,
          (unsigned long long)s.bytes_mapped,
          (unsigned long long)s.descriptors_held);
    CHECK_OK(symheap_free(c->comm, w));
    CHECK_OK(symheap_heap_trim(c->comm));
    s = stats(c);
    CHECK(memcmp(&s, &s0, sizeof s) == 0,
          "stats did not return to where they were");
    return;
  }
  uint64_t mapped = alloc * (uint64_t)(c->n + 1);
  CHECK(s.windows_live == s0.windows_live + 1 &&
            s.bytes_registered == s0.bytes_registered + 10000 &&
            s.allocations_live == s0.allocations_live + 1 &&
            s.bytes_allocated == s0.bytes_allocated + alloc &&
            s.bytes_mapped == s0.bytes_mapped + mapped &&
            s.va_reserved == s0.va_reserved + mapped &&
            /* the memory's handle, and its kept exported descriptor where
             * handles are descriptors */
            (s.descriptors_held == s0.descriptors_held + 2 ||
             (s.descriptors_held == s0.descriptors_held + 1 &&
              !info.window_cache)),
        "stats: windows %llu registered %llu allocs %llu mapped %llu fds %llu",
        (unsigned long long)s.windows_live,
        (unsigned long long)s.bytes_registered,
        (unsigned long long)s.allocations_live,
        (unsigned long long)s.bytes_mapped,
        (unsigned long long)s.descriptors_held);
  /* The comm's own pad: SYMHEAP_PAD_BYTES per rank in whole granules,
   * mapped flat, no window. */
  uint64_t pad = (SYMHEAP_PAD_BYTES + g - 1) / g * g;
  CHECK(s0.windows_live == 0 && s0.allocations_live == 1 &&
            s0.bytes_allocated == pad && s0.bytes_mapped == pad * (c->n + 1u),
        "the comm's pad: windows %llu allocations %llu bytes %llu mapped %llu",
        (unsigned long long)s0.windows_live,
        (unsigned long long)s0.allocations_live,
        (unsigned long long)s0.bytes_allocated,
        (unsigned long long)s0.bytes_mapped);
  CHECK_OK(symheap_free(c->comm, w));
  s = stats(c);
  CHECK(memcmp(&s, &s0, sizeof s) == 0,
        "stats did not return to where they were");
}

/* Deregistered mappings are kept and reused; never when a rank's memory
 * changed; dropped when a peer frees what they map. */
static void case_window_cache(th_ctx_t *c) {
  const size_t size = 8192;
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  if (info.window_cache == 0) {
    /* No descriptor handles (adaptor '...'): the cache is off, and a
     * deregistration must keep nothing. */
    symheap_comm_stats_t b = stats(c);
    void *p = NULL;
    CHECK_OK(symheap_mem_alloc(c->comm, size, &p));
    symheap_window_t x;
    CHECK_OK(symheap_window_register(c->comm, p, size, 0, &x));
    CHECK_OK(symheap_window_deregister(c->comm, x));
    symheap_comm_stats_t a = stats(c);
    CHECK_OK(symheap_mem_free(c->comm, p));
    CHECK(a.mappings_cached == 0 && b.mappings_cached == 0,
          "adaptor '%s' has the cache off but kept %llu mappings",
          info.device_adaptor, (unsigned long long)a.mappings_cached);
    if (c->rank == 0)
      printf("# %s: adaptor '%s' has no descriptor handles: cache off, "
             "nothing kept\n",
             tag, info.device_adaptor);
    return;
  }
  int last = c->n - 1;
  symheap_comm_stats_t s0 = stats(c);
  char *buf = NULL, *other = NULL;
  CHECK_OK(symheap_mem_alloc(c->comm, size, (void **)&buf));
  CHECK_OK(symheap_mem_alloc(c->comm, size, (void **)&other));
  if (!buf || !other)
    return;
  symheap_window_t w;
  char *base1 = NULL, *base2 = NULL;
  size_t stride;
  memset(buf, 'a' + c->rank, size);
  CHECK_OK(symheap_window_register(c->comm, buf, size, 0, &w));
  CHECK_OK(symheap_window_flat_base(w, (void **)&base1, &stride));
  CHECK_OK(symheap_window_deregister(c->comm, w));
  symheap_comm_stats_t s = stats(c);
  CHECK(s.mappings_cached == s0.mappings_cached + 1 && s.windows_live == 0,
        "mappings kept %llu, expected %llu",
        (unsigned long long)s.mappings_cached,
        (unsigned long long)s0.mappings_cached + 1);
  /* The same memory again: the kept mapping serves it. */
  CHECK_OK(symheap_window_register(c->comm, buf, size, 0, &w));
  CHECK_OK(symheap_window_flat_base(w, (void **)&base2, &stride));
  CHECK(base1 == base2, "the kept mapping was not reused (%p, then %p)",
        (void *)base1, (void *)base2);
  s = stats(c);
  CHECK(s.mappings_cached == s0.mappings_cached, "a reused mapping is still "
                                                 "counted as kept");
  for (int p = 0; p < c->n; p++)
    CHECK(base2 && base2[(size_t)p * stride] == 'a' + p, "peer %d data", p);
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_window_deregister(c->comm, w));
  /* The last rank swaps its memory: nobody may reuse a mapping of the old. */
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == last) {
    CHECK_OK(symheap_mem_free(c->comm, buf));
    CHECK_OK(symheap_mem_alloc(c->comm, size, (void **)&buf));
    if (buf)
      memset(buf, 'z', size);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (!buf)
    return;
  CHECK_OK(symheap_window_register(c->comm, buf, size, 0, &w));
  char *base3 = NULL;
  CHECK_OK(symheap_window_flat_base(w, (void **)&base3, &stride));
  CHECK(base3 && base3[(size_t)last * stride] == 'z' &&
            base3[(size_t)last * stride + size - 1] == 'z',
        "a stale mapping of rank %d's freed memory was reused", last);
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_window_deregister(c->comm, w));
  /* The last rank frees; the others drop their kept mappings of it at
   * their next free. */
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == last)
    CHECK_OK(symheap_mem_free(c->comm, buf));
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_mem_free(c->comm, other));
  s = stats(c);
  CHECK(s.mappings_cached == s0.mappings_cached,
        "a mapping of rank %d's freed memory is still kept", last);
  if (c->rank != last)
    CHECK_OK(symheap_mem_free(c->comm, buf));
  s = stats(c);
  CHECK(s.bytes_mapped == s0.bytes_mapped && s.va_reserved == s0.va_reserved &&
            s.allocations_live == s0.allocations_live,
        "mapped %llu, reserved %llu after everything was freed",
        (unsigned long long)s.bytes_mapped, (unsigned long long)s.va_reserved);
}

/* Handles are checked, not trusted: a released window's handle is refused
 * even when a new window's struct reuses its memory (it once released the
 * live window), and a destroyed comm's handle is refused too. */
static void case_stale_handles(th_ctx_t *c) {
  symheap_window_t a = NULL, b = NULL;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &a));
  CHECK_OK(symheap_free(c->comm, a));
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &b)); /* may reuse a's memory */
  int *pb = NULL, *pa = NULL;
  CHECK_OK(symheap_window_local_ptr(b, (void **)&pb));
  if (pb)
    *pb = 4242;
  CHECK(a != b, "a released handle came back for a new window");
  CHECK_ERR(symheap_window_local_ptr(a, (void **)&pa), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_free(c->comm, a), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_deregister(c->comm, a), SYMHEAP_ERR_INVALID_ARG);
  /* The live window is untouched. */
  int *again = NULL;
  CHECK_OK(symheap_window_local_ptr(b, (void **)&again));
  CHECK(again == pb && again && *again == 4242, "the live window changed");
  CHECK_OK(symheap_free(c->comm, b));
  /* A destroyed comm: every call on its handle refused, saying so. */
  symheap_comm_t sub = NULL;
  CHECK_OK(symheap_comm_split(c->comm, 0, c->rank, &sub));
  if (sub) {
    CHECK_OK(symheap_comm_destroy(sub));
    int r = -1;
    symheap_window_t w;
    CHECK_ERR(symheap_comm_rank(sub, &r), SYMHEAP_ERR_INVALID_ARG);
    CHECK(strstr(symheap_last_error(), "destroyed") != NULL, "%s",
          symheap_last_error());
    CHECK_ERR(symheap_comm_barrier(sub), SYMHEAP_ERR_INVALID_ARG);
    CHECK_ERR(symheap_malloc(sub, 4096, 0, &w), SYMHEAP_ERR_INVALID_ARG);
    CHECK_ERR(symheap_comm_destroy(sub), SYMHEAP_ERR_INVALID_ARG);
  }
}

/* A forked child cannot use its parent's comm: every collective fails,
 * saying so, destroy releases only the child's part, and the parent's job
 * goes on (before, the child's calls used the parent's sockets and
 * desynchronised the job). */
static void case_fork(th_ctx_t *c) {
  if (getenv("OMPI_COMM_WORLD_SIZE"))
    return; /* MPI forbids fork in its processes */
  /* Under valgrind, a fork of a threaded process "leaks" what the other
   * threads held (gone in the child), and the child's exit code says so:
   * the processes' run covers fork there. */
  const char *tool = getenv("SYMHEAP_TEST_UNDER_TOOL");
  if (g_threads && tool && strcmp(tool, "valgrind") == 0)
    return;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int bad = 0, v = c->rank, all[64];
    symheap_window_t w;
    bad |= symheap_comm_barrier(c->comm) != SYMHEAP_ERR_INVALID_ARG;
    bad |= strstr(symheap_last_error(), "fork") == NULL;
    bad |= symheap_comm_allgather(c->comm, &v, all, sizeof v) !=
           SYMHEAP_ERR_INVALID_ARG;
    bad |= symheap_malloc(c->comm, 4096, 0, &w) != SYMHEAP_ERR_INVALID_ARG;
    bad |= symheap_comm_destroy(c->comm) != SYMHEAP_SUCCESS;
    _exit(bad ? 1 : 0);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait failed");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child's calls on the parent's comm were not all refused "
        "(status %d)",
        status);
  /* The parent's job is intact. */
  symheap_window_t w;
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  CHECK_OK(symheap_free(c->comm, w));
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

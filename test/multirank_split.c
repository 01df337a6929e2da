/* The multi-rank suite (test_multirank.c): sub-communicators (pairs,
 * halves, strided, the local one) and a comm over two pretend hosts. */
#include "multirank.h"

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
void case_split(th_ctx_t *c) {
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
void case_split_local(th_ctx_t *c) {
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
void case_two_hosts(th_ctx_t *c) {
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

/* The symmetric heap (docs/heap.md), multi-rank: run under symheap-run
 * (ranks as processes), with --threads N, or under symheap-run with
 * --mixed T (T thread-ranks per process), on whichever SYMHEAP_DEVICE is
 * set.  --record runs the cases that need the recording adaptor (call
 * sequences, injected faults) and the heap's variables, as threads.
 * Chunks are small here (SYMHEAP_HEAP_CHUNK=1M unless set) so that growth
 * and trimming happen often. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mem/heap.h"
#include "boot/uid.h"

static char tag[32];
static int g_threads, g_first_rank;

static void barrier(th_ctx_t *c) { CHECK_OK(symheap_comm_barrier(c->comm)); }

static symheap_heap_info_t info(th_ctx_t *c) {
  symheap_heap_info_t i = SYMHEAP_HEAP_INFO_INIT;
  CHECK_OK(symheap_heap_get_info(c->comm, &i));
  return i;
}

static symheap_comm_stats_t stats(th_ctx_t *c) {
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s));
  return s;
}

static int cpu_access(th_ctx_t *c) {
  symheap_comm_info_t i = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &i));
  return i.cpu_access;
}

/* The same stream on every rank: the ranks make the same calls. */
static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static unsigned char pat(int rank, unsigned seed, size_t i) {
  return (unsigned char)(seed * 131u + i * 7u + (unsigned)rank * 29u);
}

typedef struct {
  symheap_window_t w;
  size_t size;
  unsigned seed;
  unsigned char *mine;
} blk_t;

static size_t round256(size_t v) { return (v + 255) / 256 * 256; }

static void fill(th_ctx_t *c, blk_t *b) {
  CHECK_OK(symheap_window_local_ptr(b->w, (void **)&b->mine));
  CHECK(b->mine && (uintptr_t)b->mine % SYMHEAP__HEAP_ALIGN == 0,
        "heap block at %p is not %u-aligned", (void *)b->mine,
        SYMHEAP__HEAP_ALIGN);
  if (b->mine && cpu_access(c))
    for (size_t i = 0; i < b->size; i++)
      b->mine[i] = pat(c->rank, b->seed, i);
}

/* Every rank's copy, through peer_ptr and through the flat base: all bytes
 * of small blocks, 97 spread over larger ones (first and last included). */
static void verify(th_ctx_t *c, const blk_t *b) {
  unsigned char *base = NULL;
  size_t stride = 0;
  CHECK_OK(symheap_window_flat_base(b->w, (void **)&base, &stride));
  int cpu = cpu_access(c);
  for (int p = 0; p < c->n; p++) {
    unsigned char *pp = NULL;
    CHECK_OK(symheap_window_peer_ptr(b->w, p, (void **)&pp));
    CHECK(pp && pp == base + (size_t)p * stride,
          "rank %d: peer_ptr %p, flat base + stride %p", p, (void *)pp,
          (void *)(base + (size_t)p * stride));
    if (!pp || !cpu)
      continue;
    size_t n = b->size <= 4096 ? b->size : 97;
    for (size_t k = 0; k < n; k++) {
      size_t i = b->size <= 4096 ? k : k * (b->size - 1) / 96;
      if (pp[i] != pat(p, b->seed, i)) {
        CHECK(0, "rank %d's copy of a %zu-byte block: byte %zu is 0x%02x, "
                 "expected 0x%02x",
              p, b->size, i, pp[i], pat(p, b->seed, i));
        break;
      }
    }
  }
}

static int do_malloc(th_ctx_t *c, blk_t *b, size_t size, unsigned seed) {
  b->size = size;
  b->seed = seed;
  b->w = NULL;
  symheap_result_t r = symheap_malloc(c->comm, size, 0, &b->w);
  CHECK(r == SYMHEAP_SUCCESS, "malloc(%zu): %s: %s", size, symheap_strerror(r),
        symheap_last_error());
  if (r != SYMHEAP_SUCCESS)
    return 0;
  fill(c, b);
  return 1;
}

/* info and comm stats against what is live (all heap blocks). */
static void accounting(th_ctx_t *c, const blk_t *live, int n) {
  symheap_heap_info_t h = info(c);
  symheap_comm_stats_t s = stats(c);
  uint64_t used = 0;
  for (int i = 0; i < n; i++)
    used += round256(live[i].size);
  CHECK(h.used == used && h.allocations == (uint64_t)n &&
            h.committed == h.chunks * h.chunk_size &&
            h.largest_free <= h.committed - h.used &&
            h.committed <= h.reserved,
        "heap info: used %llu (expected %llu), allocations %llu (expected "
        "%d), committed %llu in %llu chunks, largest free %llu",
        (unsigned long long)h.used, (unsigned long long)used,
        (unsigned long long)h.allocations, n,
        (unsigned long long)h.committed, (unsigned long long)h.chunks,
        (unsigned long long)h.largest_free);
  CHECK(s.heap_used == h.used && s.heap_allocations == h.allocations &&
            s.heap_committed == h.committed && s.heap_reserved == h.reserved,
        "comm stats disagree with the heap's info");
  /* No two live blocks overlap. */
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      const unsigned char *a = live[i].mine, *b = live[j].mine;
      CHECK(a + live[i].size <= b || b + live[j].size <= a,
            "blocks %d and %d overlap", i, j);
    }
}

static void free_all(th_ctx_t *c, blk_t *live, int *n) {
  while (*n > 0)
    CHECK_OK(symheap_free(c->comm, live[--*n].w));
}

/* A heap window is a window like any other: views, device view, signal
 * slot, and a window registered over part of it is a view of the heap. */
static void case_window(th_ctx_t *c) {
  blk_t b;
  if (!do_malloc(c, &b, 1, 1))
    return;
  barrier(c);
  verify(c, &b);
  symheap_heap_info_t h = info(c);
  CHECK(h.enabled && h.reserved >= h.chunk_size && h.chunks >= 1,
        "heap: enabled %d reserved %llu chunks %llu", h.enabled,
        (unsigned long long)h.reserved, (unsigned long long)h.chunks);
  unsigned char *base = NULL;
  size_t stride = 0;
  CHECK_OK(symheap_window_flat_base(b.w, (void **)&base, &stride));
  CHECK(stride == h.reserved, "stride %zu, heap reserve %llu", stride,
        (unsigned long long)h.reserved);
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(b.w, &v));
  CHECK((v.flags & SYMHEAP_VIEW_FLAT) && v.flat_base == base &&
            v.stride == stride && v.size == 1,
        "device view: flags %#x base %p stride %llu", v.flags, v.flat_base,
        (unsigned long long)v.stride);
  for (int p = 0; p < c->n && p < SYMHEAP_DEVICE_MAX_PEERS; p++)
    CHECK(symheap_device_peer_ptr(&v, p, 0) == base + (size_t)p * stride,
          "device view: rank %d's pointer", p);
  CHECK(v.flags & SYMHEAP_VIEW_SIGNALS, "a heap window has no signal slot");
  /* A view over part of a larger block. */
  blk_t big;
  if (do_malloc(c, &big, 10000, 2)) {
    barrier(c);
    symheap_window_t part;
    CHECK_OK(symheap_window_register(c->comm, big.mine + 512, 1024, 0, &part));
    unsigned char *pp = NULL, *bp = NULL;
    for (int p = 0; p < c->n; p++) {
      CHECK_OK(symheap_window_peer_ptr(part, p, (void **)&pp));
      CHECK_OK(symheap_window_peer_ptr(big.w, p, (void **)&bp));
      CHECK(pp == bp + 512, "view of rank %d: %p, block + 512 %p", p,
            (void *)pp, (void *)(bp + 512));
    }
    CHECK_ERR(symheap_free(c->comm, part), SYMHEAP_ERR_INVALID_ARG);
    verify(c, &big);
    /* The block freed first stays allocated while the view lives. */
    uint64_t n0 = info(c).allocations;
    CHECK_OK(symheap_free(c->comm, big.w));
    CHECK(info(c).allocations == n0, "a block with a live view was freed");
    barrier(c);
    if (cpu_access(c)) {
      unsigned char *v0 = NULL;
      CHECK_OK(symheap_window_peer_ptr(part, (c->rank + 1) % c->n,
                                       (void **)&v0));
      CHECK(v0 && v0[0] == pat((c->rank + 1) % c->n, 2, 512),
            "a view lost its data when its block was freed");
    }
    barrier(c);
    CHECK_OK(symheap_window_deregister(c->comm, part));
    CHECK(info(c).allocations == n0 - 1, "the last view did not free the "
                                         "block");
  }
  /* Heap memory outside any live block: refused on every rank. */
  {
    symheap_window_t stray;
    unsigned char *end = b.mine + 256 * 64; /* past block b, free */
    CHECK_ERR(symheap_window_register(c->comm, end, 256, 0, &stray),
              SYMHEAP_ERR_INVALID_ARG);
  }
  CHECK_OK(symheap_free(c->comm, b.w));
  CHECK_ERR(symheap_free(c->comm, b.w), SYMHEAP_ERR_INVALID_ARG);
  /* Deregistering a heap window frees it. */
  if (do_malloc(c, &b, 300, 3)) {
    CHECK_OK(symheap_window_deregister(c->comm, b.w));
    CHECK(info(c).allocations == 0, "deregistered heap window still counted");
  }
}

/* Thousands of random allocations and frees, the same on every rank. */
static void case_random(th_ctx_t *c) {
  enum { MAXLIVE = 48 };
  const char *tool = getenv("SYMHEAP_TEST_UNDER_TOOL");
  int steps = tool ? 300 : 2000;
  blk_t live[MAXLIVE];
  int n = 0;
  uint64_t s = 0x9e3779b97f4a7c15ull;
  size_t chunk = (size_t)info(c).chunk_size;
  for (int step = 0; step < steps; step++) {
    uint64_t x = rnd(&s);
    if (n < MAXLIVE && (n == 0 || x % 3 != 0)) {
      size_t size = ((size_t)1 << (x >> 8) % 17) + (size_t)(x >> 32) % 997;
      if (x % 61 == 0)
        size = chunk + chunk / 2 + 1; /* spans chunks */
      if (!do_malloc(c, &live[n], size, (unsigned)step))
        break;
      n++;
      barrier(c);
      verify(c, &live[n - 1]);
    } else {
      int k = (int)((x >> 16) % (uint64_t)n);
      verify(c, &live[k]);
      barrier(c); /* nobody reads it any more */
      CHECK_OK(symheap_free(c->comm, live[k].w));
      live[k] = live[--n];
    }
    if (step % 50 == 49) {
      accounting(c, live, n);
      for (int i = 0; i < n; i++)
        verify(c, &live[i]);
    }
    if (step % 400 == 399) {
      CHECK_OK(symheap_heap_trim(c->comm));
      for (int i = 0; i < n; i++)
        verify(c, &live[i]);
    }
    if (th_total_failures())
      break;
  }
  accounting(c, live, n);
  barrier(c);
  free_all(c, live, &n);
  accounting(c, live, 0);
}

/* Growth past many chunks: earlier blocks keep their addresses and data. */
static void case_growth(th_ctx_t *c) {
  enum { N = 24 };
  CHECK_OK(symheap_heap_trim(c->comm));
  symheap_heap_info_t h0 = info(c);
  size_t chunk = (size_t)h0.chunk_size;
  blk_t b[N + 1];
  unsigned char *at[N + 1];
  int n = 0;
  for (int i = 0; i <= N; i++) {
    /* The last spans several chunks (within SYMHEAP_HEAP_THRESHOLD). */
    size_t size = i < N ? chunk * 3 / 4 : chunk * 3 + 100;
    if (!do_malloc(c, &b[n], size, (unsigned)(1000 + i)))
      break;
    at[n] = b[n].mine;
    n++;
    barrier(c);
    for (int k = 0; k < n; k++) {
      unsigned char *now = NULL;
      CHECK_OK(symheap_window_local_ptr(b[k].w, (void **)&now));
      CHECK(now == at[k], "block %d moved from %p to %p", k, (void *)at[k],
            (void *)now);
      verify(c, &b[k]);
    }
  }
  symheap_heap_info_t h = info(c);
  CHECK(h.chunks >= (uint64_t)(N * 3 / 4 + 3) && h.chunks > h0.chunks,
        "%llu chunks after growing by %d blocks", (unsigned long long)h.chunks,
        n);
  accounting(c, b, n);
  barrier(c);
  free_all(c, b, &n);
}

/* Trim releases exactly the chunks no live block touches. */
static void case_trim(th_ctx_t *c) {
  enum { N = 8 };
  CHECK_OK(symheap_heap_trim(c->comm));
  CHECK(info(c).chunks == 0, "an empty heap kept chunks after trim");
  size_t chunk = (size_t)info(c).chunk_size;
  blk_t b[N];
  int n = 0;
  for (int i = 0; i < N && do_malloc(c, &b[n], chunk, (unsigned)(2000 + i));
       i++)
    n++;
  if (n < N)
    return;
  unsigned char *first = b[0].mine;
  barrier(c);
  for (int i = 0; i < N; i += 2)
    CHECK_OK(symheap_free(c->comm, b[i].w));
  for (int i = 1; i < N; i += 2)
    b[i / 2] = b[i];
  n = N / 2;
  CHECK(info(c).chunks == N, "freeing released chunks without a trim");
  CHECK_OK(symheap_heap_trim(c->comm));
  symheap_heap_info_t h = info(c);
  CHECK(h.chunks == N / 2 && h.committed == (N / 2) * (uint64_t)chunk &&
            h.largest_free == 0,
        "after trim: %llu chunks, %llu committed, largest free %llu",
        (unsigned long long)h.chunks, (unsigned long long)h.committed,
        (unsigned long long)h.largest_free);
  for (int i = 0; i < n; i++)
    verify(c, &b[i]);
  /* The next block goes to the lowest hole, the same place on every rank. */
  if (do_malloc(c, &b[n], chunk, 3000)) {
    CHECK(b[n].mine == first, "refilled at %p, first hole at %p",
          (void *)b[n].mine, (void *)first);
    n++;
  }
  accounting(c, b, n);
  barrier(c);
  free_all(c, b, &n);
  CHECK_OK(symheap_heap_trim(c->comm));
  h = info(c);
  CHECK(h.chunks == 0 && h.committed == 0 && h.used == 0,
        "empty heap after trim: %llu chunks", (unsigned long long)h.chunks);
  /* Reserve ahead: the allocation then fits without growing. */
  CHECK_OK(symheap_heap_reserve(c->comm, 3 * chunk + 1));
  h = info(c);
  CHECK(h.largest_free >= 3 * chunk + 1 && h.chunks == 4,
        "after reserve: largest free %llu, %llu chunks",
        (unsigned long long)h.largest_free, (unsigned long long)h.chunks);
  CHECK_OK(symheap_heap_reserve(c->comm, 100)); /* fits: nothing to do */
  CHECK(info(c).chunks == 4, "a reserve that fits committed more");
  CHECK_OK(symheap_heap_trim(c->comm));
}

/* Divergent calls: MISMATCH on every rank, and the heap unchanged. */
static void case_mismatch(th_ctx_t *c) {
  if (c->n < 2)
    return;
  blk_t keep;
  if (!do_malloc(c, &keep, 777, 4000))
    return;
  symheap_heap_info_t h0 = info(c), h1;
  symheap_comm_stats_t s0 = stats(c), s1;
  symheap_window_t w = NULL;
  CHECK_ERR(symheap_malloc(c->comm, 1000 + (size_t)(c->rank == c->n - 1), 0,
                           &w),
            SYMHEAP_ERR_MISMATCH);
  CHECK_ERR(symheap_heap_reserve(c->comm, c->rank == 0 ? 1 << 20 : 2 << 20),
            SYMHEAP_ERR_MISMATCH);
  h1 = info(c);
  s1 = stats(c);
  CHECK(memcmp(&h0, &h1, sizeof h0) == 0 && memcmp(&s0, &s1, sizeof s0) == 0,
        "a refused call changed the heap");
  /* A heap that diverged (here by hand, on the last rank): the offsets
   * differ, every rank says so, nothing changes. */
  symheap__heap_t *heap = c->comm->heap;
  uint64_t off = 0;
  int diverge = c->rank == c->n - 1;
  if (diverge) {
    CHECK(symheap__arena_fit(&heap->arena, 256, &off) == 0 &&
              symheap__arena_take(&heap->arena, off, 256) == 0,
          "could not take a block by hand");
    h0 = info(c);
  }
  symheap_result_t r = symheap_malloc(c->comm, 512, 0, &w);
  CHECK(r == SYMHEAP_ERR_MISMATCH &&
            strstr(symheap_last_error(), "heaps differ"),
        "diverged heaps: %s (%s)", symheap_strerror(r), symheap_last_error());
  h1 = info(c);
  CHECK(memcmp(&h0, &h1, sizeof h0) == 0, "a refused call changed the heap");
  if (diverge)
    symheap__arena_give(&heap->arena, off, 256);
  blk_t b;
  if (do_malloc(c, &b, 512, 4001)) { /* in step again */
    barrier(c);
    verify(c, &b);
    CHECK_OK(symheap_free(c->comm, b.w));
  }
  barrier(c);
  CHECK_OK(symheap_free(c->comm, keep.w));
}

/* 100,000 allocate/free cycles: descriptors and mappings stay flat. */
static void case_cycles(th_ctx_t *c) {
  int cycles = getenv("SYMHEAP_TEST_UNDER_TOOL") ? 3000 : 100000;
  int counts = !g_threads || c->rank == g_first_rank;
  blk_t warm;
  if (!do_malloc(c, &warm, 64, 1)) /* the heap's first chunk */
    return;
  barrier(c);
  int fds0 = counts ? th_count_fds() : 0;
  int maps0 = counts ? th_count_maps() : 0;
  int smaps0 = counts ? th_count_symheap_maps() : 0;
  barrier(c);
  uint64_t t0 = symheap__now_ns();
  for (int i = 0; i < cycles; i++) {
    symheap_window_t w;
    symheap_result_t r = symheap_malloc(c->comm, 1 + (size_t)(i % 4096), 0,
                                        &w);
    if (r == SYMHEAP_SUCCESS)
      r = symheap_free(c->comm, w);
    if (r != SYMHEAP_SUCCESS) {
      CHECK(0, "cycle %d: %s: %s", i, symheap_strerror(r),
            symheap_last_error());
      break;
    }
  }
  double us = (symheap__now_ns() - t0) / 1e3 / cycles;
  barrier(c);
  if (counts) {
    CHECK(th_count_fds() == fds0 && th_count_maps() == maps0 &&
              th_count_symheap_maps() == smaps0,
          "after %d cycles: fds %d -> %d, mappings %d -> %d, memfd mappings "
          "%d -> %d",
          cycles, fds0, th_count_fds(), maps0, th_count_maps(), smaps0,
          th_count_symheap_maps());
    if (c->rank == 0)
      printf("# %s: %d malloc+free cycles, %.1f us per pair; fds %d, "
             "mappings %d before and after\n",
             tag, cycles, us, fds0, maps0);
  }
  barrier(c);
  CHECK_OK(symheap_free(c->comm, warm.w));
  accounting(c, NULL, 0);
}

/* Above SYMHEAP_HEAP_THRESHOLD (8M here): its own registration. */
static void case_threshold(th_ctx_t *c) {
  symheap_heap_info_t h = info(c);
  symheap_comm_stats_t s0 = stats(c), s1;
  blk_t b;
  if (!do_malloc(c, &b, (size_t)h.threshold + 1, 5000))
    return;
  s1 = stats(c);
  CHECK(s1.allocations_live == s0.allocations_live + 1 &&
            s1.heap_allocations == s0.heap_allocations,
        "a block above the threshold came from the heap");
  barrier(c);
  verify(c, &b);
  barrier(c);
  CHECK_OK(symheap_free(c->comm, b.w));
}

static const th_case_t cases[] = {
    {"window", case_window},   {"random_sequences", case_random},
    {"growth", case_growth},   {"trim_reserve", case_trim},
    {"mismatch", case_mismatch}, {"threshold", case_threshold},
    {"cycles_flat", case_cycles},
};

/* th_run_cases keeps the ranks in step between cases (a barrier after
 * each), even after a failure. */
static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  th_run_cases(c, tag, cases, sizeof cases / sizeof cases[0]);
}

void test_heap_record(void); /* test_heap_record.c */

int main(int argc, char **argv) {
  setenv("SYMHEAP_HEAP_CHUNK", "1M", 0);
  setenv("SYMHEAP_HEAP_RESERVE", "256M", 0);
  setenv("SYMHEAP_HEAP_THRESHOLD", "8M", 0);
  if (argc == 2 && strcmp(argv[1], "--record") == 0) {
    test_heap_record();
    return th_total_failures() ? 1 : 0;
  }
  if (argc == 3 && strcmp(argv[1], "--mixed") == 0)
    return th_run_mixed(atoi(argv[2]), "heap_", tag, sizeof tag, &g_threads,
                        &g_first_rank, run_cases, NULL);
  return th_main(argc, argv, "heap_", tag, sizeof tag, &g_threads, run_cases,
                 NULL);
}

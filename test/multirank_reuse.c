/* The multi-rank suite (test_multirank.c): registering the same memory
 * again (one refcounted mapping, 1 GiB many times), the window cache, and
 * thousands of register/deregister cycles that leave nothing behind. */
#include "multirank.h"

/* Registering a live range again shares its mapping; the mapping goes with
 * the last handle, whichever order they go in. */
void case_reregister_shared(th_ctx_t *c) {
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
void case_reregister_many(th_ctx_t *c) {
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
void case_cycles(th_ctx_t *c) {
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

/* Deregistered mappings are kept and reused; never when a rank's memory
 * changed; dropped when a peer frees what they map. */
void case_window_cache(th_ctx_t *c) {
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

/* The multi-rank suite (test_multirank.c): the comm's pad and the windows'
 * signal slots through the device view, and more windows than slots. */
#include "comm/comm.h" /* symheap__comm_break: a comm broken otherwise */
#include "multirank.h"

/* The comm pad and the windows' signal slots, through the device view: the
 * pad starts clear, two live windows get different slots, a store into a
 * peer's signal lands in the peer's slot, and a slot is clear again for the
 * next window that gets it.  CPU stores stand in for a kernel's. */
void case_signals(th_ctx_t *c) {
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
void case_slots_exhausted(th_ctx_t *c) {
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

/* A comm whose device adaptor has no host_alloc has no device status:
 * where its views carry a pad (kernels of them wait for peers),
 * symheap_comm_device_check cannot say that no kernel gave up, so it says
 * UNSUPPORTED naming the missing member, every time, and the comm works
 * on (not broken).  Before: SUCCESS, while a give-up went unrecorded. */
static void no_status(th_ctx_t *c, symheap_comm_t sub, symheap_window_t w,
                      const symheap_device_window_t *v) {
  (void)c;
  CHECK(!v->status && !v->timeout_ns, "no status flag, but status %p",
        v->status);
  for (int i = 0; i < 2 && (v->flags & SYMHEAP_VIEW_PAD); i++) {
    CHECK_ERR(symheap_comm_device_check(sub), SYMHEAP_ERR_UNSUPPORTED);
    CHECK(strstr(symheap_last_error(), "no host_alloc"), "message: %s",
          symheap_last_error());
  }
  if (!(v->flags & SYMHEAP_VIEW_PAD)) /* no pad: no kernel waits */
    CHECK_OK(symheap_comm_device_check(sub));
  CHECK_OK(symheap_comm_barrier(sub));
  CHECK_OK(symheap_free(sub, w));
  CHECK_OK(symheap_comm_destroy(sub));
}

/* The device-timeout cases' comm: a sub-comm of the suite's (so that the
 * suite's own stays whole when the case breaks it), a 4 KiB window *w on
 * it and *v its device view; NULL where the split failed (said already). */
static symheap_comm_t sub_with_view(th_ctx_t *c, symheap_window_t *w,
                                    symheap_device_window_t *v) {
  symheap_comm_t sub = NULL;
  memset(v, 0, sizeof *v);
  CHECK_OK(symheap_comm_split(c->comm, 0, c->rank, &sub));
  if (!sub)
    return NULL;
  CHECK_OK(symheap_malloc(sub, 4096, 0, w));
  CHECK_OK(symheap_window_device_view(*w, v));
  return sub;
}

/* A kernel that gave up waiting for a peer (symheap_device.h, "Waits that
 * give up") breaks its comm: the view carries the comm's status and
 * timeout; once the status is written (CPU stores stand in for a kernel
 * that timed out, as kernels cannot run here), symheap_comm_device_check,
 * the next view and every collective call on the comm fail with
 * SYMHEAP_ERR_TIMEOUT naming the wait, and the comm can still be
 * destroyed.  A sub-comm, so the suite's own comm stays whole. */
void case_device_timeout(th_ctx_t *c) {
  symheap_window_t w = NULL;
  symheap_device_window_t v;
  symheap_comm_t sub = sub_with_view(c, &w, &v);
  if (!sub)
    return;
  CHECK_ERR(symheap_comm_device_check(NULL), SYMHEAP_ERR_INVALID_ARG);
  if (!(v.flags & SYMHEAP_VIEW_STATUS)) { /* no host_alloc (hip, example) */
    no_status(c, sub, w, &v);
    return;
  }
  CHECK_OK(symheap_comm_device_check(sub));
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(sub, &info));
  CHECK(v.status && v.timeout_ns == (uint64_t)info.timeout_ms * 1000000u,
        "status %p, timeout %llu ns for %d ms", v.status,
        (unsigned long long)v.timeout_ns, info.timeout_ms);
  barrier(c); /* every rank has checked its clean status */
  volatile symheap_device_status_t *s = v.status;
  int peer = (c->rank + 1) % c->n;
  s->code = SYMHEAP_ERR_TIMEOUT;
  s->wait = SYMHEAP_WAIT_LL;
  s->peer = peer;
  s->block = 3;
  s->want = 7;
  s->seen = 6;
  s->waited_ns = 2500000000ull;
  __atomic_store_n(&s->done, 1u, __ATOMIC_RELEASE);
  char want[64];
  snprintf(want, sizeof want, "gave up waiting for rank %d", peer);
  CHECK_ERR(symheap_comm_device_check(sub), SYMHEAP_ERR_TIMEOUT);
  const char *e = symheap_last_error();
  CHECK(strstr(e, want) && strstr(e, "LL all-reduce") &&
            strstr(e, "block 3") && strstr(e, "destroy it"),
        "message: %s", e);
  symheap_device_window_t again;
  CHECK_ERR(symheap_window_device_view(w, &again), SYMHEAP_ERR_TIMEOUT);
  CHECK(strstr(symheap_last_error(), want), "view: %s", symheap_last_error());
  /* Collectives refuse at once (no peer is waited for). */
  CHECK_ERR(symheap_comm_barrier(sub), SYMHEAP_ERR_TIMEOUT);
  CHECK(strstr(symheap_last_error(), want), "barrier: %s",
        symheap_last_error());
  CHECK_ERR(symheap_free(sub, w), SYMHEAP_ERR_TIMEOUT);
  CHECK_ERR(symheap_comm_device_check(sub), SYMHEAP_ERR_TIMEOUT);
  CHECK(strstr(symheap_last_error(), want), "check again: %s",
        symheap_last_error());
  CHECK_OK(symheap_comm_destroy(sub)); /* takes the window with it */
}

/* A kernel that gives up on a comm that something else broke first (here
 * the core's own break, as a failed connection to a peer does it, on every
 * rank: a mismatched collective is a MISMATCH on most ccls but a 30 s
 * timeout under MPI): symheap_comm_device_check and the view say
 * SYMHEAP_ERR_TIMEOUT with what the status records, at every call (they
 * said REMOTE, "failed earlier", before), while the comm's collectives
 * keep the first cause's code.  The status a symheap_dev_wait_signal
 * leaves: no peer (-1). */
void case_device_timeout_after_break(th_ctx_t *c) {
  symheap_window_t w = NULL;
  symheap_device_window_t v;
  symheap_comm_t sub = sub_with_view(c, &w, &v);
  if (!sub)
    return;
  symheap__comm_break(sub, symheap__error(SYMHEAP_ERR_REMOTE,
                                          "test: a peer's link failed"));
  CHECK_ERR(symheap_comm_barrier(sub), SYMHEAP_ERR_REMOTE);
  if (!(v.flags & SYMHEAP_VIEW_STATUS)) /* no host_alloc: case above */
    goto out;
  CHECK_OK(symheap_comm_device_check(sub)); /* no kernel gave up yet */
  volatile symheap_device_status_t *s = v.status;
  s->code = SYMHEAP_ERR_TIMEOUT;
  s->wait = SYMHEAP_WAIT_DEV_SIGNAL;
  s->peer = -1;
  s->want = 5;
  s->seen = 4;
  __atomic_store_n(&s->done, 1u, __ATOMIC_RELEASE);
  for (int i = 0; i < 3; i++) {
    CHECK_ERR(symheap_comm_device_check(sub), SYMHEAP_ERR_TIMEOUT);
    const char *e = symheap_last_error();
    CHECK(strstr(e, "gave up waiting for a rank it cannot name") &&
              strstr(e, "symheap_dev_wait_signal") && !strstr(e, "earlier"),
          "check %d: %s", i, e);
  }
  symheap_device_window_t again;
  CHECK_ERR(symheap_window_device_view(w, &again), SYMHEAP_ERR_TIMEOUT);
  CHECK(strstr(symheap_last_error(), "symheap_dev_wait_signal"), "view: %s",
        symheap_last_error());
  CHECK_ERR(symheap_comm_barrier(sub), SYMHEAP_ERR_REMOTE);
  CHECK(strstr(symheap_last_error(), "a peer's link failed"), "barrier: %s",
        symheap_last_error());
out:
  CHECK_OK(symheap_comm_destroy(sub));
}

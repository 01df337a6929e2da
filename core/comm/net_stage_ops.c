/* Target-side staging, its operations (net_stage.h): an initiator puts the
 * data into the target's shadow, orders it (fence: quiet where the provider
 * has none), and puts a descriptor into its ring at the target; the
 * target's progress (waits, the progress thread, the proxy thread) applies
 * descriptors in order (net_stage_apply.c) and puts back how many it
 * applied; an initiator's quiet waits for that count.  Gets and fetching
 * atomics are net_stage_get.c. */
#include <sched.h>
#include <string.h>
#include <time.h>

#include "net_stage.h"

symheap__stage_desc_t *symheap__stage_ring_at(symheap__stage_t *s, int from,
                                              uint64_t seq) {
  size_t i = (size_t)from * SYMHEAP__STAGE_RING +
             (size_t)((seq - 1) % SYMHEAP__STAGE_RING);
  return (symheap__stage_desc_t *)(void *)s->ctl + i;
}
#define ring_at symheap__stage_ring_at
static uint64_t ring_off(symheap__stage_t *s, int from, uint64_t seq) {
  return (uint64_t)((char *)ring_at(s, from, seq) - s->ctl);
}
uint64_t symheap__stage_ack_off(symheap__stage_t *s, int target) {
  return s->ring_bytes + (uint64_t)target * sizeof(symheap__stage_ack_t);
}
#define ack_off symheap__stage_ack_off

void symheap__stage_read_ack(symheap__stage_t *s, int q,
                             symheap__stage_ack_t *a) {
  uint64_t *w = (uint64_t *)(void *)(s->ctl + ack_off(s, q));
  /* Word by word (the adaptor's progress may be writing it): the check
   * word tells a torn copy. */
  a->applied = __atomic_load_n(&w[0], __ATOMIC_ACQUIRE);
  a->failed = __atomic_load_n(&w[1], __ATOMIC_ACQUIRE);
  a->fetch_seq = __atomic_load_n(&w[2], __ATOMIC_ACQUIRE);
  a->fetched = __atomic_load_n(&w[3], __ATOMIC_ACQUIRE);
  a->check = __atomic_load_n(&w[4], __ATOMIC_ACQUIRE);
}

/* *at = max(*at, v), racing other readers. */
static void store_max(uint64_t *at, uint64_t v) {
  uint64_t was = __atomic_load_n(at, __ATOMIC_ACQUIRE);
  while (v > was && !__atomic_compare_exchange_n(at, &was, v, 0,
                                                 __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE))
    ; /* another reader may have stored a later count: keep the larger */
}

/* Target q's acknowledgement of this rank's descriptors, when whole: the
 * failures before the count (a waiter that sees the count sees them). */
static void read_ack(symheap__stage_t *s, int q) {
  symheap__stage_ack_t a;
  symheap__stage_read_ack(s, q, &a);
  if (a.check != symheap__stage_ack_check(&a))
    return; /* being written (or none yet): read again later */
  store_max(&s->failed_ack[q], a.failed);
  store_max(&s->acked[q], a.applied);
}

void symheap__net_turn(symheap__netc_t *n) {
  symheap__net_lock(n);
  (void)n->ops.progress(n->ctx);
  symheap__net_unlock(n);
  symheap__stage_drain(n, 1);
}

static void nap(unsigned spin) {
  if (spin < 64)
    return;
  if (spin < 1024) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, 20 * 1000};
  nanosleep(&ts, NULL);
}

symheap_result_t symheap__stage_wait(symheap__netc_t *n, int peer,
                                     int timeout_ms, const char *fn) {
  symheap__stage_t *s = n->stage;
  if (!s)
    return SYMHEAP_SUCCESS;
  int64_t deadline = symheap__now_ms() + timeout_ms;
  int lo = peer < 0 ? 0 : peer, hi = peer < 0 ? s->nranks : peer + 1;
  for (int q = lo; q < hi; q++) {
    uint64_t want = __atomic_load_n(&s->sent[q], __ATOMIC_ACQUIRE);
    for (unsigned spin = 0;; spin++) {
      read_ack(s, q);
      if (__atomic_load_n(&s->acked[q], __ATOMIC_ACQUIRE) >= want)
        break;
      if (symheap__now_ms() >= deadline)
        return symheap__error(
            SYMHEAP_ERR_TIMEOUT,
            "%s: rank %d has applied %llu of the %llu staged operations this "
            "rank sent it after %d ms (SYMHEAP_TIMEOUT_MS): it does not "
            "progress (a rank computing outside symheap with "
            "SYMHEAP_NET_PROGRESS=none, stopped, or gone)",
            fn, q, (unsigned long long)s->acked[q], (unsigned long long)want,
            timeout_ms);
      symheap__net_turn(n);
      nap(spin);
    }
    uint64_t failed = __atomic_load_n(&s->failed_ack[q], __ATOMIC_ACQUIRE);
    uint64_t seen = __atomic_load_n(&s->failed_seen[q], __ATOMIC_ACQUIRE);
    if (failed != seen &&
        __atomic_compare_exchange_n(&s->failed_seen[q], &seen, failed, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      return symheap__error(SYMHEAP_ERR_REMOTE,
                            "%s: rank %d could not apply %llu staged "
                            "operation%s from this rank (its log says why)",
                            fn, q, (unsigned long long)failed,
                            failed == 1 ? "" : "s");
    }
  }
  return SYMHEAP_SUCCESS;
}

/* Under s->post: a free descriptor slot at peer (progressing meanwhile). */
static symheap_result_t room(symheap__netc_t *n, int peer, const char *fn) {
  symheap__stage_t *s = n->stage;
  int64_t deadline = symheap__now_ms() + n->timeout_ms;
  for (unsigned spin = 0;; spin++) {
    read_ack(s, peer);
    if (s->sent[peer] - __atomic_load_n(&s->acked[peer], __ATOMIC_ACQUIRE) <
        SYMHEAP__STAGE_RING)
      return SYMHEAP_SUCCESS;
    if (symheap__now_ms() >= deadline)
      return symheap__error(SYMHEAP_ERR_TIMEOUT,
                            "%s: rank %d's staging ring stays full after %d "
                            "ms (SYMHEAP_TIMEOUT_MS): it does not progress",
                            fn, peer, n->timeout_ms);
    symheap__net_turn(n);
    nap(spin);
  }
}

static symheap_result_t failed(symheap__netc_t *n, symheap_result_t r,
                               const char *what, int peer, const char *fn) {
  return symheap__error_context(r, "%s: net adaptor '%s' to rank %d (staged, "
                                   "%s)",
                                fn, n->ops.name, peer, what);
}

static void desc_of(symheap__stage_desc_t *d, int peer,
                    const symheap__stage_op_t *op) {
  memset(d, 0, sizeof *d);
  d->kind = op->kind;
  d->reg = op->len && op->g ? op->g->peer_stage[peer] - 1 : 0;
  d->off = op->off, d->len = op->len;
  d->sig_op = op->sig_op, d->sig_size = op->sig_size;
  d->sig_reg = op->sig_op >= 0 ? op->sg->peer_stage[peer] - 1 : 0;
  d->sig_off = op->sig_off, d->value = op->value;
  d->compare = op->compare;
}

/* The data put, the fence and the descriptor in one section of the
 * adaptor's lock: where the provider has a real fence (FI_FENCE: the next
 * operation waits for those before it), another thread's operation taken
 * between the fence and the descriptor would take the fence, and the
 * descriptor could overtake the data.  No test shows that interleaving:
 * "loop" and tcp;ofi_rxm implement fence as quiet (complete, not just
 * ordered, when it returns), so on them the old two sections were safe.
 * A failure after the data put leaves bytes in the shadow that no
 * descriptor names: never applied (a later put to those bytes brings its
 * own before its descriptor), so nothing is half-posted. */
symheap_result_t symheap__stage_post(symheap_comm_t c, int peer,
                                     const void *src, unsigned flags,
                                     const symheap__stage_op_t *op,
                                     uint64_t *seq, const char *fn) {
  symheap__netc_t *n = c->netc;
  symheap__stage_t *s = n->stage;
  symheap__stage_desc_t d;
  desc_of(&d, peer, op);
  int data = op->kind == SYMHEAP__STAGE_PUT && op->len;
  const char *what = "descriptor";
  pthread_mutex_lock(&s->post);
  symheap_result_t r = room(n, peer, fn);
  if (r == SYMHEAP_SUCCESS) {
    d.seq = s->sent[peer] + 1;
    d.check = symheap__stage_check(&d);
    symheap__net_lock(n);
    if (data) /* the data at the target before the descriptor (a lone
                 atomic is ordered by the ring alone) */
      r = n->ops.put(n->ctx, peer, src, NULL, op->len, op->g->rkeys[peer],
                     op->off, flags);
    if (data && r == SYMHEAP_SUCCESS)
      r = n->ops.fence(n->ctx);
    if (r == SYMHEAP_SUCCESS)
      r = n->ops.put(n->ctx, peer, &d, NULL, sizeof d, s->ctl_rkeys[peer],
                     ring_off(s, s->rank, d.seq), 0);
    else
      what = "data";
    symheap__net_unlock(n);
    if (r == SYMHEAP_SUCCESS)
      __atomic_store_n(&s->sent[peer], d.seq, __ATOMIC_RELEASE);
    else
      r = failed(n, r, what, peer, fn);
  }
  pthread_mutex_unlock(&s->post);
  if (r == SYMHEAP_SUCCESS && seq)
    *seq = d.seq;
  return r;
}

/* Initiator p learns how many of its descriptors this rank applied.
 * Without wait, only if the adaptor's lock is free (the waits' idle hook
 * and the progress thread never wait for it): else it stays owed. */
static void ack(symheap__netc_t *n, symheap__stage_t *s, int p, int wait) {
  symheap__stage_ack_t a = {s->applied[p], s->failed[p], s->fetch_seq[p],
                            s->fetched[p], 0};
  a.check = symheap__stage_ack_check(&a);
  if (n->locked && !wait && pthread_mutex_trylock(&n->lock) != 0)
    return;
  if (n->locked && wait)
    pthread_mutex_lock(&n->lock);
  /* Counted only for a caller's drain: the progress thread's own acks
   * (wait 0) made it stand aside from the engine for a nap (2 ms). */
  if (wait)
    __atomic_add_fetch(&n->calls, 1, __ATOMIC_RELAXED);
  symheap_result_t r = n->ops.put(n->ctx, p, &a, NULL, sizeof a,
                                  s->ctl_rkeys[p], ack_off(s, s->rank), 0);
  symheap__net_unlock(n);
  if (r == SYMHEAP_SUCCESS)
    __atomic_store_n(&s->ack_sent[p], a.applied, __ATOMIC_RELEASE);
  else
    SYMHEAP_WARN("staging: acknowledging rank %d: %s", p,
                 symheap__error_peek());
}

void symheap__net_poke(symheap__netc_t *n) {
  if (!n)
    return;
  if (!n->locked || pthread_mutex_trylock(&n->lock) == 0) {
    (void)n->ops.progress(n->ctx);
    if (n->locked)
      pthread_mutex_unlock(&n->lock);
  }
  symheap__stage_drain(n, 1);
}

int symheap__stage_pending(symheap__netc_t *n) {
  symheap__stage_t *s = n ? n->stage : NULL;
  if (!s || __atomic_load_n(&s->hold, __ATOMIC_ACQUIRE))
    return 0;
  if (__atomic_load_n(&s->again, __ATOMIC_ACQUIRE))
    return 1;
  for (int p = 0; p < s->nranks; p++) {
    uint64_t applied = __atomic_load_n(&s->applied[p], __ATOMIC_ACQUIRE);
    symheap__stage_desc_t *e = ring_at(s, p, applied + 1);
    if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) == applied + 1 ||
        __atomic_load_n(&s->ack_sent[p], __ATOMIC_ACQUIRE) != applied)
      return 1;
  }
  return 0;
}

static void drain_rings(symheap__netc_t *n, symheap__stage_t *s, int wait);

void symheap__stage_drain(symheap__netc_t *n, int wait) {
  symheap__stage_t *s = n ? n->stage : NULL;
  if (!s || __atomic_load_n(&s->hold, __ATOMIC_ACQUIRE))
    return;
  for (;;) {
    if (pthread_mutex_trylock(&s->drain) != 0) {
      __atomic_store_n(&s->again, 1, __ATOMIC_RELEASE);
      /* The holder may have just let go without seeing the flag. */
      if (pthread_mutex_trylock(&s->drain) != 0)
        return;
    }
    __atomic_store_n(&s->again, 0, __ATOMIC_RELEASE);
    drain_rings(n, s, wait);
    pthread_mutex_unlock(&s->drain);
    if (!__atomic_load_n(&s->again, __ATOMIC_ACQUIRE))
      return;
  }
}

static void drain_rings(symheap__netc_t *n, symheap__stage_t *s, int wait) {
  for (int p = 0; p < s->nranks; p++) {
    for (;;) {
      uint64_t seq = s->applied[p] + 1;
      symheap__stage_desc_t *e = ring_at(s, p, seq), d;
      if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != seq)
        break;
      memcpy(&d, e, sizeof d);
      if (d.seq != seq || d.check != symheap__stage_check(&d))
        break; /* still being written */
      if (symheap__stage_apply(s, p, &d) != SYMHEAP_SUCCESS) {
        s->failed[p]++;
        SYMHEAP_WARN("staging: rank %d's operation %llu: %s", p,
                     (unsigned long long)seq, symheap__error_peek());
      }
      __atomic_store_n(&s->applied[p], seq, __ATOMIC_RELEASE);
    }
    if (s->applied[p] != s->ack_sent[p])
      ack(n, s, p, wait);
  }
}

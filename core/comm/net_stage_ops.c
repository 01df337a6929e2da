/* Target-side staging, its operations (net_stage.h): an initiator puts the
 * data into the target's shadow, orders it (fence: quiet where the provider
 * has none), and puts a descriptor into its ring at the target; the
 * target's progress (waits, the progress thread, the proxy thread) applies
 * descriptors in order (shadow to device through the device adaptor, then
 * the atomic by read-modify-write through copies) and puts back how many
 * it applied; an initiator's quiet waits for that count. */
#include <sched.h>
#include <string.h>
#include <time.h>

#include "net_stage.h"

static symheap__stage_desc_t *ring_at(symheap__stage_t *s, int from,
                                      uint64_t seq) {
  size_t i = (size_t)from * SYMHEAP__STAGE_RING +
             (size_t)((seq - 1) % SYMHEAP__STAGE_RING);
  return (symheap__stage_desc_t *)(void *)s->ctl + i;
}
static uint64_t ring_off(symheap__stage_t *s, int from, uint64_t seq) {
  return (uint64_t)((char *)ring_at(s, from, seq) - s->ctl);
}
static uint64_t ack_off(symheap__stage_t *s, int target) {
  return s->ring_bytes + (uint64_t)target * sizeof(symheap__stage_ack_t);
}

/* Target q's acknowledgement of this rank's descriptors, when whole. */
static void read_ack(symheap__stage_t *s, int q) {
  symheap__stage_ack_t *a =
      (symheap__stage_ack_t *)(void *)(s->ctl + ack_off(s, q));
  uint64_t v = __atomic_load_n(&a->applied, __ATOMIC_ACQUIRE);
  uint64_t vn = __atomic_load_n(&a->applied_not, __ATOMIC_ACQUIRE);
  uint64_t f = __atomic_load_n(&a->failed, __ATOMIC_ACQUIRE);
  uint64_t fn = __atomic_load_n(&a->failed_not, __ATOMIC_ACQUIRE);
  if (vn != ~v || fn != ~f)
    return; /* being written: read again later */
  uint64_t was = __atomic_load_n(&s->acked[q], __ATOMIC_ACQUIRE);
  while (v > was && !__atomic_compare_exchange_n(&s->acked[q], &was, v, 0,
                                                 __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE))
    ; /* another reader may have stored a later count: keep the larger */
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
    symheap__stage_ack_t *a =
        (symheap__stage_ack_t *)(void *)(s->ctl + ack_off(s, q));
    uint64_t failed = __atomic_load_n(&a->failed, __ATOMIC_ACQUIRE);
    if (failed != s->failed_seen[q]) {
      s->failed_seen[q] = failed;
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

symheap_result_t symheap__stage_post(symheap_comm_t c, int peer,
                                     const void *src, unsigned flags,
                                     const symheap__stage_op_t *op,
                                     const char *fn) {
  symheap__netc_t *n = c->netc;
  symheap__stage_t *s = n->stage;
  symheap_result_t r = SYMHEAP_SUCCESS;
  symheap__net_lock(n);
  if (op->len) /* the data at the target before the descriptor (a lone
                 atomic is ordered by the ring alone) */
    r = n->ops.put(n->ctx, peer, src, NULL, op->len, op->g->rkeys[peer],
                   op->off, flags);
  if (op->len && r == SYMHEAP_SUCCESS)
    r = n->ops.fence(n->ctx);
  symheap__net_unlock(n);
  if (r != SYMHEAP_SUCCESS)
    return failed(n, r, "data", peer, fn);
  symheap__stage_desc_t d;
  memset(&d, 0, sizeof d);
  d.reg = op->len ? op->g->peer_stage[peer] - 1 : 0;
  d.off = op->off, d.len = op->len;
  d.sig_op = op->sig_op, d.sig_size = op->sig_size;
  d.sig_reg = op->sig_op >= 0 ? op->sg->peer_stage[peer] - 1 : 0;
  d.sig_off = op->sig_off, d.value = op->value;
  pthread_mutex_lock(&s->post);
  r = room(n, peer, fn);
  if (r == SYMHEAP_SUCCESS) {
    d.seq = s->sent[peer] + 1;
    d.check = symheap__stage_check(&d);
    symheap__net_lock(n);
    r = n->ops.put(n->ctx, peer, &d, NULL, sizeof d, s->ctl_rkeys[peer],
                   ring_off(s, s->rank, d.seq), 0);
    symheap__net_unlock(n);
    if (r == SYMHEAP_SUCCESS)
      __atomic_store_n(&s->sent[peer], d.seq, __ATOMIC_RELEASE);
    else
      r = failed(n, r, "descriptor", peer, fn);
  }
  pthread_mutex_unlock(&s->post);
  return r;
}

/* The staged region id as this rank registered it, holding [off, +len). */
static const symheap__stage_reg_t *reg_of(symheap__stage_t *s, uint32_t id,
                                          uint64_t off, uint64_t len) {
  if (id >= s->nregs || !s->regs[id].shadow || off > s->regs[id].size ||
      len > s->regs[id].size - off)
    return NULL;
  return &s->regs[id];
}

static uint64_t amo_new(int op, uint64_t cur, uint64_t v) {
  switch (op) {
  case SYMHEAP_NET_AMO_SET: return v;
  case SYMHEAP_NET_AMO_ADD: return cur + v;
  case SYMHEAP_NET_AMO_AND: return cur & v;
  case SYMHEAP_NET_AMO_OR: return cur | v;
  default: return cur ^ v; /* XOR: the initiator sends no other */
  }
}

/* One descriptor: the data copied in, then the atomic (a read-modify-write
 * through copies: atomic among remote operations, which this rank applies
 * one at a time, not against its device's own atomics). */
static symheap_result_t apply(symheap__stage_t *s,
                              const symheap__stage_desc_t *d) {
  const symheap__stage_reg_t *g = NULL;
  if (d->len && !(g = reg_of(s, d->reg, d->off, d->len)))
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "staging: no staged region %u holds [%llu, +%llu) "
                          "(deregistered?)",
                          d->reg, (unsigned long long)d->off,
                          (unsigned long long)d->len);
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (g)
    r = s->dev->copy_from_host(s->dev_ctx, (char *)g->dev + d->off,
                               (char *)g->shadow + d->off, d->len);
  if (r != SYMHEAP_SUCCESS || d->sig_op < 0)
    return r;
  size_t sz = d->sig_size == 4 ? 4 : 8;
  if (!(g = reg_of(s, d->sig_reg, d->sig_off, sz)) || d->sig_off % sz)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "staging: no staged region %u holds an aligned "
                          "%zu-byte word at %llu",
                          d->sig_reg, sz, (unsigned long long)d->sig_off);
  char *at = (char *)g->dev + d->sig_off;
  uint64_t cur = 0;
  uint32_t cur4 = 0;
  r = s->dev->copy_to_host(s->dev_ctx, sz == 4 ? (void *)&cur4 : (void *)&cur,
                           at, sz);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (sz == 4) {
    cur4 = (uint32_t)amo_new(d->sig_op, cur4, d->value);
    return s->dev->copy_from_host(s->dev_ctx, at, &cur4, 4);
  }
  cur = amo_new(d->sig_op, cur, d->value);
  return s->dev->copy_from_host(s->dev_ctx, at, &cur, 8);
}

/* Initiator p learns how many of its descriptors this rank applied.
 * Without wait, only if the adaptor's lock is free (the waits' idle hook
 * and the progress thread never wait for it): else it stays owed. */
static void ack(symheap__netc_t *n, symheap__stage_t *s, int p, int wait) {
  symheap__stage_ack_t a = {s->applied[p], ~s->applied[p], s->failed[p],
                            ~s->failed[p]};
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
      if (apply(s, &d) != SYMHEAP_SUCCESS) {
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

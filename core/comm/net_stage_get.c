/* Target-side staging, the initiator's gets and atomics (net_stage.h).
 *
 * A get: a GET descriptor in the pair's ring (so it is applied after this
 * initiator's earlier puts to that target), the target copies the device
 * bytes into this initiator's bounce slot in its control area and
 * acknowledges, this rank reads the slot with the adaptor's get and waits
 * for that read.  The slot is this initiator's alone and this rank has one
 * staged get or fetching atomic in flight at a time (s->fetch), so nothing
 * overwrites the copy before the read: a get returns the device bytes as
 * they were when the target applied its descriptor, never bytes of a put
 * still in the shadow (a put racing a get gives the old or the new bytes of
 * each put the target applied before; puts the target applies whole, so a
 * get never sees part of one staged put piece).  Gets are served one slot
 * (4-64 KiB) at a time, each a round trip plus the read.
 *
 * An atomic: a descriptor carrying op, operand and compare; the target
 * applies it (under its drain lock: one at a time with every other network
 * atomic on its staged windows) and, for a fetching one, returns the old
 * value in its acknowledgement. */
#include <sched.h>
#include <string.h>

#include "net_stage.h"

/* The slot's bytes read back into dst, complete on return. */
static symheap_result_t read_slot(symheap__netc_t *n, int peer, void *dst,
                                  size_t len, const char *fn) {
  symheap__stage_t *s = n->stage;
  symheap__net_lock(n);
  symheap_result_t r =
      n->ops.get(n->ctx, peer, dst, NULL, len, s->ctl_rkeys[peer],
                 symheap__stage_slot_off(s, s->rank), 0);
  if (r == SYMHEAP_SUCCESS)
    r = n->ops.quiet(n->ctx, n->timeout_ms);
  symheap__net_unlock(n);
  symheap__stage_drain(n, 1); /* what the quiet's progress took in */
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r,
                                      "%s: net adaptor '%s' reading rank "
                                      "%d's staging slot (staged get)",
                                      fn, n->ops.name, peer);
}

symheap_result_t symheap__stage_get(symheap_comm_t c, int peer, void *dst,
                                    const symheap__netreg_t *g, uint64_t off,
                                    size_t len, const char *fn) {
  symheap__netc_t *n = c->netc;
  symheap__stage_t *s = n->stage;
  size_t max =
      n->caps.max_msg && n->caps.max_msg < s->slot ? n->caps.max_msg : s->slot;
  symheap_result_t r = SYMHEAP_SUCCESS;
  pthread_mutex_lock(&s->fetch);
  while (len && r == SYMHEAP_SUCCESS) {
    size_t piece = len < max ? len : max;
    symheap__stage_op_t op = {
        g, off, piece, NULL, 0, 0, -1, 0, SYMHEAP__STAGE_GET, 0};
    r = symheap__stage_post(c, peer, NULL, 0, &op, NULL, fn);
    if (r == SYMHEAP_SUCCESS) /* the copy is in the slot once applied */
      r = symheap__stage_wait(n, peer, n->timeout_ms, fn);
    if (r == SYMHEAP_SUCCESS)
      r = read_slot(n, peer, dst, piece, fn);
    dst = (char *)dst + piece;
    off += piece;
    len -= piece;
  }
  pthread_mutex_unlock(&s->fetch);
  return r;
}

static uint64_t word_of(const void *p, size_t size) {
  if (!p)
    return 0;
  if (size == 4) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* The old value of this rank's FETCH descriptor seq at peer, from its
 * acknowledgement (already covering seq: only a torn copy is read again). */
static symheap_result_t fetched(symheap__netc_t *n, int peer, uint64_t seq,
                                uint64_t *out, const char *fn) {
  symheap__stage_t *s = n->stage;
  int64_t deadline = symheap__now_ms() + n->timeout_ms;
  for (;;) {
    symheap__stage_ack_t a;
    symheap__stage_read_ack(s, peer, &a);
    if (a.check == symheap__stage_ack_check(&a) && a.fetch_seq >= seq) {
      if (a.fetch_seq != seq) /* one fetch in flight (s->fetch): never */
        return symheap__error(
            SYMHEAP_ERR_INTERNAL, "%s: rank %d answered fetch %llu for %llu",
            fn, peer, (unsigned long long)a.fetch_seq, (unsigned long long)seq);
      *out = a.fetched;
      return SYMHEAP_SUCCESS;
    }
    if (symheap__now_ms() >= deadline)
      return symheap__error(SYMHEAP_ERR_TIMEOUT,
                            "%s: rank %d's answer to a staged fetching atomic "
                            "did not arrive whole within %d ms "
                            "(SYMHEAP_TIMEOUT_MS)",
                            fn, peer, n->timeout_ms);
    symheap__net_turn(n);
    sched_yield();
  }
}

symheap_result_t symheap__stage_atomic(symheap_comm_t c, int peer,
                                       const symheap__netreg_t *g, uint64_t off,
                                       symheap_net_amo_t op, size_t size,
                                       const void *operand, const void *compare,
                                       void *fetch, const char *fn) {
  symheap__netc_t *n = c->netc;
  symheap__stage_t *s = n->stage;
  symheap__stage_op_t d = {NULL,
                           0,
                           0,
                           g,
                           off,
                           word_of(operand, size),
                           (int)op,
                           (uint32_t)size,
                           SYMHEAP__STAGE_PUT,
                           word_of(compare, size)};
  if (!fetch) /* ordered by the ring alone, complete at quiet */
    return symheap__stage_post(c, peer, NULL, 0, &d, NULL, fn);
  d.kind = SYMHEAP__STAGE_FETCH;
  uint64_t seq = 0, old = 0;
  pthread_mutex_lock(&s->fetch);
  symheap_result_t r = symheap__stage_post(c, peer, NULL, 0, &d, &seq, fn);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__stage_wait(n, peer, n->timeout_ms, fn);
  if (r == SYMHEAP_SUCCESS)
    r = fetched(n, peer, seq, &old, fn);
  pthread_mutex_unlock(&s->fetch);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (size == 4) {
    uint32_t v = (uint32_t)old;
    memcpy(fetch, &v, 4);
  } else {
    memcpy(fetch, &old, 8);
  }
  return SYMHEAP_SUCCESS;
}

/* One-sided operations through the comm's net adaptor: ranges split where
 * a heap window crosses chunks (each chunk is its own region) or exceed the
 * adaptor's largest message; each call under the adaptor's lock when the
 * core serialises it (net_comm.c). */
#include <string.h>

#include "comm/net_stage.h"
#include "onesided.h"

static symheap_result_t failed(symheap__netc_t *n, symheap_result_t r,
                               const char *fn, int peer) {
  return symheap__error_context(r, "%s: net adaptor '%s' to rank %d", fn,
                                n->ops.name, peer);
}

/* Whether peer's copy of g is staged (comm/net_stage.h). */
static int staged(const symheap__netreg_t *g, int peer) {
  return g->peer_stage && g->peer_stage[peer];
}

symheap_result_t symheap__os_net_rma(struct symheap_window *w, int peer,
                                     size_t off, void *buf, size_t len,
                                     int is_put, unsigned flags,
                                     const char *fn) {
  symheap__netc_t *n = w->comm->netc;
  size_t max = n->caps.max_msg ? n->caps.max_msg : len;
  symheap_result_t r = SYMHEAP_SUCCESS;
  while (len && r == SYMHEAP_SUCCESS) {
    symheap__netreg_t *g;
    uint64_t roff;
    size_t span;
    r = symheap__net_locate_reg(w, peer, off, len, &g, &roff, &span);
    if (r != SYMHEAP_SUCCESS)
      return symheap__error_context(r, "%s", fn);
    if (span > max)
      span = max;
    if (is_put && staged(g, peer)) {
      symheap__stage_op_t op = {g, roff, span, NULL, 0, 0, -1, 0, 0, 0};
      r = symheap__stage_post(w->comm, peer, buf, flags, &op, NULL, fn);
    } else if (staged(g, peer)) { /* complete on return, nbi too (one
                                     bounce slot per pair) */
      r = symheap__stage_get(w->comm, peer, buf, g, roff, span, fn);
    } else {
      symheap__net_lock(n);
      r = is_put ? n->ops.put(n->ctx, peer, buf, NULL, span, g->rkeys[peer],
                              roff, flags)
                 : n->ops.get(n->ctx, peer, buf, NULL, span, g->rkeys[peer],
                              roff, flags);
      symheap__net_unlock(n);
      if (r != SYMHEAP_SUCCESS)
        return failed(n, r, fn, peer);
    }
    buf = (char *)buf + span;
    off += span;
    len -= span;
  }
  return r;
}

symheap_result_t symheap__os_net_atomic(struct symheap_window *w, int peer,
                                        size_t off, symheap_net_amo_t op,
                                        size_t size, const void *operand,
                                        const void *compare, void *fetch,
                                        const char *fn) {
  symheap__netc_t *n = w->comm->netc;
  symheap__netreg_t *g;
  uint64_t roff;
  size_t span;
  symheap_result_t r =
      symheap__net_locate_reg(w, peer, off, size, &g, &roff, &span);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "%s", fn);
  if (staged(g, peer)) /* applied by the target: no engine atomics needed */
    return symheap__stage_atomic(w->comm, peer, g, roff, op, size, operand,
                                 compare, fetch, fn);
  if (!n->has_atomic || !(n->caps.caps & SYMHEAP_NET_CAP_ATOMIC))
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "%s: net adaptor '%s' (provider %s) offers no "
                          "atomics",
                          fn, n->ops.name, n->caps.provider);
  symheap__net_lock(n);
  r = n->ops.atomic(n->ctx, peer, op, size, g->rkeys[peer], roff, operand,
                    compare, fetch);
  symheap__net_unlock(n);
  if (r != SYMHEAP_SUCCESS)
    return failed(n, r, fn, peer);
  /* A fetching atomic returns with its result (valid after quiet). */
  return fetch ? symheap__os_net_quiet(w->comm, fn) : SYMHEAP_SUCCESS;
}

/* put_signal where the data or the signal is staged: one descriptor
 * where both are and the data is one piece, else the puts first (staged
 * ones ordered before what follows in the target's ring).  A signal that
 * is not staged after staged data waits for the data to be applied. */
static symheap_result_t staged_put_signal(
    struct symheap_window *w, int peer, size_t off, const void *src,
    size_t len, const symheap__netreg_t *g, uint64_t roff, size_t span,
    const symheap__netreg_t *sg, uint64_t soff, uint64_t value,
    symheap_net_amo_t op, const char *fn) {
  symheap__netc_t *n = w->comm->netc;
  size_t max = n->caps.max_msg ? n->caps.max_msg : len;
  if (staged(sg, peer) && (!len || (staged(g, peer) && span == len &&
                                    len <= max))) {
    symheap__stage_op_t s = {g, roff, len, sg, soff, value, (int)op, 8, 0, 0};
    return symheap__stage_post(w->comm, peer, src, 0, &s, NULL, fn);
  }
  symheap_result_t r =
      symheap__os_net_rma(w, peer, off, (void *)src, len, 1, 0, fn);
  if (r == SYMHEAP_SUCCESS && staged(sg, peer)) {
    symheap__stage_op_t s = {NULL, 0, 0, sg, soff, value, (int)op, 8, 0, 0};
    return symheap__stage_post(w->comm, peer, NULL, 0, &s, NULL, fn);
  }
  if (r == SYMHEAP_SUCCESS)
    r = symheap__stage_wait(n, peer, n->timeout_ms, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  symheap__net_lock(n);
  r = n->ops.atomic(n->ctx, peer, op, 8, sg->rkeys[peer], soff, &value, NULL,
                    NULL);
  symheap__net_unlock(n);
  return r == SYMHEAP_SUCCESS ? r : failed(n, r, fn, peer);
}

symheap_result_t symheap__os_net_put_signal(struct symheap_window *w, int peer,
                                            size_t off, const void *src,
                                            size_t len,
                                            struct symheap_window *sw,
                                            size_t sig_off, uint64_t value,
                                            symheap_net_amo_t op,
                                            const char *fn) {
  symheap__netc_t *n = w->comm->netc;
  void *rkey = NULL, *skey;
  uint64_t roff = 0, soff;
  size_t span = 0, sspan;
  symheap_result_t r =
      symheap__net_locate(sw, peer, sig_off, 8, &skey, &soff, &sspan);
  if (r == SYMHEAP_SUCCESS && len)
    r = symheap__net_locate(w, peer, off, len, &rkey, &roff, &span);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "%s", fn);
  if (n->stage) {
    symheap__netreg_t *sg, *g = NULL;
    (void)symheap__net_locate_reg(sw, peer, sig_off, 8, &sg, &soff, &sspan);
    if (len)
      (void)symheap__net_locate_reg(w, peer, off, len, &g, &roff, &span);
    if (staged(sg, peer) || (g && staged(g, peer)))
      return staged_put_signal(w, peer, off, src, len, g, roff, span, sg, soff,
                               value, op, fn);
  }
  size_t max = n->caps.max_msg ? n->caps.max_msg : len;
  if (n->ops.put_signal && span == len && len <= max) {
    /* One message where the engine can (remote CQ data). */
    symheap__net_lock(n);
    r = n->ops.put_signal(n->ctx, peer, src, NULL, len, rkey, roff, skey, soff,
                          value, op, 0);
    symheap__net_unlock(n);
    return r == SYMHEAP_SUCCESS ? r : failed(n, r, fn, peer);
  }
  /* Else the data, a fence, then the signal: seen in that order. */
  r = symheap__os_net_rma(w, peer, off, (void *)src, len, 1, 0, fn);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__os_net_fence(w->comm, fn);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__os_net_atomic(sw, peer, sig_off, op, 8, &value, NULL, NULL,
                               fn);
  return r;
}

symheap_result_t symheap__os_net_fence(symheap_comm_t c, const char *fn) {
  symheap__netc_t *n = c->netc;
  symheap__net_lock(n);
  symheap_result_t r = n->ops.fence(n->ctx);
  symheap__net_unlock(n);
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "%s: net adaptor '%s'", fn,
                                      n->ops.name);
}

symheap_result_t symheap__os_net_quiet(symheap_comm_t c, const char *fn) {
  return symheap__net_quiet(c, fn);
}

void symheap__os_net_progress(symheap_comm_t c) {
  if (c->netc)
    symheap__net_turn(c->netc); /* with peers' staged puts to this rank */
}

/* One-sided operations through the comm's net adaptor: ranges split where
 * a heap window crosses chunks (each chunk is its own region) or exceed the
 * adaptor's largest message; each call under the adaptor's lock when the
 * core serialises it (net_comm.c). */
#include <string.h>

#include "onesided.h"

static symheap_result_t failed(symheap__netc_t *n, symheap_result_t r,
                               const char *fn, int peer) {
  return symheap__error_context(r, "%s: net adaptor '%s' to rank %d", fn,
                                n->ops.name, peer);
}

symheap_result_t symheap__os_net_rma(struct symheap_window *w, int peer,
                                     size_t off, void *buf, size_t len,
                                     int is_put, unsigned flags,
                                     const char *fn) {
  symheap__netc_t *n = w->comm->netc;
  size_t max = n->caps.max_msg ? n->caps.max_msg : len;
  while (len) {
    void *rkey;
    uint64_t roff;
    size_t span;
    symheap_result_t r =
        symheap__net_locate(w, peer, off, len, &rkey, &roff, &span);
    if (r != SYMHEAP_SUCCESS)
      return symheap__error_context(r, "%s", fn);
    if (span > max)
      span = max;
    symheap__net_lock(n);
    r = is_put ? n->ops.put(n->ctx, peer, buf, NULL, span, rkey, roff, flags)
               : n->ops.get(n->ctx, peer, buf, NULL, span, rkey, roff, flags);
    symheap__net_unlock(n);
    if (r != SYMHEAP_SUCCESS)
      return failed(n, r, fn, peer);
    buf = (char *)buf + span;
    off += span;
    len -= span;
  }
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__os_net_atomic(struct symheap_window *w, int peer,
                                        size_t off, symheap_net_amo_t op,
                                        size_t size, const void *operand,
                                        const void *compare, void *fetch,
                                        const char *fn) {
  symheap__netc_t *n = w->comm->netc;
  if (!n->has_atomic || !(n->caps.caps & SYMHEAP_NET_CAP_ATOMIC))
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "%s: net adaptor '%s' (provider %s) offers no "
                          "atomics",
                          fn, n->ops.name, n->caps.provider);
  void *rkey;
  uint64_t roff;
  size_t span;
  symheap_result_t r =
      symheap__net_locate(w, peer, off, size, &rkey, &roff, &span);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "%s", fn);
  symheap__net_lock(n);
  r = n->ops.atomic(n->ctx, peer, op, size, rkey, roff, operand, compare,
                    fetch);
  symheap__net_unlock(n);
  if (r != SYMHEAP_SUCCESS)
    return failed(n, r, fn, peer);
  /* A fetching atomic returns with its result (valid after quiet). */
  return fetch ? symheap__os_net_quiet(w->comm, fn) : SYMHEAP_SUCCESS;
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
  symheap__netc_t *n = c->netc;
  if (!n)
    return;
  symheap__net_lock(n);
  (void)n->ops.progress(n->ctx);
  symheap__net_unlock(n);
}

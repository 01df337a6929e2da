/* One-sided operations: put, get, the atomics and put_signal.
 *
 * Each is one fi_*msg call with FI_DELIVERY_COMPLETE (a put is complete when
 * the target can see it, which is what quiet promises) and FI_FENCE after a
 * fence() where the provider has it; a full queue (-FI_EAGAIN) is retried,
 * progressing, within SYMHEAP_TIMEOUT_MS.  Every issued operation is counted
 * for quiet (ofi_ep.c). */
#include <string.h>

#include "ofi.h"

/* A slot of the bounce arena (ofi_mr.c opens it) for len bytes, src copied
 * in when given.  Here, beside the operations that use it, because a full
 * arena waits for quiet (ofi_ep.c), which the memory file must not call. */
symheap_result_t ofi_bounce(ofi_ctx_t *c, const void *src, size_t len,
                            void **copy, void **desc) {
  size_t need = (len + 15) & ~(size_t)15;
  if (c->bounce_used + need > c->bounce_size) {
    /* Full: everything in it must be done before it is reused. */
    symheap_result_t r = ofi_quiet(c, -1);
    if (r != SYMHEAP_SUCCESS)
      return r;
  }
  char *p = c->bounce + c->bounce_used;
  c->bounce_used += need;
  if (src)
    memcpy(p, src, len);
  *copy = p;
  *desc = c->bounce_desc;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t check_peer(ofi_ctx_t *c, int peer, const void *rkey,
                                   const char *op) {
  if (!c->peers)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ofi %s before connect", op);
  if (peer < 0 || peer >= c->nranks)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ofi %s: rank %d is not in 0..%d", op, peer,
                         c->nranks - 1);
  if (!rkey)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ofi %s: no remote key", op);
  return SYMHEAP_SUCCESS;
}

/* The address the provider wants for `offset` of a peer's region. */
static uint64_t raddr(const ofi_key_t *k, uint64_t offset) {
  return k->base + offset;
}

static uint64_t take_fence(ofi_ctx_t *c) {
  uint64_t f = c->fence_next;
  c->fence_next = 0;
  return f;
}

static symheap_result_t issued(ofi_ctx_t *c, int ret, const char *op,
                               int peer) {
  if (ret == 0) {
    c->issued++;
    c->touched[peer] = 1;
    return SYMHEAP_SUCCESS;
  }
  return ofi_fail(ret == -FI_EAGAIN ? SYMHEAP_ERR_TIMEOUT : SYMHEAP_ERR_DEVICE,
                  ret, "ofi %s to rank %d (provider %s)", op, peer,
                  c->provider);
}

symheap_result_t ofi_put(void *ctx, int peer, const void *src, void *mr,
                         size_t len, void *rkey, uint64_t offset,
                         unsigned flags) {
  ofi_ctx_t *c = ctx;
  symheap_result_t r = check_peer(c, peer, rkey, "put");
  if (r != SYMHEAP_SUCCESS || !len)
    return r;
  void *desc = NULL;
  const void *buf = src;
  int copy = !(flags & SYMHEAP_NET_NBI) && len <= OFI_BOUNCE_MAX;
  if (copy)
    r = ofi_bounce(c, src, len, (void **)&buf, &desc);
  else
    r = ofi_local_desc(c, src, len, mr, &desc);
  if (r != SYMHEAP_SUCCESS)
    return r;
  const ofi_key_t *k = rkey;
  struct iovec iov = {(void *)buf, len};
  struct fi_rma_iov rma = {raddr(k, offset), len, k->key};
  struct fi_msg_rma msg = {.msg_iov = &iov,
                           .desc = &desc,
                           .iov_count = 1,
                           .addr = c->peers[peer],
                           .rma_iov = &rma,
                           .rma_iov_count = 1};
  uint64_t fl = FI_DELIVERY_COMPLETE | take_fence(c);
  uint64_t end = ofi_deadline(c);
  int ret;
  while ((ret = (int)fi_writemsg(c->ep, &msg, fl)) == -FI_EAGAIN &&
         ofi_again(c, end))
    ;
  if ((r = issued(c, ret, "put", peer)) != SYMHEAP_SUCCESS)
    return r;
  /* A blocking put of a buffer not copied: the source is the caller's
   * again only once the operation is done. */
  if (!copy && !(flags & SYMHEAP_NET_NBI))
    return ofi_quiet(c, -1);
  return SYMHEAP_SUCCESS;
}

symheap_result_t ofi_get(void *ctx, int peer, void *dst, void *mr, size_t len,
                         void *rkey, uint64_t offset, unsigned flags) {
  ofi_ctx_t *c = ctx;
  (void)flags; /* dst is valid after quiet either way */
  symheap_result_t r = check_peer(c, peer, rkey, "get");
  if (r != SYMHEAP_SUCCESS || !len)
    return r;
  void *desc = NULL;
  if ((r = ofi_local_desc(c, dst, len, mr, &desc)) != SYMHEAP_SUCCESS)
    return r;
  const ofi_key_t *k = rkey;
  struct iovec iov = {dst, len};
  struct fi_rma_iov rma = {raddr(k, offset), len, k->key};
  struct fi_msg_rma msg = {.msg_iov = &iov,
                           .desc = &desc,
                           .iov_count = 1,
                           .addr = c->peers[peer],
                           .rma_iov = &rma,
                           .rma_iov_count = 1};
  uint64_t fl = take_fence(c);
  uint64_t end = ofi_deadline(c);
  int ret;
  /* Without a fence, fi_read: the endpoint's own flags, which some
   * providers (shm) serve on a faster path than fi_readmsg's. */
  while ((ret = fl ? (int)fi_readmsg(c->ep, &msg, fl)
                   : (int)fi_read(c->ep, dst, len, desc, c->peers[peer],
                                  rma.addr, rma.key, NULL)) == -FI_EAGAIN &&
         ofi_again(c, end))
    ;
  return issued(c, ret, "get", peer);
}

/* symheap's operation as libfabric's, and whether it fetches. */
static int amo_op(symheap_net_amo_t op, enum fi_op *out) {
  switch (op) {
  case SYMHEAP_NET_AMO_FETCH:
    *out = FI_ATOMIC_READ;
    return 1;
  case SYMHEAP_NET_AMO_SET:
  case SYMHEAP_NET_AMO_SWAP:
    *out = FI_ATOMIC_WRITE;
    return 1;
  case SYMHEAP_NET_AMO_ADD:
  case SYMHEAP_NET_AMO_FETCH_ADD:
    *out = FI_SUM;
    return 1;
  case SYMHEAP_NET_AMO_CSWAP:
    *out = FI_CSWAP;
    return 1;
  case SYMHEAP_NET_AMO_AND:
    *out = FI_BAND;
    return 1;
  case SYMHEAP_NET_AMO_OR:
    *out = FI_BOR;
    return 1;
  case SYMHEAP_NET_AMO_XOR:
    *out = FI_BXOR;
    return 1;
  }
  return 0;
}

/* Issue the atomic described by msg: plain, fetching or comparing. */
static int post_atomic(ofi_ctx_t *c, struct fi_msg_atomic *msg,
                       symheap_net_amo_t op, struct fi_ioc *cmp,
                       void **cmp_desc, struct fi_ioc *res, void **res_desc) {
  uint64_t fl = take_fence(c);
  uint64_t end = ofi_deadline(c);
  int ret;
  for (;;) {
    if (op == SYMHEAP_NET_AMO_CSWAP)
      ret = (int)fi_compare_atomicmsg(c->ep, msg, cmp, cmp_desc, 1, res,
                                      res_desc, 1, fl);
    else if (res)
      ret = (int)fi_fetch_atomicmsg(c->ep, msg, res, res_desc, 1, fl);
    else
      ret = (int)fi_atomicmsg(c->ep, msg, fl | FI_DELIVERY_COMPLETE);
    if (ret != -FI_EAGAIN || !ofi_again(c, end))
      return ret;
  }
}

symheap_result_t ofi_atomic(void *ctx, int peer, symheap_net_amo_t op,
                            size_t size, void *rkey, uint64_t offset,
                            const void *operand, const void *compare,
                            void *fetch) {
  ofi_ctx_t *c = ctx;
  symheap_result_t r = check_peer(c, peer, rkey, "atomic");
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (!c->atomics) /* its caps say so too: nothing is sent */
    return c->svc->error(SYMHEAP_ERR_UNSUPPORTED,
                         "ofi atomic: provider %s has no atomics (no "
                         "FI_ATOMIC, or fi_fetch_atomicvalid refuses a "
                         "64-bit fetch-add)",
                         c->provider);
  enum fi_op fop;
  int needs_fetch = op == SYMHEAP_NET_AMO_FETCH ||
                    op == SYMHEAP_NET_AMO_FETCH_ADD ||
                    op == SYMHEAP_NET_AMO_SWAP || op == SYMHEAP_NET_AMO_CSWAP;
  if ((size != 4 && size != 8) || !amo_op(op, &fop) ||
      (needs_fetch && !fetch) || (op == SYMHEAP_NET_AMO_CSWAP && !compare) ||
      (op != SYMHEAP_NET_AMO_FETCH && !operand))
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ofi atomic: op %d of %zu bytes with operand %p, "
                         "compare %p, fetch %p",
                         (int)op, size, operand, compare, fetch);
  if (offset % size)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ofi atomic: offset %llu is not aligned to %zu",
                         (unsigned long long)offset, size);
  if (ofi_self_atomic(c, peer, op, size, rkey, offset, operand, compare,
                      fetch))
    return SYMHEAP_SUCCESS;
  /* Operand and compare are copied: the caller's may be gone on return. */
  void *opnd, *cmpv = NULL, *desc, *cdesc = NULL, *fdesc = NULL;
  uint64_t zero = 0;
  if ((r = ofi_bounce(c, operand ? operand : &zero, size, &opnd, &desc)) ||
      (compare && (r = ofi_bounce(c, compare, size, &cmpv, &cdesc))) ||
      (fetch && (r = ofi_local_desc(c, fetch, size, NULL, &fdesc))))
    return r;
  const ofi_key_t *k = rkey;
  struct fi_ioc ioc = {opnd, 1}, cmp = {cmpv, 1}, res = {fetch, 1};
  struct fi_rma_ioc rma = {raddr(k, offset), 1, k->key};
  struct fi_msg_atomic msg = {.msg_iov = &ioc,
                              .desc = &desc,
                              .iov_count = 1,
                              .addr = c->peers[peer],
                              .rma_iov = &rma,
                              .rma_iov_count = 1,
                              .datatype = size == 4 ? FI_UINT32 : FI_UINT64,
                              .op = fop};
  int ret = post_atomic(c, &msg, op, &cmp, &cdesc, fetch ? &res : NULL, &fdesc);
  return issued(c, ret, "atomic", peer);
}

/* The data with the signal in its remote CQ data: one message, the signal
 * applied by the target when its progress reads the entry (ofi_local.c). */
static symheap_result_t put_data(ofi_ctx_t *c, int peer, const void *src,
                                 void *mr, size_t len, const ofi_key_t *k,
                                 uint64_t offset, uint64_t data,
                                 unsigned flags) {
  void *desc = NULL;
  const void *buf = src;
  int copy = !(flags & SYMHEAP_NET_NBI) && len <= OFI_BOUNCE_MAX;
  symheap_result_t r = copy ? ofi_bounce(c, src, len, (void **)&buf, &desc)
                            : ofi_local_desc(c, src, len, mr, &desc);
  if (r != SYMHEAP_SUCCESS)
    return r;
  struct iovec iov = {(void *)buf, len};
  struct fi_rma_iov rma = {raddr(k, offset), len, k->key};
  struct fi_msg_rma msg = {.msg_iov = &iov,
                           .desc = &desc,
                           .iov_count = 1,
                           .addr = c->peers[peer],
                           .rma_iov = &rma,
                           .rma_iov_count = 1,
                           .data = data};
  uint64_t fl = FI_DELIVERY_COMPLETE | FI_REMOTE_CQ_DATA | take_fence(c);
  uint64_t end = ofi_deadline(c);
  int ret;
  while ((ret = (int)fi_writemsg(c->ep, &msg, fl)) == -FI_EAGAIN &&
         ofi_again(c, end))
    ;
  if ((r = issued(c, ret, "put_signal", peer)) != SYMHEAP_SUCCESS)
    return r;
  if (!copy && !(flags & SYMHEAP_NET_NBI))
    return ofi_quiet(c, -1);
  return SYMHEAP_SUCCESS;
}

symheap_result_t ofi_put_signal(void *ctx, int peer, const void *src, void *mr,
                                size_t len, void *rkey, uint64_t offset,
                                void *sig_rkey, uint64_t sig_offset,
                                uint64_t value, symheap_net_amo_t sig_op,
                                unsigned flags) {
  ofi_ctx_t *c = ctx;
  if (sig_op != SYMHEAP_NET_AMO_SET && sig_op != SYMHEAP_NET_AMO_ADD)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ofi put_signal: the signal op must be SET or ADD");
  uint64_t data;
  symheap_result_t r = check_peer(c, peer, rkey, "put_signal");
  if (r == SYMHEAP_SUCCESS)
    r = check_peer(c, peer, sig_rkey, "put_signal");
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* One message where the signal fits the remote CQ data (a region key,
   * an offset and a value small enough) and this is not the rank itself
   * (whose CQ would see its own write). */
  if (len && peer != c->rank &&
      ofi_sig_encode(c, sig_rkey, sig_offset, value, sig_op, &data))
    return put_data(c, peer, src, mr, len, rkey, offset, data, flags);
  if (!c->atomics)
    return c->svc->error(SYMHEAP_ERR_UNSUPPORTED,
                         "ofi put_signal: provider %s has no atomics, and "
                         "this signal does not travel in one message (to "
                         "the rank itself, a zero-length put, a value of "
                         "2^20 or more, or SYMHEAP_OFI_PUT_SIGNAL=atomic)",
                         c->provider);
  /* Else the data, then the signal's atomic, with a fence between them
   * (FI_FENCE, or a quiet where the provider has none) unless the provider
   * places writes of this size in order. */
  r = ofi_put(c, peer, src, mr, len, rkey, offset, flags);
  if (r == SYMHEAP_SUCCESS && len > c->waw_size)
    r = ofi_fence(c);
  if (r == SYMHEAP_SUCCESS)
    r = ofi_atomic(c, peer, sig_op, 8, sig_rkey, sig_offset, &value, NULL,
                   NULL);
  return r;
}

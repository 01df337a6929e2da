/* One-sided operations: put, get, the atomics and put_signal, each one
 * ucp_*_nbx call on the peer's endpoint, after the key's bounds are
 * checked.  An operation UCX does not finish at once is counted for quiet
 * (ucx_quiet.c), except a blocking put (its source must be free on
 * return: local completion, which small puts have at once) and a blocking
 * get (its destination filled): those are waited for here. */
#include <string.h>

#include "ucx.h"

static symheap_result_t check(ucx_ctx_t *c, int peer, const void *rkey,
                              uint64_t offset, size_t len, const char *op) {
  if (!c->peers)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ucx %s before connect", op);
  if (peer < 0 || peer >= c->nranks)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx %s: rank %d is not in 0..%d", op, peer,
                         c->nranks - 1);
  if (!rkey)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ucx %s: no remote key", op);
  const ucx_rkey_t *k = rkey;
  if (k->peer != peer)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx %s: the key is rank %d's, not rank %d's", op,
                         k->peer, peer);
  /* UCX over tcp writes wherever an address points (its software RMA
   * checks no key at the target): what lies outside the key's region is
   * refused here, before anything is sent. */
  if (offset > k->size || len > k->size - offset)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx %s: %zu bytes at offset %llu are outside rank "
                         "%d's registered region (%llu bytes): refused "
                         "before sending",
                         op, len, (unsigned long long)offset, peer,
                         (unsigned long long)k->size);
  if (c->peers[peer].failed != UCS_OK)
    return ucx_fail(SYMHEAP_ERR_REMOTE, c->peers[peer].failed,
                    "ucx %s: the endpoint to rank %d has failed (the peer "
                    "is gone)",
                    op, peer);
  return SYMHEAP_SUCCESS;
}

/* Parameters of a counted operation: its callback, told the peer. */
static void counted(ucp_request_param_t *p, ucx_peer_t *peer) {
  memset(p, 0, sizeof *p);
  p->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p->cb.send = ucx_op_done;
  p->user_data = peer;
}

/* What a call that UCX may complete at once returned, waited for here
 * when it did not (a blocking put's source is free, a blocking get's
 * destination filled, on return). */
static symheap_result_t now(ucx_ctx_t *c, ucs_status_ptr_t sp, const char *op,
                            int peer) {
  if (UCS_PTR_IS_PTR(sp))
    return ucx_wait(c, sp, op, peer);
  ucs_status_t st = UCS_PTR_RAW_STATUS(sp);
  return st == UCS_OK ? SYMHEAP_SUCCESS
                      : ucx_fail(ucx_result(st), st, "ucx %s to rank %d", op,
                                 peer);
}

symheap_result_t ucx_put(void *ctx, int peer, const void *src, void *mr,
                         size_t len, void *rkey, uint64_t offset,
                         unsigned flags) {
  ucx_ctx_t *c = ctx;
  (void)mr; /* UCX finds (or registers) the source itself */
  symheap_result_t r = check(c, peer, rkey, offset, len, "put");
  if (r != SYMHEAP_SUCCESS || !len)
    return r;
  const ucx_rkey_t *k = rkey;
  ucx_peer_t *p = &c->peers[peer];
  ucp_request_param_t prm;
  c->unflushed++; /* visible at the target after quiet's flush */
  if (flags & SYMHEAP_NET_NBI) {
    counted(&prm, p);
    return ucx_issued(
        c, p, ucx_api.put_nbx(p->ep, src, len, k->base + offset, k->rkey, &prm),
        "put");
  }
  memset(&prm, 0, sizeof prm);
  c->touched[peer] = 1;
  return now(c, ucx_api.put_nbx(p->ep, src, len, k->base + offset, k->rkey,
                                &prm),
             "put", peer);
}

/* A blocking get (no SYMHEAP_NET_NBI) is waited for here, as OSHMEM's
 * spml ucx does: the quiet that follows it then has nothing to flush. */
symheap_result_t ucx_get(void *ctx, int peer, void *dst, void *mr, size_t len,
                         void *rkey, uint64_t offset, unsigned flags) {
  ucx_ctx_t *c = ctx;
  (void)mr;
  symheap_result_t r = check(c, peer, rkey, offset, len, "get");
  if (r != SYMHEAP_SUCCESS || !len)
    return r;
  const ucx_rkey_t *k = rkey;
  ucx_peer_t *p = &c->peers[peer];
  ucp_request_param_t prm;
  if (flags & SYMHEAP_NET_NBI) {
    counted(&prm, p);
    return ucx_issued(
        c, p,
        ucx_api.get_nbx(p->ep, dst, len, k->base + offset, k->rkey, &prm),
        "get");
  }
  memset(&prm, 0, sizeof prm);
  c->touched[peer] = 1;
  return now(c, ucx_api.get_nbx(p->ep, dst, len, k->base + offset, k->rkey,
                                &prm),
             "get", peer);
}

/* A slot of the arena for an operand or a discarded result, alive until
 * quiet (a full arena is quieted first). */
static symheap_result_t slot(ucx_ctx_t *c, uint64_t v, uint64_t **out) {
  if (c->arena_used == UCX_ARENA_SLOTS) {
    symheap_result_t r = ucx_quiet(c, -1);
    if (r != SYMHEAP_SUCCESS)
      return r;
  }
  *out = &c->arena[c->arena_used++];
  **out = v;
  return SYMHEAP_SUCCESS;
}

/* symheap's operation as UCP's; *fetches: whether UCP needs a reply buffer
 * (SET is a swap whose old value nobody reads; FETCH an add of 0). */
static int amo_op(symheap_net_amo_t op, ucp_atomic_op_t *out, int *fetches) {
  static const struct {
    ucp_atomic_op_t op;
    int fetches;
  } map[] = {
      [SYMHEAP_NET_AMO_FETCH] = {UCP_ATOMIC_OP_ADD, 1},
      [SYMHEAP_NET_AMO_SET] = {UCP_ATOMIC_OP_SWAP, 1},
      [SYMHEAP_NET_AMO_ADD] = {UCP_ATOMIC_OP_ADD, 0},
      [SYMHEAP_NET_AMO_FETCH_ADD] = {UCP_ATOMIC_OP_ADD, 1},
      [SYMHEAP_NET_AMO_SWAP] = {UCP_ATOMIC_OP_SWAP, 1},
      [SYMHEAP_NET_AMO_CSWAP] = {UCP_ATOMIC_OP_CSWAP, 1},
      [SYMHEAP_NET_AMO_AND] = {UCP_ATOMIC_OP_AND, 0},
      [SYMHEAP_NET_AMO_OR] = {UCP_ATOMIC_OP_OR, 0},
      [SYMHEAP_NET_AMO_XOR] = {UCP_ATOMIC_OP_XOR, 0},
  };
  if ((unsigned)op >= sizeof map / sizeof *map)
    return 0;
  *out = map[op].op;
  *fetches = map[op].fetches;
  return 1;
}

static uint64_t value_of(const void *p, size_t size) {
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

/* UCP's compare-swap takes the compared value from the operand buffer
 * and the new one from the reply buffer, where the old value lands (the
 * table of ucp_atomic_op_nbx in ucp.h: "Result=Y; if (X==Y) then Y=Z", X
 * the buffer, Z the reply buffer), for 4 and 8 bytes alike. */
symheap_result_t ucx_atomic(void *ctx, int peer, symheap_net_amo_t op,
                            size_t size, void *rkey, uint64_t offset,
                            const void *operand, const void *compare,
                            void *fetch) {
  ucx_ctx_t *c = ctx;
  symheap_result_t r = check(c, peer, rkey, offset, size, "atomic");
  if (r != SYMHEAP_SUCCESS)
    return r;
  ucp_atomic_op_t uop = UCP_ATOMIC_OP_LAST; /* amo_op sets it */
  int fetches = 0;
  int ok = amo_op(op, &uop, &fetches);
  int must_fetch = op == SYMHEAP_NET_AMO_FETCH ||
                   op == SYMHEAP_NET_AMO_FETCH_ADD ||
                   op == SYMHEAP_NET_AMO_SWAP || op == SYMHEAP_NET_AMO_CSWAP;
  if ((size != 4 && size != 8) || !ok || (must_fetch && !fetch) ||
      (op == SYMHEAP_NET_AMO_CSWAP && !compare) ||
      (op != SYMHEAP_NET_AMO_FETCH && !operand))
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx atomic: op %d of %zu bytes with operand %p, "
                         "compare %p, fetch %p",
                         (int)op, size, operand, compare, fetch);
  if (offset % size)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx atomic: offset %llu is not aligned to %zu",
                         (unsigned long long)offset, size);
  /* The operand is copied (the caller's may be gone on return); the
   * result lands in fetch, or in the arena where nobody reads it. */
  int cswap = op == SYMHEAP_NET_AMO_CSWAP;
  uint64_t *opnd, *res = NULL;
  if ((r = slot(c, value_of(cswap ? compare : operand, size), &opnd)) !=
      SYMHEAP_SUCCESS)
    return r;
  void *reply = fetch;
  if (cswap) {
    memcpy(fetch, operand, size);
  } else if (fetches && !fetch) {
    if ((r = slot(c, 0, &res)) != SYMHEAP_SUCCESS)
      return r;
    reply = res;
  }
  const ucx_rkey_t *k = rkey;
  ucx_peer_t *p = &c->peers[peer];
  ucp_request_param_t prm;
  counted(&prm, p);
  prm.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  prm.datatype = ucp_dt_make_contig(size);
  if (reply) {
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    prm.reply_buffer = reply;
  } else {
    c->unflushed++; /* applied at the target after quiet's flush */
  }
  return ucx_issued(c, p,
                    ucx_api.atomic_op_nbx(p->ep, uop, opnd, 1,
                                          k->base + offset, k->rkey, &prm),
                    "atomic");
}

/* The data, a fence, the signal's atomic: UCX applies the signal after the
 * data at the target (ucp_worker_fence orders them). */
symheap_result_t ucx_put_signal(void *ctx, int peer, const void *src, void *mr,
                                size_t len, void *rkey, uint64_t offset,
                                void *sig_rkey, uint64_t sig_offset,
                                uint64_t value, symheap_net_amo_t sig_op,
                                unsigned flags) {
  ucx_ctx_t *c = ctx;
  if (sig_op != SYMHEAP_NET_AMO_SET && sig_op != SYMHEAP_NET_AMO_ADD)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx put_signal: the signal op must be SET or ADD");
  symheap_result_t r = check(c, peer, sig_rkey, sig_offset, 8, "put_signal");
  if (r == SYMHEAP_SUCCESS)
    r = ucx_put(c, peer, src, mr, len, rkey, offset, flags);
  if (r == SYMHEAP_SUCCESS && len)
    r = ucx_fence(c);
  if (r == SYMHEAP_SUCCESS)
    r = ucx_atomic(c, peer, sig_op, 8, sig_rkey, sig_offset, &value, NULL,
                   NULL);
  return r;
}

/* One-sided operations: put, get, the atomics and put_signal, each one
 * ucp_*_nbx call on the peer's endpoint.  An operation UCX does not finish
 * at once is counted for quiet (ucx_quiet.c), except a blocking put, whose
 * source must be free on return: that one is waited for here (local
 * completion; small puts complete at once). */
#include <string.h>

#include "ucx.h"

static symheap_result_t check(ucx_ctx_t *c, int peer, const void *rkey,
                              const char *op) {
  if (!c->peers)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ucx %s before connect", op);
  if (peer < 0 || peer >= c->nranks)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx %s: rank %d is not in 0..%d", op, peer,
                         c->nranks - 1);
  if (!rkey)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ucx %s: no remote key", op);
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

symheap_result_t ucx_put(void *ctx, int peer, const void *src, void *mr,
                         size_t len, void *rkey, uint64_t offset,
                         unsigned flags) {
  ucx_ctx_t *c = ctx;
  (void)mr; /* UCX finds (or registers) the source itself */
  symheap_result_t r = check(c, peer, rkey, "put");
  if (r != SYMHEAP_SUCCESS || !len)
    return r;
  const ucx_rkey_t *k = rkey;
  ucx_peer_t *p = &c->peers[peer];
  ucp_request_param_t prm;
  if (flags & SYMHEAP_NET_NBI) {
    counted(&prm, p);
    return ucx_issued(
        c, p, ucx_api.put_nbx(p->ep, src, len, k->base + offset, k->rkey, &prm),
        "put");
  }
  memset(&prm, 0, sizeof prm);
  ucs_status_ptr_t sp =
      ucx_api.put_nbx(p->ep, src, len, k->base + offset, k->rkey, &prm);
  c->touched[peer] = 1;
  if (UCS_PTR_IS_PTR(sp))
    return ucx_wait(c, sp, "put", peer);
  ucs_status_t st = UCS_PTR_RAW_STATUS(sp);
  return st == UCS_OK ? SYMHEAP_SUCCESS
                      : ucx_fail(ucx_result(st), st, "ucx put to rank %d",
                                 peer);
}

symheap_result_t ucx_get(void *ctx, int peer, void *dst, void *mr, size_t len,
                         void *rkey, uint64_t offset, unsigned flags) {
  ucx_ctx_t *c = ctx;
  (void)mr;
  (void)flags; /* dst is valid after quiet either way */
  symheap_result_t r = check(c, peer, rkey, "get");
  if (r != SYMHEAP_SUCCESS || !len)
    return r;
  const ucx_rkey_t *k = rkey;
  ucx_peer_t *p = &c->peers[peer];
  ucp_request_param_t prm;
  counted(&prm, p);
  return ucx_issued(
      c, p, ucx_api.get_nbx(p->ep, dst, len, k->base + offset, k->rkey, &prm),
      "get");
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

/* One 8-byte atomic waited for here: *reply in (compare) and out. */
static symheap_result_t amo64_now(ucx_ctx_t *c, int peer, const ucx_rkey_t *k,
                                  uint64_t off, ucp_atomic_op_t op,
                                  uint64_t operand, uint64_t *reply) {
  ucp_request_param_t prm;
  memset(&prm, 0, sizeof prm);
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
  prm.datatype = ucp_dt_make_contig(8);
  prm.reply_buffer = reply;
  ucs_status_ptr_t sp = ucx_api.atomic_op_nbx(c->peers[peer].ep, op, &operand,
                                              1, k->base + off, k->rkey, &prm);
  c->touched[peer] = 1;
  if (UCS_PTR_IS_PTR(sp))
    return ucx_wait(c, sp, "atomic", peer);
  ucs_status_t st = UCS_PTR_RAW_STATUS(sp);
  return st == UCS_OK ? SYMHEAP_SUCCESS
                      : ucx_fail(ucx_result(st), st, "ucx atomic to rank %d",
                                 peer);
}

/* A 4-byte compare-swap as 8-byte ones on the word that holds it (UCX
 * 1.13's software atomics, over tcp, never match a 4-byte compare): read
 * the word, and swap it whole where its half matches, again while the
 * other half changes under us.  Blocking: fetch is set on return. */
static symheap_result_t cswap32(ucx_ctx_t *c, int peer, const ucx_rkey_t *k,
                                uint64_t offset, const void *compare,
                                const void *operand, void *fetch) {
  uint64_t word = offset & ~(uint64_t)7;
  int shift = (offset & 4) ? 32 : 0; /* little-endian halves */
  uint32_t cmp = (uint32_t)value_of(compare, 4),
           swp = (uint32_t)value_of(operand, 4);
  uint64_t end = c->svc->now_ns() + (uint64_t)c->timeout_ms * 1000000u;
  for (;;) {
    uint64_t cur = 0;
    symheap_result_t r =
        amo64_now(c, peer, k, word, UCP_ATOMIC_OP_ADD, 0, &cur);
    uint32_t mine = (uint32_t)(cur >> shift);
    if (r == SYMHEAP_SUCCESS && mine == cmp) {
      uint64_t want = (cur & ~((uint64_t)0xffffffffu << shift)) |
                      (uint64_t)swp << shift;
      uint64_t old = cur;
      r = amo64_now(c, peer, k, word, UCP_ATOMIC_OP_CSWAP, want, &old);
      if (r == SYMHEAP_SUCCESS && old != cur) {
        if (c->svc->now_ns() > end)
          return c->svc->error(SYMHEAP_ERR_TIMEOUT,
                               "ucx 4-byte compare-swap to rank %d: its word "
                               "kept changing for %d ms",
                               peer, c->timeout_ms);
        continue; /* the other half moved: again */
      }
    }
    if (r == SYMHEAP_SUCCESS)
      memcpy(fetch, &mine, 4);
    return r;
  }
}

symheap_result_t ucx_atomic(void *ctx, int peer, symheap_net_amo_t op,
                            size_t size, void *rkey, uint64_t offset,
                            const void *operand, const void *compare,
                            void *fetch) {
  ucx_ctx_t *c = ctx;
  symheap_result_t r = check(c, peer, rkey, "atomic");
  if (r != SYMHEAP_SUCCESS)
    return r;
  ucp_atomic_op_t uop;
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
   * result lands in fetch, or in the arena where nobody reads it.  A
   * compare-swap's reply buffer carries the compared value in. */
  uint64_t *opnd, *res = NULL;
  if ((r = slot(c, value_of(operand, size), &opnd)) != SYMHEAP_SUCCESS)
    return r;
  if (op == SYMHEAP_NET_AMO_CSWAP && size == 4)
    return cswap32(c, peer, rkey, offset, compare, operand, fetch);
  void *reply = fetch;
  if (op == SYMHEAP_NET_AMO_CSWAP) {
    memcpy(fetch, compare, size);
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
  symheap_result_t r = check(c, peer, sig_rkey, "put_signal");
  if (r == SYMHEAP_SUCCESS)
    r = ucx_put(c, peer, src, mr, len, rkey, offset, flags);
  if (r == SYMHEAP_SUCCESS && len)
    r = ucx_fence(c);
  if (r == SYMHEAP_SUCCESS)
    r = ucx_atomic(c, peer, sig_op, 8, sig_rkey, sig_offset, &value, NULL,
                   NULL);
  return r;
}

/* Completion: the requests UCX hands back, quiet (flush) and fence.
 *
 * An operation that UCX does not complete at once returns a request; it is
 * counted (pending) and its callback, run by a later ucp_worker_progress,
 * uncounts it, records a failure and frees it.  quiet flushes the worker
 * where puts or non-fetching atomics were issued since the last quiet
 * (UCX's flush completes every operation at its target: a put is visible
 * there) and waits, progressing, until the flush and every counted request
 * are done, within its bound; a peer whose endpoint failed ends the wait
 * at once with its error. */
#include <stdio.h>
#include <string.h>

#include "ucx.h"

void ucx_op_done(void *req, ucs_status_t st, void *user) {
  ucx_peer_t *p = user;
  ucx_ctx_t *c = p->c;
  c->pending--;
  if (st != UCS_OK && c->op_error == UCS_OK) {
    c->op_error = st;
    c->op_error_peer = p->rank;
  }
  ucx_api.request_free(req);
}

symheap_result_t ucx_issued(ucx_ctx_t *c, ucx_peer_t *p, ucs_status_ptr_t sp,
                            const char *op) {
  c->touched[p->rank] = 1;
  if (UCS_PTR_IS_PTR(sp)) {
    c->pending++;
    return SYMHEAP_SUCCESS;
  }
  ucs_status_t st = UCS_PTR_RAW_STATUS(sp);
  if (st == UCS_OK)
    return SYMHEAP_SUCCESS;
  return ucx_fail(ucx_result(st), st, "ucx %s to rank %d", op, p->rank);
}

/* The ranks of this quiet (touched) that UCX reported failed, or none. */
static int failed_peer(const ucx_ctx_t *c) {
  for (int r = 0; r < c->nranks; r++)
    if (c->touched[r] && c->peers[r].failed != UCS_OK)
      return r;
  return -1;
}

static void touched_list(const ucx_ctx_t *c, char *out, size_t len) {
  size_t o = 0;
  int shown = 0;
  out[0] = '\0';
  for (int r = 0; r < c->nranks && o + 16 < len; r++)
    if (c->touched[r] && shown++ < 8)
      o += (size_t)snprintf(out + o, len - o, "%s%d", o ? ", " : "", r);
  if (shown > 8)
    snprintf(out + o, len - o, ", ...");
}

static symheap_result_t quiet_timeout(ucx_ctx_t *c, int ms) {
  char ranks[128];
  c->abandoned = 1;
  touched_list(c, ranks, sizeof ranks);
  return c->svc->error(SYMHEAP_ERR_TIMEOUT,
                       "ucx quiet: operations to rank(s) %s (%llu request(s) "
                       "and the worker's flush) still outstanding after %d "
                       "ms: the peer is gone or does not progress (UCX has "
                       "not reported its endpoint failed)",
                       ranks[0] ? ranks : "?",
                       (unsigned long long)c->pending, ms);
}

static symheap_result_t quiet_failed(int peer, ucs_status_t st) {
  return ucx_fail(SYMHEAP_ERR_REMOTE, st,
                  "ucx quiet: operations to rank %d failed (the peer is gone "
                  "or refused the access)",
                  peer);
}

/* After a complete quiet: the arena is free again, nobody touched. */
static symheap_result_t quiet_done(ucx_ctx_t *c, ucs_status_t flush_st) {
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (c->op_error != UCS_OK)
    r = quiet_failed(c->op_error_peer, c->op_error);
  else if (flush_st != UCS_OK)
    r = ucx_fail(ucx_result(flush_st), flush_st, "ucp_worker_flush_nbx");
  c->op_error = UCS_OK;
  c->unflushed = 0;
  c->arena_used = 0;
  memset(c->touched, 0, (size_t)c->nranks);
  return r;
}

symheap_result_t ucx_quiet(void *ctx, int timeout_ms) {
  ucx_ctx_t *c = ctx;
  if (!c->peers)
    return SYMHEAP_SUCCESS;
  int ms = timeout_ms < 0 ? c->timeout_ms : timeout_ms;
  uint64_t end = c->svc->now_ns() + (uint64_t)ms * 1000000u;
  int bad = failed_peer(c);
  if (bad >= 0)
    return quiet_failed(bad, c->peers[bad].failed);
  /* Gets and fetching atomics are complete (at the target too) once their
   * requests are: without puts or non-fetching atomics since the last
   * quiet, no flush (OSHMEM's spml ucx waits for a get's request alone;
   * the flush walks every endpoint and costs a request of its own). */
  void *req = NULL;
  ucs_status_t st = UCS_OK;
  if (c->unflushed) {
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof prm);
    req = ucx_api.worker_flush_nbx(c->worker, &prm);
    st = UCS_PTR_IS_PTR(req) ? UCS_INPROGRESS : UCS_PTR_RAW_STATUS(req);
  }
  for (;;) {
    if (st == UCS_INPROGRESS)
      st = ucx_api.request_check_status(req);
    if (st != UCS_INPROGRESS && c->pending == 0)
      break;
    ucx_api.worker_progress(c->worker);
    bad = failed_peer(c);
    if (bad >= 0 || c->svc->now_ns() > end) {
      if (UCS_PTR_IS_PTR(req))
        ucx_api.request_free(req); /* released by UCX when it completes */
      return bad >= 0 ? quiet_failed(bad, c->peers[bad].failed)
                      : quiet_timeout(c, ms);
    }
  }
  if (UCS_PTR_IS_PTR(req))
    ucx_api.request_free(req);
  return quiet_done(c, st);
}

/* ucp_worker_fence: operations issued after it are applied at their target
 * after those issued before it, without waiting for them. */
symheap_result_t ucx_fence(void *ctx) {
  ucx_ctx_t *c = ctx;
  ucs_status_t st = ucx_api.worker_fence(c->worker);
  if (st != UCS_OK)
    return ucx_fail(ucx_result(st), st, "ucp_worker_fence");
  return SYMHEAP_SUCCESS;
}

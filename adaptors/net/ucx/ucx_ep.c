/* The context: UCP context and worker, the worker's address, endpoints to
 * every rank, progress, sleeping on the worker's event fd, quiet and fence.
 *
 * Completion: operations that do not complete at once return a request
 * whose callback (op_done) counts it finished and records a failure; quiet
 * is ucp_worker_flush_nbx (complete at the target: visible there, UCX's
 * flush being remote completion) waited for within its bound, plus every
 * such callback run.  A peer that fails (its process gone, its link down
 * until UCX notices) is reported by the endpoints' error handler
 * (UCP_ERR_HANDLING_MODE_PEER); later operations to it fail at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ucx.h"

/* Logged at INFO, not WARN: when a comm is destroyed, a peer that closes
 * first (its worker gone, its sockets closed) is reported here by ranks
 * still tearing down, which is no failure.  A real one reaches the user as
 * the error of the next operation to that peer (ucx_rma.c) or of quiet. */
static void err_handler(void *arg, ucp_ep_h ep, ucs_status_t status) {
  ucx_peer_t *p = arg;
  (void)ep;
  if (p->failed == UCS_OK)
    p->failed = status;
  p->c->svc->log(SYMHEAP_LOG_INFO, "ucx: the endpoint to rank %d failed: %s",
                 p->rank, ucx_api.status_string(status));
}

/* Close every endpoint without waiting for peers (they may be gone):
 * outstanding operations complete with UCS_ERR_CANCELED.  A failed
 * endpoint is closed too (UCX's contract: the error handler's owner closes
 * it with FORCE) unless requests were given up on (failed_too 0): then
 * UCX 1.13 asserts closing it, and it is left to the process's exit. */
static void close_eps(ucx_ctx_t *c, int failed_too) {
  ucp_request_param_t prm;
  memset(&prm, 0, sizeof prm);
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
  for (int r = 0; c->peers && r < c->nranks; r++) {
    if (!c->peers[r].ep || (!failed_too && c->peers[r].failed != UCS_OK))
      continue;
    void *req = ucx_api.ep_close_nbx(c->peers[r].ep, &prm);
    if (UCS_PTR_IS_PTR(req)) {
      uint64_t end = c->svc->now_ns() + 1000000000ull;
      ucs_status_t st;
      while ((st = ucx_api.request_check_status(req)) == UCS_INPROGRESS &&
             c->svc->now_ns() < end)
        ucx_api.worker_progress(c->worker);
      if (st == UCS_INPROGRESS)
        c->abandoned = 1; /* still UCX's: the worker must stay */
      ucx_api.request_free(req);
    }
    c->peers[r].ep = NULL;
  }
}

void ucx_close(void *ctx) {
  ucx_ctx_t *c = ctx;
  if (!c)
    return;
  /* Operations still in flight are drained first, within a second: UCX
   * 1.13 aborts destroying a worker that still holds some. */
  if (c->peers && (c->pending || c->unflushed))
    SYMHEAP_KEEP_ERROR(c->svc, (void)ucx_quiet(c, 1000));
  /* A peer that failed (or closed first, at a comm's destroy) is closed
   * like the others, and the worker destroyed.  Only requests given up on
   * keep it: then UCX 1.13 asserts closing a failed endpoint
   * (refcounts.create; seen in the kit's net_timeout, a quiet that timed
   * out on a stopped peer that later died) and aborts in
   * ucp_worker_destroy, so the live endpoints are closed, the failed ones
   * and the worker, the context and this context's memory (requests in
   * flight point into its arena) are left to the process's exit; nothing
   * progresses the worker again, so nothing of it runs. */
  if (c->abandoned || c->pending != 0) {
    close_eps(c, 0);
    c->svc->log(SYMHEAP_LOG_WARN,
                "ucx: operations were given up on: the UCX worker is left "
                "to the process's exit (UCX 1.13 aborts closing or "
                "destroying one with requests in flight)");
    return;
  }
  ucx_rkeys_destroy_all(c); /* before the endpoints they were unpacked on */
  close_eps(c, 1);
  if (c->abandoned) {
    c->svc->log(SYMHEAP_LOG_WARN,
                "ucx: an endpoint's close did not complete within 1 s: the "
                "UCX worker is left to the process's exit");
    return;
  }
  ucx_unmap_all(c); /* what the caller did not deregister */
  if (c->worker)
    ucx_api.worker_destroy(c->worker);
  if (c->context)
    ucx_api.cleanup(c->context);
  free(c->peers);
  free(c->touched);
  free(c->arena);
  free(c);
}

/* The UCP context: RMA and 32/64-bit atomics (and wakeup, unless
 * SYMHEAP_UCX_WAKEUP=0); the transports are UCX_TLS's. */
static symheap_result_t open_context(ucx_ctx_t *c) {
  ucp_params_t p;
  memset(&p, 0, sizeof p);
  p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                 UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
  p.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
  if (c->wakeup)
    p.features |= UCP_FEATURE_WAKEUP;
  p.mt_workers_shared = 0;
  p.estimated_num_eps = (size_t)(c->nranks > 0 ? c->nranks : 1);
  p.name = "symheap";
  ucs_status_t st = ucx_api.init_version(UCP_API_MAJOR, UCP_API_MINOR, &p,
                                         NULL, &c->context);
  if (st != UCS_OK) {
    c->context = NULL;
    const char *tls = getenv("UCX_TLS");
    return ucx_fail(ucx_result(st), st,
                    "ucp_init with RMA and atomics (UCX_TLS=%s)",
                    tls ? tls : "(unset: all)");
  }
  return SYMHEAP_SUCCESS;
}

/* The worker, serialised by the core's lock (see ucx.h), and its event fd
 * where UCX gives one. */
static symheap_result_t open_worker(ucx_ctx_t *c) {
  ucp_worker_params_t w;
  memset(&w, 0, sizeof w);
  w.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  w.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucs_status_t st = ucx_api.worker_create(c->context, &w, &c->worker);
  if (st != UCS_OK) {
    c->worker = NULL;
    return ucx_fail(ucx_result(st), st, "ucp_worker_create");
  }
  c->efd = -1;
  if (c->wakeup && ucx_api.worker_get_efd(c->worker, &c->efd) != UCS_OK)
    c->efd = -1;
  return SYMHEAP_SUCCESS;
}

/* The worker's address; without the shared-memory transports' parts
 * (UCP_WORKER_ADDRESS_FLAG_NET_ONLY) where the whole one does not fit. */
static symheap_result_t write_address(ucx_ctx_t *c, void *addr,
                                      size_t *addr_len) {
  for (int net_only = 0; net_only < 2; net_only++) {
    ucp_worker_attr_t a;
    memset(&a, 0, sizeof a);
    a.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    if (net_only) {
      a.field_mask |= UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
      a.address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY;
    }
    ucs_status_t st = ucx_api.worker_query(c->worker, &a);
    if (st != UCS_OK)
      return ucx_fail(ucx_result(st), st, "ucp_worker_query (address)");
    size_t n = a.address_length;
    if (n <= SYMHEAP_NET_ADDR_MAX)
      memcpy(addr, a.address, n);
    ucx_api.worker_release_address(c->worker, a.address);
    if (n <= SYMHEAP_NET_ADDR_MAX) {
      *addr_len = c->addr_len = n;
      c->net_only = net_only;
      return SYMHEAP_SUCCESS;
    }
    if (net_only)
      return c->svc->error(SYMHEAP_ERR_UNSUPPORTED,
                           "ucx: the worker's address is %zu bytes even "
                           "without shared-memory transports, more than the "
                           "%d a net address may be; fewer transports or "
                           "devices (UCX_TLS, UCX_NET_DEVICES) shorten it",
                           n, SYMHEAP_NET_ADDR_MAX);
  }
  return SYMHEAP_ERR_UNSUPPORTED;
}

symheap_result_t ucx_open(const symheap_host_services_t *svc,
                          const symheap_net_init_t *args, void **ctx,
                          void *addr, size_t *addr_len) {
  char why[512];
  if (!ucx_load(why, sizeof why))
    return svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", why);
  if (!args || !ctx || !addr || !addr_len)
    return svc->error(SYMHEAP_ERR_INVALID_ARG, "ucx open: NULL argument");
  const char *prov = args->provider;
  if ((!prov || !prov[0]) &&
      svc->param_get_string("SYMHEAP_NET_PROVIDER", &prov) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (prov && prov[0]) {
    char list[1024];
    if (ucx_providers(svc, list, sizeof list) != SYMHEAP_SUCCESS)
      snprintf(list, sizeof list, "?");
    for (char *p = list; *p; p++)
      if (*p == '\n')
        *p = p[1] ? ',' : '\0';
    return svc->error(SYMHEAP_ERR_INVALID_ARG,
                      "SYMHEAP_NET_PROVIDER='%s': the ucx net adaptor takes "
                      "its transports from UCX's own variables (UCX_TLS=..., "
                      "UCX_NET_DEVICES=...), not from SYMHEAP_NET_PROVIDER; "
                      "available here: %s",
                      prov, list[0] ? list : "none");
  }
  long tmo = 30000;
  if (svc->param_get_int("SYMHEAP_TIMEOUT_MS", &tmo) != SYMHEAP_SUCCESS)
    tmo = 30000;
  int wakeup = 1;
  if (svc->param_get_bool("SYMHEAP_UCX_WAKEUP", &wakeup) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  ucx_ctx_t *c = calloc(1, sizeof *c);
  if (!c || !(c->arena = calloc(UCX_ARENA_SLOTS, sizeof *c->arena))) {
    free(c);
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "ucx open: no memory");
  }
  c->svc = svc;
  c->rank = args->rank;
  c->nranks = args->nranks;
  c->timeout_ms = (int)tmo;
  c->wakeup = wakeup;
  c->efd = -1;
  ucx_api.get_version(&c->version[0], &c->version[1], &c->version[2]);
  symheap_result_t r = open_context(c);
  if (r == SYMHEAP_SUCCESS)
    r = open_worker(c);
  if (r == SYMHEAP_SUCCESS)
    r = write_address(c, addr, addr_len);
  if (r != SYMHEAP_SUCCESS) {
    SYMHEAP_KEEP_ERROR(svc, ucx_close(c));
    return r;
  }
  *ctx = c;
  const char *tls = getenv("UCX_TLS"), *dev = getenv("UCX_NET_DEVICES");
  svc->log(SYMHEAP_LOG_INFO,
           "ucx: UCX %u.%u.%u, UCX_TLS=%s, UCX_NET_DEVICES=%s, address %zu "
           "bytes%s, %s",
           c->version[0], c->version[1], c->version[2], tls ? tls : "(all)",
           dev ? dev : "(all)", c->addr_len,
           c->net_only ? " (network transports only)" : "",
           c->efd >= 0 ? "a waiting rank sleeps on the worker's event fd"
                       : "no event fd (a waiting rank polls)");
  return SYMHEAP_SUCCESS;
}

symheap_result_t ucx_query(void *ctx, symheap_net_caps_t *caps) {
  ucx_ctx_t *c = ctx;
  /* RMA, atomics (UCP emulates them where a transport has none: applied by
   * the target's progress, hence MANUAL), an ordering fence
   * (ucp_worker_fence).  No HMEM: host memory only is registered here. */
  caps->caps = SYMHEAP_NET_CAP_RMA | SYMHEAP_NET_CAP_ATOMIC |
               SYMHEAP_NET_CAP_FENCE | SYMHEAP_NET_CAP_MANUAL;
  caps->max_msg = (size_t)1 << 30;
  /* A blocking put returns once UCX is done with the source. */
  caps->inject_size = (size_t)1 << 30;
  const char *tls = getenv("UCX_TLS");
  snprintf(caps->provider, sizeof caps->provider, "ucx %s",
           tls ? tls : "(all)");
  const char *dev = getenv("UCX_NET_DEVICES");
  snprintf(caps->fabric, sizeof caps->fabric, "UCX %u.%u.%u (%s)",
           c->version[0], c->version[1], c->version[2], dev ? dev : "all");
  return SYMHEAP_SUCCESS;
}

symheap_result_t ucx_connect(void *ctx, int nranks, const void *addrs,
                             size_t stride) {
  ucx_ctx_t *c = ctx;
  if (c->peers)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ucx: connect called twice");
  if (nranks < 1 || !addrs)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ucx connect: %d ranks",
                         nranks);
  ucx_peer_t *p = calloc((size_t)nranks, sizeof *p);
  unsigned char *t = calloc((size_t)nranks, 1);
  if (!p || !t) {
    free(p);
    free(t);
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "ucx connect: no memory");
  }
  c->peers = p;
  c->touched = t;
  c->nranks = nranks;
  for (int r = 0; r < nranks; r++) {
    p[r].c = c;
    p[r].rank = r;
    ucp_ep_params_t e;
    memset(&e, 0, sizeof e);
    e.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                   UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                   UCP_EP_PARAM_FIELD_ERR_HANDLER;
    e.address = (const ucp_address_t *)((const char *)addrs + (size_t)r * stride);
    e.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    e.err_handler.cb = err_handler;
    e.err_handler.arg = &p[r];
    ucs_status_t st = ucx_api.ep_create(c->worker, &e, &p[r].ep);
    if (st != UCS_OK) {
      p[r].ep = NULL;
      close_eps(c, 1);
      free(c->peers);
      free(c->touched);
      c->peers = NULL;
      c->touched = NULL;
      return ucx_fail(ucx_result(st), st,
                      "ucp_ep_create to rank %d (UCX_TLS=%s)", r,
                      getenv("UCX_TLS") ? getenv("UCX_TLS") : "(all)");
    }
  }
  return SYMHEAP_SUCCESS;
}

symheap_result_t ucx_progress(void *ctx) {
  ucx_ctx_t *c = ctx;
  while (ucx_api.worker_progress(c->worker))
    ;
  return SYMHEAP_SUCCESS;
}

/* UCX's way to block: ucp_worker_arm says whether sleeping on the event fd
 * is safe now (UCS_ERR_BUSY: events are pending, progress first). */
int ucx_wait_fds(void *ctx, int *fds, int max) {
  ucx_ctx_t *c = ctx;
  if (c->efd < 0 || max < 1)
    return -1;
  ucs_status_t st = ucx_api.worker_arm(c->worker);
  if (st == UCS_ERR_BUSY)
    return 0;
  if (st != UCS_OK)
    return -1;
  fds[0] = c->efd;
  return 1;
}

symheap_result_t ucx_wait(ucx_ctx_t *c, void *req, const char *what,
                          int peer) {
  uint64_t end = c->svc->now_ns() + (uint64_t)c->timeout_ms * 1000000u;
  ucs_status_t st;
  while ((st = ucx_api.request_check_status(req)) == UCS_INPROGRESS) {
    ucx_api.worker_progress(c->worker);
    if (c->svc->now_ns() > end) {
      ucx_api.request_free(req); /* released by UCX when it completes */
      c->abandoned = 1;
      return c->svc->error(SYMHEAP_ERR_TIMEOUT,
                           "ucx %s to rank %d: not done after %d ms (the "
                           "peer is gone or does not progress)",
                           what, peer, c->timeout_ms);
    }
  }
  ucx_api.request_free(req);
  if (st != UCS_OK)
    return ucx_fail(ucx_result(st), st, "ucx %s to rank %d", what, peer);
  return SYMHEAP_SUCCESS;
}

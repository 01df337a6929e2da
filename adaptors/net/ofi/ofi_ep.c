/* The endpoint of a context: opening it (fabric, domain, address vector,
 * completion queue, counter), connecting to the ranks' addresses, progress
 * and the completion of everything issued (quiet).
 *
 * Completion is counted, not queued: every operation is issued with
 * FI_DELIVERY_COMPLETE and no completion entry (FI_SELECTIVE_COMPLETION),
 * and one counter bound for FI_READ | FI_WRITE counts them done (or failed);
 * quiet waits until it reaches the number issued.  The completion queue
 * only carries errors, and reading it is what drives a provider with manual
 * progress (rxm's emulated atomics need the target to progress too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ofi.h"

static void close_fid(struct fid *f) {
  if (f)
    (void)fi_close(f);
}

void ofi_close(void *ctx) {
  ofi_ctx_t *c = ctx;
  if (!c)
    return;
  /* The endpoint first: outstanding operations are dropped with it. */
  close_fid(c->ep ? &c->ep->fid : NULL);
  ofi_release_after_quiet(c);
  ofi_bounce_close(c);
  free(c->regions);
  free(c->touched);
  close_fid(c->cntr ? &c->cntr->fid : NULL);
  close_fid(c->cq ? &c->cq->fid : NULL);
  close_fid(c->av ? &c->av->fid : NULL);
  close_fid(c->domain ? &c->domain->fid : NULL);
  close_fid(c->fabric ? &c->fabric->fid : NULL);
  if (c->info)
    ofi_api.freeinfo(c->info);
  free(c->peers);
  free(c);
}

/* What the chosen fi_info asks of us and offers. */
static void read_modes(ofi_ctx_t *c) {
  const struct fi_info *i = c->info;
  uint64_t m = (uint64_t)i->domain_attr->mr_mode;
  c->mr_local = !!(m & FI_MR_LOCAL);
  c->virt_addr = !!(m & FI_MR_VIRT_ADDR);
  c->prov_key = !!(m & FI_MR_PROV_KEY);
  c->mr_endpoint = !!(m & FI_MR_ENDPOINT);
  c->has_fence = !!(i->caps & FI_FENCE);
  c->hmem = !!(i->caps & FI_HMEM);
  c->manual = i->domain_attr->data_progress == FI_PROGRESS_MANUAL;
  c->waw_size = (i->tx_attr->msg_order & FI_ORDER_WAW)
                    ? i->ep_attr->max_order_waw_size
                    : 0;
  snprintf(c->provider, sizeof c->provider, "%s", i->fabric_attr->prov_name);
  snprintf(c->fabric_name, sizeof c->fabric_name, "%s (%s)",
           i->fabric_attr->name, i->domain_attr->name);
}

/* put_signal as one message (SYMHEAP_OFI_PUT_SIGNAL=auto, where the
 * provider carries 8 bytes of remote CQ data, picks no keys itself and
 * applies atomics in software at the target: ofi_local.c) or as put, fence,
 * atomic; atomics to this rank by the CPU on the same providers. */
static symheap_result_t choose_signal(ofi_ctx_t *c) {
  int how = 0; /* auto|atomic: validated by the core at comm init */
  if (c->svc->param_get_choice("SYMHEAP_OFI_PUT_SIGNAL", &how) !=
      SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  int soft = ofi_soft_atomics(c->provider) && !c->prov_key;
  c->self_cpu = soft;
  c->sig_data = soft && (c->info->caps & FI_ATOMIC) &&
                c->info->domain_attr->cq_data_size >= 8 &&
                how == 0;
  return SYMHEAP_SUCCESS;
}

/* Whether the atomics the provider offers are there: libfabric 1.17's net
 * advertises FI_ATOMIC, yet answers every atomic and every
 * fi_*atomicvalid with -FI_ENOSYS (docs/perf/net.md, 2026-11-26 round 6).
 * A 64-bit fetch-add (symheap's commonest) asked of the endpoint decides;
 * without it the adaptor reports no SYMHEAP_NET_CAP_ATOMIC, so a
 * symheap_atomic is refused before anything is sent, naming the provider,
 * and put_signal is UNSUPPORTED, instead of each failing at the call. */
static void check_atomics(ofi_ctx_t *c) {
  size_t count = 0;
  c->atomics = (c->info->caps & FI_ATOMIC) && c->ep->atomic &&
               c->ep->atomic->readwritevalid &&
               fi_fetch_atomicvalid(c->ep, FI_UINT64, FI_SUM, &count) == 0 &&
               count > 0;
  /* put_signal's one message needs no provider atomics: its signal is
   * applied by the target's CPU, which, where the provider has no atomics
   * at all, is the only thing that applies atomics to that memory. */
  int how = 1;
  if (!c->atomics && !c->prov_key &&
      c->info->domain_attr->cq_data_size >= 8 &&
      c->svc->param_get_choice("SYMHEAP_OFI_PUT_SIGNAL", &how) ==
          SYMHEAP_SUCCESS &&
      how == 0)
    c->sig_data = 1;
}

/* The completion queue, with a file descriptor to sleep on where the
 * provider gives one (FI_WAIT_FD): a rank that only waits then sleeps in
 * the kernel until a peer's request arrives (ofi_wait_fds).  The counter
 * keeps none: tcp;ofi_rxm's has no FI_GETWAIT, and the CQ's descriptor is
 * the endpoint's (it becomes readable for any traffic). */
static int open_cq(ofi_ctx_t *c) {
  struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_DATA,
                          .wait_obj = FI_WAIT_FD};
  c->cq_fd = -1;
  if (fi_cq_open(c->domain, &cq, &c->cq, NULL) == 0) {
    if (fi_control(&c->cq->fid, FI_GETWAIT, &c->cq_fd) == 0)
      return 0;
    c->cq_fd = -1;
    (void)fi_close(&c->cq->fid);
    c->cq = NULL;
  }
  cq.wait_obj = FI_WAIT_NONE; /* no wait object here: the core polls */
  return fi_cq_open(c->domain, &cq, &c->cq, NULL);
}

/* shm names its endpoint "<pid>:<n>:<m>" and backs it with a file of that
 * name in /dev/shm, which a killed process leaves behind.  A later process
 * that gets the same pid then finds the file, sees its recorded owner (its
 * own pid) alive, and fi_enable fails with EBUSY: seen in CI after a day of
 * killed ranks.  A name with 64 random bits cannot meet a leftover. */
static int name_shm_endpoint(ofi_ctx_t *c) {
  if (strcmp(c->info->fabric_attr->prov_name, "shm") != 0)
    return 0;
  uint64_t r = 0;
  if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
    struct timespec ts; /* no entropy yet: the clock's nanoseconds */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    r = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  }
  char name[64];
  snprintf(name, sizeof name, "symheap-%ld-%016llx", (long)getpid(),
           (unsigned long long)r);
  return fi_setname(&c->ep->fid, name, strlen(name) + 1);
}

/* The objects behind the endpoint, in the order libfabric wants them. */
static symheap_result_t open_objects(ofi_ctx_t *c) {
  int ret;
  if ((ret = ofi_api.fabric(c->info->fabric_attr, &c->fabric, NULL)))
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_fabric(%s)", c->provider);
  if ((ret = fi_domain(c->fabric, c->info, &c->domain, NULL)))
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_domain(%s)", c->provider);
  struct fi_av_attr av = {.type = FI_AV_TABLE};
  if ((ret = fi_av_open(c->domain, &av, &c->av, NULL)))
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_av_open");
  if ((ret = open_cq(c)))
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_cq_open");
  struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP,
                            .wait_obj = FI_WAIT_NONE};
  if ((ret = fi_cntr_open(c->domain, &ca, &c->cntr, NULL)))
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_cntr_open (provider %s)",
                    c->provider);
  if ((ret = fi_endpoint(c->domain, c->info, &c->ep, NULL)))
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_endpoint");
  if ((ret = fi_ep_bind(c->ep, &c->av->fid, 0)) ||
      (ret = fi_ep_bind(c->ep, &c->cq->fid,
                        FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) ||
      (ret = fi_ep_bind(c->ep, &c->cntr->fid, FI_READ | FI_WRITE)))
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_ep_bind");
  if ((ret = name_shm_endpoint(c)))
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_setname (shm)");
  if ((ret = fi_enable(c->ep)))
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_enable");
  return SYMHEAP_SUCCESS;
}

symheap_result_t ofi_open(const symheap_host_services_t *svc,
                          const symheap_net_init_t *args, void **ctx,
                          void *addr, size_t *addr_len) {
  char why[512];
  if (!ofi_load(why, sizeof why))
    return svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", why);
  if (!args || !ctx || !addr || !addr_len)
    return svc->error(SYMHEAP_ERR_INVALID_ARG, "ofi open: NULL argument");
  const char *prov = args->provider;
  if ((!prov || !prov[0]) &&
      svc->param_get_string("SYMHEAP_NET_PROVIDER", &prov) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  long tmo = 30000;
  if (svc->param_get_int("SYMHEAP_TIMEOUT_MS", &tmo) != SYMHEAP_SUCCESS)
    tmo = 30000;
  ofi_ctx_t *c = calloc(1, sizeof *c);
  if (!c)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "ofi open: no memory");
  c->svc = svc;
  c->rank = args->rank;
  c->nranks = args->nranks;
  c->timeout_ms = (int)tmo;
  c->next_key = 1;
  c->cq_fd = -1;
  symheap_result_t r = ofi_choose(prov && prov[0] ? prov : NULL, &c->info);
  if (r == SYMHEAP_SUCCESS) {
    read_modes(c);
    r = choose_signal(c);
  }
  if (r == SYMHEAP_SUCCESS && (r = open_objects(c)) == SYMHEAP_SUCCESS)
    check_atomics(c);
  if (r == SYMHEAP_SUCCESS)
    r = ofi_bounce_open(c);
  size_t len = SYMHEAP_NET_ADDR_MAX;
  int ret;
  if (r == SYMHEAP_SUCCESS && (ret = fi_getname(&c->ep->fid, addr, &len)))
    r = ofi_fail(
        ret == -FI_ETOOSMALL ? SYMHEAP_ERR_UNSUPPORTED : SYMHEAP_ERR_DEVICE,
        ret, "fi_getname (addresses up to %d bytes)", SYMHEAP_NET_ADDR_MAX);
  if (r != SYMHEAP_SUCCESS) {
    SYMHEAP_KEEP_ERROR(svc, ofi_close(c));
    return r;
  }
  *addr_len = len;
  *ctx = c;
  svc->log(SYMHEAP_LOG_INFO,
           "ofi: provider %s, fabric %s, mr_mode%s%s%s%s, %s progress%s%s, "
           "writes ordered up to %zu bytes, put_signal %s, %s",
           c->provider, c->fabric_name, c->mr_local ? " local" : "",
           c->virt_addr ? " virt_addr" : "", c->prov_key ? " prov_key" : "",
           c->mr_endpoint ? " endpoint" : "", c->manual ? "manual" : "auto",
           c->has_fence ? ", FI_FENCE" : "",
           c->atomics ? "" : ", no atomics", c->waw_size,
           c->sig_data ? "in one message (remote CQ data)"
                       : "as put, fence, atomic",
           c->cq_fd >= 0 ? "a waiting rank sleeps on the CQ's fd"
                         : "no wait object (a waiting rank polls)");
  return SYMHEAP_SUCCESS;
}

symheap_result_t ofi_query(void *ctx, symheap_net_caps_t *caps) {
  ofi_ctx_t *c = ctx;
  caps->caps = SYMHEAP_NET_CAP_RMA;
  if (c->atomics)
    caps->caps |= SYMHEAP_NET_CAP_ATOMIC;
  if (c->has_fence)
    caps->caps |= SYMHEAP_NET_CAP_FENCE;
  if (c->hmem)
    caps->caps |= SYMHEAP_NET_CAP_HMEM;
  if (c->manual)
    caps->caps |= SYMHEAP_NET_CAP_MANUAL;
  size_t max = c->info->ep_attr->max_msg_size;
  caps->max_msg = max ? max : (size_t)1 << 30;
  caps->inject_size = OFI_BOUNCE_MAX;
  snprintf(caps->provider, sizeof caps->provider, "%s", c->provider);
  snprintf(caps->fabric, sizeof caps->fabric, "%s", c->fabric_name);
  return SYMHEAP_SUCCESS;
}

symheap_result_t ofi_connect(void *ctx, int nranks, const void *addrs,
                             size_t stride) {
  ofi_ctx_t *c = ctx;
  if (c->peers)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ofi: connect called twice");
  if (nranks < 1 || !addrs)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ofi connect: %d ranks",
                         nranks);
  fi_addr_t *p = calloc((size_t)nranks, sizeof *p);
  free(c->touched);
  c->touched = calloc((size_t)nranks, 1);
  if (!p || !c->touched) {
    free(p);
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "ofi connect: no memory");
  }
  for (int r = 0; r < nranks; r++) {
    const char *a = (const char *)addrs + (size_t)r * stride;
    int ret = fi_av_insert(c->av, a, 1, &p[r], 0, NULL);
    if (ret != 1) {
      free(p);
      /* What was inserted stays in the AV: harmless, closed with it. */
      return ofi_fail(SYMHEAP_ERR_DEVICE, ret < 0 ? ret : -FI_EADDRNOTAVAIL,
                      "fi_av_insert of rank %d's address", r);
    }
  }
  c->peers = p;
  c->nranks = nranks;
  return SYMHEAP_SUCCESS;
}

/* Read the completion queue: progress, and the text of a failed
 * operation, recorded (returns its result) when there is one. */
static symheap_result_t drain(ofi_ctx_t *c) {
  struct fi_cq_data_entry e[8];
  ssize_t n = fi_cq_read(c->cq, e, 8);
  /* The only entries: remote writes that carry a put_signal's signal. */
  for (ssize_t i = 0; i < n; i++)
    if (e[i].flags & FI_REMOTE_CQ_DATA)
      ofi_sig_apply(c, e[i].data);
  if (n >= 0 || n == -FI_EAGAIN)
    return SYMHEAP_SUCCESS;
  if (n != -FI_EAVAIL)
    return ofi_fail(SYMHEAP_ERR_DEVICE, (int)n, "fi_cq_read");
  struct fi_cq_err_entry err;
  memset(&err, 0, sizeof err);
  if (fi_cq_readerr(c->cq, &err, 0) < 0)
    return c->svc->error(SYMHEAP_ERR_REMOTE, "an operation failed");
  char prov[256] = "";
  if (err.err_data && err.err_data_size)
    snprintf(prov, sizeof prov, "; %s",
             fi_cq_strerror(c->cq, err.prov_errno, err.err_data, NULL, 0));
  return c->svc->error(SYMHEAP_ERR_REMOTE,
                       "a %s operation failed: %s (%d)%s (the peer is gone "
                       "or refused the access)",
                       c->provider, ofi_api.strerror(err.err), err.err, prov);
}

symheap_result_t ofi_progress(void *ctx) { return drain(ctx); }

/* libfabric's way to block: fi_trywait says whether sleeping on the wait
 * object is safe now (-FI_EAGAIN: something is ready, progress first). */
int ofi_wait_fds(void *ctx, int *fds, int max) {
  ofi_ctx_t *c = ctx;
  if (c->cq_fd < 0 || max < 1)
    return -1;
  struct fid *f = &c->cq->fid;
  int ret = fi_trywait(c->fabric, &f, 1);
  if (ret == -FI_EAGAIN)
    return 0;
  if (ret)
    return -1;
  fds[0] = c->cq_fd;
  return 1;
}

uint64_t ofi_deadline(const ofi_ctx_t *c) {
  return ofi_svc->now_ns() + (uint64_t)c->timeout_ms * 1000000u;
}

int ofi_again(ofi_ctx_t *c, uint64_t deadline) {
  (void)drain(c); /* an error shows again at quiet */
  return ofi_svc->now_ns() < deadline;
}

/* A quiet that ran out of time, naming the ranks its operations went to:
 * a peer gone or not progressing, or one that dropped an access whose key
 * it no longer has (tcp and shm drop such an access without answering, so
 * its completion never comes). */
static symheap_result_t quiet_timeout(ofi_ctx_t *c, uint64_t left, int ms) {
  char ranks[128] = "";
  size_t o = 0;
  int shown = 0;
  for (int p = 0; p < c->nranks && o < sizeof ranks - 16; p++)
    if (c->touched && c->touched[p] && shown++ < 8)
      o += (size_t)snprintf(ranks + o, sizeof ranks - o, "%s%d",
                            o ? ", " : "", p);
  if (shown > 8)
    snprintf(ranks + o, sizeof ranks - o, ", ...");
  return c->svc->error(SYMHEAP_ERR_TIMEOUT,
                       "ofi quiet: %llu operation(s) to rank(s) %s still "
                       "outstanding after %d ms: the peer is gone or does "
                       "not progress, or it dropped an access through a key "
                       "it no longer has (a region deregistered before the "
                       "access arrived)",
                       (unsigned long long)left, ranks[0] ? ranks : "?", ms);
}

symheap_result_t ofi_quiet(void *ctx, int timeout_ms) {
  ofi_ctx_t *c = ctx;
  uint64_t end =
      ofi_svc->now_ns() +
      (uint64_t)(timeout_ms < 0 ? c->timeout_ms : timeout_ms) * 1000000u;
  symheap_result_t r = SYMHEAP_SUCCESS;
  for (;;) {
    uint64_t ok = fi_cntr_read(c->cntr), bad = fi_cntr_readerr(c->cntr);
    if (bad > c->errors_seen) {
      uint64_t failed = bad - c->errors_seen;
      r = drain(c);
      c->errors_seen = bad;
      if (r == SYMHEAP_SUCCESS)
        r = c->svc->error(SYMHEAP_ERR_REMOTE,
                          "%llu %s operation(s) failed (the peer is gone or "
                          "refused the access)",
                          (unsigned long long)failed, c->provider);
    }
    if (ok + bad >= c->issued)
      break;
    symheap_result_t d = drain(c);
    if (d != SYMHEAP_SUCCESS && r == SYMHEAP_SUCCESS)
      r = d;
    if (ofi_svc->now_ns() > end)
      return quiet_timeout(c, c->issued - ok - bad,
                           timeout_ms < 0 ? c->timeout_ms : timeout_ms);
  }
  if (c->touched)
    memset(c->touched, 0, (size_t)c->nranks);
  ofi_release_after_quiet(c);
  c->fence_next = 0;
  return r;
}

symheap_result_t ofi_fence(void *ctx) {
  ofi_ctx_t *c = ctx;
  if (c->has_fence) {
    c->fence_next = FI_FENCE;
    return SYMHEAP_SUCCESS;
  }
  return ofi_quiet(c, -1);
}

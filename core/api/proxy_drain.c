/* The device proxy's thread: takes the ring's entries in ticket order,
 * issues each through the one-sided API's net paths (device data staged
 * through host-pinned memory first), and once the ring is empty completes
 * them (the adaptor's quiet) and says so to the device (`completed`).  The
 * first failure is kept (ring->error for kernels, symheap_comm_proxy_check
 * for the host); later entries are still taken, so no producer waits for a
 * ring that never drains. */
#if defined(__SANITIZE_THREAD__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif
#include <string.h>
#include <time.h>

#include "comm/net_stage.h"
#include "onesided.h"
#include "proxy.h"

static void fail(symheap__proxy_t *p, symheap_result_t r, uint64_t ticket) {
  if (__atomic_load_n(&p->err, __ATOMIC_ACQUIRE) != SYMHEAP_SUCCESS)
    return;
  pthread_mutex_lock(&p->lock);
  snprintf(p->err_msg, sizeof p->err_msg, "entry %llu: %s",
           (unsigned long long)ticket, symheap__error_peek());
  pthread_mutex_unlock(&p->lock);
  __atomic_store_n(&p->ring->error_ticket, ticket, __ATOMIC_RELAXED);
  __atomic_store_n(&p->ring->error, (uint64_t)r, __ATOMIC_RELEASE);
  __atomic_store_n(&p->err, r, __ATOMIC_RELEASE);
  SYMHEAP_WARN("device proxy: %s", p->err_msg);
}

/* The entry's window, checked as the host API checks its arguments. */
static symheap_result_t entry_window(symheap__proxy_t *p,
                                     const symheap_proxy_desc_t *d,
                                     struct symheap_window **out) {
  const char *fn = "device proxy";
  symheap_comm_t c = p->c;
  struct symheap_window *w = NULL;
  symheap_result_t r = symheap__os_begin(
      (symheap_window_t)(uintptr_t)d->window, d->peer, d->offset,
      d->op == SYMHEAP_PROXY_OP_SIGNAL ? 0 : d->len, fn, &w);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (w->comm != c)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: the window belongs to another comm", fn);
  if (c->reach[d->peer])
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: rank %d is on this host: store to it directly",
                          fn, d->peer);
  if (d->op != SYMHEAP_PROXY_OP_PUT &&
      (w->slot < 0 || d->sig_index >= SYMHEAP_SLOT_SIGNALS ||
       d->sig_op > SYMHEAP_PROXY_SIG_ADD))
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: %s", fn,
                          w->slot < 0 ? "the window has no signal slot"
                          : d->sig_op > SYMHEAP_PROXY_SIG_ADD
                              ? "unknown signal operation"
                              : "signal index out of range");
  *out = w;
  return SYMHEAP_SUCCESS;
}

/* Bytes [0, upto) of the entry's data: staged and put piece by piece (a
 * put_signal leaves its last piece to go with the signal). */
static symheap_result_t put_staged(symheap__proxy_t *p,
                                   struct symheap_window *w,
                                   const symheap_proxy_desc_t *d, size_t upto) {
  symheap_comm_t c = p->c;
  size_t done = 0;
  while (done < upto) {
    size_t n = upto - done < SYMHEAP__PROXY_STAGE_BYTES
                   ? upto - done
                   : SYMHEAP__PROXY_STAGE_BYTES;
    symheap_result_t r = c->dev.ops.copy_to_host(
        c->dev_ctx, p->stage, (const char *)(uintptr_t)d->src + done, n);
    if (r != SYMHEAP_SUCCESS)
      return symheap__error_context(r, "device proxy: staging %zu bytes", n);
    r = symheap__os_net_rma(w, d->peer, d->offset + done, p->stage, n, 1, 0,
                            "device proxy");
    if (r != SYMHEAP_SUCCESS)
      return r;
    done += n;
    p->dirty = 1;
  }
  return SYMHEAP_SUCCESS;
}

/* Puts issued since the last fence or quiet are seen before what follows
 * (a signal): put_signal orders only its own data. */
static symheap_result_t fence_puts(symheap__proxy_t *p) {
  if (!p->dirty)
    return SYMHEAP_SUCCESS;
  p->dirty = 0;
  return symheap__os_net_fence(p->c, "device proxy");
}

static symheap_result_t issue(symheap__proxy_t *p,
                              const symheap_proxy_desc_t *d) {
  struct symheap_window *w = NULL;
  symheap_result_t r = entry_window(p, d, &w);
  if (r != SYMHEAP_SUCCESS)
    return r;
  symheap_comm_t c = p->c;
  if (d->op == SYMHEAP_PROXY_OP_PUT)
    return put_staged(p, w, d, d->len);
  size_t sig_off = SYMHEAP_PAD_SLOTS_OFFSET +
                   (size_t)w->slot * SYMHEAP_PAD_SLOT_BYTES + d->sig_index * 8u;
  symheap_net_amo_t op = d->sig_op == SYMHEAP_PROXY_SIG_ADD
                             ? SYMHEAP_NET_AMO_ADD
                             : SYMHEAP_NET_AMO_SET;
  uint64_t value = d->sig_value;
  if (d->op == SYMHEAP_PROXY_OP_SIGNAL &&
      (r = fence_puts(p)) != SYMHEAP_SUCCESS)
    return r;
  if (d->op == SYMHEAP_PROXY_OP_SIGNAL)
    return symheap__os_net_atomic(c->pad, d->peer, sig_off, op, 8, &value, NULL,
                                  NULL, "device proxy");
  /* PUT_SIGNAL: all but the last piece, then the last with its signal. */
  size_t last = d->len % SYMHEAP__PROXY_STAGE_BYTES;
  if (!last && d->len)
    last = SYMHEAP__PROXY_STAGE_BYTES;
  if ((r = put_staged(p, w, d, d->len - last)) != SYMHEAP_SUCCESS)
    return r;
  if ((r = fence_puts(p)) != SYMHEAP_SUCCESS)
    return r;
  if (last)
    r = c->dev.ops.copy_to_host(c->dev_ctx, p->stage,
                                (const char *)(uintptr_t)d->src + d->len - last,
                                last);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "device proxy: staging %zu bytes", last);
  return symheap__os_net_put_signal(w, d->peer, d->offset + d->len - last,
                                    p->stage, last, c->pad, sig_off, value, op,
                                    "device proxy");
}

/* Entry t, once its seq says it is written; 0 when it is not yet. */
static int take(symheap__proxy_t *p, uint64_t t, int drop) {
  symheap_proxy_desc_t *e = &p->ring->desc[t % SYMHEAP_PROXY_ENTRIES];
  if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != t + 1)
    return 0;
  symheap_proxy_desc_t d;
  memcpy(&d, e, sizeof d);
  if (drop) {
    p->dropped++;
  } else {
    pthread_mutex_lock(&p->lock);
    symheap_result_t r = issue(p, &d);
    pthread_mutex_unlock(&p->lock);
    if (r != SYMHEAP_SUCCESS)
      fail(p, r, t);
  }
  /* The entry is free for ticket t + entries. */
  __atomic_store_n(&p->ring->consumed, t + 1, __ATOMIC_RELEASE);
  return 1;
}

/* Everything taken is complete at its target (the adaptor's quiet). */
static void complete(symheap__proxy_t *p, uint64_t upto) {
  pthread_mutex_lock(&p->lock);
  symheap_result_t r = symheap__os_net_quiet(p->c, "device proxy");
  p->dirty = 0;
  pthread_mutex_unlock(&p->lock);
  if (r != SYMHEAP_SUCCESS)
    fail(p, r, upto ? upto - 1 : 0);
  __atomic_store_n(&p->ring->completed, upto, __ATOMIC_RELEASE);
}

static void nap(unsigned idle) {
  /* Spin a while after work (the next entry usually follows), then sleep
   * longer and longer, up to 200 us. */
  if (idle < 2000)
    return;
  long ns = idle < 4000 ? 2000 : idle < 8000 ? 20000 : 200000;
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

void *symheap__proxy_main(void *arg) {
  symheap__proxy_t *p = arg;
  uint64_t t = 0, done = 0;
  unsigned idle = 0;
  while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
    int hold = __atomic_load_n(&p->hold, __ATOMIC_ACQUIRE);
    __atomic_store_n(&p->held, hold, __ATOMIC_RELEASE);
    if (!hold && take(p, t, 0)) {
      t++;
      idle = 0;
      continue;
    }
    if (done != t) {
      complete(p, t);
      done = t;
    }
    /* This rank as a target: peers' writes are taken in and their staged
     * puts land (docs/network.md). */
    symheap__net_poke(p->c->netc);
    nap(++idle);
  }
  /* Shutdown: what is written but not taken is dropped (counted, kept as
   * an error for the device), and the device told the proxy is gone. */
  uint64_t before = p->dropped;
  while (take(p, t, 1))
    t++;
  if (p->dropped != before) {
    symheap__error(SYMHEAP_ERR_INVALID_ARG,
                   "comm destroyed with %llu entries queued",
                   (unsigned long long)(p->dropped - before));
    fail(p, SYMHEAP_ERR_INVALID_ARG, t - 1);
  }
  if (done != t)
    __atomic_store_n(&p->ring->completed, t, __ATOMIC_RELEASE);
  __atomic_store_n(&p->ring->stopped, 1, __ATOMIC_RELEASE);
  return NULL;
}

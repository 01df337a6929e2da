/* The device host proxy: set up with the comm (the pad registered with the
 * net adaptor, so a proxied signal reaches a peer's signal slot), started at
 * the first device view that needs it (the ring, the staging and the
 * thread), stopped first at comm destroy.  The thread is proxy_drain.c. */
/* ThreadSanitizer does not model fences; gcc refuses them under it unless
 * told to let them be (CI runs the core under TSan). */
#if defined(__SANITIZE_THREAD__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "comm/agree.h"
#include "comm/net.h"
#include "proxy.h"
#include "win/net_window.h"

static void set_why(symheap__proxy_t *p, const char *why) {
  snprintf(p->why, sizeof p->why, "%s", why);
}

/* Whether this rank wants the proxy, or why not (*why). */
static int wanted(symheap_comm_t c, symheap_result_t cfg, int mode,
                  const char **why) {
  *why = cfg != SYMHEAP_SUCCESS ? "SYMHEAP_DEVICE_PROXY is malformed"
         : mode == 2            ? "SYMHEAP_DEVICE_PROXY=off"
         : mode == 0 && (c->caps.caps & SYMHEAP_CAP_HOST_ACCESS)
             ? "SYMHEAP_DEVICE_PROXY=auto and the device adaptor gives the "
               "CPU access to window memory (set on)"
         : !c->pad_ready || !c->pad->rdma
             ? "the comm has no pad (no device signals)"
         : !c->dev.ops.host_alloc
             ? "the device adaptor cannot allocate host memory the device "
               "maps (no host_alloc)"
             : NULL;
  return *why == NULL;
}

symheap_result_t symheap__proxy_setup(symheap_comm_t c) {
  int mode = 0; /* auto, on, off */
  symheap_result_t r = symheap__cfg_choice("SYMHEAP_DEVICE_PROXY", &mode);
  const char *why;
  int32_t want = wanted(c, r, mode, &why);
  symheap__proxy_t *p = calloc(1, sizeof *p);
  if (!p && r == SYMHEAP_SUCCESS)
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "the device proxy: no memory");
  if (!c->netc) { /* nothing collective follows: no agreement needed */
    if (r != SYMHEAP_SUCCESS)
      SYMHEAP_WARN("device proxy off: %s", symheap__error_peek());
    why = c->nhosts > 1 ? "the comm has no net adaptor (SYMHEAP_NET)"
                        : "the comm spans one host";
    want = 0;
  } else {
    /* Registering the pad is collective: every rank decides the same. */
    int32_t *all = (int32_t *)(void *)c->scratch_sh;
    r = symheap__agree(c, r, 0, &want, sizeof want, all);
    if (r != SYMHEAP_SUCCESS) {
      free(p);
      return symheap__error_context(r, "the device proxy");
    }
    for (int q = 0; q < c->nranks && want; q++)
      if (!all[q]) {
        want = 0;
        why = "another rank has it off (its log says why)";
      }
  }
  if (!p)
    return SYMHEAP_SUCCESS; /* c->proxy NULL: views carry no proxy */
  p->c = c;
  pthread_mutex_init(&p->lock, NULL);
  c->proxy = p;
  if (!want) {
    set_why(p, why);
    return SYMHEAP_SUCCESS;
  }
  /* Collective on every rank (all want it: agreed), agreed inside; on
   * failure nothing of it remains, and the proxy is off on every rank. */
  r = symheap__net_window_register(c, c->pad);
  if (r != SYMHEAP_SUCCESS) {
    snprintf(p->why, sizeof p->why,
             "the pad cannot be registered with the net adaptor: %s",
             symheap__error_peek());
    SYMHEAP_INFO("device proxy off: %s", p->why);
    return SYMHEAP_SUCCESS;
  }
  p->usable = 1;
  return SYMHEAP_SUCCESS;
}

void symheap__proxy_stop(symheap_comm_t c) {
  symheap__proxy_t *p = c->proxy;
  if (!p || !p->started || p->joined)
    return;
  p->joined = 1;
  __atomic_store_n(&p->hold, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
  pthread_join(p->thread, NULL);
  if (p->dropped)
    SYMHEAP_WARN("comm destroy: %llu proxied device operation%s still "
                 "queued; dropped (quiet before destroying the comm)",
                 (unsigned long long)p->dropped,
                 p->dropped == 1 ? " was" : "s were");
}

void symheap__proxy_close(symheap_comm_t c) {
  symheap__proxy_t *p = c->proxy;
  if (!p)
    return;
  symheap__proxy_stop(c);
  const symheap_device_ops *d = &c->dev.ops;
  if (p->stage && d->host_free(c->dev_ctx, p->stage) != SYMHEAP_SUCCESS)
    SYMHEAP_WARN("device proxy: freeing the staging: %s",
                 symheap__error_peek());
  if (p->ring && d->host_free(c->dev_ctx, p->ring) != SYMHEAP_SUCCESS)
    SYMHEAP_WARN("device proxy: freeing the ring: %s", symheap__error_peek());
  /* Before the RDMA stage closes the adaptor the region lives in. */
  if (c->pad && c->pad->rdma && c->netc)
    symheap__rdma_deregister(c, c->pad->rdma);
  pthread_mutex_destroy(&p->lock);
  free(p);
  c->proxy = NULL;
}

/* Under p->lock: the ring, the staging and the thread; undone on failure. */
static symheap_result_t start_locked(symheap__proxy_t *p) {
  symheap_comm_t c = p->c;
  const symheap_device_ops *d = &c->dev.ops;
  void *ring = NULL, *ring_dev = NULL, *stage = NULL, *stage_dev = NULL;
  symheap_result_t r =
      d->host_alloc(c->dev_ctx, sizeof(symheap_proxy_ring_t), &ring, &ring_dev);
  if (r == SYMHEAP_SUCCESS)
    r = d->host_alloc(c->dev_ctx, SYMHEAP__PROXY_STAGE_BYTES, &stage,
                      &stage_dev);
  if (r != SYMHEAP_SUCCESS) {
    r = symheap__error_context(r, "device proxy: host-pinned memory");
    if (ring)
      SYMHEAP__KEEP_ERROR((void)d->host_free(c->dev_ctx, ring));
    return r;
  }
  p->ring = ring;
  p->ring_dev = ring_dev;
  p->stage = stage;
  p->stage_dev = stage_dev;
  p->ring->version = SYMHEAP_PROXY_RING_VERSION;
  p->ring->entries = SYMHEAP_PROXY_ENTRIES;
  p->ring->timeout_ns = (uint64_t)c->timeout_ms * 1000000u;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (pthread_create(&p->thread, NULL, symheap__proxy_main, p) != 0) {
    (void)d->host_free(c->dev_ctx, stage);
    (void)d->host_free(c->dev_ctx, ring);
    p->ring = NULL;
    p->stage = NULL;
    return symheap__error(SYMHEAP_ERR_SYSTEM,
                          "device proxy: cannot start its thread");
  }
  p->started = 1;
  SYMHEAP_INFO("device proxy started: ranks on other hosts are reached "
               "through '%s', device data staged through host-pinned memory",
               c->netc->ops.name);
  return SYMHEAP_SUCCESS;
}

void symheap__proxy_view(struct symheap_window *w, symheap_device_window_t *v) {
  symheap_comm_t c = w->comm;
  symheap__proxy_t *p = c->proxy;
  if (!p || c->nhosts < 2 || !(v->flags & SYMHEAP_VIEW_PAD))
    return;
  if (!p->usable) {
    SYMHEAP_INFO("device view: no proxy for other hosts' ranks: %s", p->why);
    return;
  }
  pthread_mutex_lock(&p->lock);
  symheap_result_t r = p->started ? SYMHEAP_SUCCESS : start_locked(p);
  pthread_mutex_unlock(&p->lock);
  if (r != SYMHEAP_SUCCESS) {
    SYMHEAP_INFO("device view: no proxy for other hosts' ranks: %s",
                 symheap__error_peek());
    return;
  }
  v->flags |= SYMHEAP_VIEW_PROXY;
  v->proxy_ring = p->ring_dev;
  v->proxy_window = (uint64_t)(uintptr_t)w->handle;
}

void symheap__proxy_lock(symheap_comm_t c) {
  if (c->proxy)
    pthread_mutex_lock(&c->proxy->lock);
}

void symheap__proxy_unlock(symheap_comm_t c) {
  if (c->proxy)
    pthread_mutex_unlock(&c->proxy->lock);
}

void symheap__proxy_hold(symheap_comm_t c, int on) {
  symheap__proxy_t *p = c->proxy;
  if (!p)
    return;
  __atomic_store_n(&p->hold, on, __ATOMIC_RELEASE);
  /* Wait (5 s at most) for the thread to see it: one take already begun
   * would otherwise still free a slot after the caller counted the room. */
  struct timespec ts = {0, 100 * 1000};
  for (int i = 0; on && i < 50000 &&
                  !__atomic_load_n(&p->held, __ATOMIC_ACQUIRE) &&
                  !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE);
       i++)
    nanosleep(&ts, NULL);
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_proxy_check(symheap_comm_t c) {
  const char *fn = "symheap_comm_proxy_check";
  if (symheap__comm_check(c, fn) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  symheap__proxy_t *p = c->proxy;
  symheap_result_t e =
      p ? __atomic_load_n(&p->err, __ATOMIC_ACQUIRE) : SYMHEAP_SUCCESS;
  if (e == SYMHEAP_SUCCESS)
    return SYMHEAP_SUCCESS;
  char msg[sizeof p->err_msg];
  pthread_mutex_lock(&p->lock);
  snprintf(msg, sizeof msg, "%s", p->err_msg);
  pthread_mutex_unlock(&p->lock);
  return symheap__error(e, "%s: a proxied device operation failed: %s", fn,
                        msg);
}

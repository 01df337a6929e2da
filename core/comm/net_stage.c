/* Target-side staging, its setup (net_stage.h): the control area every
 * rank registers once when some rank's device memory needs staging, and
 * the staged regions' shadows.  Posting, waiting and draining are
 * net_stage_ops.c. */
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "net_stage.h"

typedef struct {
  uint32_t len, pad;
  unsigned char key[SYMHEAP_NET_KEY_MAX];
} ctl_key_t;
_Static_assert(sizeof(ctl_key_t) <= SYMHEAP__AGREE_MAX,
               "a key travels in one agreement");

static uint64_t hash(const uint64_t *w, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= w[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t symheap__stage_check(const symheap__stage_desc_t *d) {
  const uint64_t w[] = {d->seq,     d->sig_size, d->reg,   d->off,
                        d->len,     d->sig_reg,  (uint32_t)d->sig_op,
                        d->sig_off, d->value,    d->kind,  d->compare};
  return hash(w, sizeof w / sizeof *w);
}

uint64_t symheap__stage_ack_check(const symheap__stage_ack_t *a) {
  const uint64_t w[] = {a->applied, a->failed, a->fetch_seq, a->fetched};
  return hash(w, sizeof w / sizeof *w) | 1; /* never 0: a zeroed record is
                                               not whole */
}

/* The get bounce slot's size for nranks (net_stage.h). */
static size_t slot_size(int nranks) {
  size_t v = SYMHEAP__STAGE_SLOT_ALL / (size_t)nranks;
  v = v < SYMHEAP__STAGE_SLOT_MIN   ? SYMHEAP__STAGE_SLOT_MIN
      : v > SYMHEAP__STAGE_SLOT_MAX ? SYMHEAP__STAGE_SLOT_MAX
                                    : v;
  return v & ~(size_t)4095;
}

/* Whether this rank's window memory needs staging with this adaptor. */
static int needed(symheap_comm_t c) {
  return !(c->caps.caps & SYMHEAP_CAP_HOST_ACCESS) &&
         !(c->netc->caps.caps & SYMHEAP_NET_CAP_HMEM);
}

static void stage_free(symheap_comm_t c, symheap__stage_t *s) {
  symheap__netc_t *n = c->netc;
  if (!s)
    return;
  symheap__net_lock(n);
  for (int p = 0; s->ctl_rkeys && p < s->nranks; p++)
    if (s->ctl_rkeys[p])
      n->ops.rkey_release(n->ctx, s->ctl_rkeys[p]);
  if (s->ctl_mr && n->ops.mem_deregister(n->ctx, s->ctl_mr) != SYMHEAP_SUCCESS)
    SYMHEAP_WARN("net adaptor '%s': deregistering the staging control "
                 "area: %s",
                 n->ops.name, symheap__error_peek());
  symheap__net_unlock(n);
  pthread_mutex_destroy(&s->post);
  pthread_mutex_destroy(&s->drain);
  pthread_mutex_destroy(&s->fetch);
  free(s->fetch_seq);
  free(s->fetched);
  free(s->ctl_rkeys);
  free(s->ctl);
  free(s->sent);
  free(s->acked);
  free(s->failed_seen);
  free(s->failed_ack);
  free(s->applied);
  free(s->failed);
  free(s->ack_sent);
  free(s->regs);
  free(s);
}

/* Local: the control area allocated and registered, its key in *me. */
static symheap_result_t ctl_local(symheap_comm_t c, symheap__stage_t *s,
                                  ctl_key_t *me) {
  symheap__netc_t *n = c->netc;
  size_t np = (size_t)c->nranks;
  s->ring_bytes = np * SYMHEAP__STAGE_RING * sizeof(symheap__stage_desc_t);
  s->slots_at = s->ring_bytes + np * sizeof(symheap__stage_ack_t);
  s->slots_at = (s->slots_at + 4095) & ~(size_t)4095;
  s->slot = slot_size(c->nranks);
  s->ctl_size = s->slots_at + np * s->slot;
  void *ctl = NULL;
  if (posix_memalign(&ctl, 4096, s->ctl_size) != 0)
    ctl = NULL;
  s->ctl = ctl;
  s->ctl_rkeys = calloc(np, sizeof(void *));
  s->sent = calloc(np, 8), s->acked = calloc(np, 8);
  s->failed_seen = calloc(np, 8), s->failed_ack = calloc(np, 8);
  s->applied = calloc(np, 8), s->failed = calloc(np, 8);
  s->ack_sent = calloc(np, 8);
  s->fetch_seq = calloc(np, 8), s->fetched = calloc(np, 8);
  if (!s->ctl || !s->ctl_rkeys || !s->sent || !s->acked || !s->failed_seen ||
      !s->applied || !s->failed || !s->ack_sent || !s->fetch_seq ||
      !s->failed_ack || !s->fetched)
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "staging: no memory");
  memset(s->ctl, 0, s->ctl_size);
  size_t klen = sizeof me->key;
  symheap__net_lock(n);
  symheap_result_t r = n->ops.mem_register(n->ctx, s->ctl, s->ctl_size, 0,
                                           &s->ctl_mr, me->key, &klen);
  symheap__net_unlock(n);
  if (r == SYMHEAP_SUCCESS && klen > SYMHEAP_NET_KEY_MAX)
    r = symheap__error(SYMHEAP_ERR_INTERNAL, "net adaptor '%s': a key of %zu "
                       "bytes", n->ops.name, klen);
  me->len = (uint32_t)klen;
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "staging: registering the control "
                                         "area (%zu bytes)", s->ctl_size);
}

static symheap_result_t ctl_import(symheap_comm_t c, symheap__stage_t *s,
                                   const ctl_key_t *all) {
  symheap__netc_t *n = c->netc;
  symheap_result_t r = SYMHEAP_SUCCESS;
  symheap__net_lock(n);
  for (int p = 0; p < c->nranks && r == SYMHEAP_SUCCESS; p++)
    r = n->ops.rkey_import(n->ctx, p, all[p].key, all[p].len,
                           &s->ctl_rkeys[p]);
  symheap__net_unlock(n);
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "staging: a peer's control key");
}

symheap_result_t symheap__stage_open(symheap_comm_t c) {
  int32_t want = needed(c), any = 0;
  int32_t *wants = calloc((size_t)c->nranks, sizeof *wants);
  ctl_key_t me, *all = calloc((size_t)c->nranks, sizeof *all);
  memset(&me, 0, sizeof me);
  symheap_result_t r = wants && all ? SYMHEAP_SUCCESS
                                    : symheap__error(SYMHEAP_ERR_NO_MEMORY,
                                                     "staging: no memory");
  r = symheap__agree(c, r, 0, &want, sizeof want, wants);
  for (int p = 0; r == SYMHEAP_SUCCESS && p < c->nranks; p++)
    any |= wants[p];
  symheap__stage_t *s = NULL;
  if (r == SYMHEAP_SUCCESS && any) {
    s = calloc(1, sizeof *s);
    if (s) {
      s->n = c->netc, s->rank = c->rank, s->nranks = c->nranks;
      s->dev = &c->dev.ops, s->dev_ctx = c->dev_ctx;
      pthread_mutex_init(&s->post, NULL);
      pthread_mutex_init(&s->drain, NULL);
      pthread_mutex_init(&s->fetch, NULL);
    }
    r = s ? ctl_local(c, s, &me)
          : symheap__error(SYMHEAP_ERR_NO_MEMORY, "staging: no memory");
    r = symheap__agree(c, r, 0, &me, sizeof me, all);
    if (r == SYMHEAP_SUCCESS)
      r = symheap__agree(c, ctl_import(c, s, all), 0, NULL, 0, NULL);
  }
  free(wants);
  free(all);
  if (r != SYMHEAP_SUCCESS) {
    SYMHEAP__KEEP_ERROR(stage_free(c, s));
    return symheap__error_context(r, "staging device memory through host "
                                     "memory");
  }
  c->netc->stage = s;
  if (s)
    SYMHEAP_INFO("net adaptor '%s' (provider %s) cannot register device "
                 "memory: %s; peers' puts land in pinned host shadows that "
                 "this rank copies in (control area: %zu bytes)",
                 c->netc->ops.name, c->netc->caps.provider,
                 want ? "this rank's windows are staged"
                      : "other ranks' windows are staged",
                 s->ctl_size);
  return SYMHEAP_SUCCESS;
}

void symheap__stage_close(symheap_comm_t c) {
  symheap__netc_t *n = c->netc;
  if (!n || !n->stage)
    return;
  stage_free(c, n->stage);
  n->stage = NULL;
}

symheap_result_t symheap__stage_region(symheap_comm_t c, void *dev,
                                       size_t size, void **shadow,
                                       uint32_t *id) {
  symheap__netc_t *n = c->netc;
  symheap__stage_t *s = n->stage;
  const symheap_device_ops *d = &c->dev.ops;
  if (!s || !d->host_alloc || !d->copy_from_host || !d->copy_to_host)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "net adaptor '%s' (provider %s) cannot register "
                          "device memory (no FI_HMEM), device adaptor '%s' "
                          "gives no CPU access to it, and it cannot stage it "
                          "through host memory (%s)",
                          n->ops.name, n->caps.provider, d->name,
                          !s ? "no control area"
                             : "no host_alloc, copy_from_host or "
                               "copy_to_host");
  void *host = NULL, *hdev = NULL;
  symheap_result_t r = d->host_alloc(c->dev_ctx, size, &host, &hdev);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "staging: a pinned host shadow of %zu "
                                     "bytes", size);
  pthread_mutex_lock(&s->drain);
  if (s->nregs == s->cap) {
    uint32_t cap = s->cap ? 2 * s->cap : 16;
    symheap__stage_reg_t *g = realloc(s->regs, cap * sizeof *g);
    if (g)
      s->regs = g, s->cap = cap;
  }
  int ok = s->nregs < s->cap;
  if (ok) {
    s->regs[s->nregs].dev = dev;
    s->regs[s->nregs].shadow = host;
    s->regs[s->nregs].size = size;
    *id = s->nregs++;
  }
  pthread_mutex_unlock(&s->drain);
  if (!ok) {
    SYMHEAP__KEEP_ERROR((void)d->host_free(c->dev_ctx, host));
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "staging: no memory");
  }
  *shadow = host;
  return SYMHEAP_SUCCESS;
}

void symheap__stage_region_free(symheap_comm_t c, uint32_t id, void *shadow) {
  symheap__stage_t *s = c->netc->stage;
  pthread_mutex_lock(&s->drain); /* no descriptor is being applied to it */
  if (id < s->nregs)
    memset(&s->regs[id], 0, sizeof s->regs[id]);
  pthread_mutex_unlock(&s->drain);
  if (c->dev.ops.host_free(c->dev_ctx, shadow) != SYMHEAP_SUCCESS)
    SYMHEAP_WARN("staging: freeing a host shadow: %s", symheap__error_peek());
}

void symheap__stage_hold(symheap_comm_t c, int on) {
  if (c->netc && c->netc->stage)
    __atomic_store_n(&c->netc->stage->hold, on, __ATOMIC_RELEASE);
}

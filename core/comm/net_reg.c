/* Net registration of one range: this rank's region of the comm's net
 * adaptor, and every rank's key, travelled as opaque bytes through the
 * agreement, so a rank that cannot register fails the registration on every
 * rank, and every rank imports every rank's key (its own too: on a comm that
 * spans hosts every atomic goes through the adaptor). */
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "net.h"
#include "net_stage.h"

typedef struct {
  uint32_t len;
  uint32_t stage; /* 0: the range itself; else staged, its id + 1 */
  unsigned char key[SYMHEAP_NET_KEY_MAX];
} key_rec_t;
_Static_assert(sizeof(key_rec_t) <= SYMHEAP__AGREE_MAX,
               "a key travels in one agreement");

void symheap__netreg_free(symheap_comm_t c, symheap__netreg_t *g) {
  if (!g)
    return;
  symheap__netc_t *n = c->netc;
  if (n) {
    symheap__net_lock(n);
    for (int p = 0; g->rkeys && p < c->nranks; p++)
      if (g->rkeys[p])
        n->ops.rkey_release(n->ctx, g->rkeys[p]);
    if (g->mr && n->ops.mem_deregister(n->ctx, g->mr) != SYMHEAP_SUCCESS)
      SYMHEAP_WARN("net adaptor '%s': deregistering: %s", n->ops.name,
                   symheap__error_peek());
    symheap__net_unlock(n);
    if (g->mr)
      c->stats.descriptors_held--;
    if (g->shadow)
      symheap__stage_region_free(c, g->stage_id, g->shadow);
  }
  free(g->peer_stage);
  free(g->rkeys);
  free(g);
}

/* Local: this rank's region over [ptr, ptr + size), its key in *me. */
static symheap_result_t reg_local(symheap_comm_t c, symheap__netreg_t *g,
                                  void *ptr, size_t size, key_rec_t *me) {
  symheap__netc_t *n = c->netc;
  int is_device = !(c->caps.caps & SYMHEAP_CAP_HOST_ACCESS);
  if (is_device && !(n->caps.caps & SYMHEAP_NET_CAP_HMEM)) {
    /* Staged: peers reach a pinned host shadow, copied in on arrival. */
    symheap_result_t r =
        symheap__stage_region(c, ptr, size, &g->shadow, &g->stage_id);
    if (r != SYMHEAP_SUCCESS)
      return r;
    g->dev = ptr;
    ptr = g->shadow;
    is_device = 0;
    me->stage = g->stage_id + 1;
  }
  size_t klen = sizeof me->key;
  symheap__net_lock(n);
  symheap_result_t r =
      n->ops.mem_register(n->ctx, ptr, size, is_device, &g->mr, me->key, &klen);
  symheap__net_unlock(n);
  if (r == SYMHEAP_SUCCESS && klen > SYMHEAP_NET_KEY_MAX)
    r = symheap__error(SYMHEAP_ERR_INTERNAL,
                       "net adaptor '%s': a key of %zu bytes", n->ops.name,
                       klen);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "net adaptor '%s': registering %zu bytes",
                                  n->ops.name, size);
  c->stats.descriptors_held++;
  me->len = (uint32_t)klen;
  return SYMHEAP_SUCCESS;
}

/* Local: every rank's key imported. */
static symheap_result_t import_all(symheap_comm_t c, symheap__netreg_t *g,
                                   const key_rec_t *all) {
  symheap__netc_t *n = c->netc;
  symheap_result_t r = SYMHEAP_SUCCESS;
  symheap__net_lock(n);
  for (int p = 0; p < c->nranks && r == SYMHEAP_SUCCESS; p++) {
    g->peer_stage[p] = all[p].stage;
    r = n->ops.rkey_import(n->ctx, p, all[p].key, all[p].len, &g->rkeys[p]);
    if (r != SYMHEAP_SUCCESS)
      r = symheap__error_context(r, "net adaptor '%s': rank %d's key",
                                 n->ops.name, p);
  }
  symheap__net_unlock(n);
  return r;
}

symheap_result_t symheap__netreg_make(symheap_comm_t c, void *ptr,
                                      size_t size, symheap__netreg_t **out) {
  symheap__netreg_t *g = calloc(1, sizeof *g);
  key_rec_t me, *all = calloc((size_t)c->nranks, sizeof *all);
  memset(&me, 0, sizeof me);
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (g && (!(g->rkeys = calloc((size_t)c->nranks, sizeof(void *))) ||
            !(g->peer_stage = calloc((size_t)c->nranks, sizeof(uint32_t)))))
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "net registration: no memory");
  if (!g || !all)
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "net registration: no memory");
  if (r == SYMHEAP_SUCCESS) {
    g->size = size;
    r = reg_local(c, g, ptr, size, &me);
  }
  r = symheap__agree(c, r, 0, &me, sizeof me, all);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__agree(c, import_all(c, g, all), 0, NULL, 0, NULL);
  free(all);
  if (r != SYMHEAP_SUCCESS) {
    SYMHEAP__KEEP_ERROR(symheap__netreg_free(c, g));
    return r;
  }
  *out = g;
  return SYMHEAP_SUCCESS;
}


/* Net registration: every window's local memory, and every heap chunk once
 * (heap windows address their chunks by offset), becomes a region of the
 * comm's net adaptor; the keys travel as opaque bytes through the
 * agreement, so a rank that cannot register fails the registration on every
 * rank, and every rank imports every rank's key (its own too: on a comm that
 * spans hosts every atomic goes through the adaptor). */
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "net.h"

typedef struct {
  uint32_t len;
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
                   symheap_last_error());
    symheap__net_unlock(n);
    if (g->mr)
      c->stats.descriptors_held--;
  }
  free(g->rkeys);
  free(g);
}

/* Local: this rank's region over [ptr, ptr + size), its key in *me. */
static symheap_result_t reg_local(symheap_comm_t c, symheap__netreg_t *g,
                                  void *ptr, size_t size, key_rec_t *me) {
  symheap__netc_t *n = c->netc;
  int is_device = !(c->caps.caps & SYMHEAP_CAP_HOST_ACCESS);
  if (is_device && !(n->caps.caps & SYMHEAP_NET_CAP_HMEM))
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "net adaptor '%s' (provider %s) cannot register "
                          "device memory, and device adaptor '%s' gives no "
                          "CPU access to it",
                          n->ops.name, n->caps.provider, c->dev.ops.name);
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
  if (g && !(g->rkeys = calloc((size_t)c->nranks, sizeof(void *))))
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

symheap_result_t symheap__net_window_register(symheap_comm_t c,
                                              struct symheap_window *w) {
  symheap__rdma_t *x = w->rdma;
  /* Heap windows lie in chunks registered once; a view of a registration
   * shares its mapping's region (the same on every rank: agreed). */
  if (w->heap || !x || x->netreg)
    return SYMHEAP_SUCCESS;
  symheap_result_t r = symheap__netreg_make(c, w->user_ptr, w->size,
                                            &x->netreg);
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "registering the window with the "
                                         "net adaptor");
}

symheap_result_t symheap__net_heap_commit(symheap_comm_t c, uint32_t first,
                                          uint32_t count) {
  symheap__netc_t *n = c->netc;
  symheap__heap_t *h = c->heap;
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (!n->chunks) {
    n->chunks = calloc(h->arena.nchunks, sizeof *n->chunks);
    if (n->chunks)
      n->nchunks = h->arena.nchunks;
    else
      r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "net registration: no memory");
    r = symheap__agree(c, r, 0, NULL, 0, NULL);
  }
  size_t ch = (size_t)h->arena.chunk;
  char *mine = h->base + (size_t)c->rank * (size_t)h->arena.size;
  /* The fresh chunks are the same on every rank (the growth was agreed). */
  for (uint32_t i = first; i < first + count && r == SYMHEAP_SUCCESS; i++)
    if (h->fresh[i] && !n->chunks[i])
      r = symheap__netreg_make(c, mine + (size_t)i * ch, ch, &n->chunks[i]);
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "heap: registering chunks with the "
                                         "net adaptor");
}

void symheap__net_heap_release(symheap_comm_t c, uint32_t i) {
  symheap__netc_t *n = c->netc;
  if (!n || !n->chunks || i >= n->nchunks || !n->chunks[i])
    return;
  symheap__netreg_free(c, n->chunks[i]);
  n->chunks[i] = NULL;
}

symheap_result_t symheap__net_locate(struct symheap_window *w, int peer,
                                     size_t off, size_t len, void **rkey,
                                     uint64_t *roff, size_t *span) {
  symheap_comm_t c = w->comm;
  symheap__netc_t *n = c->netc;
  if (w->heap) {
    size_t ch = (size_t)c->heap->arena.chunk;
    size_t at = w->head + off;
    uint32_t i = (uint32_t)(at / ch);
    if (!n->chunks || i >= n->nchunks || !n->chunks[i])
      return symheap__error(SYMHEAP_ERR_INTERNAL,
                            "heap chunk %u has no net region", i);
    *rkey = n->chunks[i]->rkeys[peer];
    *roff = at % ch;
    *span = ch - at % ch < len ? ch - at % ch : len;
    return SYMHEAP_SUCCESS;
  }
  symheap__netreg_t *g = w->rdma ? w->rdma->netreg : NULL;
  if (!g)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "the window is not registered with the net adaptor "
                          "(registered before it was open)");
  *rkey = g->rkeys[peer];
  *roff = off;
  *span = len;
  return SYMHEAP_SUCCESS;
}

/* Memory: regions peers reach (ucp_mem_map of the caller's memory), keys as
 * bytes (a small header, then ucp_rkey_pack's bytes) and their import
 * (ucp_ep_rkey_unpack on the peer's endpoint).  UCP addresses a peer's
 * memory by its virtual address: the key carries the region's base, and an
 * offset from the region's start is added to it; and its size, which the
 * initiator checks (UCX over tcp checks nothing at the target). */
#include <stdlib.h>
#include <string.h>

#include "ucx.h"

/* The context's lists of registrations and imported keys (what close
 * releases): doubly linked through prev/next, newest first. */
#define LIST_PUSH(head, n)                                                     \
  do {                                                                         \
    (n)->prev = NULL;                                                          \
    (n)->next = (head);                                                        \
    if (head)                                                                  \
      (head)->prev = (n);                                                      \
    (head) = (n);                                                              \
  } while (0)
#define LIST_UNLINK(head, n)                                                   \
  do {                                                                         \
    if ((n)->prev)                                                             \
      (n)->prev->next = (n)->next;                                             \
    else                                                                       \
      (head) = (n)->next;                                                      \
    if ((n)->next)                                                             \
      (n)->next->prev = (n)->prev;                                             \
  } while (0)

/* Pack memh's rkey behind the header, or say why it does not fit. */
static symheap_result_t pack_key(ucx_ctx_t *c, ucx_mr_t *m, void *key,
                                 size_t *key_len) {
  void *packed = NULL;
  size_t n = 0;
  ucs_status_t st = ucx_api.rkey_pack(c->context, m->memh, &packed, &n);
  if (st != UCS_OK)
    return ucx_fail(ucx_result(st), st, "ucp_rkey_pack");
  if (n > UCX_PACKED_MAX) {
    ucx_api.rkey_buffer_release(packed);
    return c->svc->error(SYMHEAP_ERR_UNSUPPORTED,
                         "ucx: UCX packs this region's remote key in %zu "
                         "bytes, more than the %zu a net key leaves it; "
                         "fewer transports (UCX_TLS, e.g. self,tcp) shorten "
                         "it",
                         n, (size_t)UCX_PACKED_MAX);
  }
  ucx_key_hdr_t h = {UCX_KEY_MAGIC, (uint16_t)n, 0,
                     (uint64_t)(uintptr_t)m->base, (uint64_t)m->size};
  memcpy(key, &h, sizeof h);
  memcpy((char *)key + sizeof h, packed, n);
  ucx_api.rkey_buffer_release(packed);
  *key_len = sizeof h + n;
  return SYMHEAP_SUCCESS;
}

symheap_result_t ucx_mem_register(void *ctx, void *ptr, size_t size,
                                  int is_device, void **mr, void *key,
                                  size_t *key_len) {
  ucx_ctx_t *c = ctx;
  if (!ptr || !size || !mr || !key || !key_len)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx mem_register: NULL or empty region");
  if (is_device)
    return c->svc->error(SYMHEAP_ERR_UNSUPPORTED,
                         "ucx: the adaptor registers host memory only (no "
                         "SYMHEAP_NET_CAP_HMEM): device memory is staged");
  ucx_mr_t *m = calloc(1, sizeof *m);
  if (!m)
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "ucx mem_register: no memory");
  ucp_mem_map_params_t p;
  memset(&p, 0, sizeof p);
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                 UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_PROT;
  p.address = ptr;
  p.length = size;
  p.prot = UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE |
           UCP_MEM_MAP_PROT_REMOTE_READ | UCP_MEM_MAP_PROT_REMOTE_WRITE;
  ucs_status_t st = ucx_api.mem_map(c->context, &p, &m->memh);
  if (st != UCS_OK) {
    free(m);
    return ucx_fail(ucx_result(st), st, "ucp_mem_map of %zu bytes at %p",
                    size, ptr);
  }
  m->base = ptr;
  m->size = size;
  symheap_result_t r = pack_key(c, m, key, key_len);
  if (r != SYMHEAP_SUCCESS) {
    (void)ucx_api.mem_unmap(c->context, m->memh);
    free(m);
    return r;
  }
  LIST_PUSH(c->mrs, m);
  *mr = m;
  return SYMHEAP_SUCCESS;
}

void ucx_unmap_all(ucx_ctx_t *c) {
  while (c->mrs) {
    ucx_mr_t *m = c->mrs;
    LIST_UNLINK(c->mrs, m);
    (void)ucx_api.mem_unmap(c->context, m->memh);
    free(m);
  }
}

symheap_result_t ucx_mem_deregister(void *ctx, void *mr) {
  ucx_ctx_t *c = ctx;
  ucx_mr_t *m = mr;
  if (!m)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ucx: deregister of NULL");
  LIST_UNLINK(c->mrs, m);
  ucs_status_t st = ucx_api.mem_unmap(c->context, m->memh);
  free(m);
  return st == UCS_OK ? SYMHEAP_SUCCESS
                      : ucx_fail(ucx_result(st), st, "ucp_mem_unmap");
}

symheap_result_t ucx_rkey_import(void *ctx, int peer, const void *key,
                                 size_t key_len, void **rkey) {
  ucx_ctx_t *c = ctx;
  ucx_key_hdr_t h;
  if (!key || !rkey || key_len < sizeof h)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx: a key of %zu bytes from rank %d", key_len,
                         peer);
  if (!c->peers || peer < 0 || peer >= c->nranks)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx rkey_import: rank %d is not connected", peer);
  memcpy(&h, key, sizeof h);
  if (h.magic != UCX_KEY_MAGIC || sizeof h + h.packed_len != key_len)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ucx: rank %d's key is not a ucx adaptor's key",
                         peer);
  ucx_rkey_t *k = calloc(1, sizeof *k);
  if (!k)
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "ucx rkey_import: no memory");
  ucs_status_t st = ucx_api.ep_rkey_unpack(
      c->peers[peer].ep, (const char *)key + sizeof h, &k->rkey);
  if (st != UCS_OK) {
    free(k);
    return ucx_fail(ucx_result(st), st, "ucp_ep_rkey_unpack of rank %d's key",
                    peer);
  }
  k->base = h.base;
  k->size = h.size;
  k->peer = peer;
  LIST_PUSH(c->rkeys, k);
  *rkey = k;
  return SYMHEAP_SUCCESS;
}

void ucx_rkey_release(void *ctx, void *rkey) {
  ucx_ctx_t *c = ctx;
  ucx_rkey_t *k = rkey;
  if (!k)
    return;
  LIST_UNLINK(c->rkeys, k);
  ucx_api.rkey_destroy(k->rkey);
  free(k);
}

void ucx_rkeys_destroy_all(ucx_ctx_t *c) {
  while (c->rkeys)
    ucx_rkey_release(c, c->rkeys);
}

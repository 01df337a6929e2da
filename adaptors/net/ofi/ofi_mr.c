/* Memory registration: regions peers reach (keys as bytes), descriptors of
 * local buffers where the provider wants them (FI_MR_LOCAL), and the bounce
 * arena that frees small puts' and atomics' buffers on return.
 *
 * Keys: where the provider lets the application pick (no FI_MR_PROV_KEY),
 * each region gets the context's next number; otherwise the provider's key
 * travels.  Addressing: offsets from the region's start, unless the
 * provider wants virtual addresses (FI_MR_VIRT_ADDR), in which case the key
 * carries the region's address and the offset is added to it. */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

#define ACCESS_ALL                                                             \
  (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV)

/* Register [buf, buf+len) with `access`; device memory through FI_HMEM. */
static int reg(ofi_ctx_t *c, const void *buf, size_t len, uint64_t access,
               uint64_t key, int is_device, struct fid_mr **mr) {
  struct iovec iov = {(void *)buf, len};
  struct fi_mr_attr a;
  memset(&a, 0, sizeof a);
  a.mr_iov = &iov;
  a.iov_count = 1;
  a.access = access;
  a.requested_key = key;
  a.iface = is_device ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
  int ret = fi_mr_regattr(c->domain, &a, 0, mr);
  if (ret)
    return ret;
  /* FI_MR_ENDPOINT: a region is bound to the endpoint, then enabled. */
  if (c->mr_endpoint &&
      ((ret = fi_mr_bind(*mr, &c->ep->fid, 0)) || (ret = fi_mr_enable(*mr)))) {
    (void)fi_close(&(*mr)->fid);
    *mr = NULL;
  }
  return ret;
}

symheap_result_t ofi_mem_register(void *ctx, void *ptr, size_t size,
                                  int is_device, void **mr, void *key,
                                  size_t *key_len) {
  ofi_ctx_t *c = ctx;
  if (!ptr || !size || !mr || !key || !key_len)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ofi mem_register: NULL or empty region");
  if (is_device && !c->hmem)
    return c->svc->error(SYMHEAP_ERR_UNSUPPORTED,
                         "ofi: provider %s cannot register device memory "
                         "(no FI_HMEM; SYMHEAP_NET_HMEM=1 asks for it)",
                         c->provider);
  ofi_mr_t *m = calloc(1, sizeof *m);
  if (!m)
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "ofi mem_register: no memory");
  uint64_t want = c->prov_key ? 0 : c->next_key;
  int ret = reg(c, ptr, size, ACCESS_ALL, want, is_device, &m->mr);
  if (ret) {
    free(m);
    return ofi_fail(
        ret == -FI_ENOMEM ? SYMHEAP_ERR_NO_MEMORY : SYMHEAP_ERR_DEVICE, ret,
        "fi_mr_reg of %zu bytes at %p (provider %s)", size, ptr, c->provider);
  }
  m->key = c->prov_key ? fi_mr_key(m->mr) : want;
  if (m->key == FI_KEY_NOTAVAIL) {
    (void)fi_close(&m->mr->fid);
    free(m);
    return c->svc->error(SYMHEAP_ERR_UNSUPPORTED,
                         "ofi: provider %s uses raw keys (FI_MR_RAW), which "
                         "this adaptor does not carry",
                         c->provider);
  }
  if (!c->prov_key)
    c->next_key++;
  m->desc = fi_mr_desc(m->mr);
  m->base = ptr;
  m->size = size;
  symheap_result_t r = ofi_regions_add(c, m);
  if (r != SYMHEAP_SUCCESS) {
    (void)fi_close(&m->mr->fid);
    free(m);
    return r;
  }
  ofi_key_t k = {OFI_KEY_MAGIC, 0, m->key,
                 c->virt_addr ? (uint64_t)(uintptr_t)ptr : 0, size};
  memcpy(key, &k, sizeof k);
  *key_len = sizeof k;
  *mr = m;
  return SYMHEAP_SUCCESS;
}

symheap_result_t ofi_mem_deregister(void *ctx, void *mr) {
  ofi_ctx_t *c = ctx;
  ofi_mr_t *m = mr;
  if (!m)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "ofi: deregister of NULL");
  ofi_regions_remove(c, m);
  int ret = fi_close(&m->mr->fid);
  free(m);
  return ret ? ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_close of a region")
             : SYMHEAP_SUCCESS;
}

symheap_result_t ofi_rkey_import(void *ctx, int peer, const void *key,
                                 size_t key_len, void **rkey) {
  ofi_ctx_t *c = ctx;
  ofi_key_t k;
  if (!key || key_len != sizeof k || !rkey)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ofi: a key of %zu bytes from rank %d (expected %zu)",
                         key_len, peer, sizeof k);
  memcpy(&k, key, sizeof k);
  if (k.magic != OFI_KEY_MAGIC)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "ofi: rank %d's key is not an ofi adaptor's key",
                         peer);
  ofi_key_t *out = malloc(sizeof *out);
  if (!out)
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "ofi rkey_import: no memory");
  *out = k;
  *rkey = out;
  return SYMHEAP_SUCCESS;
}

void ofi_rkey_release(void *ctx, void *rkey) {
  (void)ctx;
  free(rkey);
}

symheap_result_t ofi_local_desc(ofi_ctx_t *c, const void *buf, size_t len,
                                void *mr, void **desc) {
  *desc = NULL;
  if (mr) {
    *desc = ((ofi_mr_t *)mr)->desc;
    return SYMHEAP_SUCCESS;
  }
  if (!c->mr_local)
    return SYMHEAP_SUCCESS;
  if ((const char *)buf >= c->bounce &&
      (const char *)buf + len <= c->bounce + c->bounce_size) {
    *desc = c->bounce_desc;
    return SYMHEAP_SUCCESS;
  }
  ofi_tmp_mr_t *t = calloc(1, sizeof *t);
  if (!t)
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "ofi: no memory");
  int ret =
      reg(c, buf, len, FI_READ | FI_WRITE | FI_SEND | FI_RECV, 0, 0, &t->mr);
  if (ret) {
    free(t);
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret,
                    "fi_mr_reg of a local buffer (provider %s wants local "
                    "buffers registered: FI_MR_LOCAL)",
                    c->provider);
  }
  t->next = c->tmp;
  c->tmp = t;
  *desc = fi_mr_desc(t->mr);
  return SYMHEAP_SUCCESS;
}

symheap_result_t ofi_bounce_open(ofi_ctx_t *c) {
  c->bounce_size = OFI_BOUNCE_SIZE;
  c->bounce = aligned_alloc(4096, c->bounce_size);
  if (!c->bounce)
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "ofi: no memory");
  if (!c->mr_local)
    return SYMHEAP_SUCCESS;
  int ret = reg(c, c->bounce, c->bounce_size,
                FI_READ | FI_WRITE | FI_SEND | FI_RECV, 0, 0, &c->bounce_mr);
  if (ret)
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_mr_reg of the bounce arena");
  c->bounce_desc = fi_mr_desc(c->bounce_mr);
  return SYMHEAP_SUCCESS;
}

void ofi_bounce_close(ofi_ctx_t *c) {
  if (c->bounce_mr)
    (void)fi_close(&c->bounce_mr->fid);
  c->bounce_mr = NULL;
  free(c->bounce);
  c->bounce = NULL;
}

void ofi_release_after_quiet(ofi_ctx_t *c) {
  c->bounce_used = 0;
  while (c->tmp) {
    ofi_tmp_mr_t *t = c->tmp;
    c->tmp = t->next;
    (void)fi_close(&t->mr->fid);
    free(t);
  }
}

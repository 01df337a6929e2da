/* The multicast part of a window, when the adaptor has one and it is not
 * disabled.  Order (the adaptor's contract): rank 0 creates and exports, the
 * others import; every rank adds its device; every rank binds its memory;
 * every rank maps the object.  Each step ends in an agreement, so either all
 * ranks have multicast or none does, and teardown runs in reverse. */
#include <stdlib.h>
#include <string.h>

#include "comm/exchange.h"
#include "window.h"

symheap_result_t symheap__mc_check(symheap_comm_t c) {
  if (c->mc_disabled_by)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "multicast was requested but is disabled by %s",
                          c->mc_disabled_by);
  if (!c->dev.has_multicast)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "multicast was requested but device adaptor '%s' "
                          "has no multicast operations",
                          c->dev.ops.name);
  if (c->local_nranks != c->nranks)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "multicast was requested but the comm spans %d "
                          "hosts; a multicast object spans one (register on "
                          "the comm of symheap_comm_split_local)",
                          c->nhosts);
  if (!(c->caps.caps & SYMHEAP_CAP_MULTICAST) || !c->caps.multicast_granularity)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "multicast was requested but %s does not support it",
                          c->caps.device_name);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__mc_teardown(symheap_comm_t c,
                                      struct symheap_window *w) {
  const symheap_device_ops *ops = &c->dev.ops;
  symheap__mc_t *m = &w->mc;
  symheap_result_t first = SYMHEAP_SUCCESS, r;
#define KEEP(x)                                                                \
  if ((r = (x)) != SYMHEAP_SUCCESS && first == SYMHEAP_SUCCESS)                \
  first = r
  if (m->mapped) {
    KEEP(ops->unmap(c->dev_ctx, m->va, m->size));
    c->stats.bytes_mapped -= m->size;
    m->mapped = 0;
  }
  if (m->va) {
    KEEP(ops->va_free(c->dev_ctx, m->va, m->size));
    c->stats.va_reserved -= m->size;
    m->va = NULL;
  }
  if (m->bound) {
    KEEP(ops->mc_unbind(c->dev_ctx, m->handle, 0, m->size));
    m->bound = 0;
  }
  if (m->handle) {
    KEEP(ops->mem_release(c->dev_ctx, m->handle));
    c->stats.descriptors_held--;
    c->stats.multicast_objects--;
    m->handle = 0;
  }
#undef KEEP
  return first;
}

symheap_result_t symheap__mc_setup(symheap_comm_t c, struct symheap_window *w,
                                   symheap_mem_handle_t local, size_t map_off,
                                   size_t avail) {
  const symheap_device_ops *ops = &c->dev.ops;
  symheap__mc_t *m = &w->mc;
  size_t mcg = c->caps.multicast_granularity;
  /* The object covers the window in whole multicast-granularity units, and
   * each rank binds that much of its memory. */
  m->size = symheap__round_up(w->head + w->size, mcg);
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (map_off % mcg || m->size > avail)
    r = symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                       "multicast binds whole units of %zu bytes: the memory "
                       "behind the window must start on one and hold %zu "
                       "bytes from there (it holds %zu); allocate with "
                       "symheap_malloc(SYMHEAP_WINDOW_MULTICAST)",
                       mcg, m->size, avail);
  uint32_t kind = (c->caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD))
                      ? SYMHEAP_HANDLE_FD
                      : SYMHEAP_HANDLE_BYTES;
  /* 1. Rank 0 creates the object and shares it. */
  symheap_shareable_t mine, *all = calloc((size_t)c->nranks, sizeof *all);
  memset(&mine, 0, sizeof mine);
  mine.fd = -1;
  if (r == SYMHEAP_SUCCESS && !all)
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "multicast: no memory");
  if (r == SYMHEAP_SUCCESS && c->rank == 0) {
    r = ops->mc_create(c->dev_ctx, m->size, c->nranks, &m->handle);
    if (r == SYMHEAP_SUCCESS) {
      c->stats.multicast_objects++;
      c->stats.descriptors_held++;
      r = ops->mem_export(c->dev_ctx, m->handle, kind, &mine);
    }
  }
  r = symheap__exchange_handles(c, r, &mine, kind, 1,
                                all ? all : c->scratch_sh);
  if (r != SYMHEAP_SUCCESS)
    goto fail;
  /* 2. The others import; everyone adds its device. */
  if (c->rank != 0) {
    r = ops->mem_import(c->dev_ctx, &all[0], &m->handle);
    all[0].fd = -1; /* the adaptor owns it now */
    if (r == SYMHEAP_SUCCESS) {
      c->stats.multicast_objects++;
      c->stats.descriptors_held++;
    }
  }
  if (r == SYMHEAP_SUCCESS)
    r = ops->mc_add_device(c->dev_ctx, m->handle);
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  if (r != SYMHEAP_SUCCESS)
    goto fail;
  /* 3. Every device is in: bind local memory. */
  r = ops->mc_bind(c->dev_ctx, m->handle, 0, local, map_off, m->size);
  if (r == SYMHEAP_SUCCESS)
    m->bound = 1;
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  if (r != SYMHEAP_SUCCESS)
    goto fail;
  /* 4. Map the object. */
  void *va = NULL;
  r = symheap__va_reserve(ops, c->dev_ctx, m->size, mcg, &va);
  if (r == SYMHEAP_SUCCESS) {
    m->va = va;
    c->stats.va_reserved += m->size;
    r = ops->map(c->dev_ctx, va, m->size, m->handle, 0);
  }
  if (r == SYMHEAP_SUCCESS) {
    m->mapped = 1;
    c->stats.bytes_mapped += m->size;
    r = ops->set_access(c->dev_ctx, va, m->size);
  }
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  if (r != SYMHEAP_SUCCESS)
    goto fail;
  free(all);
  return SYMHEAP_SUCCESS;
fail:
  free(all);
  SYMHEAP__KEEP_ERROR((void)symheap__mc_teardown(c, w));
  return symheap__error_context(r, "multicast setup");
}

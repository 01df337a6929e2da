/* The RDMA calls: a window's keys, the comm's RDMA state (win/rdma.c
 * registers). */
#include <stdio.h>
#include <string.h>

#include "symheap_netops.h"
#include "win/window.h"

static symheap_result_t no_rdma(const struct symheap_window *w,
                                const char *fn) {
  return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                        "%s: the window is not registered for RDMA: %s", fn,
                        w->comm->net_why[0] ? w->comm->net_why
                                            : "registered before RDMA was on");
}

SYMHEAP__EXPORT symheap_result_t symheap_window_rdma_key(symheap_window_t h,
                                                         int peer,
                                                         uint64_t *addr,
                                                         uint32_t *rkey) {
  const char *fn = "symheap_window_rdma_key";
  const struct symheap_window *w = symheap__window_get(h, fn);
  if (!w)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!addr || !rkey || peer < 0 || peer >= w->comm->nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: %s", fn,
                          !addr || !rkey ? "NULL output pointer"
                                         : "peer is out of range");
  const symheap__rdma_t *o = symheap__rdma_region(w);
  if (!o)
    return no_rdma(w, fn);
  *addr = o->keys[peer].addr;
  *rkey = o->keys[peer].rkey;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_rdma_lkey(symheap_window_t h,
                                                          uint32_t *lkey) {
  const char *fn = "symheap_window_rdma_lkey";
  const struct symheap_window *w = symheap__window_get(h, fn);
  if (!w)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!lkey)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: lkey is NULL", fn);
  const symheap__rdma_t *o = symheap__rdma_region(w);
  if (!o)
    return no_rdma(w, fn);
  *lkey = o->lkey;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t
symheap_comm_rdma_info(symheap_comm_t c, symheap_rdma_info_t *info) {
  if (symheap__comm_check(c, "symheap_comm_rdma_info") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!info)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_rdma_info: NULL argument");
  symheap_rdma_info_t i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  i.enabled = c->net != NULL;
  if (c->net) {
    snprintf(i.device, sizeof i.device, "%s",
             c->net_ops->device_name(c->net));
    c->net_ops->native(c->net, &i.ibv_context, &i.ibv_pd);
  } else {
    snprintf(i.why_not, sizeof i.why_not, "%s", c->net_why);
  }
  return symheap__copy_sized(info, &i, sizeof i, "symheap_comm_rdma_info");
}

/* RDMA registration of windows (rdma_ibverbs.c does the verbs):
 * when a comm spans hosts (or SYMHEAP_NET=ibverbs asks), every window's
 * local memory becomes a memory region and the ranks exchange address and
 * remote key, so peers on other hosts can reach it by RDMA while load/store
 * stays inside the node-local team. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "config.h"
#include "net.h"
#include "rdma_ibverbs.h"

enum { NET_AUTO, NET_IBVERBS, NET_NONE };

symheap_result_t symheap__rdma_setup(symheap_comm_t c) {
  int mode = NET_AUTO;
  const symheap_net_ops *adaptor = NULL;
  symheap_result_t r = symheap__net_mode(&mode, &adaptor);
  if (r == SYMHEAP_SUCCESS && mode == SYMHEAP__NET_ADAPTOR)
    return symheap__net_comm_open(c, adaptor); /* agreed there */
  int want = r == SYMHEAP_SUCCESS &&
             (mode == NET_IBVERBS || (mode == NET_AUTO && c->nhosts > 1));
  if (want) {
    const char *lib = NULL, *dev = NULL;
    r = symheap__cfg_string("SYMHEAP_IBVERBS_LIBRARY", &lib);
    if (r == SYMHEAP_SUCCESS)
      r = symheap__cfg_string("SYMHEAP_IB_DEVICE", &dev);
    if (r == SYMHEAP_SUCCESS)
      r = symheap__ibv_open(lib, dev, &c->net);
  }
  int32_t have = c->net != NULL;
  char mine[200];
  snprintf(mine, sizeof mine, "%s", have || !want ? "" : symheap__error_peek());
  /* Asked for by name, RDMA must work on every rank; under auto, a rank
   * without it turns it off for all (windows stay node-local). */
  symheap_result_t local = mode == NET_IBVERBS || !want ? r : SYMHEAP_SUCCESS;
  int32_t *all = (int32_t *)(void *)c->scratch_sh;
  r = symheap__agree(c, local, 0, &have, sizeof have, all);
  int without = -1;
  for (int p = 0; p < c->nranks && r == SYMHEAP_SUCCESS && want; p++)
    if (!all[p] && without < 0)
      without = p;
  if (r != SYMHEAP_SUCCESS || without >= 0) {
    symheap__ibv_close(c->net);
    c->net = NULL;
  }
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "RDMA registration (SYMHEAP_NET)");
  if (!want)
    snprintf(c->net_why, sizeof c->net_why, "%s",
             mode == NET_NONE
                 ? "SYMHEAP_NET=none"
                 : "the comm spans one host (SYMHEAP_NET=auto "
                   "registers windows for RDMA only across hosts)");
  else if (without == c->rank)
    snprintf(c->net_why, sizeof c->net_why, "%s", mine);
  else if (without >= 0)
    snprintf(c->net_why, sizeof c->net_why,
             "rank %d has no usable RDMA device (its log says why)", without);
  if (c->net)
    SYMHEAP_INFO("RDMA: windows are registered with %s",
                 symheap__ibv_name(c->net));
  else if (want)
    SYMHEAP_INFO("RDMA registration is off: %s; windows reach only the %d "
                 "rank%s of this host",
                 c->net_why, c->local_nranks, c->local_nranks == 1 ? "" : "s");
  return SYMHEAP_SUCCESS;
}

void symheap__rdma_close(symheap_comm_t c) {
  symheap__net_comm_close(c);
  symheap__ibv_close(c->net);
  c->net = NULL;
}

/* This rank's memory region over [ptr, ptr + size). */
static symheap_result_t reg_local(symheap_comm_t c, symheap__rdma_t *x,
                                  char *ptr, size_t size,
                                  symheap__rdma_key_t *me) {
  memset(me, 0, sizeof *me);
  int fd = -1;
  uint64_t off = 0;
  if (!(c->caps.caps & SYMHEAP_CAP_HOST_ACCESS)) {
    if (!c->dev.has_dmabuf)
      return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                            "device adaptor '%s' cannot export its memory as "
                            "a dma-buf, so windows cannot be registered for "
                            "RDMA (SYMHEAP_NET=none turns RDMA off)",
                            c->dev.ops.name);
    symheap_result_t r =
        c->dev.ops.dmabuf_export(c->dev_ctx, ptr, size, &fd, &off);
    if (r != SYMHEAP_SUCCESS)
      return symheap__error_context(r, "exporting the window as a dma-buf");
  }
  symheap_result_t r =
      symheap__ibv_reg(c->net, ptr, size, fd, off, &x->mr, &x->lkey, &me->rkey);
  if (fd >= 0)
    close(fd);
  me->addr = (uint64_t)(uintptr_t)ptr;
  return r;
}

symheap_result_t symheap__rdma_register(symheap_comm_t c,
                                        struct symheap_window *w) {
  symheap__rdma_t *x = w->rdma;
  if (c->netc)
    return symheap__net_window_register(c, w);
  if (!c->net || !x)
    return SYMHEAP_SUCCESS;
  symheap__rdma_key_t me;
  x->keys = calloc((size_t)c->nranks, sizeof *x->keys);
  symheap_result_t r =
      x->keys ? reg_local(c, x, w->user_ptr, w->size, &me)
              : symheap__error(SYMHEAP_ERR_NO_MEMORY, "RDMA: no memory");
  if (x->mr)
    c->stats.descriptors_held++;
  r = symheap__agree(c, r, 0, &me, sizeof me, x->keys);
  if (r != SYMHEAP_SUCCESS) {
    symheap__rdma_deregister(c, x);
    return symheap__error_context(r, "RDMA registration");
  }
  return SYMHEAP_SUCCESS;
}

void symheap__rdma_deregister(symheap_comm_t c, symheap__rdma_t *x) {
  symheap__netreg_free(c, x->netreg);
  x->netreg = NULL;
  if (x->mr) {
    if (symheap__ibv_dereg(c->net, x->mr) != SYMHEAP_SUCCESS)
      SYMHEAP_WARN("%s", symheap_last_error());
    c->stats.descriptors_held--;
    x->mr = NULL;
  }
  free(x->keys);
  x->keys = NULL;
}

/* The region a window is reached by (every view of a registration shares
 * its mapping's), or NULL. */
static const symheap__rdma_t *region(const struct symheap_window *w) {
  return w->rdma && w->rdma->keys ? w->rdma : NULL;
}

void symheap__rdma_view(const struct symheap_window *w,
                        symheap_device_window_t *v) {
  const symheap__rdma_t *o = region(w);
  if (!o)
    return;
  v->flags |= SYMHEAP_VIEW_RDMA;
  for (int p = 0; p < w->comm->nranks && p < SYMHEAP_DEVICE_MAX_PEERS; p++) {
    v->rdma_addr[p] = o->keys[p].addr;
    v->rdma_rkey[p] = o->keys[p].rkey;
  }
}

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
  const symheap__rdma_t *o = region(w);
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
  const symheap__rdma_t *o = region(w);
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
    snprintf(i.device, sizeof i.device, "%s", symheap__ibv_name(c->net));
    i.ibv_context = symheap__ibv_context(c->net);
    i.ibv_pd = symheap__ibv_pd(c->net);
  } else {
    snprintf(i.why_not, sizeof i.why_not, "%s", c->net_why);
  }
  return symheap__copy_sized(info, &i, sizeof i, "symheap_comm_rdma_info");
}

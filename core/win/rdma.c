/* RDMA registration of windows (a net adaptor does the verbs, through
 * symheap_netops.h):
 * when a comm spans hosts (or SYMHEAP_NET=ibverbs asks), every window's
 * local memory becomes a memory region and the ranks exchange address and
 * remote key, so peers on other hosts can reach it by RDMA while load/store
 * stays inside the node-local team. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/plugin.h"
#include "comm/agree.h"
#include "comm/net.h"
#include "net_window.h"
#include "window.h"

enum { NET_AUTO, NET_IBVERBS, NET_NONE };

symheap_result_t symheap__rdma_setup(symheap_comm_t c) {
  int mode = NET_AUTO;
  /* SYMHEAP_NET: auto, ibverbs, none (registration through the ibverbs
   * adaptor, symheap_netops.h), or a net adaptor's name (comm/net.h). */
  symheap__net_table_t adaptor;
  symheap_result_t r = symheap__net_mode(&mode, &adaptor);
  if (r == SYMHEAP_SUCCESS && mode == SYMHEAP__NET_ADAPTOR)
    return symheap__net_comm_open(c, &adaptor); /* agreed there */
  int want = r == SYMHEAP_SUCCESS &&
             (mode == NET_IBVERBS || (mode == NET_AUTO && c->nhosts > 1));
  if (want) {
    c->net_ops = symheap__builtin_net("ibverbs");
    if (!c->net_ops)
      r = symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                         "no RDMA: this libsymheap was built without a net "
                         "adaptor");
    else
      r = c->net_ops->open(&c->net);
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
  if (r != SYMHEAP_SUCCESS || without >= 0)
    symheap__rdma_close(c);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "net adaptor (SYMHEAP_NET)");
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
                 c->net_ops->device_name(c->net));
  else if (want)
    SYMHEAP_INFO("RDMA registration is off: %s; windows reach only the %d "
                 "rank%s of this host",
                 c->net_why, c->local_nranks, c->local_nranks == 1 ? "" : "s");
  return SYMHEAP_SUCCESS;
}

void symheap__rdma_close(symheap_comm_t c) {
  symheap__net_comm_close(c);
  if (c->net)
    c->net_ops->close(c->net);
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
      c->net_ops->reg_mr(c->net, ptr, size, fd, off, &x->mr, &x->lkey, &me->rkey);
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
    if (c->net_ops->dereg_mr(c->net, x->mr) != SYMHEAP_SUCCESS)
      SYMHEAP_WARN("%s", symheap__error_peek());
    c->stats.descriptors_held--;
    x->mr = NULL;
  }
  free(x->keys);
  x->keys = NULL;
}

/* The region a window is reached by (every view of a registration shares
 * its mapping's), or NULL. */
const symheap__rdma_t *symheap__rdma_region(const struct symheap_window *w) {
  return w->rdma && w->rdma->keys ? w->rdma : NULL;
}

void symheap__rdma_view(const struct symheap_window *w,
                        symheap_device_window_t *v) {
  const symheap__rdma_t *o = symheap__rdma_region(w);
  if (!o)
    return;
  v->flags |= SYMHEAP_VIEW_RDMA;
  for (int p = 0; p < w->comm->nranks && p < SYMHEAP_DEVICE_MAX_PEERS; p++) {
    v->rdma_addr[p] = o->keys[p].addr;
    v->rdma_rkey[p] = o->keys[p].rkey;
  }
}

/* The one-sided host API (docs/network-onesided.md): location-transparent
 * put, get, fence and quiet.  A peer of this host is reached by memcpy
 * through the flat VA (or its IPC mapping), a peer on another host through
 * the comm's net adaptor (onesided_net.c).  Every range is checked against
 * the window before anything moves. */
/* ThreadSanitizer does not model fences; gcc refuses them under it unless
 * told to let them be (the layer's tests run under TSan). */
#if defined(__SANITIZE_THREAD__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif
#include <string.h>

#include "onesided.h"

symheap_result_t symheap__os_begin(symheap_window_t h, int peer, size_t off,
                                   size_t len, const char *fn,
                                   struct symheap_window **out) {
  struct symheap_window *w = symheap__window_get(h, fn);
  if (!w)
    return SYMHEAP_ERR_INVALID_ARG;
  symheap_comm_t c = w->comm;
  if (symheap__comm_check(c, fn) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (peer < 0 || peer >= c->nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: peer %d is out of range (the comm has %d "
                          "ranks)",
                          fn, peer, c->nranks);
  if (off > w->size || len > w->size - off)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: [%zu, +%zu) lies outside the window's %zu "
                          "bytes; nothing was sent",
                          fn, off, len, w->size);
  *out = w;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__os_host_access(symheap_comm_t c, const char *fn) {
  if (c->caps.caps & SYMHEAP_CAP_HOST_ACCESS)
    return SYMHEAP_SUCCESS;
  return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                        "%s: device adaptor '%s' gives the CPU no access to "
                        "window memory, so this host's ranks cannot be "
                        "reached by the CPU (use the device API)",
                        fn, c->dev.ops.name);
}

symheap_result_t symheap__os_need_net(symheap_comm_t c, int peer,
                                      const char *fn) {
  if (c->netc)
    return SYMHEAP_SUCCESS;
  return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                        "%s: rank %d is on another host and this comm has no "
                        "net adaptor: set SYMHEAP_NET to a net adaptor's name "
                        "(e.g. SYMHEAP_NET=ofi) on every rank%s%s",
                        fn, peer, c->net_why[0] ? "; " : "", c->net_why);
}

/* This host's peer: its copy of the window at off, for the CPU.  This
 * rank's own copy is reached through the caller's own address: peer[rank]
 * can be a second mapping of the same pages (the flat VA), and memmove sees
 * no overlap between two addresses of one byte, so a put to self from the
 * window itself copied in the wrong direction (ASan's memmove, round 6). */
char *symheap__os_local(struct symheap_window *w, int peer, size_t off) {
  if (peer == w->comm->rank && w->user_ptr)
    return w->user_ptr + off;
  return (char *)w->peer[peer] + off;
}

static symheap_result_t rma(symheap_window_t h, int peer, size_t off,
                            void *buf, size_t len, int is_put, unsigned flags,
                            const char *fn) {
  struct symheap_window *w;
  symheap_result_t r = symheap__os_begin(h, peer, off, len, fn, &w);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (len && !buf)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          is_put ? "src" : "dst");
  symheap_comm_t c = w->comm;
  if (!len)
    return SYMHEAP_SUCCESS;
  if (c->reach[peer]) {
    if ((r = symheap__os_host_access(c, fn)) != SYMHEAP_SUCCESS)
      return r;
    char *at = symheap__os_local(w, peer, off);
    /* memmove: a buffer in the window itself may overlap the range (a put
     * to this rank from its own copy), where memcpy is undefined. */
    memmove(is_put ? at : buf, is_put ? buf : at, len);
    return SYMHEAP_SUCCESS;
  }
  if ((r = symheap__os_need_net(c, peer, fn)) != SYMHEAP_SUCCESS)
    return r;
  r = symheap__os_net_rma(w, peer, off, buf, len, is_put, flags, fn);
  /* A blocking get returns with dst filled: the adaptor's completion. */
  if (r == SYMHEAP_SUCCESS && !is_put && !(flags & SYMHEAP_NET_NBI))
    r = symheap__os_net_quiet(c, fn);
  return r;
}

SYMHEAP__EXPORT symheap_result_t symheap_put(symheap_window_t win, int peer,
                                             size_t offset, const void *src,
                                             size_t len) {
  return rma(win, peer, offset, (void *)src, len, 1, 0, "symheap_put");
}

SYMHEAP__EXPORT symheap_result_t symheap_put_nbi(symheap_window_t win,
                                                 int peer, size_t offset,
                                                 const void *src, size_t len) {
  return rma(win, peer, offset, (void *)src, len, 1, SYMHEAP_NET_NBI,
             "symheap_put_nbi");
}

SYMHEAP__EXPORT symheap_result_t symheap_get(symheap_window_t win, int peer,
                                             size_t offset, void *dst,
                                             size_t len) {
  return rma(win, peer, offset, dst, len, 0, 0, "symheap_get");
}

SYMHEAP__EXPORT symheap_result_t symheap_get_nbi(symheap_window_t win,
                                                 int peer, size_t offset,
                                                 void *dst, size_t len) {
  return rma(win, peer, offset, dst, len, 0, SYMHEAP_NET_NBI,
             "symheap_get_nbi");
}

/* fence and quiet: this host's stores are ordered and visible once the
 * CPU's fence is done; the adaptor's for the rest. */
SYMHEAP__EXPORT symheap_result_t symheap_fence(symheap_comm_t c) {
  const char *fn = "symheap_fence";
  if (symheap__comm_check(c, fn) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return c->netc ? symheap__os_net_fence(c, fn) : SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_quiet(symheap_comm_t c) {
  const char *fn = "symheap_quiet";
  if (symheap__comm_check(c, fn) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return c->netc ? symheap__os_net_quiet(c, fn) : SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_peer_reach(symheap_window_t h,
                                                           int peer,
                                                           int *reach) {
  const char *fn = "symheap_window_peer_reach";
  struct symheap_window *w;
  symheap_result_t r = symheap__os_begin(h, peer, 0, 0, fn, &w);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (!reach)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: reach is NULL", fn);
  if (w->comm->reach[peer]) {
    *reach = SYMHEAP_REACH_LOAD_STORE;
    return SYMHEAP_SUCCESS;
  }
  r = symheap__os_need_net(w->comm, peer, fn);
  if (r == SYMHEAP_SUCCESS)
    *reach = SYMHEAP_REACH_NET;
  return r;
}

/* Vendor window paths (SYMHEAP_WINDOW_PATH=nccl|ccl): someone else maps the
 * window and hands back a flat range; the core keeps the handle, agreement,
 * views and accounting of its own path.  The NCCL provider is in
 * window_nccl.c; "ccl" is the window_register of the comm's own ccl
 * adaptor (symheap_ccl_ops). */
#include <string.h>

#include "comm.h"
#include "config.h"
#include "window_nccl.h"

enum { PATH_SYMHEAP, PATH_NCCL, PATH_CCL };

symheap_result_t symheap__winpath_setup(symheap_comm_t c) {
  int path = PATH_SYMHEAP;
  symheap_result_t r = symheap__cfg_choice("SYMHEAP_WINDOW_PATH", &path);
  if (r != SYMHEAP_SUCCESS || path == PATH_SYMHEAP)
    return symheap__agree(c, r, 0, NULL, 0, NULL);
  if (path == PATH_NCCL) /* collective: it makes an NCCL communicator */
    return symheap__nccl_open(c, &c->winpath);
  if (!c->ccl.window_register)
    r = symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                       "SYMHEAP_WINDOW_PATH=ccl: ccl adaptor '%s' has no "
                       "window path (window_register)",
                       c->ccl.name);
  else if (c->local_nranks != c->nranks)
    r = symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                       "SYMHEAP_WINDOW_PATH=ccl: the comm spans %d hosts; a "
                       "vendor window is one flat range over every rank",
                       c->nhosts);
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  if (r != SYMHEAP_SUCCESS)
    return r;
  c->winpath.name = c->ccl.name;
  c->winpath.reg = c->ccl.window_register;
  c->winpath.dereg = c->ccl.window_deregister;
  c->winpath.ctx = c->ccl_ctx;
  c->winpath.close = NULL; /* the context is the ccl's */
  return SYMHEAP_SUCCESS;
}

void symheap__winpath_close(symheap_comm_t c) {
  if (c->winpath.close)
    c->winpath.close(c->winpath.ctx);
  memset(&c->winpath, 0, sizeof c->winpath);
}

symheap_result_t symheap__winpath_register(symheap_comm_t c,
                                           struct symheap_window *w,
                                           void **handle) {
  symheap_vendor_window_t out;
  memset(&out, 0, sizeof out);
  symheap_result_t r =
      c->winpath.reg(c->winpath.ctx, w->user_ptr, w->size, &out);
  int made = r == SYMHEAP_SUCCESS;
  if (r != SYMHEAP_SUCCESS)
    r = symheap__error_context(r, "window path '%s'", c->winpath.name);
  else if (!out.flat_base || out.stride < w->size)
    r = symheap__error(SYMHEAP_ERR_PLUGIN,
                       "window path '%s' returned flat base %p and stride "
                       "%llu for a window of %zu bytes",
                       c->winpath.name, out.flat_base,
                       (unsigned long long)out.stride, w->size);
  int differ;
  uint64_t s0, sp;
  r = symheap__agree_equal(c, r, out.stride, &differ, &s0, &sp);
  if (r == SYMHEAP_SUCCESS && differ >= 0)
    r = symheap__error(SYMHEAP_ERR_MISMATCH,
                       "window path '%s': ranks got different strides "
                       "(rank 0 %llu, rank %d %llu)",
                       c->winpath.name, (unsigned long long)s0, differ,
                       (unsigned long long)sp);
  if (r != SYMHEAP_SUCCESS) {
    if (made)
      SYMHEAP__KEEP_ERROR((void)c->winpath.dereg(c->winpath.ctx, out.handle));
    return r;
  }
  *handle = out.handle;
  w->reserve = out.flat_base;
  w->stride = (size_t)out.stride;
  w->head = 0;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__winpath_deregister(symheap_comm_t c, void *handle) {
  symheap_result_t r = c->winpath.dereg(c->winpath.ctx, handle);
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "window path '%s'", c->winpath.name);
}

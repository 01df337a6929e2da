/* Vendor window paths (SYMHEAP_WINDOW_PATH=nccl|ccl): someone else maps the
 * window and hands back a flat range; the core keeps the handle, agreement,
 * views and accounting of its own path.  "ccl" is the window_register of
 * the comm's own ccl adaptor (symheap_ccl_ops); another name is a built-in
 * ccl adaptor's path (path_open), over the comm's ranks. */
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/plugin.h"
#include "comm/agree.h"
#include "window.h"

enum { PATH_SYMHEAP, PATH_NCCL, PATH_CCL };

/* What a path's path_open agrees through: the comm, and this rank's own
 * failure so far, which rides in the first agreement. */
typedef struct {
  symheap_comm_t c;
  symheap_result_t pre;
} path_arg_t;

static symheap_result_t path_agree(void *arg, symheap_result_t local,
                                   const void *payload, size_t len,
                                   void *all) {
  path_arg_t *a = arg;
  if (local == SYMHEAP_SUCCESS && a->pre != SYMHEAP_SUCCESS)
    local = symheap__error(a->pre, "window path: no memory");
  a->pre = SYMHEAP_SUCCESS;
  return symheap__agree(a->c, local, 0, payload, len, all);
}

static void path_fill(symheap__winpath_t *p, const char *name,
                      const symheap_ccl_ops *ops, void *ctx,
                      void (*close)(void *ctx)) {
  p->name = name;
  p->reg = ops->window_register;
  p->dereg = ops->window_deregister;
  p->close = close;
  p->ctx = ctx;
}

/* Collective: a built-in ccl adaptor's window path (`pre`: this rank's
 * failure so far).  A comm made on that very ccl (symheap_comm_init_nccl)
 * registers through it. */
static symheap_result_t path_builtin(symheap_comm_t c, const char *name,
                                     symheap__winpath_t *p,
                                     symheap_result_t pre) {
  const symheap_ccl_ops *ops = symheap__builtin_ccl(name);
  if (ops && ops->window_register &&
      c->ccl.window_register == ops->window_register) {
    symheap_result_t r = symheap__agree(c, pre, 0, NULL, 0, NULL);
    if (r == SYMHEAP_SUCCESS)
      path_fill(p, name, &c->ccl, c->ccl_ctx, NULL);
    return r;
  }
  if (!ops || !SYMHEAP_HAS_MEMBER(ops, symheap_ccl_ops, path_close) ||
      !ops->path_open || !ops->path_close) {
    symheap_result_t r =
        pre != SYMHEAP_SUCCESS
            ? pre
            : symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                             "SYMHEAP_WINDOW_PATH=%s: this libsymheap has no "
                             "such window path",
                             name);
    return symheap__agree(c, r, 0, NULL, 0, NULL);
  }
  path_arg_t arg = {c, pre};
  symheap_path_env_t env = {
      sizeof env, c->rank,        c->nranks, c->local_nranks,
      c->nhosts,  c->dev.ops.name, path_agree, &arg};
  void *ctx = NULL;
  symheap_result_t r = ops->path_open(&symheap__host_services, &env, &ctx);
  if (r == SYMHEAP_SUCCESS) /* collective: every rank agreed */
    path_fill(p, name, ops, ctx, ops->path_close);
  return r;
}

/* Collective: the window_register of the comm's own ccl adaptor. */
static symheap_result_t path_ccl(symheap_comm_t c, symheap__winpath_t *p,
                                 symheap_result_t pre) {
  symheap_result_t r = pre;
  if (r != SYMHEAP_SUCCESS)
    ;
  else if (!c->ccl.window_register)
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
  if (r == SYMHEAP_SUCCESS) /* the context is the ccl's: nothing to close */
    path_fill(p, c->ccl.name, &c->ccl, c->ccl_ctx, NULL);
  return r;
}

symheap_result_t symheap__winpath_setup(symheap_comm_t c) {
  int path = PATH_SYMHEAP;
  symheap_result_t r = symheap__cfg_choice("SYMHEAP_WINDOW_PATH", &path);
  if (r != SYMHEAP_SUCCESS || path == PATH_SYMHEAP)
    return symheap__agree(c, r, 0, NULL, 0, NULL);
  symheap__winpath_t *p = calloc(1, sizeof *p);
  symheap_result_t pre =
      p ? SYMHEAP_SUCCESS
        : symheap__error(SYMHEAP_ERR_NO_MEMORY, "window path: no memory");
  /* nccl: collective, it makes a communicator of its own */
  r = path == PATH_NCCL ? path_builtin(c, "nccl", p, pre)
                        : path_ccl(c, p, pre);
  if (r != SYMHEAP_SUCCESS) {
    free(p);
    return r;
  }
  c->winpath = p;
  return SYMHEAP_SUCCESS;
}

void symheap__winpath_close(symheap_comm_t c) {
  if (c->winpath && c->winpath->close)
    c->winpath->close(c->winpath->ctx);
  free(c->winpath);
  c->winpath = NULL;
}

symheap_result_t symheap__winpath_register(symheap_comm_t c,
                                           struct symheap_window *w,
                                           void **handle) {
  symheap_vendor_window_t out;
  memset(&out, 0, sizeof out);
  symheap_result_t r =
      c->winpath->reg(c->winpath->ctx, w->user_ptr, w->size, &out);
  int made = r == SYMHEAP_SUCCESS;
  if (r != SYMHEAP_SUCCESS)
    r = symheap__error_context(r, "window path '%s'", c->winpath->name);
  else if (!out.flat_base || out.stride < w->size)
    r = symheap__error(SYMHEAP_ERR_PLUGIN,
                       "window path '%s' returned flat base %p and stride "
                       "%llu for a window of %zu bytes",
                       c->winpath->name, out.flat_base,
                       (unsigned long long)out.stride, w->size);
  int differ;
  uint64_t s0, sp;
  r = symheap__agree_equal(c, r, out.stride, &differ, &s0, &sp);
  if (r == SYMHEAP_SUCCESS && differ >= 0)
    r = symheap__error(SYMHEAP_ERR_MISMATCH,
                       "window path '%s': ranks got different strides "
                       "(rank 0 %llu, rank %d %llu)",
                       c->winpath->name, (unsigned long long)s0, differ,
                       (unsigned long long)sp);
  if (r != SYMHEAP_SUCCESS) {
    if (made)
      SYMHEAP__KEEP_ERROR((void)c->winpath->dereg(c->winpath->ctx, out.handle));
    return r;
  }
  *handle = out.handle;
  w->reserve = out.flat_base;
  w->stride = (size_t)out.stride;
  w->head = 0;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__winpath_deregister(symheap_comm_t c, void *handle) {
  symheap_result_t r = c->winpath->dereg(c->winpath->ctx, handle);
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "window path '%s'", c->winpath->name);
}

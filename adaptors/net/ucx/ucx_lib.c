/* Loading UCP at run time, listing the transports UCX offers here, and
 * turning UCX's statuses into symheap's errors. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ucx.h"

ucx_api_t ucx_api;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_why[512];
static int loaded;

/* Each function the adaptor calls, by its exported name. */
#define SYM(field, name) {(void **)&ucx_api.field, name}
static const struct {
  void **slot;
  const char *name;
} syms[] = {
    SYM(init_version, "ucp_init_version"),
    SYM(cleanup, "ucp_cleanup"),
    SYM(context_print_info, "ucp_context_print_info"),
    SYM(get_version, "ucp_get_version"),
    SYM(worker_create, "ucp_worker_create"),
    SYM(worker_destroy, "ucp_worker_destroy"),
    SYM(worker_query, "ucp_worker_query"),
    SYM(worker_release_address, "ucp_worker_release_address"),
    SYM(worker_progress, "ucp_worker_progress"),
    SYM(worker_get_efd, "ucp_worker_get_efd"),
    SYM(worker_arm, "ucp_worker_arm"),
    SYM(worker_fence, "ucp_worker_fence"),
    SYM(worker_flush_nbx, "ucp_worker_flush_nbx"),
    SYM(ep_create, "ucp_ep_create"),
    SYM(ep_close_nbx, "ucp_ep_close_nbx"),
    SYM(mem_map, "ucp_mem_map"),
    SYM(mem_unmap, "ucp_mem_unmap"),
    SYM(rkey_pack, "ucp_rkey_pack"),
    SYM(rkey_buffer_release, "ucp_rkey_buffer_release"),
    SYM(ep_rkey_unpack, "ucp_ep_rkey_unpack"),
    SYM(rkey_destroy, "ucp_rkey_destroy"),
    SYM(put_nbx, "ucp_put_nbx"),
    SYM(get_nbx, "ucp_get_nbx"),
    SYM(atomic_op_nbx, "ucp_atomic_op_nbx"),
    SYM(request_check_status, "ucp_request_check_status"),
    SYM(request_free, "ucp_request_free"),
    /* libucs, which libucp links: found through libucp's handle. */
    SYM(status_string, "ucs_status_string"),
};

static void load(void) {
  const char *lib = NULL;
  int named = ucx_svc->param_get_string("SYMHEAP_UCX_LIBRARY", &lib) ==
                  SYMHEAP_SUCCESS &&
              lib;
  if (!named)
    lib = UCX_LIBRARY_DEFAULT;
  /* UCX stays loaded: it starts threads and keeps state. */
  void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    /* A library the user named leads with that name: "not installed"
     * would mislead when the package is there and the path is wrong. */
    if (named)
      snprintf(load_why, sizeof load_why,
               "SYMHEAP_UCX_LIBRARY=%s cannot be loaded: %s (UCX itself is "
               "Debian package libucx0)",
               lib, dlerror());
    else
      snprintf(load_why, sizeof load_why,
               "UCX is not installed (Debian package libucx0): dlopen(%s): %s",
               lib, dlerror());
    return;
  }
  for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
    void *f = dlsym(dl, syms[i].name);
    if (!f) {
      snprintf(load_why, sizeof load_why,
               "%s lacks %s: not UCP 1.13 or later (Debian package libucx0)",
               lib, syms[i].name);
      dlclose(dl);
      return;
    }
    *syms[i].slot = f;
  }
  unsigned v[3] = {0, 0, 0};
  ucx_api.get_version(&v[0], &v[1], &v[2]);
  if (v[0] != UCP_API_MAJOR || v[1] < UCP_API_MINOR) {
    snprintf(load_why, sizeof load_why,
             "%s is UCX %u.%u.%u: the ucx adaptor needs UCP %d.%d or a later "
             "1.x (Debian package libucx0)",
             lib, v[0], v[1], v[2], UCP_API_MAJOR, UCP_API_MINOR);
    return; /* stays loaded: it may have started threads */
  }
  loaded = 1;
}

int ucx_load(char *why, size_t len) {
  pthread_once(&load_once, load);
  if (!loaded && why && len)
    snprintf(why, len, "%s", load_why);
  return loaded;
}

symheap_result_t ucx_result(ucs_status_t st) {
  switch (st) {
  case UCS_ERR_NO_MEMORY:
    return SYMHEAP_ERR_NO_MEMORY;
  case UCS_ERR_TIMED_OUT:
    return SYMHEAP_ERR_TIMEOUT;
  case UCS_ERR_UNSUPPORTED:
  case UCS_ERR_NO_DEVICE:
    return SYMHEAP_ERR_UNSUPPORTED;
  case UCS_ERR_INVALID_PARAM:
    return SYMHEAP_ERR_INVALID_ARG;
  default:
    /* A peer that is gone, unreachable or refused the access. */
    return st <= UCS_ERR_UNREACHABLE ? SYMHEAP_ERR_REMOTE : SYMHEAP_ERR_DEVICE;
  }
}

symheap_result_t ucx_fail(symheap_result_t r, ucs_status_t st,
                          const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ucx_svc->error(r, "%s: %s (%d)", what,
                        ucx_api.status_string ? ucx_api.status_string(st)
                                              : "?",
                        (int)st);
}

/* "#      resource 1  :  md 1  dev 1  flags -- tcp/eth0" lines of
 * ucp_context_print_info: the transport/device names, once each. */
static void parse_resources(const char *info, char *buf, size_t len) {
  size_t o = 0;
  for (const char *p = info; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
    const char *eol = strchr(p, '\n');
    const char *res = strstr(p, " resource "), *dash = strstr(p, "-- ");
    if (!res || !dash || (eol && (res > eol || dash > eol)))
      continue;
    const char *name = dash + 3;
    size_t n = strcspn(name, " \n");
    char line[96];
    snprintf(line, sizeof line, "%.*s\n", (int)n, name);
    if (strstr(buf, line) || o + strlen(line) >= len)
      continue;
    memcpy(buf + o, line, strlen(line) + 1);
    o += strlen(line);
  }
}

symheap_result_t ucx_providers(const symheap_host_services_t *svc, char *buf,
                               size_t len) {
  if (!len)
    return svc->error(SYMHEAP_ERR_INVALID_ARG, "providers: no room");
  buf[0] = '\0';
  char why[512];
  if (!ucx_load(why, sizeof why))
    return svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", why);
  ucp_params_t p;
  memset(&p, 0, sizeof p);
  p.field_mask = UCP_PARAM_FIELD_FEATURES;
  p.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
  ucp_context_h ctx;
  ucs_status_t st =
      ucx_api.init_version(UCP_API_MAJOR, UCP_API_MINOR, &p, NULL, &ctx);
  if (st != UCS_OK)
    return ucx_fail(SYMHEAP_ERR_DEVICE, st, "ucp_init (UCX_TLS=%s)",
                    getenv("UCX_TLS") ? getenv("UCX_TLS") : "(all)");
  char *info = NULL;
  size_t info_len = 0;
  FILE *f = open_memstream(&info, &info_len);
  if (f) {
    ucx_api.context_print_info(ctx, f);
    fclose(f);
  }
  ucx_api.cleanup(ctx);
  if (!info)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "providers: no memory");
  parse_resources(info, buf, len);
  free(info);
  return SYMHEAP_SUCCESS;
}

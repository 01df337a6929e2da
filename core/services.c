/* What the core lends adaptors: its logger, error recorder and environment. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static void svc_log(int level, const char *fmt, ...) {
  if (level <= SYMHEAP_LOG_NONE || level > SYMHEAP_LOG_TRACE ||
      !symheap__log_enabled(level))
    return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  symheap__log(level, "%s", buf);
}

static symheap_result_t svc_error(symheap_result_t r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  symheap__verror(r, fmt, ap);
  va_end(ap);
  return r;
}

static const char *svc_getenv(const char *name) { return getenv(name); }

const symheap_host_services_t symheap__host_services = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_host_services_t),
    .log = svc_log,
    .error = svc_error,
    .getenv = svc_getenv,
};

SYMHEAP__EXPORT const symheap_host_services_t *symheap_host_services(void) {
  return &symheap__host_services;
}

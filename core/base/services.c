/* What the core lends adaptors: its logger, errors, the variables adaptors
 * declare, and a clock.  In-tree adaptors use nothing else of the core. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
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

static symheap_result_t svc_error_context(symheap_result_t r, const char *fmt,
                                          ...) {
  char prefix[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  return symheap__error_context(r, "%s", prefix);
}

static const char *svc_getenv(const char *name) { return getenv(name); }

static int svc_param_is_set(const char *name) {
  return symheap__cfg_raw(name) != NULL;
}

/* wait_progress: the waits' idle turn, which a higher floor (boot/idle.c)
 * hands down when a net adaptor sets the idle hook; none: nothing to do. */
static int (*g_wait_progress)(void);

void symheap__services_set_wait_progress(int (*fn)(void)) {
  __atomic_store_n(&g_wait_progress, fn, __ATOMIC_RELEASE);
}

static int svc_wait_progress(void) {
  int (*fn)(void) = __atomic_load_n(&g_wait_progress, __ATOMIC_ACQUIRE);
  return fn ? fn() : 0;
}

const symheap_host_services_t symheap__host_services = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_host_services_t),
    .log = svc_log,
    .error = svc_error,
    .getenv = svc_getenv,
    .error_message = symheap__error_peek,
    .error_context = svc_error_context,
    .param_define = symheap__cfg_declare,
    .param_get_string = symheap__cfg_string,
    .param_get_int = symheap__cfg_int,
    .param_get_bool = symheap__cfg_bool,
    .param_get_choice = symheap__cfg_choice,
    .param_is_set = svc_param_is_set,
    .now_ns = symheap__now_ns,
    .wait_progress = svc_wait_progress,
};

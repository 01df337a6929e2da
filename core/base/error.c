/* The per-thread last-error message (api/errors.c reads it out). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char tls_msg[SYMHEAP_ERROR_MAX];

symheap_result_t symheap__verror(symheap_result_t r, const char *fmt,
                                 va_list ap) {
  vsnprintf(tls_msg, sizeof tls_msg, fmt, ap);
  return r;
}

symheap_result_t symheap__error(symheap_result_t r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  symheap__verror(r, fmt, ap);
  va_end(ap);
  return r;
}

symheap_result_t symheap__error_context(symheap_result_t r, const char *fmt,
                                        ...) {
  char prefix[512], old[sizeof tls_msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, tls_msg, sizeof old);
  snprintf(tls_msg, sizeof tls_msg, "%s: %s", prefix, old);
  return r;
}

void symheap__error_clear(void) { tls_msg[0] = '\0'; }
const char *symheap__error_peek(void) { return tls_msg; }

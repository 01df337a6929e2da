/* Private to the core; never installed.  Adaptors and plugins never include
 * it: what they need of the core is the host services table. */
#ifndef SYMHEAP_INTERNAL_H
#define SYMHEAP_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "symheap.h"
#include "symheap_adaptor.h"

#define SYMHEAP__EXPORT __attribute__((visibility("default")))
#define SYMHEAP__PRINTF(a, b) __attribute__((format(printf, a, b)))

/* error.c: the thread's last error. */
symheap_result_t symheap__error(symheap_result_t r, const char *fmt, ...)
    SYMHEAP__PRINTF(2, 3);
symheap_result_t symheap__verror(symheap_result_t r, const char *fmt,
                                 va_list ap);
/* Prefix the current message ("while X: <old>"), keeping the code. */
symheap_result_t symheap__error_context(symheap_result_t r, const char *fmt,
                                        ...) SYMHEAP__PRINTF(2, 3);
void symheap__error_clear(void);
const char *symheap__error_peek(void);

/* Run cleanup that may overwrite the thread's error message, then put the
 * message back: the caller reports the original failure, not the cleanup's.
 * The adaptors' SYMHEAP_KEEP_ERROR, written over the error itself. */
#define SYMHEAP__KEEP_ERROR(stmt)                                              \
  do {                                                                         \
    char keep_error_[SYMHEAP_ERROR_MAX];                                       \
    snprintf(keep_error_, sizeof keep_error_, "%s", symheap__error_peek());    \
    stmt;                                                                      \
    (void)symheap__error(SYMHEAP_SUCCESS, "%s", keep_error_);                  \
  } while (0)

/* log.c */
void symheap__log(int level, const char *fmt, ...) SYMHEAP__PRINTF(2, 3);
int symheap__log_enabled(int level);
void symheap__log_set_rank(int rank);          /* per thread; -1 for none */
symheap_result_t symheap__log_configure(void); /* re-reads the variables */
#define SYMHEAP_WARN(...) symheap__log(SYMHEAP_LOG_WARN, __VA_ARGS__)
#define SYMHEAP_INFO(...) symheap__log(SYMHEAP_LOG_INFO, __VA_ARGS__)
#define SYMHEAP_TRACE(...)                                                     \
  do {                                                                         \
    if (symheap__log_enabled(SYMHEAP_LOG_TRACE))                               \
      symheap__log(SYMHEAP_LOG_TRACE, __VA_ARGS__);                            \
  } while (0)

/* time */
int64_t symheap__now_ms(void);
uint64_t symheap__now_ns(void);

/* host services handed to adaptors */
extern const symheap_host_services_t symheap__host_services;
/* What the services' wait_progress runs (set by boot/idle.c with the
 * waits' idle hook; a lower floor is handed it, never calls up). */
void symheap__services_set_wait_progress(int (*fn)(void));

static inline size_t symheap__round_up(size_t v, size_t g) {
  return (v + g - 1) / g * g;
}

#endif

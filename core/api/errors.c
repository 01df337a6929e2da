/* Result strings, the last error, the version: the public face of
 * base/error.c. */
#include "base/internal.h"

SYMHEAP__EXPORT const char *symheap_strerror(symheap_result_t r) {
  switch (r) {
#define SYMHEAP_X_CASE(name, text)                                             \
  case name:                                                                   \
    return text;
    SYMHEAP_RESULT_MAP(SYMHEAP_X_CASE)
#undef SYMHEAP_X_CASE
  default:
    return "unknown result code";
  }
}

SYMHEAP__EXPORT const char *symheap_last_error(void) {
  return symheap__error_peek();
}

SYMHEAP__EXPORT symheap_result_t symheap_get_version(int *major, int *minor,
                                                     int *patch) {
  if (!major || !minor || !patch)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_get_version: NULL output pointer");
  *major = SYMHEAP_VERSION_MAJOR;
  *minor = SYMHEAP_VERSION_MINOR;
  *patch = SYMHEAP_VERSION_PATCH;
  return SYMHEAP_SUCCESS;
}

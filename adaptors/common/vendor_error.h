/* A vendor's failure as a symheap error, written one way for every adaptor:
 * "<call> failed: <name> (<code>)[: <text>]", with the symheap code the
 * vendor code maps to. */
#ifndef SYMHEAP_VENDOR_ERROR_H
#define SYMHEAP_VENDOR_ERROR_H

#include <stddef.h>

#include "symheap_adaptor.h"

/* Vendor codes that are not SYMHEAP_ERR_DEVICE (out of memory, say). */
typedef struct {
  long code;
  symheap_result_t r;
} symheap_vendor_code_t;

/* Record the failure of `call` with the vendor's `code`, its name and text
 * (either may be NULL: "?" and nothing); returns the mapped result. */
symheap_result_t symheap_vendor_fail(const symheap_host_services_t *svc,
                                     const char *call, long code,
                                     const char *name, const char *text,
                                     const symheap_vendor_code_t *map,
                                     size_t nmap);

#endif

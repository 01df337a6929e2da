/* Vendor failures as symheap errors (vendor_error.h). */
#include "vendor_error.h"

symheap_result_t symheap_vendor_fail(const symheap_host_services_t *svc,
                                     const char *call, long code,
                                     const char *name, const char *text,
                                     const symheap_vendor_code_t *map,
                                     size_t nmap) {
  symheap_result_t r = SYMHEAP_ERR_DEVICE;
  for (size_t i = 0; i < nmap; i++)
    if (map[i].code == code)
      r = map[i].r;
  return svc->error(r, "%s failed: %s (%ld)%s%s", call, name ? name : "?",
                    code, text ? ": " : "", text ? text : "");
}

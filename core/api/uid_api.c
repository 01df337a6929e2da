/* symheap_get_unique_id: what every rank of a job needs to find the others
 * (boot/uid.c makes it). */
#include "boot/uid.h"

SYMHEAP__EXPORT symheap_result_t
symheap_get_unique_id(symheap_unique_id_t *id) {
  if (!id)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_get_unique_id: id is NULL");
  return symheap__uid_make(id);
}

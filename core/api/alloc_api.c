/* symheap_mem_alloc and symheap_mem_free: the public checks around the
 * memory floor's allocations (mem/alloc.c). */
#include <stdint.h>

#include "mem/mem.h"

SYMHEAP__EXPORT symheap_result_t symheap_mem_alloc(symheap_comm_t c,
                                                   size_t size, void **ptr) {
  /* Local: a comm whose collectives failed can still allocate. */
  if (symheap__comm_check(c, "symheap_mem_alloc") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  symheap__log_set_rank(c->rank);
  symheap_result_t r;
  if (!ptr || size == 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "symheap_mem_alloc: %s",
                          !ptr ? "ptr is NULL" : "size is zero");
  size_t gran = c->caps.granularity;
  if (size > SIZE_MAX - gran)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_mem_alloc: size %zu is too large", size);
  if ((r = symheap__capture_check(c, "symheap_mem_alloc")) != SYMHEAP_SUCCESS)
    return r;
  return symheap__mem_alloc(c, size, ptr);
}

SYMHEAP__EXPORT symheap_result_t symheap_mem_free(symheap_comm_t c, void *ptr) {
  if (symheap__comm_check(c, "symheap_mem_free") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  symheap__log_set_rank(c->rank);
  symheap__comm_drain(c);
  symheap__alloc_t *a = ptr ? symheap__alloc_find(c, ptr) : NULL;
  if (!a || a->ptr != ptr)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_mem_free: %p is not an allocation of this "
                          "comm (already freed, or not from symheap_mem_alloc)",
                          ptr);
  symheap_result_t rc = symheap__capture_check(c, "symheap_mem_free");
  if (rc != SYMHEAP_SUCCESS)
    return rc;
  symheap__map_drop_alloc(c, a); /* kept mappings are not registrations */
  if (a->windows)
    return symheap__error(
        SYMHEAP_ERR_INVALID_ARG,
        "symheap_mem_free: %p is still mapped by %d "
        "registration(s) or kept mapping(s); deregister first",
        ptr, a->windows);
  symheap_result_t r = symheap__alloc_free(c, a);
  return r == SYMHEAP_SUCCESS ? r
                              : symheap__error_context(r, "symheap_mem_free");
}

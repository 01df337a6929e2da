/* Local allocations that can later be registered: physical memory from the
 * device adaptor, mapped into a reservation of its own. */
#include <stdlib.h>
#include <unistd.h>

#include "mem.h"

symheap__alloc_t *symheap__alloc_find(symheap_comm_t c, const void *ptr) {
  for (symheap__alloc_t *a = c->allocs; a; a = a->next)
    if ((const char *)ptr >= a->ptr && (const char *)ptr < a->ptr + a->size)
      return a;
  return NULL;
}

symheap_result_t symheap__mem_alloc(symheap_comm_t c, size_t size,
                                    void **ptr) {
  size_t gran = c->caps.granularity;
  symheap_result_t r;
  symheap__alloc_t *a = calloc(1, sizeof *a);
  if (!a)
    return symheap__error(SYMHEAP_ERR_NO_MEMORY,
                          "symheap_mem_alloc: no memory");
  a->size = symheap__round_up(size, gran);
  a->export_fd = -1;
  const symheap_device_ops *ops = &c->dev.ops;
  void *va = NULL;
  r = ops->mem_create(c->dev_ctx, a->size, &a->handle);
  if (r != SYMHEAP_SUCCESS)
    goto fail;
  r = symheap__va_reserve(ops, c->dev_ctx, a->size, gran, &va);
  if (r != SYMHEAP_SUCCESS)
    goto fail_release;
  r = ops->map(c->dev_ctx, va, a->size, a->handle, 0);
  if (r != SYMHEAP_SUCCESS)
    goto fail_free_va;
  r = ops->set_access(c->dev_ctx, va, a->size);
  if (r != SYMHEAP_SUCCESS)
    goto fail_unmap;
  a->ptr = va;
  a->id = ++c->next_alloc_id;
  a->next = c->allocs;
  c->allocs = a;
  c->stats.allocations_live++;
  c->stats.bytes_allocated += a->size;
  c->stats.va_reserved += a->size;
  c->stats.bytes_mapped += a->size;
  c->mapped_from[c->rank] += a->size;
  c->stats.descriptors_held++;
  *ptr = va;
  SYMHEAP_TRACE("mem_alloc %zu bytes at %p", a->size, va);
  return SYMHEAP_SUCCESS;

fail_unmap:
  (void)ops->unmap(c->dev_ctx, va, a->size);
fail_free_va:
  (void)ops->va_free(c->dev_ctx, va, a->size);
fail_release:
  (void)ops->mem_release(c->dev_ctx, a->handle);
fail:
  free(a);
  return symheap__error_context(r, "symheap_mem_alloc(%zu)", size);
}

symheap_result_t symheap__alloc_free(symheap_comm_t c, symheap__alloc_t *a) {
  const symheap_device_ops *ops = &c->dev.ops;
  if (a->exported && c->broken == SYMHEAP_SUCCESS)
    symheap__fdx_send_freed(&c->fdx, a->id);
  if (a->export_fd >= 0) {
    close(a->export_fd);
    c->stats.descriptors_held--;
  }
  for (symheap__alloc_t **pp = &c->allocs; *pp; pp = &(*pp)->next)
    if (*pp == a) {
      *pp = a->next;
      break;
    }
  /* Undo everything even if one step fails; report the first failure. */
  symheap_result_t r = ops->unmap(c->dev_ctx, a->ptr, a->size);
  symheap_result_t r2 = ops->va_free(c->dev_ctx, a->ptr, a->size);
  symheap_result_t r3 = ops->mem_release(c->dev_ctx, a->handle);
  c->stats.allocations_live--;
  c->stats.bytes_allocated -= a->size;
  c->stats.va_reserved -= a->size;
  c->stats.bytes_mapped -= a->size;
  c->mapped_from[c->rank] -= a->size;
  c->stats.descriptors_held--;
  free(a);
  return r != SYMHEAP_SUCCESS ? r : r2 != SYMHEAP_SUCCESS ? r2 : r3;
}

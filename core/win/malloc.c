/* A window of an allocation of its own: symheap_malloc without the heap
 * (and the comm's pad), the allocation and its registration, undone
 * together. */
#include <stdint.h>

#include "window.h"

/* symheap_malloc's checks, carried into the first agreement. */
symheap_result_t symheap__malloc_args(symheap_comm_t c, size_t size,
                                      unsigned flags, symheap_window_t *win) {
  if (!win)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "win is NULL");
  symheap_result_t room = symheap__handles_room();
  if (room != SYMHEAP_SUCCESS)
    return room;
  if (size == 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "size is zero");
  /* Rounded up to granules (multicast's too) it must not wrap. */
  size_t gran = c->caps.granularity > c->caps.multicast_granularity
                    ? c->caps.granularity
                    : c->caps.multicast_granularity;
  if (size > SIZE_MAX - gran)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "size %zu is too large",
                          size);
  if (flags & ~SYMHEAP_WINDOW_FLAGS_ALL)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "unknown flags 0x%x",
                          flags & ~SYMHEAP_WINDOW_FLAGS_ALL);
  if (flags & SYMHEAP_WINDOW_MULTICAST)
    return symheap__mc_check(c);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__malloc_registered(symheap_comm_t c,
                                            symheap_result_t pre, size_t size,
                                            unsigned flags,
                                            symheap_window_t *win) {
  void *ptr = NULL;
  symheap_result_t r = pre;
  if (r == SYMHEAP_SUCCESS) {
    /* Multicast binds whole multicast-granularity units. */
    size_t alloc = size;
    if ((flags & SYMHEAP_WINDOW_MULTICAST) &&
        size <= SIZE_MAX - c->caps.multicast_granularity)
      alloc = symheap__round_up(size, c->caps.multicast_granularity);
    r = symheap__mem_alloc(c, alloc, &ptr);
  }
  r = symheap__register(c, ptr, size, flags, r, 1, win);
  if (r != SYMHEAP_SUCCESS && ptr)
    SYMHEAP__KEEP_ERROR(
        (void)symheap__map_free_alloc(c, symheap__alloc_find(c, ptr)));
  return r;
}


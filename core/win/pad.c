/* The comm pad: a small symmetric window every comm owns (layout in
 * symheap_device.h); its signal slots are slot.c's. */
#include "comm/agree.h"
#include "window.h"

symheap_result_t symheap__pad_create(symheap_comm_t c) {
  symheap_window_t h;
  /* Its own registration, not the heap: a comm that never calls
   * symheap_malloc commits no heap memory. */
  size_t size = symheap__round_up(SYMHEAP_PAD_BYTES, c->caps.granularity);
  symheap_result_t r = symheap__malloc_registered(
      c, symheap__malloc_args(c, size, 0, &h), size, 0, &h);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "creating the comm's pad");
  struct symheap_window *w = symheap__window_get(h, "the comm's pad");
  /* Not a user window: out of the window lists and window counts; its
   * memory and mappings stay in the accounting. */
  symheap__window_unlink(c, w);
  c->stats.windows_live--;
  c->stats.bytes_registered -= w->size;
  c->pad = w;
  if (!w->flat || !c->dev.has_mem_zero) {
    SYMHEAP_INFO("device adaptor '%s' %s: window views carry no pad (no "
                 "device signals, no collectives)",
                 c->dev.ops.name,
                 !w->flat ? "maps its memory per peer"
                          : "cannot clear memory (no mem_zero)");
    return symheap__agree(c, SYMHEAP_SUCCESS, 0, NULL, 0, NULL);
  }
  r = c->dev.ops.mem_zero(c->dev_ctx, w->peer[c->rank], w->size);
  if (r != SYMHEAP_SUCCESS)
    r = symheap__error_context(r, "clearing the comm's pad");
  /* Kernels over the pad wait for peers: where they record giving up. */
  if (r == SYMHEAP_SUCCESS)
    r = symheap__dstatus_open(c);
  /* Nobody signals a peer whose pad is not clear yet. */
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  c->pad_ready = r == SYMHEAP_SUCCESS;
  return r;
}

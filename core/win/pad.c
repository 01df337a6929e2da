/* The comm pad: a small symmetric window every comm owns (layout in
 * symheap_device.h), and its signal slots, one per live window. */
#include "comm.h"

symheap_result_t symheap__pad_create(symheap_comm_t c) {
  symheap_window_t h;
  /* Its own registration, not the heap: a comm that never calls
   * symheap_malloc commits no heap memory. */
  symheap_result_t r = symheap__malloc_registered(
      c, symheap__round_up(SYMHEAP_PAD_BYTES, c->caps.granularity), 0, &h);
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
  /* Nobody signals a peer whose pad is not clear yet. */
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  c->pad_ready = r == SYMHEAP_SUCCESS;
  return r;
}

/* The lowest free signal slot, or -1 (see struct symheap_comm). */
int symheap__slot_take(symheap_comm_t c) {
  if (!c->pad_ready)
    return -1;
  for (unsigned i = 0; i < SYMHEAP_PAD_SLOTS; i++)
    if (!(c->slot_used[i / 64] & (1ull << (i % 64)))) {
      c->slot_used[i / 64] |= 1ull << (i % 64);
      return (int)i;
    }
  SYMHEAP_INFO("all %u signal slots of the comm pad are taken: this window "
               "has no device signals",
               SYMHEAP_PAD_SLOTS);
  return -1;
}

/* After every rank has agreed to release the window (so no device work of
 * any rank uses it any more): clear the slot for its next owner, if device
 * code can have used it.  A slot that cannot be cleared is never handed out
 * again. */
void symheap__slot_release(symheap_comm_t c, struct symheap_window *w) {
  if (w->slot < 0)
    return;
  if (!__atomic_load_n(&w->view_taken, __ATOMIC_RELAXED)) {
    /* No view was handed out, so no device code knows the slot: it is as
     * clean as it was given, and freeing it costs no device call. */
    c->slot_used[w->slot / 64] &= ~(1ull << (w->slot % 64));
    w->slot = -1;
    return;
  }
  size_t off =
      SYMHEAP_PAD_SLOTS_OFFSET + (size_t)w->slot * SYMHEAP_PAD_SLOT_BYTES;
  symheap_result_t r = c->dev.ops.mem_zero(
      c->dev_ctx, (char *)c->pad->peer[c->rank] + off, SYMHEAP_PAD_SLOT_BYTES);
  if (r == SYMHEAP_SUCCESS)
    c->slot_used[w->slot / 64] &= ~(1ull << (w->slot % 64));
  else
    SYMHEAP_WARN("signal slot %d could not be cleared and is retired: %s",
                 w->slot, symheap_last_error());
  w->slot = -1;
}

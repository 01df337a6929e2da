/* The comm pad's signal slots, one per live window: the same slot on every
 * rank, since windows come and go in the same order everywhere. */
#include "window.h"

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
                 w->slot, symheap__error_peek());
  w->slot = -1;
}

/* symheap_window_release_local: a rank drops its handle on a window without
 * its peers (issue 30: PyTorch frees symmetric tensors locally, lazily and in
 * a different order on each rank; only its rendezvous is collective).
 *
 * What makes it safe without an agreement: this rank unmaps only its own
 * view of the peers' memory; each peer keeps its own mapping of this rank's
 * memory, and the memory behind it stays allocated while any rank maps it
 * (an exported CUDA/HIP allocation or a host memfd lives until its last
 * importer lets go), so a peer still reading or writing never faults.  The
 * mapping goes into the comm's cache like a deregistered one, so registering
 * the same range again on every rank is the cheap cached re-registration.
 *
 * The window's signal slot in the comm pad is NOT given back: peers may
 * still signal it, and slot numbers must agree across ranks (each rank takes
 * the lowest free one at every collective registration).  Slots taken =
 * every registration since comm init minus the collective releases, the
 * same set on every rank, so later windows still agree on theirs; once the
 * pad's SYMHEAP_PAD_SLOTS are used up, windows come without device signals
 * (as they do today when the pad is full), on every rank alike. */
#include "win/window.h"

static symheap_result_t release_local(symheap_comm_t c, symheap_window_t h) {
  static const char fn[] = "symheap_window_release_local";
  symheap_result_t r = symheap__comm_enter(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  struct symheap_window *w = symheap__window_get(h, fn);
  if (!w)
    return SYMHEAP_ERR_INVALID_ARG; /* the message is the lookup's */
  if (w->comm != c)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: window %p belongs to another comm", fn,
                          (void *)h);
  if (w->heap || w->owns_alloc)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: window %p came from symheap_malloc (the heap "
                          "or an allocation of symheap's own): release it "
                          "with symheap_free, which is collective",
                          fn, (void *)h);
  if (w->flags & SYMHEAP_WINDOW_MULTICAST)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: window %p has a multicast object, which every "
                          "rank unbinds together: use "
                          "symheap_window_deregister",
                          fn, (void *)h);
  r = symheap__capture_check(c, fn); /* unmapping is a device call */
  if (r != SYMHEAP_SUCCESS)
    return r;
  symheap__comm_drain(c); /* peers' notices of freed memory prune the cache */
  symheap__window_unlink(c, w);
  /* The slot stays taken: see the top of this file. */
  w->slot = -1;
  r = symheap__window_teardown(c, w, 1);
  return r == SYMHEAP_SUCCESS ? r : symheap__error_context(r, "%s", fn);
}

SYMHEAP__EXPORT symheap_result_t
symheap_window_release_local(symheap_comm_t c, symheap_window_t w) {
  SYMHEAP__CLAIMED(c, "symheap_window_release_local", release_local(c, w));
}

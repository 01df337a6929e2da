#ifndef SYMHEAP_WINDOW_H
#define SYMHEAP_WINDOW_H

#include "comm.h"

/* multicast.c: collective; on failure nothing of it remains. */
/* `avail`: bytes of local memory from map_off on, which the binding may
 * cover. */
symheap_result_t symheap__mc_setup(symheap_comm_t c, struct symheap_window *w,
                                   symheap_mem_handle_t local, size_t map_off,
                                   size_t avail);
/* Local teardown of what mc_setup made. */
symheap_result_t symheap__mc_teardown(symheap_comm_t c,
                                      struct symheap_window *w);
/* Why multicast cannot be had for this comm (NULL if it can). */
symheap_result_t symheap__mc_check(symheap_comm_t c);

/* register.c: collective.  `pre` is a failure the caller already had on this
 * rank; it is still carried into the first agreement so that every rank
 * fails alike.  owns_alloc: the window was made by symheap_malloc. */
symheap_result_t symheap__register(symheap_comm_t c, void *ptr, size_t size,
                                   unsigned flags, symheap_result_t pre,
                                   int owns_alloc, symheap_window_t *out);
/* window.c */
/* Local: close the peers' IPC mappings in peer[] (nranks; own entry kept). */
symheap_result_t symheap__close_ipc(symheap_comm_t c, void **peer);
void symheap__window_free(struct symheap_window *w);

#endif

/* Windows' net regions (net_window.c): a window's local memory registered
 * with the comm's net adaptor, and where a peer's copy of a range lies for
 * the adaptor (heap windows: their chunks' regions, mem/net_heap.h). */
#ifndef SYMHEAP_WIN_NET_WINDOW_H
#define SYMHEAP_WIN_NET_WINDOW_H

#include "comm/net.h"
#include "window.h"

/* Collective, from symheap__rdma_register: the window's region (heap
 * windows use their chunks'). */
symheap_result_t symheap__net_window_register(symheap_comm_t c,
                                              struct symheap_window *w);
/* Where [off, off + len) of peer's copy of w lies for the adaptor: the
 * region's key and offset, and how many bytes of the range that region
 * holds (a heap window may cross chunks).  INVALID_ARG / UNSUPPORTED with
 * the reason when the window has no region. */
symheap_result_t symheap__net_locate(struct symheap_window *w, int peer,
                                     size_t off, size_t len, void **rkey,
                                     uint64_t *roff, size_t *span);
/* The same, with the registration the range lies in (its peer_stage says
 * whether peer's copy is staged, comm/net_stage.h). */
symheap_result_t symheap__net_locate_reg(struct symheap_window *w, int peer,
                                         size_t off, size_t len,
                                         symheap__netreg_t **reg,
                                         uint64_t *roff, size_t *span);

#endif

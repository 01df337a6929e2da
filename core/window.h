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

#endif

/* Flat mappings (mapping.c): the one place that maps every rank's memory
 * into a reservation and unmaps it again. */
#ifndef SYMHEAP_MAPPING_H
#define SYMHEAP_MAPPING_H

#include "mem.h"

/* Collective: export `local` (`a`, when it is a symheap allocation, keeps
 * the exported descriptor), exchange, import, reserve `reserve` bytes of VA
 * into *base when `reserve` is not 0 (else *base is the caller's), map rank
 * p's [map_off, map_off + len) at *base + p * stride, set access; ends in an
 * agreement.  `pre` is a failure this rank already had: it still takes
 * part, failing.  On failure nothing of it stays mapped or reserved on any
 * rank. */
symheap_result_t symheap__map_peers(symheap_comm_t c, symheap_result_t pre,
                                    symheap__alloc_t *a,
                                    symheap_mem_handle_t local, char **base,
                                    size_t reserve, size_t stride, size_t len,
                                    size_t map_off);
/* Local: unmap the first `mapped` ranks' `len` bytes at base + p * stride. */
symheap_result_t symheap__unmap_peers(symheap_comm_t c, char *base,
                                      size_t stride, size_t len, int mapped);
#endif

/* Flat mappings (mapping.c): the one place that maps every rank's memory
 * into a reservation and unmaps it again; and the mapping object
 * (mapobj.c): who owns a mapping, and when it goes. */
#ifndef SYMHEAP_MAPPING_H
#define SYMHEAP_MAPPING_H

#include "comm.h"

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
/* Collective: reserve nranks * w->stride and map the window's memory there
 * (w->reserve on success; nothing left on failure). */
symheap_result_t symheap__map_flat(symheap_comm_t c, struct symheap_window *w,
                                   symheap_mem_handle_t local, size_t map_off);

/* mapobj.c: the comm's mappings (symheap__map_t in comm.h).  Every window
 * holds a reference on one; symheap__map_release is the one place that
 * decides, at the last reference, whether a mapping is kept or unmapped. */

/* An empty mapping with one reference, in the comm's list (`peers`: room
 * for per-peer IPC addresses); NULL when out of memory.  Made before the
 * collective steps that fill it, so that filling it cannot fail; an empty
 * one is dropped with symheap__map_drop. */
symheap__map_t *symheap__map_new(symheap_comm_t c, int peers);
/* Local: the mapping of `kind` that mapping.c, window_ipc.c or
 * window_vendor.c built on w goes into m, with w as its one view; m takes
 * w's retained handle and `ids` (every rank's allocation id when it can be
 * kept, else NULL). */
void symheap__map_adopt(symheap_comm_t c, struct symheap_window *w,
                        symheap__map_t *m, int kind, uint64_t *ids);
/* Local: w becomes a view of all of m (its reference already counted). */
void symheap__map_view(symheap_comm_t c, struct symheap_window *w,
                       symheap__map_t *m);
/* Local: one more view of m. */
void symheap__map_hold(symheap__map_t *m);
/* Local, in release order (agreed): drop one reference.  At the last one
 * the RDMA region goes, and the mapping is kept for reuse (`keep`, and it
 * can be: every rank's memory a symheap allocation, no flags, not to be
 * freed, the cache on) or torn down.  Returns the first failure. */
symheap_result_t symheap__map_release(symheap_comm_t c, symheap__map_t *m,
                                      int keep);
/* A live mapping of exactly [ptr, ptr + size) that a re-registration can
 * share (no flags, not the heap's), or NULL. */
symheap__map_t *symheap__map_shared(symheap_comm_t c, const void *ptr,
                                    size_t size);
/* A kept mapping of exactly [ptr, ptr + size) of allocation a, or NULL. */
symheap__map_t *symheap__map_kept(symheap_comm_t c, symheap__alloc_t *a,
                                  const void *ptr, size_t size);
/* Local: a kept mapping serves a registration again (one reference). */
void symheap__map_unkeep(symheap_comm_t c, symheap__map_t *m);
/* Local: tear down a mapping that no view holds (kept, or never viewed). */
void symheap__map_drop(symheap_comm_t c, symheap__map_t *m);
/* Drop every kept mapping of local allocation a, or of peer's allocation
 * id (its FREED notice). */
void symheap__map_drop_alloc(symheap_comm_t c, symheap__alloc_t *a);
void symheap__map_drop_peer(symheap_comm_t c, int peer, uint64_t id);
/* Local, at comm destroy once every window is gone: tear down every
 * mapping left (kept ones, the heap's). */
void symheap__map_clear(symheap_comm_t c);

#endif

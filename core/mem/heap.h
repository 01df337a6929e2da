/* The comm's symmetric heap (heap.c; docs/heap.md): one flat reservation of
 * nranks x reserve bytes, memory committed in chunks through the collective
 * mapping path (mapping.c), and windows carved from it at offsets every rank
 * computes alike (heap_arena.c) and agrees on. */
#ifndef SYMHEAP_HEAP_H
#define SYMHEAP_HEAP_H

#include "heap_arena.h"
#include "mem.h"

typedef struct symheap__heap {
  symheap__arena_t arena;
  char *base;                   /* rank p's part at base + p * arena.size */
  symheap__map_t *map;          /* the reservation's mapping object: one
                                   view per heap window (mapobj.c) */
  symheap_mem_handle_t *handle; /* per chunk: this rank's memory, or 0 */
  uint64_t threshold;           /* larger allocations are registrations */
  uint64_t seq;                 /* heap operations agreed so far */
  unsigned char *fresh;         /* per chunk: committed by this growth */
} symheap__heap_t;

/* What every rank says about one heap operation, compared field by field. */
typedef struct {
  uint64_t seq;  /* heap operations agreed so far */
  uint64_t size; /* asked for */
  uint64_t flags;
  uint64_t route;   /* SYMHEAP__ROUTE_* */
  uint64_t off;     /* where the block goes */
  uint64_t first;   /* chunks to commit first: the uncommitted ones of */
  uint64_t count;   /* [first, first + count) */
  uint64_t reserve; /* SYMHEAP_HEAP_RESERVE, _CHUNK and _THRESHOLD as this */
  uint64_t chunk;   /* rank has them: a different threshold routes another */
  uint64_t threshold; /* size elsewhere, so the first call catches it */
} symheap__heap_rec_t;
_Static_assert(sizeof(symheap__heap_rec_t) <= sizeof(symheap_shareable_t),
               "heap records live in the comm's scratch");

enum {
  SYMHEAP__ROUTE_REGISTER = 0, /* not for the heap: its own registration */
  SYMHEAP__ROUTE_HEAP = 1,     /* the heap serves it */
  SYMHEAP__ROUTE_NO_HEAP = 2,  /* wanted, but this rank has no heap */
  SYMHEAP__ROUTE_FULL = 3,     /* wanted, but the reservation cannot hold it */
};

/* Local, at comm init (before the device's agreement): the heap's
 * variables as this comm's device takes them, refused now rather than at
 * the first symheap_malloc. */
symheap_result_t symheap__heap_vars_check(symheap_comm_t c);
/* Local: read the heap's variables (once per comm). */
symheap_result_t symheap__heap_state(symheap_comm_t c);
/* Local: the reservation (address space only). */
symheap_result_t symheap__heap_create(symheap_comm_t c);
/* Collective: the agreement of one heap operation (seq, reserve and chunk
 * filled in here); MISMATCH naming what differs.  *all: every rank's
 * record, valid until the comm's next exchange. */
symheap_result_t symheap__heap_agree(symheap_comm_t c, symheap_result_t r,
                                     const char *fn, symheap__heap_rec_t *me,
                                     const symheap__heap_rec_t **all);
/* Collective, after an agreement: commit the uncommitted chunks of
 * [first, first + count); on failure none of them stays on any rank.  On
 * success the caller ends the growth with heap_commit_end. */
symheap_result_t symheap__heap_commit(symheap_comm_t c, uint32_t first,
                                      uint32_t count);
/* Local (decided by an agreement): keep the chunks a growth committed, or
 * (keep 0) release them again. */
void symheap__heap_commit_end(symheap_comm_t c, uint32_t first, uint32_t count,
                              int keep);
/* Local, when a call that made the reservation fails (created): it goes
 * again, so that the failed call changed nothing. */
void symheap__heap_undo_create(symheap_comm_t c, int created);
/* Local, after an agreement: release every chunk holding no allocation. */
symheap_result_t symheap__heap_trim_local(symheap_comm_t c);

/* Local, before the agreement to free a heap window: whether its block can
 * go back without needing memory later. */
symheap_result_t symheap__heap_prepare_free(symheap_comm_t c);
/* Local: whether ptr lies in this rank's part of the heap; then its offset
 * there and the part's size. */
int symheap__heap_locate(symheap_comm_t c, const void *ptr, size_t *off,
                         uint64_t *part);
/* Local, before the agreement: where this rank's heap would put `len`
 * bytes and which chunks it would commit first (into me); the route. */
uint64_t symheap__heap_plan(symheap_comm_t c, uint64_t len,
                           symheap__heap_rec_t *me, symheap_result_t *r);
/* The agreed route: a rank without a heap, or a full heap anywhere, sends
 * every rank to the registration path. */
uint64_t symheap__heap_route(symheap_comm_t c, const symheap__heap_rec_t *all);
/* Local, at comm destroy after every window is gone: unmap and release. */
void symheap__heap_destroy(symheap_comm_t c);

#endif

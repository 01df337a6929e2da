/* The window floor: windows (views onto the memory floor's mappings), their
 * registration, window paths, multicast and RDMA views. */
#ifndef SYMHEAP_WINDOW_H
#define SYMHEAP_WINDOW_H

#include "mem/mem.h"

/* The multicast part of a window. */
typedef struct {
  symheap_mem_handle_t handle;
  void *va;
  size_t size;
  int bound, mapped;
} symheap__mc_t;

/* A vendor window path (SYMHEAP_WINDOW_PATH=nccl|ccl; window_vendor.c). */
typedef struct symheap__winpath {
  const char *name; /* "nccl", or the ccl adaptor's name */
  symheap_result_t (*reg)(void *ctx, void *ptr, size_t size,
                          symheap_vendor_window_t *out);
  symheap_result_t (*dereg)(void *ctx, void *handle);
  void (*close)(void *ctx); /* NULL when ctx is not the path's own */
  void *ctx;
} symheap__winpath_t;

struct symheap_window {
  struct symheap_window *next, *prev; /* in the comm's list */
  symheap_window_t handle;            /* what the caller holds (handles.c) */
  symheap_comm_t comm;
  uint64_t id; /* same on every rank: registrations are collective */
  char *user_ptr;
  size_t size;
  unsigned flags;
  int flat; /* 1: flat VA; 0: per-peer IPC mappings */
  /* The view: the mapping it holds a reference on (mapobj.c), and where the
   * window lies in it.  reserve and stride are the mapping's, copied for
   * the accessors; the window never unmaps them. */
  symheap__map_t *map;
  char *reserve; /* flat mode: rank p's part at reserve + p * stride */
  size_t stride;
  size_t head; /* window start inside each rank's part */
  /* the local memory behind it */
  symheap__alloc_t *alloc;    /* NULL for foreign memory */
  symheap_mem_handle_t local; /* while registering: a retained handle of
                                 foreign memory, which the mapping takes */
  int owns_alloc;             /* made by symheap_malloc */
  void **peer;                /* nranks peer addresses of the window start */
  symheap__mc_t mc;
  int slot;       /* signal slot in the comm pad, or -1 */
  int view_taken; /* a device view was handed out: device code may have
                     touched the slot, so it is cleared when the window goes */
  /* RDMA (rdma.c): the region the window is reached by, or NULL: the
   * mapping's (every view of a registration shares it), or for a heap
   * window its own (rdma_own). */
  symheap__rdma_t *rdma;
  symheap__rdma_t rdma_own;
  /* A heap window (heap.c): [head, head + heap_len) of the comm's heap,
   * its mapping the heap's.  A window registered over part of a heap block
   * is a view of the block (heap_len 0): `block` is that block, which counts
   * its `views` and stays allocated until the last goes; a block freed
   * while viewed is `released` (its handle gone). */
  int heap;
  uint64_t heap_len;
  struct symheap_window *block;
  int views;
  int released;
};


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
/* The hooks of every mapping a registration makes (mem/mem.h). */
extern const symheap__map_hooks_t symheap__window_map_hooks;
void symheap__window_free(struct symheap_window *w);

/* pad.c */
/* Collective, at comm init: the comm's own window, SYMHEAP_PAD_BYTES per
 * rank (layout in symheap_device.h), cleared on every rank before it returns.
 * Device signals and the collectives' state live there.  Keeping a mapping of
 * every peer's memory alive also keeps the driver's peer mappings warm: on
 * H200 it takes a later registration's cuMemSetAccess from about 1.9 ms to
 * 0.1 ms (bench/vmm_costs.c measures it). */
symheap_result_t symheap__pad_create(symheap_comm_t c);
/* slot.c */
/* Local: the window's signal slot, or -1 when none is free or the pad is not
 * usable. */
int symheap__slot_take(symheap_comm_t c);
/* Local, after every rank agreed to release w: clear and free its slot. */
void symheap__slot_release(symheap_comm_t c, struct symheap_window *w);

/* malloc.c */
/* symheap_malloc's argument checks (a local result, carried into the
 * first agreement). */
symheap_result_t symheap__malloc_args(symheap_comm_t c, size_t size,
                                      unsigned flags, symheap_window_t *win);
/* Collective: an allocation of its own, registered (`pre`: this rank's
 * failure so far); symheap_malloc without the heap. */
symheap_result_t symheap__malloc_registered(symheap_comm_t c,
                                            symheap_result_t pre, size_t size,
                                            unsigned flags,
                                            symheap_window_t *win);
/* Local: the view goes, and its reference on the mapping.  keep: the
 * mapping may be kept for a later registration of the same memory
 * (deregistration); 0: it goes at its last view, with a symheap_malloc
 * window's memory (free, comm destroy). */
symheap_result_t symheap__window_teardown(symheap_comm_t c,
                                          struct symheap_window *w, int keep);
/* window_ipc.c: collective; per-peer IPC mappings into w->peer, all or
 * nothing. */
symheap_result_t symheap__map_ipc(symheap_comm_t c, struct symheap_window *w);

/* rdma.c */
/* Collective, at comm init after the pad: open the RDMA device when
 * SYMHEAP_NET asks (agreed: on for every rank or for none). */
symheap_result_t symheap__rdma_setup(symheap_comm_t c);
void symheap__rdma_close(symheap_comm_t c);
/* Collective, after the window is mapped: register this rank's copy into
 * w->rdma (its mapping's region, or a heap window's own) and exchange keys
 * (nothing without RDMA).  Undoes itself on failure. */
symheap_result_t symheap__rdma_register(symheap_comm_t c,
                                        struct symheap_window *w);
/* Local: the region goes (nothing when there is none). */
void symheap__rdma_deregister(symheap_comm_t c, symheap__rdma_t *x);
void symheap__rdma_view(const struct symheap_window *w,
                        symheap_device_window_t *v);
/* The region a window is reached by, or NULL. */
const symheap__rdma_t *symheap__rdma_region(const struct symheap_window *w);

/* window_vendor.c */
/* Collective, at comm init: SYMHEAP_WINDOW_PATH decides; a path named but
 * unusable fails the init on every rank, saying why. */
symheap_result_t symheap__winpath_setup(symheap_comm_t c);
void symheap__winpath_close(symheap_comm_t c);
/* Collective: the window registered by the vendor, agreed (w's reserve,
 * stride and head describe the vendor's range; *handle is the vendor's);
 * undone on failure. */
symheap_result_t symheap__winpath_register(symheap_comm_t c,
                                           struct symheap_window *w,
                                           void **handle);
/* Local, in deregistration order (collective for the vendor). */
symheap_result_t symheap__winpath_deregister(symheap_comm_t c, void *handle);

/* window_access.c: the process-wide list of live windows. */
/* SUCCESS for a live window handle; else INVALID_ARG naming fn. */
/* The live window a caller's handle names, or NULL with INVALID_ARG naming
 * `fn` (a released handle stays invalid whatever memory is reused). */
struct symheap_window *symheap__window_get(symheap_window_t h, const char *fn);
/* Room for one more window handle (a local check, before agreeing). */
symheap_result_t symheap__handles_room(void);
/* Into the comm's list, and a handle for the caller (w->handle). */
void symheap__live_add(symheap_comm_t c, struct symheap_window *w);
/* Out of the comm's list and the live list. */
void symheap__window_unlink(symheap_comm_t c, struct symheap_window *w);


/* heap_window.c: the heap's windows (the heap itself is mem/heap.c). */
/* Collective, from symheap_malloc after its argument checks (`pre` is this
 * rank's result so far): every rank agrees whether the heap serves it
 * (*done then), else the caller registers an allocation of its own. */
symheap_result_t symheap__heap_malloc(symheap_comm_t c, symheap_result_t pre,
                                      size_t size, unsigned flags,
                                      symheap_window_t *out, int *done);
/* Local: give a heap window's block back, when every rank agreed to free
 * it. */
void symheap__heap_release(symheap_comm_t c, struct symheap_window *w);
/* Collective, from symheap_window_register over heap memory: a view of
 * the block at off. */
symheap_result_t symheap__heap_view(symheap_comm_t c, struct symheap_window *w,
                                    size_t off);

#endif

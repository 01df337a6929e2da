/* The core's side of net adaptors (issue 27): which adaptor SYMHEAP_NET
 * names (net_select.c), a comm's open adaptor and its progress
 * (net_comm.c), the registrations of windows and heap chunks with their
 * peers' keys (net_window.c), and the one-sided API on top (onesided.c). */
#ifndef SYMHEAP_NET_H
#define SYMHEAP_NET_H

#include <pthread.h>

#include "comm.h"

/* net_select.c: what SYMHEAP_NET asks for. */
enum {
  SYMHEAP__NET_AUTO = 0, /* ibverbs registration across hosts (rdma.c) */
  SYMHEAP__NET_IBVERBS,  /* ibverbs registration always */
  SYMHEAP__NET_NONE,     /* nothing */
  SYMHEAP__NET_ADAPTOR,  /* a registered net adaptor, by name */
};
/* Read SYMHEAP_NET: *mode, and *ops for SYMHEAP__NET_ADAPTOR.  An unknown
 * name is INVALID_ARG listing the accepted ones. */
symheap_result_t symheap__net_mode(int *mode, const symheap_net_ops **ops);
/* The registered net adaptor called name, or NULL. */
const symheap_net_ops *symheap__net_find(const char *name);

/* net_comm.c: a comm's open net adaptor. */
typedef struct symheap__netc {
  symheap_net_ops ops; /* copied; members past struct_size are NULL */
  void *ctx;
  symheap_net_caps_t caps;
  int locked;           /* the core serialises calls (not THREAD_SAFE) */
  pthread_mutex_t lock; /* held around each call when locked */
  int timeout_ms;
  int nranks;
  /* The progress thread (SYMHEAP_NET_PROGRESS). */
  int thread_on;
  int stop;
  pthread_t thread;
  /* Heap chunks' registrations (net_window.c), by chunk index. */
  struct symheap__netreg **chunks;
  uint32_t nchunks;
  struct symheap__netc *next; /* the process's open adaptors */
} symheap__netc_t;

/* Collective, at comm init (rdma.c asks when SYMHEAP_NET names an
 * adaptor): open, allgather addresses, connect; agreed.  A comm on one host
 * opens nothing (c->netc stays NULL) and says so. */
symheap_result_t symheap__net_comm_open(symheap_comm_t c,
                                        const symheap_net_ops *ops);
/* Local, at comm destroy, after every registration went. */
void symheap__net_comm_close(symheap_comm_t c);
/* Advance every open adaptor of this process that no other thread is
 * calling (never blocks): every wait of the core calls it. */
void symheap__net_progress_all(void);
/* Whether any adaptor with manual progress is open in this process (so
 * waits should poll in slices and progress between them). */
int symheap__net_waiting(void);
/* Call-wrappers: the adaptor's lock when the core holds one. */
void symheap__net_lock(symheap__netc_t *n);
void symheap__net_unlock(symheap__netc_t *n);

/* net_window.c: one registered range and every rank's key. */
typedef struct symheap__netreg {
  void *mr;     /* this rank's region */
  void **rkeys; /* nranks imported handles (own included) */
  size_t size;
} symheap__netreg_t;
/* Collective: register [ptr, ptr + size) and exchange keys; *out is set
 * only on success (agreed); undone on failure. */
symheap_result_t symheap__netreg_make(symheap_comm_t c, void *ptr,
                                      size_t size, symheap__netreg_t **out);
/* Local: the region and its peers' keys go. */
void symheap__netreg_free(symheap_comm_t c, symheap__netreg_t *g);
/* Collective, from symheap__rdma_register: the window's region (heap
 * windows use their chunks'). */
symheap_result_t symheap__net_window_register(symheap_comm_t c,
                                              struct symheap_window *w);
/* Collective, from the heap's commit: chunks [first, first + count) made
 * now (fresh) get regions. */
symheap_result_t symheap__net_heap_commit(symheap_comm_t c, uint32_t first,
                                          uint32_t count);
/* Local, when heap chunk i goes. */
void symheap__net_heap_release(symheap_comm_t c, uint32_t i);
/* Where [off, off + len) of peer's copy of w lies for the adaptor: the
 * region's key and offset, and how many bytes of the range that region
 * holds (a heap window may cross chunks).  INVALID_ARG / UNSUPPORTED with
 * the reason when the window has no region. */
symheap_result_t symheap__net_locate(struct symheap_window *w, int peer,
                                     size_t off, size_t len, void **rkey,
                                     uint64_t *roff, size_t *span);

#endif

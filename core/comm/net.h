/* The core's side of net adaptors (issue 27), its comm floor: which adaptor
 * SYMHEAP_NET names (net_select.c), a comm's open adaptor and its progress
 * (net_comm.c), one registered range with its peers' keys (net_reg.c).
 * Above: heap chunks' regions (mem/net_heap.c), windows' (win/
 * net_window.c), the one-sided API (api/onesided*.c). */
#ifndef SYMHEAP_NET_H
#define SYMHEAP_NET_H

#include <pthread.h>

#include "base/net_registry.h"
#include "comm.h"

/* net_select.c: what SYMHEAP_NET asks for. */
enum {
  SYMHEAP__NET_AUTO = 0, /* ibverbs registration across hosts (rdma.c) */
  SYMHEAP__NET_IBVERBS,  /* ibverbs registration always */
  SYMHEAP__NET_NONE,     /* nothing */
  SYMHEAP__NET_ADAPTOR,  /* a registered net adaptor, by name */
};
/* Read SYMHEAP_NET: *mode, and *tab for SYMHEAP__NET_ADAPTOR (looked up in
 * the net registry, base/net_registry.h).  An unknown name is INVALID_ARG
 * listing the accepted ones. */
symheap_result_t symheap__net_mode(int *mode, symheap__net_table_t *tab);

/* net_comm.c: a comm's open net adaptor. */
typedef struct symheap__netc {
  symheap_net_ops ops; /* normalised copy (net_registry.c) */
  int has_atomic;       /* ops.atomic is the adaptor's, not a stub */
  int has_wait_fds;     /* ops.wait_fds gives descriptors to sleep on */
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
  /* The thread sleeps in poll() on the engine's descriptors (ops.wait_fds)
   * while nobody else calls (a wait sleeping on them too, net_idle). */
  int thread_sleeps;
  int stop_fd;  /* an eventfd that wakes it at close; -1 when none */
  /* Calls into the adaptor by the comm's threads and the waits' idle hook
   * (not the progress thread): while it moves, the engine is progressed
   * already and the progress thread stands aside. */
  unsigned long calls;
  /* When (now_ns) a wait's idle turn last progressed the engine.  While
   * that is recent the wait is running and serves peers itself, and a
   * sleeping progress thread keeps off the engine (net_comm.c). */
  uint64_t wait_seen;
  /* Until then (now_ns) the waits spin on this engine: it had work (a
   * wakeup on its wait fds, or work pending when they would sleep). */
  uint64_t spin_until;
  /* Target-side staging (net_stage.c): NULL unless some rank's memory is
   * device memory this adaptor cannot register (no SYMHEAP_NET_CAP_HMEM). */
  struct symheap__stage *stage;
  /* Heap chunks' registrations (net_window.c), by chunk index. */
  struct symheap__netreg **chunks;
  uint32_t nchunks;
  struct symheap__netc *next; /* the process's open adaptors */
} symheap__netc_t;

/* Collective, at comm init (rdma.c asks when SYMHEAP_NET names an
 * adaptor): open, allgather addresses, connect; agreed.  A comm on one host
 * opens nothing (c->netc stays NULL) and says so. */
symheap_result_t symheap__net_comm_open(symheap_comm_t c,
                                        const symheap__net_table_t *tab);
/* Local, at comm destroy, after every registration went. */
void symheap__net_comm_close(symheap_comm_t c);
/* Local: every one-sided operation of this rank complete at its target
 * (the adaptor's quiet), fn naming the caller in the error. */
symheap_result_t symheap__net_quiet(symheap_comm_t c, const char *fn);
/* Call-wrappers: the adaptor's lock when the core holds one (inline, so
 * the files of this floor that call the adaptor form no circle). */
static inline void symheap__net_lock(symheap__netc_t *n) {
  __atomic_add_fetch(&n->calls, 1, __ATOMIC_RELAXED);
  if (n->locked)
    pthread_mutex_lock(&n->lock);
}
static inline void symheap__net_unlock(symheap__netc_t *n) {
  if (n->locked)
    pthread_mutex_unlock(&n->lock);
}

/* net_reg.c: one registered range and every rank's key. */
typedef struct symheap__netreg {
  void *mr;     /* this rank's region */
  void **rkeys; /* nranks imported handles (own included) */
  size_t size;
  /* Staged (net_stage.h): this rank's range is device memory the adaptor
   * cannot register, so its region is `shadow`, pinned host memory of the
   * same size that peers' puts land in, and the core copies into `dev`. */
  void *shadow;
  void *dev;
  uint32_t stage_id;    /* this rank's id of it, for descriptors */
  uint32_t *peer_stage; /* per rank: 0 not staged, else its stage id + 1 */
} symheap__netreg_t;
/* Collective: register [ptr, ptr + size) and exchange keys; *out is set
 * only on success (agreed); undone on failure. */
symheap_result_t symheap__netreg_make(symheap_comm_t c, void *ptr,
                                      size_t size, symheap__netreg_t **out);
/* Local: the region and its peers' keys go. */
void symheap__netreg_free(symheap_comm_t c, symheap__netreg_t *g);
#endif

/* The device host proxy (docs/device-api.md, "Remote peers"): kernels put
 * descriptors in a ring of host-pinned memory, and a thread per comm issues
 * them through the comm's net adaptor (proxy.c: setup, start, views, close;
 * proxy_drain.c: the thread). */
#ifndef SYMHEAP_PROXY_H
#define SYMHEAP_PROXY_H

#include <pthread.h>

#include "symheap_device.h"
#include "win/window.h"

/* Staging: device data goes to the net adaptor from host-pinned memory, in
 * pieces of this many bytes. */
#define SYMHEAP__PROXY_STAGE_BYTES (4u << 20)

typedef struct symheap__proxy {
  symheap_comm_t c;
  int usable;    /* the pad is net-registered and the device can host_alloc */
  char why[256]; /* when not usable: why (for the log and the check) */
  /* Held by the thread around each entry, and by a window's release around
   * its teardown, so no entry uses a window that is going away. */
  pthread_mutex_t lock;
  int started;                /* the ring and the thread exist (under lock) */
  int joined;                 /* the thread has ended (symheap__proxy_stop) */
  symheap_proxy_ring_t *ring; /* host address */
  void *ring_dev;             /* the device's */
  char *stage;                /* host-pinned staging */
  void *stage_dev;
  pthread_t thread;
  int stop; /* atomic: asks the thread to end */
  int hold; /* atomic: the thread takes nothing (tests: backpressure) */
  int held; /* atomic: the thread saw hold (it takes nothing from now on) */
  /* The first failure of a proxied operation (atomic code; message under
   * lock). */
  symheap_result_t err;
  char err_msg[512];
  uint64_t dropped; /* entries taken at shutdown without being issued */
  int dirty;        /* the thread's: puts issued since its last fence */
} symheap__proxy_t;

/* Init stage (after the windows' stage): on a comm with a net adaptor,
 * register the pad with it (collective, agreed); a failure only makes the
 * proxy unusable, saying why. */
symheap_result_t symheap__proxy_setup(symheap_comm_t c);
/* Comm destroy, first: stop the thread (entries still queued are dropped
 * and counted), free the ring, deregister the pad. */
void symheap__proxy_close(symheap_comm_t c);
/* symheap_window_device_view: on a comm whose other-host ranks the proxy
 * can reach, start it (once) and set SYMHEAP_VIEW_PROXY, proxy_ring and
 * proxy_window.  A proxy that cannot start leaves the view without it and
 * logs why (INFO). */
void symheap__proxy_view(struct symheap_window *w, symheap_device_window_t *v);
/* Around a window's teardown: no entry is being issued meanwhile. */
void symheap__proxy_lock(symheap_comm_t c);
void symheap__proxy_unlock(symheap_comm_t c);

/* proxy_drain.c: the thread's body. */
void *symheap__proxy_main(void *arg);
/* Stop the thread (close does; tests too): entries written and not yet
 * taken are dropped and counted, ring->stopped set. */
void symheap__proxy_stop(symheap_comm_t c);
/* Tests: 1 holds the thread (it takes no entry; on return it is outside
 * any take, so the ring's consumed count stays put), 0 lets it go. */
void symheap__proxy_hold(symheap_comm_t c, int on);

#endif

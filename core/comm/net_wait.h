/* Waits on something a net adaptor may deliver to this rank (net_wait.c):
 * a signal word (api/signal_wait.c), a staged operation's acknowledgement
 * (net_stage_ops.c, net_stage_get.c). */
#ifndef SYMHEAP_NET_WAIT_H
#define SYMHEAP_NET_WAIT_H

#include "boot/idle.h"
#include "net.h"

typedef struct {
  symheap__idle_t io;
  unsigned turn;
  uint64_t t0, span; /* ns: when the wait began, how long it may last */
  int own;           /* out: the caller progresses its adaptor this turn */
} symheap__net_wait_t;

/* A wait of timeout_ms begins now. */
void symheap__net_wait_begin(symheap__net_wait_t *w, int timeout_ms);
/* Called after each look at the awaited state that did not satisfy the
 * wait: 0 when its time is up (never before one turn: a wait of 0 ms
 * still progresses the engine once), else 1 after one turn of waiting.
 * A turn is the idle hook's (boot/idle.h: the open engines with manual
 * progress progressed, spinning while they have work, else asleep on their
 * wait fds; where one has no wait fds, spinning 1 ms, then napping 20-100
 * us a turn).  Where the hook does not drive n (this comm's adaptor, NULL
 * for none: one with automatic progress), the turn sets w->own and the
 * caller progresses n itself, with the staged puts it delivers
 * (symheap__net_turn: the staging's, which this file may not call;
 * symheap__net_wait_step in net_stage.h does both).
 * Plain stores wake no sleep: after a short spin and, unless n's fds can
 * wake the wait, some yields, it naps a sixteenth of the time waited so
 * far (20 us to 20 ms). */
int symheap__net_wait_turn(symheap__netc_t *n, symheap__net_wait_t *w);

#endif

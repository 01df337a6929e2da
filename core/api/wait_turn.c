/* symheap_comm_wait_turn: one turn of a wait on the caller's own
 * condition, the turn symheap_signal_wait_until takes (comm/net_wait.c):
 * the engines progressed, spinning while they have work, asleep on their
 * wait fds while idle, naps for plain stores.  The wait's state lives in
 * the caller's symheap_wait_state_t between turns (its start, the turn
 * count, whether the last sleep woke on a descriptor, the kicks it saw:
 * boot/idle.h); the descriptors are armed afresh each turn. */
#include "comm/comm.h"
#include "comm/net_stage.h"
#include "onesided.h"

/* A turn has no deadline of its own: the span outlasts any wait. */
#define NO_TIMEOUT_MS 0x7fffffff

SYMHEAP__EXPORT symheap_result_t
symheap_comm_wait_turn(symheap_comm_t c, symheap_wait_state_t *st) {
  const char *fn = "symheap_comm_wait_turn";
  if (symheap__comm_check(c, fn) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!st)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: state is NULL", fn);
  symheap__net_wait_t w;
  symheap__net_wait_begin(&w, NO_TIMEOUT_MS);
  if (st->since_ns)
    w.t0 = st->since_ns;
  else
    st->since_ns = w.t0;
  w.turn = st->turns;
  w.io.woke = st->woke != 0;
  w.io.kicks = st->kicks;
  (void)symheap__net_wait_step(c->netc, &w);
  st->turns = w.turn;
  st->woke = w.io.woke;
  st->kicks = w.io.kicks;
  return SYMHEAP_SUCCESS;
}

/* Waits on something a net adaptor may deliver to this rank (net_wait.h).
 *
 * Where an adaptor with manual progress is open (tcp;ofi_rxm, the test
 * adaptor "loop"), the awaited update may be owed by this very rank's
 * progress, and peers' operations on this rank complete only as it
 * progresses.  So these waits take the turns every socket wait takes (the
 * idle hook, net_comm.c's net_idle): progress the open engines and spin
 * while they have work (a burst of a peer's gets is served at spin speed),
 * then sleep on their wait fds (a peer's write wakes the sleep), using no
 * CPU while idle and leaving the engine to a progress thread asleep on
 * them too.  (Before, they progressed the engine and napped 20 us each
 * turn, counted as calls, so the thread stood aside and a waiting rank
 * never slept on the fds: docs/perf/net.md.)
 *
 * An engine without wait fds (the test adaptor "loop"; ucx or an ofi
 * provider without them) cannot say whether it has work: the hook spins
 * with io->nap_ok, and the wait, after its first 1 ms, naps 20 us growing
 * to 100 us between its turns (symheap__idle_nap_ns).  Short, since on
 * such an engine a peer's operation on this rank completes only at its
 * next turn; yet an idle wait no longer costs a whole CPU (test_net_wait's
 * no_fds_naps, 300 ms idle: 39-62 ms of CPU on a loaded machine, 146-299
 * ms before).
 *
 * Nothing wakes a sleep for a plain store (a same-host peer's put, a
 * kernel, the user's own): after a short spin and, where no engine of
 * this comm wakes the wait, some yields (a same-host peer may need this
 * core), it naps a sixteenth of the time it has waited, 20 us to 20 ms.
 * Such a store is seen within about 6% of the wait, and a long idle wait
 * wakes a few hundred times, not every 20 us. */
#include <sched.h>

#include "net_wait.h"

#define SPIN_TURNS 64u    /* pure spins first: a running peer answers soon */
#define YIELD_TURNS 1024u /* then yields, where no engine wakes the wait */
#define BUSY_YIELD 64u    /* spinning on busy engines: a yield this often */
#define NAP_MIN_NS 20000u
#define NAP_MAX_NS 20000000u

void symheap__net_wait_begin(symheap__net_wait_t *w, int timeout_ms) {
  w->io = (symheap__idle_t){0, 0, {0}, 0, 0};
  w->turn = 0;
  w->t0 = symheap__now_ns();
  w->span = (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000u;
}

static uint64_t nap_ns(uint64_t waited, uint64_t left) {
  uint64_t ns = waited / 16;
  ns = ns < NAP_MIN_NS ? NAP_MIN_NS : ns > NAP_MAX_NS ? NAP_MAX_NS : ns;
  return ns < left ? ns : left;
}

int symheap__net_wait_turn(symheap__netc_t *n, symheap__net_wait_t *w) {
  uint64_t waited = symheap__now_ns() - w->t0;
  unsigned turn = w->turn++;
  w->own = 0;
  if (turn && waited >= w->span)
    return 0;
  symheap__idle_t *io = &w->io;
  uint64_t left = w->span > waited ? w->span - waited : 0;
  if (symheap__idle_turn(io)) { /* the engines are busy: spin */
    /* Or only cannot be slept on: after a spin, short naps. */
    uint64_t nap = io->nap_ok ? symheap__idle_nap_ns(waited) : 0;
    if (nap && left)
      symheap__idle_sleep(io, nap < left ? nap : left);
    else if (turn % BUSY_YIELD == BUSY_YIELD - 1)
      sched_yield();
    return 1;
  }
  w->own = !io->nfds && n; /* an engine the hook does not drive */
  if (turn < SPIN_TURNS || !left)
    return 1;
  /* Where no descriptor wakes this wait for this comm's writers. */
  if ((!io->nfds || !n) && turn < YIELD_TURNS) {
    sched_yield();
    return 1;
  }
  symheap__idle_sleep(io, nap_ns(waited, left));
  return 1;
}

/* The waits' idle hook: work of a higher floor that must go on while a
 * rank waits (comm/net_comm.c: net adaptors with manual progress, whose
 * peers' operations on this rank complete only when it progresses).  The
 * socket waits (sock.c) take a turn of it before each poll; a wait with no
 * socket (api/signal_wait.c) takes its turns and sleeps through
 * symheap__idle_sleep.  No call from this floor up: only through the
 * pointer a higher floor handed it. */
#ifndef SYMHEAP_IDLE_H
#define SYMHEAP_IDLE_H

#include <stdint.h>

/* The wait says whether its last sleep ended on one of the hook's
 * descriptors (the engine has work); the hook may hand out descriptors
 * (armed: an engine's wait objects) that the wait's sleep also polls, at
 * most SYMHEAP__IDLE_SLEEP_MS at a time (a provider may lose a wakeup).
 * Nonzero from it: poll without sleeping (the CPU yielded now and then)
 * and call it again.  Where it spins only because it has nothing to sleep
 * on (an engine without descriptors, or one another thread holds), not for
 * work it saw, it says so (nap_ok): the wait then naps briefly between its
 * turns once it has spun a while (symheap__idle_nap_ns), rather than
 * spinning for its whole length. */
#define SYMHEAP__IDLE_FDS 8
#define SYMHEAP__IDLE_SLEEP_MS 20
typedef struct {
  int woke; /* in: its last sleep ended on one of fds (each turn clears it) */
  int nfds;                   /* out: how many of fds to poll */
  int fds[SYMHEAP__IDLE_FDS]; /* out: readable when the hook has work */
  uint64_t kicks; /* the kicks counted as the last sleep ended (below) */
  int nap_ok;     /* out, with nonzero: no work seen, nothing to sleep on */
} symheap__idle_t;
/* Set once per process (later calls replace it). */
void symheap__sock_set_idle_hook(int (*hook)(symheap__idle_t *io));
/* One turn of the hook: nonzero to spin (call again soon), 0 to sleep on
 * the io->nfds descriptors it armed (none, and 0 returned, when no hook is
 * set or it has nothing to do). */
int symheap__idle_turn(symheap__idle_t *io);
/* Sleep at most ns (below SYMHEAP__IDLE_SLEEP_MS where io has
 * descriptors), woken early by one of io's descriptors (io->woke says
 * whether one did, for the hook's next turn) or by a kick.  No sleep at
 * all where a kick came since io's last sleep ended: its caller looked at
 * its condition in between, maybe before the kicker's work. */
void symheap__idle_sleep(symheap__idle_t *io, uint64_t ns);
/* Work a sleeping wait may be waiting for was done by another thread of
 * this process (comm/net_comm.c's progress thread applied what a peer
 * sent: the descriptor that woke the thread wakes a wait only if the wait
 * reaches its poll before the thread has read it).  Wakes the threads in
 * symheap__idle_sleep; cheap where none sleeps (an atomic add). */
void symheap__idle_kick(void);
/* A kicker begins (on = 1) or ends (0): the descriptor the sleeps poll
 * for kicks is open while one holds it. */
void symheap__idle_kicks_hold(int on);
/* The nap between the turns of a wait waited_ns long whose hook spins
 * with nap_ok: 0 (spin on) for its first SYMHEAP__IDLE_NAP_SPIN_NS (a
 * burst of peers' operations is served at spin speed), then 20 us growing
 * by a sixteenth of the time waited since, to 100 us: a peer's operation
 * on this rank completes only at its next turn on an engine with manual
 * progress, so the nap stays short (yet the wait no longer costs a
 * whole CPU). */
#define SYMHEAP__IDLE_NAP_SPIN_NS 1000000u
uint64_t symheap__idle_nap_ns(uint64_t waited_ns);
/* ms of a retry's pause, the hook's turns taken meanwhile. */
void symheap__idle_pause(int ms);

#endif

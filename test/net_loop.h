/* The test net adaptor "loop" (net_loop.c). */
#ifndef SYMHEAP_TEST_NET_LOOP_H
#define SYMHEAP_TEST_NET_LOOP_H

#include "symheap_adaptor.h"

extern const symheap_net_ops net_loop_ops;
/* The same as "loop_signal", with its own put_signal (one call). */
extern const symheap_net_ops net_loop_signal_ops;
/* "loop_wait": the same as "loop", with wait_fds (the progress thread
 * sleeps on its socket). */
extern const symheap_net_ops net_loop_wait_ops;
/* Progress calls of every thread of this process. */
long net_loop_progress_calls_all(void);
/* The calling thread's next mem_register fails (a rank's failure). */
void net_loop_fail_next_register(void);
/* The calling thread's next open fails (comm init then fails everywhere). */
void net_loop_fail_next_open(void);
/* Live contexts, registered regions and imported keys in this process
 * (regions still registered when a context closes count as leaked). */
void net_loop_counts(int *ctxs, int *regions, int *rkeys);
/* Calls of loop_signal's put_signal in this process. */
int net_loop_put_signals(void);
/* How many times the calling thread called progress() (the core's waits
 * call it; the progress thread's calls are its own). */
long net_loop_progress_calls(void);

#endif

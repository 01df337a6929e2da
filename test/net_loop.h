/* The test net adaptor "loop" (net_loop.c). */
#ifndef SYMHEAP_TEST_NET_LOOP_H
#define SYMHEAP_TEST_NET_LOOP_H

#include "symheap_adaptor.h"

extern const symheap_net_ops net_loop_ops;
/* The calling thread's next mem_register fails (a rank's failure). */
void net_loop_fail_next_register(void);

#endif

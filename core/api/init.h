/* Within the api floor: making a comm (init.c), its barrier (comm_api.c). */
#ifndef SYMHEAP_API_INIT_H
#define SYMHEAP_API_INIT_H

#include "comm/comm.h"

/* A new comm from an already created ccl context (owned: fini on destroy,
 * also when this fails); the comm is not yet split from anything (world
 * ranks are its own).  Runs the subsystems' table up. */
symheap_result_t symheap__comm_setup(symheap_comm_t *out,
                                     const symheap_ccl_ops *ops, void *ctx,
                                     int owned, int timeout_ms,
                                     int64_t deadline_ms);
/* symheap_comm_barrier's body, the call already claimed. */
symheap_result_t symheap__comm_barrier(symheap_comm_t c);

#endif

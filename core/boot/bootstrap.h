/* The built-in bootstrap: ranks on one host meet at rank 0's Unix socket. */
#ifndef SYMHEAP_BOOTSTRAP_H
#define SYMHEAP_BOOTSTRAP_H

#include "uid.h"

extern const symheap_ccl_ops symheap__local_ccl_ops;

/* Collective: returns once all nranks ranks have joined, or fails on every
 * rank that got this far. */
symheap_result_t symheap__local_ccl_create(const symheap__uid_t *uid,
                                           int nranks, int rank, int timeout_ms,
                                           void **ctx);

/* A new id for a sub-comm of the job the local ccl context `ctx` belongs
 * to, of the same kind (TCP on the address this rank reaches rank 0 by). */
symheap_result_t symheap__local_ccl_new_uid(void *ctx, symheap_unique_id_t *id);

#endif

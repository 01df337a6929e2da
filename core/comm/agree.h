/* The agreement channels (comm floor): every fallible step of a collective
 * call ends in an agreement, so no rank goes on alone; over the ccl, or over
 * shared memory where every rank is on this host. */
#ifndef SYMHEAP_AGREE_H
#define SYMHEAP_AGREE_H

#include "comm.h"

/* agree.c: every fallible step ends here, so no rank goes on alone.
 * Payloads are at most SYMHEAP__AGREE_MAX bytes; every rank passes the same
 * len whatever happened to it (payload may be NULL: zeros are sent), and
 * `all` may be NULL when the caller has nowhere to put the results.
 * Exchanges each rank's status (and `len` payload bytes into `all`, which
 * may be NULL when len is 0).  Returns SUCCESS only if every rank succeeded;
 * otherwise every rank returns the code of the failure that caused the
 * others, with its rank and message.  `caused_by_peer` marks a local failure
 * that is only a consequence of a peer's (a missing handle). */
symheap_result_t symheap__agree(symheap_comm_t c, symheap_result_t local,
                                int caused_by_peer, const void *payload,
                                size_t len, void *all);

/* symheap__agree over shared memory where the comm can (agree_shm.c),
 * else the ccl: for the heap's fast path.  Every rank must choose the same
 * channel, so callers use it for every call of one kind. */
symheap_result_t symheap__agree_fast(symheap_comm_t c, symheap_result_t local,
                                     const void *payload, size_t len,
                                     void *all);
symheap_result_t symheap__agree_equal_fast(symheap_comm_t c,
                                           symheap_result_t local,
                                           uint64_t value, int *differ,
                                           uint64_t *v0, uint64_t *vp);
/* agree_shm.c: collective, at comm init after the descriptor mesh: shared
 * memory for agreements where every rank is on this host and the mesh
 * exists; off on every rank if any rank cannot have it (not a failure). */
symheap_result_t symheap__agree_shm_setup(symheap_comm_t c);
void symheap__agree_shm_close(symheap_comm_t c);
/* The channel's areas: one rank's, mapped from its memfd (NULL: failed);
 * every rank's unmapped (nranks pointers, freed). */
char *symheap__agree_shm_map(int fd);
void symheap__agree_shm_unmap(symheap_comm_t c, char **area);
symheap_result_t symheap__agree_shm_allgather(symheap_comm_t c, const void *in,
                                              void *out, size_t bytes);
/* comm_shm.c: symheap_comm_barrier and small symheap_comm_allgather over
 * the same shared memory, where every rank is on this host and the comm
 * runs on symheap's own bootstrap (the same answer on every rank). */
int symheap__collectives_by_shm(symheap_comm_t c);
symheap_result_t symheap__barrier_shm(symheap_comm_t c);
/* The allgather's size check (local failure r, every rank's size compared:
 * *differ the first rank that differs from rank 0, or -1), carrying the
 * data too where it is small: *carried then, and out is filled. */
symheap_result_t symheap__allgather_size_shm(symheap_comm_t c,
                                             symheap_result_t r, const void *in,
                                             void *out, size_t bytes,
                                             int *carried, int *differ,
                                             uint64_t *b0, uint64_t *bp);
/* symheap__agree, and whether every rank passed the same value: if not,
 * *differ is the first rank whose value (*vp) differs from rank 0's (*v0),
 * else -1.  The caller words the MISMATCH. */
symheap_result_t symheap__agree_equal(symheap_comm_t c, symheap_result_t local,
                                      uint64_t value, int *differ, uint64_t *v0,
                                      uint64_t *vp);

#endif

/* The comm's own collectives over the agreements' shared memory
 * (agree_shm.c), where every rank is on this host and the comm runs on
 * symheap's own bootstrap: symheap_comm_barrier, and the size check of
 * symheap_comm_allgather with a small payload riding in it.  Over the
 * bootstrap's sockets a barrier wakes the ranks one by one, and a socket
 * wake-up puts the woken rank on its waker's core: the ranks of a job that
 * calls these between heap allocations ended up on one CPU
 * (docs/perf/heap.md).  A caller's ccl (symheap_comm_init_ccl, and splits of
 * such a comm) keeps carrying the collectives it was handed for, as its
 * users expect (its own errors, its own progress). */
#include <string.h>

#include "boot/bootstrap.h"
#include "agree.h"

int symheap__collectives_by_shm(symheap_comm_t c) {
  return c->agree_shm && c->ccl.allgather == symheap__local_ccl_ops.allgather;
}

symheap_result_t symheap__barrier_shm(symheap_comm_t c) {
  char one = 0;
  return symheap__agree_shm_allgather(c, &one, c->agree_buf, 1);
}

/* The size check and up to SMALL_ALLGATHER bytes of data in one agreement,
 * instead of two exchanges (the check, then the data).  The records fit
 * the comm's scratch (nranks handles), so this needs no memory either. */
#define SMALL_ALLGATHER 120
typedef struct {
  uint64_t bytes;
  unsigned char data[SMALL_ALLGATHER];
} small_rec_t;
_Static_assert(sizeof(small_rec_t) <= sizeof(symheap_shareable_t) &&
                   sizeof(small_rec_t) <= SYMHEAP__AGREE_MAX,
               "a small allgather's record");

symheap_result_t symheap__allgather_size_shm(symheap_comm_t c,
                                             symheap_result_t r, const void *in,
                                             void *out, size_t bytes,
                                             int *carried, int *differ,
                                             uint64_t *b0, uint64_t *bp) {
  small_rec_t me, *all = (small_rec_t *)(void *)c->scratch_sh;
  memset(&me, 0, sizeof me);
  me.bytes = r == SYMHEAP_SUCCESS ? bytes : UINT64_MAX;
  if (r == SYMHEAP_SUCCESS && bytes && bytes <= SMALL_ALLGATHER)
    memcpy(me.data, in, bytes);
  r = symheap__agree_fast(c, r, &me, sizeof me, all);
  *differ = -1;
  for (int p = 1; p < c->nranks && r == SYMHEAP_SUCCESS && *differ < 0; p++)
    if (all[p].bytes != all[0].bytes) {
      *differ = p;
      *b0 = all[0].bytes;
      *bp = all[p].bytes;
    }
  *carried = r == SYMHEAP_SUCCESS && *differ < 0 && bytes <= SMALL_ALLGATHER;
  for (int p = 0; *carried && bytes && p < c->nranks; p++)
    memcpy((char *)out + (size_t)p * bytes, all[p].data, bytes);
  return r;
}

/* Agreements over shared memory: when every rank of the comm is on this host
 * and the CPU reaches window memory (the host backend), the heap's fast path
 * exchanges its agreement records through a private area after the comm
 * pad's public layout instead of the ccl's sockets.  Each rank writes its
 * record into one of two slots (by parity) of its own area and publishes the
 * agreement's number; the others read it through the flat VA.  A rank
 * writes slot k % 2 again only after agreement k + 1 completed, which every
 * rank reached after reading agreement k: no record is overwritten while a
 * peer may still read it.  Waits are bounded (SYMHEAP_TIMEOUT_MS); a peer
 * process that died is seen at once (its descriptor-mesh socket hangs up). */
#include <poll.h>
#include <sched.h>
#include <string.h>

#include "comm.h"

typedef struct {
  uint64_t seq; /* the agreement whose record this slot holds */
  uint64_t pad[7];
  char rec[SYMHEAP__AGREE_REC];
} shm_slot_t;
_Static_assert(2 * sizeof(shm_slot_t) <= SYMHEAP__AGREE_SHM_BYTES,
               "agreement area size");

void symheap__agree_shm_setup(symheap_comm_t c) {
  c->agree_shm = NULL;
  if (!c->pad_ready || !c->pad->flat || c->local_nranks != c->nranks ||
      !(c->caps.caps & SYMHEAP_CAP_HOST_ACCESS) ||
      c->pad->size < SYMHEAP_PAD_BYTES + SYMHEAP__AGREE_SHM_BYTES)
    return;
  c->agree_shm = c->pad->reserve + c->pad->head + SYMHEAP_PAD_BYTES;
  c->agree_shm_seq = 0;
}

static shm_slot_t *slot_of(symheap_comm_t c, int p, uint64_t k) {
  return (shm_slot_t *)(void *)(c->agree_shm + (size_t)p * c->pad->stride) +
         (k & 1);
}

/* Whether peer p's process is gone (its mesh socket hung up). */
static int peer_gone(symheap_comm_t c, int p) {
  if (!c->peer_fd || c->peer_fd[p] < 0)
    return 0;
  struct pollfd pf = {c->peer_fd[p], POLLRDHUP, 0};
  return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static symheap_result_t broken(symheap_comm_t c, symheap_result_t r) {
  c->broken = r;
  snprintf(c->broken_why, sizeof c->broken_why, "%s", symheap__error_peek());
  SYMHEAP_WARN("comm broken: %s", c->broken_why);
  return r;
}

symheap_result_t symheap__agree_shm_allgather(symheap_comm_t c,
                                              const void *in, void *out,
                                              size_t bytes) {
  if (c->broken != SYMHEAP_SUCCESS)
    return symheap__error(c->broken, "the comm failed earlier: %s",
                          c->broken_why);
  uint64_t k = ++c->agree_shm_seq;
  shm_slot_t *mine = slot_of(c, c->rank, k);
  memcpy(mine->rec, in, bytes);
  __atomic_store_n(&mine->seq, k, __ATOMIC_RELEASE);
  int64_t deadline = symheap__now_ms() + c->timeout_ms;
  for (int p = 0; p < c->nranks; p++) {
    shm_slot_t *s = slot_of(c, p, k);
    for (unsigned spin = 0; __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) < k;
         spin++) {
      if (spin < 64)
        continue;
      sched_yield(); /* ranks may outnumber cores */
      if (spin % 256 == 0 && peer_gone(c, p))
        return broken(c, symheap__error(SYMHEAP_ERR_REMOTE,
                                        "rank %d is gone (its process "
                                        "exited during an agreement)",
                                        p));
      if (spin % 64 == 0 && symheap__now_ms() > deadline)
        return broken(c, symheap__error(SYMHEAP_ERR_TIMEOUT,
                                        "rank %d did not reach the agreement "
                                        "within %d ms (SYMHEAP_TIMEOUT_MS)",
                                        p, c->timeout_ms));
    }
    memcpy((char *)out + bytes * (size_t)p, s->rec, bytes);
  }
  return SYMHEAP_SUCCESS;
}

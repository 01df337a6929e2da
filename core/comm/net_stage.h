/* Target-side staging (docs/network.md, "Staging"): where a rank's window
 * memory is device memory and the net adaptor cannot register it (no
 * SYMHEAP_NET_CAP_HMEM: tcp;ofi_rxm), the core registers a pinned host
 * shadow of the same size instead (net_reg.c), peers put their data into
 * it, then a descriptor into the target's control area; the target's
 * progress copies the shadow into device memory, applies the signal, and
 * acknowledges.  An initiator's quiet waits for every acknowledgement.
 *
 * Gets and fetching atomics (net_stage_get.c) go the same way: a
 * descriptor asks the target to copy device bytes into this initiator's
 * bounce slot at the target (read back with the adaptor's get), or to apply
 * an atomic and return the old value in its acknowledgement.
 *
 * The control area, one per comm and rank, host memory registered once:
 *   rings: nranks x SYMHEAP__STAGE_RING descriptors, initiator p's at p;
 *   acks:  nranks records, target q's acknowledgement of this rank's at q;
 *   slots: nranks x slot bytes, initiator p's get bounce slot at p (never
 *          the shadow: a get's copy there would overwrite a peer's put
 *          that landed and is not applied yet, losing it). */
#ifndef SYMHEAP_NET_STAGE_H
#define SYMHEAP_NET_STAGE_H

#include "net.h"

#define SYMHEAP__STAGE_RING 64u /* descriptors in flight per pair */
/* A get bounce slot: 16 MiB / nranks, within [4 KiB, 64 KiB] (the same on
 * every rank: it depends on nranks alone). */
#define SYMHEAP__STAGE_SLOT_MIN 4096u
#define SYMHEAP__STAGE_SLOT_MAX 65536u
#define SYMHEAP__STAGE_SLOT_ALL (16u << 20)

/* A descriptor's kind. */
enum {
  SYMHEAP__STAGE_PUT = 0,   /* data (len > 0) then an optional atomic */
  SYMHEAP__STAGE_GET = 1,   /* device [off, +len) into the bounce slot */
  SYMHEAP__STAGE_FETCH = 2, /* the atomic, its old value in the ack */
};

/* One staged operation as an initiator posts it: data already put into
 * the target's shadow of g at off (len bytes, 0: none), then an optional
 * non-fetching atomic (sig_op >= 0) of sig_size bytes on sg at sig_off. */
typedef struct {
  const symheap__netreg_t *g;
  uint64_t off, len;
  const symheap__netreg_t *sg;
  uint64_t sig_off, value;
  int sig_op; /* symheap_net_amo_t, -1: none */
  uint32_t sig_size;
  uint32_t kind;    /* SYMHEAP__STAGE_*: PUT unless set */
  uint64_t compare; /* FETCH's CSWAP */
} symheap__stage_op_t;

/* The state (net_stage.c: the control area and regions; net_stage_ops.c:
 * posting, waiting, draining). */
typedef struct { /* 80 bytes, as an initiator writes it */
  uint64_t seq;  /* the pair's count, from 1 */
  uint32_t sig_size, reg;
  uint64_t off, len;
  uint32_t sig_reg;
  int32_t sig_op;
  uint64_t sig_off, value;
  uint32_t kind, pad; /* SYMHEAP__STAGE_* */
  uint64_t compare;   /* CSWAP's */
  uint64_t check; /* of the words above: a descriptor half-written is not
                     taken */
} symheap__stage_desc_t;
typedef struct { /* as a target writes it: torn or whole, told apart */
  uint64_t applied, failed;
  uint64_t fetch_seq, fetched; /* the last FETCH descriptor's old value */
  uint64_t check;
} symheap__stage_ack_t;
typedef struct {
  void *dev, *shadow;
  size_t size;
} symheap__stage_reg_t;
typedef struct symheap__stage {
  symheap__netc_t *n;
  int rank, nranks;
  const symheap_device_ops *dev;
  void *dev_ctx;
  char *ctl; /* rings, then acks, then get slots */
  size_t ctl_size, ring_bytes, slots_at, slot;
  void *ctl_mr;
  void **ctl_rkeys;
  /* Initiator: per peer, descriptors posted (under post) and the last
   * acknowledgement read. */
  pthread_mutex_t post;
  uint64_t *sent, *acked, *failed_ack, *failed_seen;
  /* Initiator: held through a staged get or fetching atomic, so that this
   * rank has at most one in flight (one bounce slot, one fetched value per
   * target). */
  pthread_mutex_t fetch;
  /* Target: under drain, descriptors applied and failed per initiator, and
   * the staged regions by id (ids are not reused). */
  pthread_mutex_t drain;
  uint64_t *applied, *failed, *ack_sent;
  uint64_t *fetch_seq, *fetched; /* per initiator, for its ack */
  symheap__stage_reg_t *regs;
  uint32_t nregs, cap;
  int hold; /* atomic: tests */
  /* atomic: a drain found the drain lock taken; its holder drains again
   * (else a descriptor that landed after the holder scanned its ring
   * waited for the next drain, which a sleeping thread may never run). */
  int again;
} symheap__stage_t;
/* Descriptor and acknowledgement check words. */
uint64_t symheap__stage_check(const symheap__stage_desc_t *d);
uint64_t symheap__stage_ack_check(const symheap__stage_ack_t *a);
/* The control area's layout (net_stage_ops.c). */
symheap__stage_desc_t *symheap__stage_ring_at(symheap__stage_t *s, int from,
                                              uint64_t seq);
uint64_t symheap__stage_ack_off(symheap__stage_t *s, int target);
/* Target q's acknowledgement record as it stands (check it). */
void symheap__stage_read_ack(symheap__stage_t *s, int q,
                             symheap__stage_ack_t *a);
static inline uint64_t symheap__stage_slot_off(symheap__stage_t *s, int p) {
  return s->slots_at + (uint64_t)p * s->slot;
}

/* Collective, at net comm open after connect (agreed): the control area on
 * every rank when some rank needs staging; nothing (n->stage NULL) when
 * none does. */
symheap_result_t symheap__stage_open(symheap_comm_t c);
/* Local, at net comm close (the progress thread stopped, every staged
 * region gone). */
void symheap__stage_close(symheap_comm_t c);

/* Local (net_reg.c): a shadow for [dev, dev + size) and its id, or the
 * reason this rank's device memory cannot be staged. */
symheap_result_t symheap__stage_region(symheap_comm_t c, void *dev,
                                       size_t size, void **shadow,
                                       uint32_t *id);
void symheap__stage_region_free(symheap_comm_t c, uint32_t id, void *shadow);

/* Initiator: the data put of a staged range (into the shadow), then the
 * descriptor, in that order at the target.  src is reusable on return.
 * *seq (when seq is non-NULL): the descriptor's number in the pair. */
symheap_result_t symheap__stage_post(symheap_comm_t c, int peer,
                                     const void *src, unsigned flags,
                                     const symheap__stage_op_t *op,
                                     uint64_t *seq, const char *fn);
/* Initiator: every staged operation to peer (-1: to every peer) applied at
 * its target, progressing meanwhile; TIMEOUT naming the peer after
 * timeout_ms, REMOTE when a target could not apply one. */
symheap_result_t symheap__stage_wait(symheap__netc_t *n, int peer,
                                     int timeout_ms, const char *fn);
/* Target: apply what peers posted and acknowledge it (never blocks for
 * another drainer; a no-op without staging).  wait 0: never wait for the
 * adaptor's lock either (an acknowledgement then stays owed to the next
 * drain). */
void symheap__stage_drain(symheap__netc_t *n, int wait);
/* Whether a drain has work (a descriptor posted and not applied, or an
 * acknowledgement owed): the progress thread does not sleep while it has,
 * since nothing on the engine's fds would wake it for that work. */
int symheap__stage_pending(symheap__netc_t *n);

/* One turn of this rank's engine (counted as a call, waiting for its
 * lock) and of its drain: what a caller that waits does each round. */
void symheap__net_turn(symheap__netc_t *n);
/* A polling thread's idle turn (the device proxy's): progress the engine
 * if no other thread holds it, uncounted (the progress thread may still
 * take the engine and sleep on it), then apply peers' staged puts.  Without
 * it, a target whose only busy thread is its proxy took a peer's write in
 * only when the progress thread's nap (milliseconds) ended. */
void symheap__net_poke(symheap__netc_t *n);
/* Tests: 1 makes this rank apply nothing (a target that never
 * progresses), 0 lets it go. */
void symheap__stage_hold(symheap_comm_t c, int on);
/* Initiator (net_stage_get.c): len bytes of peer's staged region g at off
 * into dst, complete on return (get_nbi too: one bounce slot per pair). */
symheap_result_t symheap__stage_get(symheap_comm_t c, int peer, void *dst,
                                    const symheap__netreg_t *g, uint64_t off,
                                    size_t len, const char *fn);
/* Initiator (net_stage_get.c): an atomic on peer's staged region g at off,
 * applied by the target one at a time with every other network atomic on
 * its staged windows; a fetching one (fetch non-NULL) waits for its old
 * value. */
symheap_result_t symheap__stage_atomic(symheap_comm_t c, int peer,
                                       const symheap__netreg_t *g,
                                       uint64_t off, symheap_net_amo_t op,
                                       size_t size, const void *operand,
                                       const void *compare, void *fetch,
                                       const char *fn);
/* Target (net_stage_apply.c): one descriptor from initiator p applied. */
symheap_result_t symheap__stage_apply(symheap__stage_t *s, int p,
                                      const symheap__stage_desc_t *d);

#endif

/* Agreements over shared memory: when every rank of the comm is on this
 * host, the heap's fast path (malloc, free, reserve, trim) exchanges its
 * agreement records through a little host memory every rank maps (a memfd
 * per rank, exchanged over the descriptor mesh at comm init) instead of the
 * ccl's sockets; whatever the device is, since these are host records.
 * Each rank writes its record into one of two slots (by parity) of its own
 * area and publishes the agreement's number; the others read it.  A rank
 * writes slot k % 2 again only after agreement k + 1 completed, which every
 * rank reached after reading agreement k: no record is overwritten while a
 * peer may still read it.  Waits are bounded (SYMHEAP_TIMEOUT_MS); a peer
 * process that died is seen at once (its mesh socket hangs up).
 * How a rank waits (wait_for): a short spin, then sched_yield, since ranks
 * may outnumber cores and the peer it waits for may need this very core;
 * after SPIN_NS of that, asleep on a futex in rank 0's area, woken by the
 * rank that completes the agreement.  Not asleep at once: on the machine
 * measured in docs/perf/heap.md a 4-process agreement took 6-8 us with
 * yields and 13-17 us with futex sleeps, so sleeping pays only when a peer
 * is really late (busy elsewhere, growing the heap, stopped).  But a yield
 * hands the core to whoever else wants it, and a process that is not a
 * rank (a compiler, say) keeps it for its whole time slice: with two busy
 * loops beside them, 4 processes took 2.6 ms per agreement yielding and
 * 15 us sleeping.  So a yield that took longer than SLOW_YIELD_NS makes
 * this rank sleep without yielding for its next agreements (16, doubling
 * while yields stay slow, at most 1024), then try a yield again. */
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agree.h"

typedef struct {
  uint64_t seq; /* the agreement whose record this slot holds */
  uint64_t pad[7];
  char rec[SYMHEAP__AGREE_REC];
} shm_slot_t;
/* After the two slots: whether this rank gave up on an agreement (timed
 * out, or saw a peer die), and why.  A rank that was late (stopped, say)
 * reads it and fails that agreement too, instead of completing what its
 * peers abandoned. */
typedef struct {
  uint64_t gave_up; /* the agreement it abandoned; 0: none */
  char why[248];
} shm_poison_t;
/* After the poison, in rank 0's area only: the word the sleepers sleep on.
 * gen is the low 32 bits of the last agreement every rank published (ranks
 * wait only for the current one, so 32 bits never alias); sleepers counts
 * the ranks asleep on it, so that a wake costs a system call only when
 * someone sleeps. */
typedef struct {
  uint32_t gen;
  uint32_t sleepers;
} shm_wake_t;
_Static_assert(2 * sizeof(shm_slot_t) + sizeof(shm_poison_t) +
                       sizeof(shm_wake_t) <=
                   SYMHEAP__AGREE_SHM_BYTES,
               "agreement area size");

void symheap__agree_shm_unmap(symheap_comm_t c, char **area) {
  for (int p = 0; area && p < c->nranks; p++)
    if (area[p])
      munmap(area[p], SYMHEAP__AGREE_SHM_BYTES);
  free(area);
}

void symheap__agree_shm_close(symheap_comm_t c) {
  symheap__agree_shm_unmap(c, c->agree_shm);
  c->agree_shm = NULL;
}

char *symheap__agree_shm_map(int fd) {
  void *m = mmap(NULL, SYMHEAP__AGREE_SHM_BYTES, PROT_READ | PROT_WRITE,
                 MAP_SHARED, fd, 0);
  return m == MAP_FAILED ? NULL : m;
}


static shm_slot_t *slot_of(symheap_comm_t c, int p, uint64_t k) {
  return (shm_slot_t *)(void *)c->agree_shm[p] + (k & 1);
}

/* Whether peer p's process is gone (its mesh socket hung up). */
static int peer_gone(symheap_comm_t c, int p) {
  if (!c->fdx.peer_fd || c->fdx.peer_fd[p] < 0)
    return 0;
  struct pollfd pf = {c->fdx.peer_fd[p], POLLRDHUP, 0};
  return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static shm_poison_t *poison_of(symheap_comm_t c, int p) {
  return (shm_poison_t *)(void *)(c->agree_shm[p] + 2 * sizeof(shm_slot_t));
}

/* How long a rank yields before it sleeps, and the longest sleep between
 * looks at its peers' sockets and its deadline. */
#define SPIN_NS (200 * 1000)
#define SLEEP_NS (10 * 1000 * 1000)
#define SLOW_YIELD_NS (50 * 1000)
#define NO_YIELD_FIRST 16
#define NO_YIELD_MAX 1024

static shm_wake_t *wake_of(symheap_comm_t c) {
  return (shm_wake_t *)(void *)(c->agree_shm[0] + 2 * sizeof(shm_slot_t) +
                                sizeof(shm_poison_t));
}

/* Shared (not private) futexes: the ranks are processes, or threads each
 * with its own mapping of the same memfd page. */
static void futex(uint32_t *word, int op, uint32_t val,
                  const struct timespec *timeout) {
  (void)syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

static int all_published(symheap_comm_t c, uint64_t k) {
  for (int p = 0; p < c->nranks; p++)
    if (__atomic_load_n(&slot_of(c, p, k)->seq, __ATOMIC_SEQ_CST) < k)
      return 0;
  return 1;
}

/* After publishing: the rank that completes agreement k wakes the sleepers.
 * Publishing and these loads are sequentially consistent, so the last rank
 * to publish sees every record and wakes them; the compare-and-swap keeps
 * it to one wake when two ranks see it at once. */
static void wake_if_complete(symheap_comm_t c, uint64_t k) {
  shm_wake_t *w = wake_of(c);
  uint32_t g = __atomic_load_n(&w->gen, __ATOMIC_SEQ_CST);
  if (g == (uint32_t)k || !all_published(c, k) ||
      !__atomic_compare_exchange_n(&w->gen, &g, (uint32_t)k, 0,
                                   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    return;
  if (__atomic_load_n(&w->sleepers, __ATOMIC_SEQ_CST))
    futex(&w->gen, FUTEX_WAKE, INT_MAX, NULL);
}

/* Asleep until agreement k completes, at most SLEEP_NS.  Counted among the
 * sleepers before reading gen, so either this rank sees gen moved or the
 * waker sees it counted (and FUTEX_WAIT returns at once if gen moved in
 * between). */
static void sleep_on(symheap_comm_t c, uint64_t k) {
  shm_wake_t *w = wake_of(c);
  __atomic_add_fetch(&w->sleepers, 1, __ATOMIC_SEQ_CST);
  uint32_t g = __atomic_load_n(&w->gen, __ATOMIC_SEQ_CST);
  struct timespec slice = {0, SLEEP_NS};
  if (g != (uint32_t)k)
    futex(&w->gen, FUTEX_WAIT, g, &slice);
  __atomic_sub_fetch(&w->sleepers, 1, __ATOMIC_SEQ_CST);
}

/* A peer that gave up on agreement k or later: this rank cannot complete
 * it (or anything after it) either. */
static symheap_result_t peers_gave_up(symheap_comm_t c, uint64_t k) {
  for (int p = 0; p < c->nranks; p++) {
    shm_poison_t *x = poison_of(c, p);
    uint64_t g =
        p == c->rank ? 0 : __atomic_load_n(&x->gave_up, __ATOMIC_ACQUIRE);
    if (g && g <= k) {
      char why[sizeof x->why];
      memcpy(why, x->why, sizeof why);
      why[sizeof why - 1] = '\0';
      return symheap__error(SYMHEAP_ERR_REMOTE,
                            "rank %d gave up on agreement #%llu (this rank "
                            "arrived late, or was stopped): %s",
                            p, (unsigned long long)g, why);
    }
  }
  return SYMHEAP_SUCCESS;
}

static symheap_result_t broken(symheap_comm_t c, symheap_result_t r) {
  /* Say so where a late peer will look, before anything else. */
  shm_poison_t *mine = poison_of(c, c->rank);
  if (!__atomic_load_n(&mine->gave_up, __ATOMIC_RELAXED)) {
    snprintf(mine->why, sizeof mine->why, "%s", symheap__error_peek());
    __atomic_store_n(&mine->gave_up, c->agree_shm_seq, __ATOMIC_RELEASE);
  }
  return symheap__comm_break(c, r);
}

/* A yield that lost the core to someone else: sleep instead for a while. */
static void yield_was_slow(symheap_comm_t c) {
  uint32_t b = c->agree_backoff ? c->agree_backoff : NO_YIELD_FIRST;
  c->agree_no_yield = b;
  c->agree_backoff = b < NO_YIELD_MAX ? 2 * b : NO_YIELD_MAX;
}

/* One yield, or one sleep once yielding is over (SPIN_NS, or a slow yield):
 * whether it slept. */
static int wait_once(symheap_comm_t c, uint64_t k, uint64_t t0,
                     int *may_yield) {
  uint64_t t = symheap__now_ns();
  if (!*may_yield || t - t0 >= SPIN_NS) {
    sleep_on(c, k);
    return 1;
  }
  sched_yield();
  if (symheap__now_ns() - t > SLOW_YIELD_NS) {
    yield_was_slow(c);
    *may_yield = 0;
  }
  return 0;
}

/* Until peer p published agreement k (the comm's deadline at most; a dead
 * peer is seen within 256 yields or one sleep). */
static symheap_result_t wait_for(symheap_comm_t c, int p, uint64_t k,
                                 uint64_t t0, int64_t deadline,
                                 int *may_yield) {
  shm_slot_t *s = slot_of(c, p, k);
  for (unsigned spin = 0; __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) < k;
       spin++) {
    if (spin < 64)
      continue;
    int slept = wait_once(c, k, t0, may_yield);
    /* Gone, and without publishing: a peer may publish, complete the
     * agreement and exit (a comm's final barrier) while this rank sleeps. */
    if ((slept || spin % 256 == 0) && peer_gone(c, p) &&
        __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) < k)
      return broken(c, symheap__error(SYMHEAP_ERR_REMOTE,
                                      "rank %d is gone (its process "
                                      "exited during an agreement)",
                                      p));
    if ((slept || spin % 64 == 0) && symheap__now_ms() > deadline)
      return broken(c, symheap__error(SYMHEAP_ERR_TIMEOUT,
                                      "rank %d did not reach the agreement "
                                      "within %d ms (SYMHEAP_TIMEOUT_MS)",
                                      p, c->timeout_ms));
  }
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__agree_shm_allgather(symheap_comm_t c, const void *in,
                                              void *out, size_t bytes) {
  if (c->broken != SYMHEAP_SUCCESS)
    return symheap__error(c->broken, "the comm failed earlier: %s",
                          c->broken_why);
  uint64_t k = ++c->agree_shm_seq;
  symheap_result_t late = peers_gave_up(c, k);
  if (late != SYMHEAP_SUCCESS)
    return broken(c, late);
  shm_slot_t *mine = slot_of(c, c->rank, k);
  memcpy(mine->rec, in, bytes);
  __atomic_store_n(&mine->seq, k, __ATOMIC_SEQ_CST);
  wake_if_complete(c, k);
  int64_t deadline = symheap__call_deadline(c);
  uint64_t t0 = symheap__now_ns();
  int may_yield = c->agree_no_yield == 0;
  if (!may_yield)
    c->agree_no_yield--;
  for (int p = 0; p < c->nranks; p++) {
    symheap_result_t r = wait_for(c, p, k, t0, deadline, &may_yield);
    if (r != SYMHEAP_SUCCESS)
      return r;
    memcpy((char *)out + bytes * (size_t)p, slot_of(c, p, k)->rec, bytes);
  }
  if (may_yield) /* yields were fast (or not needed): start over at 16 */
    c->agree_backoff = 0;
  /* Everyone published; a peer that gave up since (it timed out while
   * this rank was away) still fails this rank's agreement. */
  late = peers_gave_up(c, k);
  return late == SYMHEAP_SUCCESS ? late : broken(c, late);
}

/* Barriers, ordering and locks.
 *
 * A group's barrier counts arrivals on its first PE (an atomic add on that
 * PE's arrival word); the last to arrive zeroes the count, raises every
 * other member's release flag, which each member lowers as it leaves (adds
 * and subtracts: eager collectives raise the same word), and wakes the
 * sleepers with one futex wake on the first PE's wake word.
 * Every word is back to zero when the barrier ends, so the same words (a
 * team's slot, or the caller's pSync) serve the next one, and pSync is
 * handed back as it was given, as the specification asks. */
/* ThreadSanitizer does not model fences; gcc refuses them under it unless
 * told to let them be (the tests run the layer under TSan). */
#if defined(__SANITIZE_THREAD__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif
#include <sched.h>

#include "shmem_peer.h"

/* The same across hosts: the arrival and the releases are symheap_atomic
 * (the words' one atomicity domain, whichever host the PEs are on), the
 * waits symheap_signal_wait_until on this PE's own word (it progresses the
 * network engine).  Each PE zeroes its own word with a plain store once it
 * has seen it: no atomic on that word can be in flight then (the next ones
 * come only after this PE's next arrival). */
static void barrier_net(const struct shm_group *g) {
  int root = shm__group_pe(g, 0);
  long one = 1;
  shm__amo(&g->sync[0], root, SYMHEAP_AMO_ADD, sizeof(long), &one, NULL,
           NULL);
  if (g->me == 0) {
    shm__net_wait_word(&g->sync[0], SHMEM_CMP_EQ, (uint64_t)g->size);
    __atomic_store_n(&g->sync[0], 0, __ATOMIC_SEQ_CST);
    for (int i = 1; i < g->size; i++)
      shm__amo(&g->sync[1], shm__group_pe(g, i), SYMHEAP_AMO_SET, sizeof(long),
               &one, NULL, NULL);
  } else {
    shm__net_wait_word(&g->sync[1], SHMEM_CMP_NE, 0);
    __atomic_store_n(&g->sync[1], 0, __ATOMIC_SEQ_CST);
  }
}

void shm__barrier(const struct shm_group *g) {
  if (g->me < 0)
    shm__fatal("a collective called by a PE outside its team or active set");
  if (g->size == 1)
    return;
  if (shm__s.net) {
    barrier_net(g);
    return;
  }
  if (shm__oversubscribed())
    (void)shm__note_cpu(); /* the last to arrive may never wait (wait.c) */
  int root = shm__group_pe(g, 0);
  long *count = (long *)shm__peer(&g->sync[0], root);
  /* The last to arrive releases everyone: no PE has to be scheduled
   * between the last arrival and the release (with more PEs than CPUs,
   * each such turn costs a time slice). */
  if (__atomic_add_fetch(count, 1, __ATOMIC_SEQ_CST) == g->size) {
    __atomic_store_n(count, 0, __ATOMIC_RELAXED);
    for (int i = 0; i < g->size; i++) {
      if (i == g->me)
        continue;
      long *flag = (long *)shm__peer(&g->sync[1], shm__group_pe(g, i));
      __atomic_add_fetch(flag, 1, __ATOMIC_SEQ_CST); /* a count: coll.c */
    }
    shm__wake_group(root);
    /* With more PEs than CPUs, the released run first: this PE would only
     * run on into its next wait, where they have work to do.  OSU's
     * broadcast loop (broadcast, barrier) on one CPU: the last arriver, a
     * member, went on into the next broadcast before its root (asleep
     * here) had run, and waited out every PE's turn (a 34-48 us median);
     * yielding, the root posts first and no member waits (0.1-0.2 us). */
    if (shm__oversubscribed())
      sched_yield();
  } else {
    shm__wait_released(&g->sync[1], root);
    __atomic_sub_fetch(&g->sync[1], 1, __ATOMIC_RELAXED);
  }
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

int shm__active_group(int start, int log_stride, int size, long *psync,
                      struct shm_group *g) {
  if (start < 0 || size < 1 || log_stride < 0 || log_stride > 30 ||
      start + (long)(size - 1) * (1L << log_stride) >= shm__s.npes)
    shm__fatal("active set (start %d, log stride %d, size %d) is out of "
               "range for %d PEs",
               start, log_stride, size, shm__s.npes);
  int stride = 1 << log_stride;
  int off = shm__s.me - start;
  *g = (struct shm_group){
      .start = start,
      .stride = stride,
      .size = size,
      .me = off >= 0 && off % stride == 0 && off / stride < size ? off / stride
                                                                 : -1,
      .sync = psync};
  return 0;
}

/* This host's stores complete as they are made (a CPU fence orders them);
 * across hosts, symheap_quiet and symheap_fence (which start with that
 * fence).  Every context shares the PE's one engine. */
void shmem_quiet(void) {
  if (shm__s.net)
    shm__net_quiet();
  else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void shmem_ctx_quiet(shmem_ctx_t ctx) {
  (void)ctx;
  shmem_quiet();
}
void shmem_fence(void) {
  if (shm__s.net)
    shm__net_fence();
  else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void shmem_ctx_fence(shmem_ctx_t ctx) {
  (void)ctx;
  shmem_fence();
}

int shmem_team_sync(shmem_team_t team) {
  shm__require_init("shmem_team_sync");
  if (team == SHMEM_TEAM_INVALID)
    return -1;
  struct shm_group g;
  shm__team_group(team, &g);
  if (g.me < 0)
    return -1;
  shm__barrier(&g);
  return 0;
}

/* Each says its own name when called before shmem_init (before: both
 * said shmem_team_sync). */
void shmem_sync_all(void) {
  shm__require_init("shmem_sync_all");
  shmem_team_sync(SHMEM_TEAM_WORLD);
}

void shmem_barrier_all(void) {
  shm__require_init("shmem_barrier_all");
  shmem_quiet();
  shmem_team_sync(SHMEM_TEAM_WORLD);
}

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync) {
  shm__require_init("shmem_barrier");
  struct shm_group g;
  shm__active_group(PE_start, logPE_stride, PE_size, pSync, &g);
  shmem_quiet();
  shm__barrier(&g);
}

void symheap_shmem_sync_active(int PE_start, int logPE_stride, int PE_size,
                               long *pSync) {
  shm__require_init("shmem_sync");
  struct shm_group g;
  shm__active_group(PE_start, logPE_stride, PE_size, pSync, &g);
  shm__barrier(&g);
}

/* Locks: the lock word on PE 0 holds 1 + the holder's PE, or 0. */
int shmem_test_lock(long *lock) {
  shm__require_init("shmem_test_lock");
  if (shm__s.net) { /* the lock word's domain: symheap_atomic */
    long zero = 0, mine = (long)shm__s.me + 1, old = 0;
    shm__amo(lock, 0, SYMHEAP_AMO_CSWAP, sizeof(long), &mine, &zero, &old);
    return old == 0 ? 0 : 1;
  }
  long *l = (long *)shm__peer(lock, 0), zero = 0;
  return __atomic_compare_exchange_n(l, &zero, (long)shm__s.me + 1, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
             ? 0
             : 1;
}

void shmem_set_lock(long *lock) {
  struct shm_spin spin = SHM_SPIN_INIT;
  while (shmem_test_lock(lock) != 0)
    shm__spin(&spin);
}

void shmem_clear_lock(long *lock) {
  shm__require_init("shmem_clear_lock");
  shmem_quiet();
  if (shm__s.net) {
    long held = 0, zero = 0;
    shm__amo(lock, 0, SYMHEAP_AMO_FETCH, sizeof(long), NULL, NULL, &held);
    if (held != (long)shm__s.me + 1)
      shm__fatal("shmem_clear_lock on a lock this PE does not hold");
    shm__amo(lock, 0, SYMHEAP_AMO_SET, sizeof(long), &zero, NULL, NULL);
    return;
  }
  long *l = (long *)shm__peer(lock, 0);
  if (__atomic_load_n(l, __ATOMIC_RELAXED) != (long)shm__s.me + 1)
    shm__fatal("shmem_clear_lock on a lock this PE does not hold");
  __atomic_store_n(l, 0L, __ATOMIC_RELEASE);
}

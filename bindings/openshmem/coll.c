/* Collective data movement over a group (a team or an active set).
 *
 * Collectives pull: after a barrier (every PE's source is ready), each
 * PE reads what it needs straight from the peers' copies of source, and a
 * second barrier keeps sources unchanged until every PE has read them
 * (small broadcasts are eager instead, with no barrier: see below).
 * Reductions combine the peers' sources in PE order on every PE, so every PE
 * gets the same bits (floating point included), into a private buffer first
 * so that dest may be source.  With zero bytes only the barriers run: no
 * pointer is looked at (Annex C: any pointer is valid for no elements). */
#include <stdlib.h>
#include <string.h>

#include "shmem_internal.h"

/* Up to SHM_BCAST_EAGER bytes a broadcast waits for nobody but the root,
 * as MPI's eager messages do: the root copies source into its control
 * block's bcast_data, and raises every member's flag (sync[1]); a member
 * waits for its flag, copies out of the root's bcast_data into its dest,
 * lowers the flag and counts itself off the root's bcast_readers.  The root
 * returns at once and its next small broadcast first waits for the readers
 * of this one (it claims bcast_data by moving bcast_readers from 0).  With
 * more PEs than CPUs every barrier costs a turn of every PE on a CPU: the
 * two barriers of a pulled broadcast took 230-400 us at 4 PEs on 2 loaded
 * cores, against Open MPI's 15-45 us.  A flag counts raises (added, never
 * stored, here and by the barrier's release, which shares the word), so a
 * raise for a later call (back-to-back broadcasts with other roots and other
 * dests, or the release of the barrier that follows) is never lost: a member
 * takes one raise per call, and whichever it takes, its current call's root
 * has written its data (a root raising for a later call has passed this
 * call, which needs this call's root's raise), and cannot rewrite it before
 * every member has copied.  Larger broadcasts are
 * pulled by every member at once between two barriers (parallel copies). */
static void broadcast_eager(const struct shm_group *g, void *dest,
                            const void *source, size_t bytes, int root) {
  struct shm_spin spin = SHM_SPIN_INIT;
  int root_pe = shm__group_pe(g, root);
  long *readers = (long *)shm__peer(&shm__s.ctrl->bcast_readers, root_pe);
  if (g->me != root) {
    while (__atomic_load_n(&g->sync[1], __ATOMIC_ACQUIRE) == 0)
      shm__spin_on(&spin, &g->sync[1], 0);
    if (bytes)
      memcpy(dest, shm__peer(shm__s.ctrl->bcast_data, root_pe), bytes);
    __atomic_sub_fetch(&g->sync[1], 1, __ATOMIC_RELEASE);
    __atomic_sub_fetch(readers, 1, __ATOMIC_RELEASE);
    return;
  }
  long zero = 0;
  while (!__atomic_compare_exchange_n(readers, &zero, (long)g->size - 1, 0,
                                      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    zero = 0;
    shm__spin(&spin);
  }
  if (bytes)
    memcpy(shm__s.ctrl->bcast_data, source, bytes);
  for (int i = 0; i < g->size; i++) {
    if (i == root)
      continue;
    int pe = shm__group_pe(g, i);
    long *flag = (long *)shm__peer(&g->sync[1], pe);
    __atomic_add_fetch(flag, 1, __ATOMIC_SEQ_CST);
    shm__wake(pe, flag);
  }
}

void shm__broadcast(const struct shm_group *g, void *dest, const void *source,
                    size_t bytes, int root, int root_too) {
  if (root < 0 || root >= g->size)
    shm__fatal("broadcast root %d is out of range (0..%d)", root, g->size - 1);
  if (g->me < 0)
    shm__fatal("a collective called by a PE outside its team or active set");
  if (g->me == root && root_too && bytes && dest != source)
    memmove(dest, source, bytes);
  if (bytes <= SHM_BCAST_EAGER) {
    if (g->size > 1)
      broadcast_eager(g, dest, source, bytes, root);
    return;
  }
  shm__barrier(g);
  if (g->me != root)
    memcpy(dest, shm__peer(source, shm__group_pe(g, root)), bytes);
  shm__barrier(g);
}

/* fixed: every PE gives `bytes`; else each gives its own `bytes`, and the
 * sizes travel in the scratch word (zeroed again at the end, for pSync). */
void shm__collect(const struct shm_group *g, void *dest, const void *source,
                  size_t bytes, int fixed) {
  if (!fixed)
    __atomic_store_n(&g->sync[2], (long)bytes, __ATOMIC_RELEASE);
  shm__barrier(g);
  size_t off = 0;
  for (int i = 0; i < g->size; i++) {
    int pe = shm__group_pe(g, i);
    size_t n = bytes;
    if (!fixed)
      n = (size_t)__atomic_load_n((long *)shm__peer(&g->sync[2], pe),
                                  __ATOMIC_ACQUIRE);
    if (n)
      memcpy((char *)dest + off, shm__peer(source, pe), n);
    off += n;
  }
  shm__barrier(g);
  if (!fixed)
    __atomic_store_n(&g->sync[2], 0L, __ATOMIC_RELAXED);
}

static void copy_strided(char *d, ptrdiff_t dst, const char *s, ptrdiff_t sst,
                         size_t n, size_t elem) {
  if (dst == 1 && sst == 1) {
    memcpy(d, s, n * elem);
    return;
  }
  for (size_t k = 0; k < n; k++)
    memcpy(d + (ptrdiff_t)k * dst * (ptrdiff_t)elem,
           s + (ptrdiff_t)k * sst * (ptrdiff_t)elem, elem);
}

void shm__alltoalls(const struct shm_group *g, void *dest, const void *source,
                    ptrdiff_t dst, ptrdiff_t sst, size_t n, size_t elem) {
  shm__barrier(g);
  for (int j = 0; j < g->size && n; j++) {
    int i = (g->me + j) % g->size; /* start at a different peer each */
    const char *s = shm__peer(source, shm__group_pe(g, i)) +
                    (ptrdiff_t)g->me * (ptrdiff_t)n * sst * (ptrdiff_t)elem;
    char *d =
        (char *)dest + (ptrdiff_t)i * (ptrdiff_t)n * dst * (ptrdiff_t)elem;
    copy_strided(d, dst, s, sst, n, elem);
  }
  shm__barrier(g);
}

void shm__reduce(const struct shm_group *g, void *dest, const void *source,
                 size_t n, size_t elem, shm_combine_fn combine) {
  void *acc = malloc(n * elem + 1);
  if (!acc)
    shm__fatal("reduction of %zu bytes: out of memory", n * elem);
  shm__barrier(g);
  if (n) {
    memcpy(acc, shm__peer(source, shm__group_pe(g, 0)), n * elem);
    for (int i = 1; i < g->size; i++)
      combine(acc, shm__peer(source, shm__group_pe(g, i)), n);
  }
  shm__barrier(g);
  if (n)
    memcpy(dest, acc, n * elem);
  free(acc);
}

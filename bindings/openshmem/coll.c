/* Collective data movement over a group (a team or an active set).
 *
 * Collectives pull: after a barrier (every PE's source is ready), each
 * PE reads what it needs straight from the peers' copies of source, and a
 * second barrier keeps sources unchanged until every PE has read them
 * (under SHMEM_THREAD_MULTIPLE).  Otherwise broadcasts, reductions and
 * collects are eager, with no barrier: see below; and broadcasts and
 * fcollects push into the peers' dest (broadcast_push, collect_push).
 * Reductions combine the peers' sources in PE order on every PE, so every PE
 * gets the same bits (floating point included), into a private buffer first
 * so that dest may be source.  With zero bytes only the barriers run: no
 * pointer is looked at (Annex C: any pointer is valid for no elements).
 * A PE on another host is read by symheap_get (shm__getmem) instead, on the
 * barrier forms (eager ones reach peers' control blocks by load/store). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_peer.h"

/* Collectives are eager, as MPI's eager messages are: a PE copies its
 * data into its control block's eager_data (up to SHM_EAGER bytes; larger
 * data is read from its source instead, and its owner waits for its
 * readers before it returns) and raises a flag (sync[1]) on each PE that
 * will read it; a reader waits for its flags, copies out of the writers'
 * eager_data (or sources) and counts itself off their eager_readers.
 * Nobody waits for a barrier: a broadcast waits for its root alone (and a
 * small one's root for nobody), a reduction or collect for the last PE to
 * post.  A PE's next eager call first waits for the readers of its
 * previous one (it claims eager_data by moving eager_readers from 0).
 * With more PEs than CPUs every barrier costs a turn of every PE on a CPU:
 * the two barriers of a pulled broadcast took 230-400 us at 4 PEs on 2
 * loaded cores, against Open MPI's 15-45 us.
 *
 * A flag counts raises (added, never stored, here and by the barrier's
 * release, which shares the word), so a raise for a later call (back to
 * back calls, or the release of the barrier that follows) is never lost: a
 * reader takes as many raises as its call expects, and whichever it takes,
 * the writers of its current call have written their data (a PE raising for
 * a later call has passed this call, which needed this call's writers'
 * raises), and cannot rewrite it before every reader has copied.
 *
 * Not under SHMEM_THREAD_MULTIPLE: threads of one PE may then run
 * collectives on different teams at once, and with one eager_data per PE
 * two PEs could each wait for the other's buffer (each held by the call the
 * other has not reached); the barrier forms below serve that level, on
 * every PE once one asked for it (init.c, same_collectives).  Nor on a job
 * across hosts: another host's control block is no load or store away. */
static int eager_ok(void) { return shm__s.eager && !shm__s.net; }

static void eager_claim(long readers, const void *source, size_t bytes) {
  struct shm_spin spin = SHM_SPIN_INIT;
  long seen = 0;
  /* The readers of the previous call wake this PE as the last leaves. */
  while (!__atomic_compare_exchange_n(&shm__s.ctrl->eager_readers, &seen,
                                      readers, 0, __ATOMIC_ACQUIRE,
                                      __ATOMIC_RELAXED)) {
    shm__spin_on(&spin, &shm__s.ctrl->eager_readers, (int)seen);
    seen = 0;
  }
  shm__s.ctrl->eager_len = (long)bytes;
  if (bytes && bytes <= SHM_EAGER)
    memcpy(shm__s.ctrl->eager_data, source, bytes);
}

/* After a collect whose data was too large for eager_data (read straight
 * from source): waits until every reader has copied it. */
static void eager_finish(size_t bytes) {
  struct shm_spin spin = SHM_SPIN_INIT;
  long seen;
  if (bytes <= SHM_EAGER)
    return;
  while ((seen = __atomic_load_n(&shm__s.ctrl->eager_readers,
                                 __ATOMIC_ACQUIRE)) != 0)
    shm__spin_on(&spin, &shm__s.ctrl->eager_readers, (int)seen);
}

/* Raises the flag of every member but this PE (and but skip), then wakes
 * those asleep (one wake for the group: wait.c). */
static void eager_post(const struct shm_group *g, int skip) {
  for (int i = 0; i < g->size; i++) {
    if (i == g->me || i == skip)
      continue;
    long *flag = (long *)shm__peer(&g->sync[1], shm__group_pe(g, i));
    __atomic_add_fetch(flag, 1, __ATOMIC_SEQ_CST);
  }
  shm__wake_group(shm__group_pe(g, 0));
}

/* Waits for n raises of this PE's flag, and takes them. */
static void eager_wait(const struct shm_group *g, long n) {
  shm__wait_raised(&g->sync[1], n, shm__group_pe(g, 0));
  __atomic_sub_fetch(&g->sync[1], n, __ATOMIC_RELAXED);
}

/* Every member's data is posted: each posts to every other (the last post
 * frees everyone, no turn between).  With more PEs than CPUs, posting
 * through the barrier instead (its last arriver wakes everyone once) was
 * tried and was slower: 4-PE reductions of 4 B-1 KiB took 86-176 us (median
 * of 3) against 80-103 us with the posts, in two runs minutes apart on 2
 * loaded CPUs (docs/perf/openshmem.md). */
static void eager_all_posted(const struct shm_group *g) {
  eager_post(g, -1);
  eager_wait(g, g->size - 1);
}

/* Member i's data (this PE's own included) and its length: its eager_data,
 * or its source when that was too large. */
static const char *eager_of(const struct shm_group *g, int i,
                            const void *source, size_t *len) {
  int pe = shm__group_pe(g, i);
  struct shm_ctrl *c = (struct shm_ctrl *)shm__peer(shm__s.ctrl, pe);
  *len = (size_t)__atomic_load_n(&c->eager_len, __ATOMIC_RELAXED);
  return *len <= SHM_EAGER ? c->eager_data : shm__peer(source, pe);
}

/* Done reading member i's data. */
static void eager_done(const struct shm_group *g, int i) {
  if (i == g->me)
    return;
  int pe = shm__group_pe(g, i);
  struct shm_ctrl *c = (struct shm_ctrl *)shm__peer(shm__s.ctrl, pe);
  /* The writer waits for 0: before its next call, and before it returns
   * when its data was read from its source. */
  if (__atomic_sub_fetch(&c->eager_readers, 1, __ATOMIC_SEQ_CST) == 0)
    shm__wake(pe, &c->eager_readers);
}

/* A collective's symmetric buffer of `bytes` (SIZE_MAX: its count
 * overflowed, symheap_shmem_bytes) lies in one region, on this PE; what
 * the peers read of it is the same range of theirs.  Before, only its
 * first byte was looked at: a length past the heap's end copied over
 * what lay beyond, and a wrapped count moved a few bytes silently. */
static void coll_range(const void *sym, size_t bytes) {
  if (bytes)
    (void)shm__peer_n(sym, bytes, shm__s.me);
}

/* a + b, or SIZE_MAX when that does not fit (which no region holds). */
static size_t add_sat(size_t a, size_t b) {
  return b > SIZE_MAX - a ? SIZE_MAX : a + b;
}

/* A small broadcast's root writes the data into every member's dest
 * itself, then raises their flags: a member only waits for its flag, and
 * reads nothing of the root's (pulled through eager_data, three members
 * of 4 each took the root's eager_readers line in turn: OSU's 4-PE
 * broadcast of 4-128 B took 0.33-0.44 us against Open MPI's 0.17-0.39).
 * The specification lets the root write there: before any PE calls a
 * broadcast, dest is ready to accept the data on every PE.  Every dest is
 * written before any flag is raised, so a member that takes a raise of a
 * later call (a member that passed this call raises it) finds its data
 * there too.  The root alone copies, size - 1 times: up to SHM_PUSH bytes
 * in all. */
static void broadcast_push(const struct shm_group *g, void *dest,
                           const void *source, size_t bytes, int root) {
  if (g->me != root) {
    eager_wait(g, 1);
    return;
  }
  for (int i = 0; i < g->size && bytes; i++)
    if (i != root)
      memcpy(shm__peer_n(dest, bytes, shm__group_pe(g, i)), source, bytes);
  eager_post(g, -1);
}

static void broadcast_eager(const struct shm_group *g, void *dest,
                            const void *source, size_t bytes, int root) {
  if (shm__s.push && bytes <= SHM_PUSH / (size_t)(g->size - 1)) {
    broadcast_push(g, dest, source, bytes, root);
    return;
  }
  if (g->me == root) {
    eager_claim(g->size - 1, source, bytes);
    eager_post(g, -1);
    eager_finish(bytes);
    return;
  }
  eager_wait(g, 1);
  size_t len;
  const char *d = eager_of(g, root, source, &len);
  if (bytes)
    memcpy(dest, d, bytes);
  eager_done(g, root);
}

void shm__broadcast(const struct shm_group *g, void *dest, const void *source,
                    size_t bytes, int root, int root_too) {
  if (root < 0 || root >= g->size)
    shm__fatal("broadcast root %d is out of range (0..%d)", root, g->size - 1);
  if (g->me < 0)
    shm__fatal("a collective called by a PE outside its team or active set");
  coll_range(source, bytes);
  coll_range(dest, bytes);
  if (g->me == root && root_too && bytes && dest != source)
    memmove(dest, source, bytes);
  if (eager_ok()) {
    if (g->size > 1)
      broadcast_eager(g, dest, source, bytes, root);
    return;
  }
  shm__barrier(g);
  if (bytes && g->me != root)
    shm__getmem(dest, source, bytes, shm__group_pe(g, root));
  shm__barrier(g);
}

/* Every member's data, in PE order, into dest (collect, fcollect): eager
 * for any size, since a PE whose data does not fit its eager_data has it
 * read from its source and waits for its readers before it returns. */
static void collect_eager(const struct shm_group *g, void *dest,
                          const void *source, size_t bytes, int fixed) {
  eager_claim(g->size - 1, source, bytes);
  eager_all_posted(g);
  if (!fixed) { /* collect: dest's size is known now, every length posted */
    size_t total = 0, n;
    for (int i = 0; i < g->size; i++) {
      (void)eager_of(g, i, source, &n);
      total = add_sat(total, n);
    }
    coll_range(dest, total);
  }
  size_t off = 0;
  for (int i = 0; i < g->size; i++) {
    size_t n;
    const char *d = eager_of(g, i, source, &n);
    if (n)
      memcpy((char *)dest + off, d, n);
    off += n;
    eager_done(g, i);
  }
  eager_finish(bytes);
}

/* An fcollect's members each write their block into every member's dest
 * (its own included), then raise every other's flag, and wait for as many
 * raises: nobody reads a peer's control block or counts itself off its
 * readers.  The specification lets them write there (every dest is ready
 * before any PE calls), and every dest is written before any flag is
 * raised, as for a pushed broadcast.  Each PE copies as much as when it
 * read the others' blocks, and OSU's fcollect was faster at every size
 * (1 MiB at 4 PEs: 388-394 us against 557-621).  Not when source overlaps
 * dest (the others would write over source before it is read): source and
 * dest are symmetric, so every member sees the same overlap and decides
 * alike. */
static int collect_apart(const void *dest, const void *source, size_t bytes,
                         int size) {
  uintptr_t d = (uintptr_t)dest, s = (uintptr_t)source;
  size_t all = bytes * (size_t)size; /* checked by coll_range */
  return s + bytes <= d || d + all <= s;
}

static void collect_push(const struct shm_group *g, void *dest,
                         const void *source, size_t bytes) {
  size_t off = (size_t)g->me * bytes;
  for (int i = 0; i < g->size && bytes; i++)
    memcpy(shm__peer_n((char *)dest + off, bytes, shm__group_pe(g, i)), source,
           bytes);
  eager_all_posted(g);
}

/* collect (not eager): every member's length, from the scratch word each
 * posted before the barrier. */
static size_t *collect_lengths(const struct shm_group *g) {
  size_t *len = malloc((size_t)g->size * sizeof *len);
  if (!len)
    shm__fatal("collect: no memory for %d lengths", g->size);
  for (int i = 0; i < g->size; i++) {
    int pe = shm__group_pe(g, i);
    long n = 0;
    if (shm__remote(pe))
      shm__net_get(&n, &g->sync[2], sizeof n, pe, 0);
    else
      n = __atomic_load_n((long *)shm__peer(&g->sync[2], pe), __ATOMIC_ACQUIRE);
    len[i] = (size_t)n;
  }
  return len;
}

/* fixed: every PE gives `bytes`; else each gives its own `bytes`, and the
 * sizes travel in the scratch word (zeroed again at the end, for pSync).
 * Up to SHM_EAGER bytes from each PE: eager. */
void shm__collect(const struct shm_group *g, void *dest, const void *source,
                  size_t bytes, int fixed) {
  if (g->me < 0)
    shm__fatal("a collective called by a PE outside its team or active set");
  coll_range(source, bytes);
  if (fixed) /* collect's total is known only once every length is */
    coll_range(dest, symheap_shmem_bytes(bytes, (size_t)g->size));
  if (g->size > 1 && eager_ok()) {
    if (fixed && shm__s.push && collect_apart(dest, source, bytes, g->size))
      collect_push(g, dest, source, bytes);
    else
      collect_eager(g, dest, source, bytes, fixed);
    return;
  }
  if (!fixed)
    __atomic_store_n(&g->sync[2], (long)bytes, __ATOMIC_RELEASE);
  shm__barrier(g);
  size_t *len = fixed ? NULL : collect_lengths(g);
  if (len) { /* collect: dest's size is known now */
    size_t total = 0;
    for (int i = 0; i < g->size; i++)
      total = add_sat(total, len[i]);
    coll_range(dest, total);
  }
  size_t off = 0;
  for (int i = 0; i < g->size; i++) {
    size_t n = len ? len[i] : bytes;
    if (n)
      shm__getmem((char *)dest + off, source, n, shm__group_pe(g, i));
    off += n;
  }
  free(len);
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
  if (n && (dst < 1 || sst < 1))
    shm__fatal("alltoalls strides must be 1 or more (dst %td, sst %td)", dst,
               sst);
  size_t all = symheap_shmem_bytes(n, (size_t)g->size);
  coll_range(dest, shm__span(all, dst, elem));
  coll_range(source, shm__span(all, sst, elem));
  shm__barrier(g);
  for (int j = 0; j < g->size && n; j++) {
    int i = (g->me + j) % g->size; /* start at a different peer each */
    int pe = shm__group_pe(g, i);
    ptrdiff_t from = (ptrdiff_t)g->me * (ptrdiff_t)n * sst * (ptrdiff_t)elem;
    char *d =
        (char *)dest + (ptrdiff_t)i * (ptrdiff_t)n * dst * (ptrdiff_t)elem;
    if (shm__remote(pe) && dst == 1 && sst == 1) /* one get of the block */
      shm__net_get(d, (const char *)source + from, n * elem, pe, 0);
    else if (shm__remote(pe))
      shm__net_strided(d, dst, (const char *)source + from, sst, n, elem, pe,
                       0);
    else
      copy_strided(d, dst, shm__peer(source, pe) + from, sst, n, elem);
  }
  shm__barrier(g);
}

/* PE pe's n elements of source, combined into acc: from its mapping, or
 * by a get into tmp first. */
static void combine_from(void *acc, void *tmp, const void *source, size_t n,
                         size_t elem, int pe, shm_combine_fn combine) {
  if (shm__remote(pe)) {
    shm__net_get(tmp, source, n * elem, pe, 0);
    combine(acc, tmp, n);
  } else {
    combine(acc, shm__peer(source, pe), n);
  }
}

/* Combines every member's eager data in PE order into acc. */
static void reduce_eager(const struct shm_group *g, void *acc,
                         const void *source, size_t n, size_t elem,
                         shm_combine_fn combine) {
  eager_claim(g->size - 1, source, n * elem);
  eager_all_posted(g);
  size_t len;
  const char *d = eager_of(g, 0, source, &len);
  if (n)
    memcpy(acc, d, n * elem);
  eager_done(g, 0);
  for (int i = 1; i < g->size; i++) {
    d = eager_of(g, i, source, &len);
    if (n)
      combine(acc, d, n);
    eager_done(g, i);
  }
}

/* A reduction too large for eager_data, in two halves: each member
 * combines its share of the elements (its slice, member i's from n * i /
 * size on) from every source, in PE order, into its own dest; after a
 * barrier, each copies the other slices from their owners' dests.  Every
 * PE combined every element before: 4 PEs on 2 CPUs did 4 times the work,
 * and 1 MiB sums took 850 us against Open MPI's 610 (quiet machine).
 * Safe with dest == source: a member writes only its own slice of its
 * dest before the barrier, which no other member reads from its source,
 * and the others' slices after it, when every source has been read.  Its
 * owner waits for the readers of its slice (eager_readers) before it
 * returns, as for a large collect.  Groups of 3 PEs or more. */
static void reduce_scattered(const struct shm_group *g, void *dest,
                             const void *source, size_t n, size_t elem,
                             shm_combine_fn combine) {
  size_t size = (size_t)g->size, me = (size_t)g->me;
  size_t lo = n * me / size, hi = n * (me + 1) / size;
  eager_claim(g->size - 1, source, n * elem);
  eager_all_posted(g);
  char *acc = malloc((hi - lo) * elem + 1);
  if (!acc)
    shm__fatal("reduction of %zu bytes: out of memory", n * elem);
  for (int i = 0; i < g->size; i++) {
    const char *s = shm__peer(source, shm__group_pe(g, i)) + lo * elem;
    if (i == 0)
      memcpy(acc, s, (hi - lo) * elem);
    else
      combine(acc, s, hi - lo);
  }
  memcpy((char *)dest + lo * elem, acc, (hi - lo) * elem);
  free(acc);
  shm__barrier(g);
  for (int i = 0; i < g->size; i++) {
    if (i == g->me)
      continue;
    size_t a = n * (size_t)i / size, b = n * ((size_t)i + 1) / size;
    memcpy((char *)dest + a * elem,
           shm__peer(dest, shm__group_pe(g, i)) + a * elem, (b - a) * elem);
    eager_done(g, i);
  }
  eager_finish(n * elem);
}

/* Minimum of the first three longs, maximum of the last three: over the
 * whole array at once, which holds while a reduction this small is never
 * cut in slices (only those above SHM_EAGER are). */
_Static_assert(6 * sizeof(long) <= SHM_EAGER, "shm__same3's reduction is cut");
static void min_max3(void *acc, const void *in, size_t n) {
  long *a = acc;
  const long *b = in;
  (void)n; /* always 6 */
  for (int i = 0; i < 3; i++) {
    a[i] = b[i] < a[i] ? b[i] : a[i];
    a[3 + i] = b[3 + i] > a[3 + i] ? b[3 + i] : a[3 + i];
  }
}

static void reduce(const struct shm_group *g, void *dest, const void *source,
                   size_t n, size_t elem, shm_combine_fn combine);

int shm__same3(const struct shm_group *g, long *scratch, const long v[3],
               long all[6]) {
  for (int i = 0; i < 3; i++)
    scratch[i] = scratch[3 + i] = v[i];
  reduce(g, all, scratch, 6, sizeof(long), min_max3); /* all: a local */
  return all[0] == all[3] && all[1] == all[4] && all[2] == all[5];
}

/* The program's reductions: dest too is symmetric, and more than this
 * PE's: reduce_scattered reads the other slices from their owners' dests. */
void shm__reduce(const struct shm_group *g, void *dest, const void *source,
                 size_t n, size_t elem, shm_combine_fn combine) {
  coll_range(dest, symheap_shmem_bytes(n, elem));
  reduce(g, dest, source, n, elem, combine);
}

static void reduce(const struct shm_group *g, void *dest, const void *source,
                   size_t n, size_t elem, shm_combine_fn combine) {
  if (g->me < 0)
    shm__fatal("a collective called by a PE outside its team or active set");
  /* source only: shm__same3's dest is a local (shm__reduce checks the
   * program's) */
  coll_range(source, symheap_shmem_bytes(n, elem));
  /* Not for 2 PEs: each has its own CPU there and halving the work gains
   * less than the extra barrier costs on a loaded machine (1 MiB at 2 PEs
   * already 135 us against Open MPI's 480 on the idle machine). */
  if (g->size > 2 && eager_ok() && n * elem > SHM_EAGER) {
    reduce_scattered(g, dest, source, n, elem, combine);
    return;
  }
  if (g->size > 1 && eager_ok()) {
    /* A small one's accumulator on the stack: a malloc and a free were a
     * tenth of a 2-PE reduction of a few bytes (0.3-0.4 us).  A union, so
     * that the combine functions' typed accesses alias it. */
    union {
      max_align_t align;
      long double ld;
      char bytes[512];
    } local;
    void *acc = n * elem <= sizeof local ? &local : malloc(n * elem);
    if (!acc)
      shm__fatal("reduction of %zu bytes: out of memory", n * elem);
    reduce_eager(g, acc, source, n, elem, combine);
    eager_finish(n * elem); /* dest may be source, which others read */
    if (n)
      memcpy(dest, acc, n * elem);
    if (acc != (void *)&local)
      free(acc);
    return;
  }
  void *acc = malloc(n * elem + 1);
  void *tmp = shm__s.net ? malloc(n * elem + 1) : NULL;
  if (!acc || (shm__s.net && !tmp))
    shm__fatal("reduction of %zu bytes: out of memory", n * elem);
  shm__barrier(g);
  if (n) {
    shm__getmem(acc, source, n * elem, shm__group_pe(g, 0));
    for (int i = 1; i < g->size; i++)
      combine_from(acc, tmp, source, n, elem, shm__group_pe(g, i), combine);
  }
  shm__barrier(g);
  if (n)
    memcpy(dest, acc, n * elem);
  free(acc);
  free(tmp);
}

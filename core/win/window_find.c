/* symheap_window_find: the window of a comm whose local copy holds an
 * address, in O(log n) of the live windows (bindings take tensors and
 * arrays, the collectives take windows: issue 30).
 *
 * A process-wide array of the live windows' local ranges, sorted by (comm,
 * start), kept by the two places a window joins or leaves its comm
 * (symheap__live_add, symheap__window_unlink).  A window may lie inside
 * another (a registration over part of a heap block), so each entry also
 * holds the largest end of its comm's entries up to it: the search walks
 * back from the last start <= ptr only while an earlier entry can still
 * reach ptr, and returns the innermost window (latest start) holding it. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "win/window.h"

typedef struct {
  symheap_comm_t comm;
  uintptr_t start, end; /* [start, end): the window's local copy */
  uintptr_t max_end;    /* largest end of this comm's entries up to here */
  struct symheap_window *w;
} entry_t;

static pthread_mutex_t find_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t *ents;
static size_t nents, cap;
static int lost; /* an add found no memory: answers may miss a window */

static int before(const entry_t *e, symheap_comm_t c, uintptr_t start) {
  if (e->comm != c)
    return (uintptr_t)e->comm < (uintptr_t)c;
  return e->start <= start;
}

/* Caller holds the lock: the first index whose key is after (c, start). */
static size_t upper(symheap_comm_t c, uintptr_t start) {
  size_t lo = 0, hi = nents;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (before(&ents[mid], c, start))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Caller holds the lock: max_end again for c's entries from index i on. */
static void refresh(symheap_comm_t c, size_t i) {
  uintptr_t m = i > 0 && ents[i - 1].comm == c ? ents[i - 1].max_end : 0;
  for (; i < nents && ents[i].comm == c; i++) {
    m = ents[i].end > m ? ents[i].end : m;
    ents[i].max_end = m;
  }
}

static int grow_locked(size_t want) {
  if (want <= cap)
    return 0;
  size_t n = cap ? cap : 64;
  while (n < want)
    n *= 2;
  entry_t *e = realloc(ents, n * sizeof *e);
  if (!e)
    return -1;
  ents = e;
  cap = n;
  return 0;
}

/* Caller holds the lock.  Gives memory back once the index is a quarter
 * full (never below KEEP entries, so that a steady state never churns): a
 * large index lives in a mapping of its own, and a test that counts the
 * process's mappings must see it go with the windows.  A copy rather than a
 * realloc, which keeps a shrunk mapping. */
#define KEEP 2048u
static void shrink_locked(void) {
  if (cap <= KEEP || nents >= cap / 4)
    return;
  size_t n = cap / 2;
  entry_t *e = malloc(n * sizeof *e);
  if (!e)
    return; /* keeps the larger one */
  memcpy(e, ents, nents * sizeof *e);
  free(ents);
  ents = e;
  cap = n;
}

symheap_result_t symheap__find_room(size_t extra) {
  pthread_mutex_lock(&find_lock);
  int full = grow_locked(nents + extra);
  pthread_mutex_unlock(&find_lock);
  return full ? symheap__error(SYMHEAP_ERR_NO_MEMORY,
                               "no memory for the window lookup index")
              : SYMHEAP_SUCCESS;
}

void symheap__find_add(symheap_comm_t c, struct symheap_window *w) {
  uintptr_t s = (uintptr_t)w->user_ptr;
  pthread_mutex_lock(&find_lock);
  if (grow_locked(nents + 1) != 0) {
    lost = 1; /* symheap__find_room left room; only a race gets here */
  } else {
    size_t i = upper(c, s);
    memmove(&ents[i + 1], &ents[i], (nents - i) * sizeof *ents);
    ents[i] = (entry_t){c, s, s + w->size, 0, w};
    nents++;
    refresh(c, i);
  }
  pthread_mutex_unlock(&find_lock);
}

void symheap__find_remove(symheap_comm_t c, struct symheap_window *w) {
  pthread_mutex_lock(&find_lock);
  size_t i = upper(c, (uintptr_t)w->user_ptr);
  while (i > 0 && ents[i - 1].comm == c && ents[i - 1].w != w)
    i--; /* windows of equal start sit together, before upper */
  if (i > 0 && ents[i - 1].w == w) {
    memmove(&ents[i - 1], &ents[i], (nents - i) * sizeof *ents);
    nents--;
    refresh(c, i - 1);
    shrink_locked();
  }
  pthread_mutex_unlock(&find_lock);
}

/* Caller holds the lock: the innermost window of c holding p, or NULL. */
static const entry_t *lookup(symheap_comm_t c, uintptr_t p) {
  for (size_t i = upper(c, p); i > 0; i--) {
    const entry_t *e = &ents[i - 1];
    if (e->comm != c || e->max_end <= p)
      return NULL; /* no entry of c at or before this one reaches p */
    if (p < e->end && e->w != c->pad)
      return e;
  }
  return NULL;
}

SYMHEAP__EXPORT symheap_result_t symheap_window_find(symheap_comm_t comm,
                                                     const void *ptr,
                                                     symheap_window_t *win,
                                                     size_t *offset) {
  if (symheap__comm_check(comm, "symheap_window_find") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!win || !offset)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_find: NULL output pointer");
  pthread_mutex_lock(&find_lock);
  const entry_t *e = lost ? NULL : lookup(comm, (uintptr_t)ptr);
  symheap_window_t h = e ? e->w->handle : NULL;
  size_t off = e ? (uintptr_t)ptr - e->start : 0;
  int was_lost = lost;
  pthread_mutex_unlock(&find_lock);
  *win = h;
  *offset = off;
  if (was_lost)
    return symheap__error(SYMHEAP_ERR_NO_MEMORY,
                          "symheap_window_find: the lookup index ran out of "
                          "memory earlier and may miss windows");
  if (!h)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_window_find: %p is in no window of this "
                          "comm (its local copies)",
                          ptr);
  return SYMHEAP_SUCCESS;
}

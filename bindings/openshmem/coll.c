/* Collective data movement over a group (a team or an active set).
 *
 * Every collective pulls: after a barrier (every PE's source is ready), each
 * PE reads what it needs straight from the peers' copies of source, and a
 * second barrier keeps sources unchanged until every PE has read them.
 * Reductions combine the peers' sources in PE order on every PE, so every PE
 * gets the same bits (floating point included), into a private buffer first
 * so that dest may be source.  With zero bytes only the barriers run: no
 * pointer is looked at (Annex C: any pointer is valid for no elements).
 * A PE on another host is read by symheap_get (shm__getmem) instead. */
#include <stdlib.h>
#include <string.h>

#include "shmem_internal.h"

void shm__broadcast(const struct shm_group *g, void *dest, const void *source,
                    size_t bytes, int root, int root_too) {
  if (root < 0 || root >= g->size)
    shm__fatal("broadcast root %d is out of range (0..%d)", root, g->size - 1);
  shm__barrier(g);
  if (bytes == 0) {
    /* nothing to move */
  } else if (g->me != root)
    shm__getmem(dest, source, bytes, shm__group_pe(g, root));
  else if (root_too && dest != source)
    memmove(dest, source, bytes);
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
    if (!fixed && shm__remote(pe)) {
      long remote_n = 0;
      shm__net_get(&remote_n, &g->sync[2], sizeof remote_n, pe, 0);
      n = (size_t)remote_n;
    } else if (!fixed) {
      n = (size_t)__atomic_load_n((long *)shm__peer(&g->sync[2], pe),
                                  __ATOMIC_ACQUIRE);
    }
    if (n)
      shm__getmem((char *)dest + off, source, n, pe);
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

void shm__reduce(const struct shm_group *g, void *dest, const void *source,
                 size_t n, size_t elem, shm_combine_fn combine) {
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

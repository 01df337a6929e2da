/* The comm's public calls: who is who, the comm's own collectives (barrier,
 * allgather), what it holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/agree.h"
#include "init.h"
#include "win/window.h"

SYMHEAP__EXPORT symheap_result_t symheap_comm_rank(symheap_comm_t c,
                                                   int *rank) {
  if (symheap__comm_check(c, "symheap_comm_rank") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!rank)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_rank: NULL argument");
  *rank = c->rank;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_device_check(symheap_comm_t c) {
  const char *fn = "symheap_comm_device_check";
  if (symheap__comm_check(c, fn) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  /* Never "no kernel gave up" where nothing could have said so. */
  symheap_result_t r = symheap__dstatus_missing(c, fn);
  return r != SYMHEAP_SUCCESS ? r : symheap__dstatus_check(c, fn);
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_size(symheap_comm_t c,
                                                   int *nranks) {
  if (symheap__comm_check(c, "symheap_comm_size") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_size: NULL argument");
  *nranks = c->nranks;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__comm_barrier(symheap_comm_t c, const char *fn) {
  symheap_result_t r = symheap__comm_enter(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (symheap__collectives_by_shm(c)) /* comm_shm.c says why */
    return symheap__barrier_shm(c);
  /* An agreement, not the ccl's bare barrier: its record names the call,
   * so a barrier never pairs with another rank's malloc or free. */
  return symheap__agree(c, SYMHEAP_SUCCESS, 0, NULL, 0, NULL);
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_barrier(symheap_comm_t c) {
  SYMHEAP__CLAIMED(c, "symheap_comm_barrier",
                   symheap__comm_barrier(c, "symheap_comm_barrier"));
}

/* Bytes per rank one round of symheap_comm_allgather carries: small enough
 * for every ccl's message (the bootstrap's is 16 MiB in all), large enough
 * that 1 MiB per rank takes a few rounds. */
static size_t allgather_chunk(symheap_comm_t c) {
  size_t per = ((size_t)8 << 20) / (size_t)c->nranks;
  size_t chunk = per < ((size_t)64 << 10) ? per : ((size_t)64 << 10);
  return chunk ? chunk : 1;
}

static symheap_result_t comm_allgather_one(symheap_comm_t c, const void *in,
                                           void *out, size_t bytes) {
  symheap_result_t r = symheap__comm_enter(c, "symheap_comm_allgather");
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* A bad argument here is local; the peers would wait for this rank, so
   * it still takes part, with its failure, through the agreement. */
  size_t chunk = allgather_chunk(c);
  char *tmp = NULL;
  if ((!in || !out) && bytes)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                       "symheap_comm_allgather: NULL buffer");
  else if (bytes > SYMHEAP_ALLGATHER_MAX)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                       "symheap_comm_allgather: %zu bytes per rank is more "
                       "than the %u this bootstrap exchange is for",
                       bytes, SYMHEAP_ALLGATHER_MAX);
  else if (bytes > chunk && !(tmp = malloc(chunk * (size_t)c->nranks)))
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY,
                       "symheap_comm_allgather: no memory for %zu bytes",
                       chunk * (size_t)c->nranks);
  int differ, carried = 0;
  uint64_t b0, bp;
  if (symheap__collectives_by_shm(c)) /* the same answer on every rank */
    r = symheap__allgather_size_shm(c, r, in, out, bytes, &carried, &differ,
                                    &b0, &bp);
  else
    r = symheap__agree_equal(c, r, r == SYMHEAP_SUCCESS ? bytes : UINT64_MAX,
                             &differ, &b0, &bp);
  if (r == SYMHEAP_SUCCESS && differ >= 0)
    r = symheap__error(SYMHEAP_ERR_MISMATCH,
                       "symheap_comm_allgather: rank 0 gives %llu bytes, "
                       "rank %d %llu",
                       (unsigned long long)b0, differ, (unsigned long long)bp);
  if (r == SYMHEAP_SUCCESS && bytes && bytes <= chunk && !carried)
    r = symheap__comm_allgather(c, in, out, bytes);
  /* Larger: in rounds every ccl can carry, the same number on every rank. */
  for (size_t off = 0; r == SYMHEAP_SUCCESS && bytes > chunk && off < bytes;
       off += chunk) {
    size_t len = bytes - off < chunk ? bytes - off : chunk;
    r = symheap__comm_allgather(c, (const char *)in + off, tmp, len);
    for (int p = 0; r == SYMHEAP_SUCCESS && p < c->nranks; p++)
      memcpy((char *)out + (size_t)p * bytes + off, tmp + (size_t)p * len, len);
  }
  free(tmp);
  return r;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_allgather(symheap_comm_t c,
                                                        const void *in,
                                                        void *out,
                                                        size_t bytes) {
  SYMHEAP__CLAIMED(c, "symheap_comm_allgather",
                   comm_allgather_one(c, in, out, bytes));
}

SYMHEAP__EXPORT symheap_result_t
symheap_comm_get_info(symheap_comm_t c, symheap_comm_info_t *info) {
  if (symheap__comm_check(c, "symheap_comm_get_info") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!info)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_get_info: NULL argument");
  symheap_comm_info_t i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  i.rank = c->rank;
  i.nranks = c->nranks;
  i.local_rank = c->local_rank;
  snprintf(i.device_adaptor, sizeof i.device_adaptor, "%s", c->dev.ops.name);
  snprintf(i.ccl_adaptor, sizeof i.ccl_adaptor, "%s", c->ccl.name);
  i.granularity = c->caps.granularity;
  i.multicast_available = c->dev.has_multicast && !c->mc_disabled_by;
  i.timeout_ms = c->timeout_ms;
  snprintf(i.device, sizeof i.device, "%s", c->caps.device_name);
  i.cpu_access = (c->caps.caps & SYMHEAP_CAP_HOST_ACCESS) != 0;
  i.window_cache = c->cache_max;
  i.local_nranks = c->local_nranks;
  i.nhosts = c->nhosts;
  snprintf(i.window_path, sizeof i.window_path, "%s",
           c->winpath ? c->winpath->name : "symheap");
  return symheap__copy_sized(info, &i, sizeof i, "symheap_comm_get_info");
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_get_mapped_per_peer(
    symheap_comm_t c, uint64_t *bytes, int nranks) {
  if (symheap__comm_check(c, "symheap_comm_get_mapped_per_peer") !=
      SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!bytes)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_get_mapped_per_peer: NULL argument");
  if (nranks != c->nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_get_mapped_per_peer: nranks is %d, "
                          "the comm has %d ranks",
                          nranks, c->nranks);
  memcpy(bytes, c->mapped_from, (size_t)nranks * sizeof *bytes);
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_world_rank(symheap_comm_t c,
                                                         int rank,
                                                         int *world_rank) {
  if (symheap__comm_check(c, "symheap_comm_world_rank") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!world_rank)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_world_rank: NULL argument");
  if (rank < 0 || rank >= c->nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_world_rank: rank %d is not a rank of "
                          "0..%d",
                          rank, c->nranks - 1);
  *world_rank = c->world[rank];
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_local_ranks(symheap_comm_t c,
                                                          int *ranks, int max,
                                                          int *count) {
  if (symheap__comm_check(c, "symheap_comm_local_ranks") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!count || (max > 0 && !ranks) || max < 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_local_ranks: %s",
                          max < 0 ? "max is negative" : "NULL argument");
  int n = 0;
  for (int p = 0; p < c->nranks; p++)
    if (c->reach[p]) {
      if (n < max)
        ranks[n] = p;
      n++;
    }
  *count = n;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t
symheap_comm_get_stats(symheap_comm_t c, symheap_comm_stats_t *s) {
  if (symheap__comm_check(c, "symheap_comm_get_stats") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!s)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_get_stats: NULL argument");
  return symheap__copy_sized(s, &c->stats, sizeof c->stats,
                             "symheap_comm_get_stats");
}

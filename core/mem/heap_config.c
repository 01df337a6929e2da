/* The heap's variables (SYMHEAP_HEAP, SYMHEAP_HEAP_RESERVE, _CHUNK,
 * _THRESHOLD), checked at comm init against the comm's device and read
 * once per comm at its first symheap_malloc.  Sizes take a K, M, G or T
 * suffix (powers of 1024). */
#include <stdio.h>

#include "base/config.h"
#include "base/size.h"
#include "heap_config.h"

void symheap__heap_var_text(const char *name, char *out, size_t len) {
  const char *v = NULL;
  if (symheap__cfg_string(name, &v) != SYMHEAP_SUCCESS || !v)
    v = "?";
  snprintf(out, len, "%s=%s%s", name, v,
           symheap__cfg_raw(name) ? "" : " (its default)");
}

/* On the values as set (before rounding): where chunks are this host's
 * memory (not a GPU's, which may exceed it), one larger than the machine
 * could never be committed; and a chunk is committed inside the
 * reservation, so one larger than it would grow the reservation behind
 * the user's back. */
static symheap_result_t check_sizes(const symheap__heap_cfg_t *cfg,
                                    int host_memory) {
  char chunk[96], reserve[96];
  symheap__heap_var_text("SYMHEAP_HEAP_CHUNK", chunk, sizeof chunk);
  symheap__heap_var_text("SYMHEAP_HEAP_RESERVE", reserve, sizeof reserve);
  uint64_t phys = host_memory ? symheap__phys_bytes() : 0;
  if (phys && cfg->chunk > phys)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s is more than this machine's physical memory "
                          "(%llu bytes): the device adaptor's chunks are host "
                          "memory, and such a chunk could never be committed",
                          chunk, (unsigned long long)phys);
  if (cfg->chunk > cfg->reserve)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s is larger than %s: chunks are committed inside "
                          "the reservation, so a chunk must be at most the "
                          "reserve (raise SYMHEAP_HEAP_RESERVE or lower "
                          "SYMHEAP_HEAP_CHUNK)",
                          chunk, reserve);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__heap_config(size_t granularity, int host_memory,
                                      symheap__heap_cfg_t *cfg) {
  int on = 1;
  symheap_result_t r = symheap__cfg_bool("SYMHEAP_HEAP", &on);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__cfg_size("SYMHEAP_HEAP_RESERVE", &cfg->reserve);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__cfg_size("SYMHEAP_HEAP_CHUNK", &cfg->chunk);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__cfg_size("SYMHEAP_HEAP_THRESHOLD", &cfg->threshold);
  if (r == SYMHEAP_SUCCESS)
    r = check_sizes(cfg, host_memory);
  if (r != SYMHEAP_SUCCESS)
    return r;
  cfg->on = on;
  /* A chunk is mapped as one piece: whole granules.  The reservation holds
   * whole chunks, at least one. */
  if (cfg->chunk > UINT64_MAX / 2 || cfg->reserve > UINT64_MAX / 2)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_HEAP_CHUNK or SYMHEAP_HEAP_RESERVE is too "
                          "large");
  cfg->chunk = symheap__round_up(cfg->chunk, granularity);
  cfg->reserve = symheap__round_up(cfg->reserve, cfg->chunk);
  if (cfg->reserve / cfg->chunk > (1u << 24))
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_HEAP_RESERVE / SYMHEAP_HEAP_CHUNK is more "
                          "than 16M chunks: choose larger chunks");
  return SYMHEAP_SUCCESS;
}

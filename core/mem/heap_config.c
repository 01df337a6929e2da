/* The heap's variables (SYMHEAP_HEAP, SYMHEAP_HEAP_RESERVE, _CHUNK,
 * _THRESHOLD), read once per comm at its first symheap_malloc.  Sizes take
 * a K, M, G or T suffix (powers of 1024). */
#include "base/config.h"
#include "base/size.h"
#include "heap_config.h"

symheap_result_t symheap__heap_config(size_t granularity,
                                      symheap__heap_cfg_t *cfg) {
  int on = 1;
  symheap_result_t r = symheap__cfg_bool("SYMHEAP_HEAP", &on);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__cfg_size("SYMHEAP_HEAP_RESERVE", &cfg->reserve);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__cfg_size("SYMHEAP_HEAP_CHUNK", &cfg->chunk);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__cfg_size("SYMHEAP_HEAP_THRESHOLD", &cfg->threshold);
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

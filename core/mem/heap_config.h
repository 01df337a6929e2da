#ifndef SYMHEAP_HEAP_CONFIG_H
#define SYMHEAP_HEAP_CONFIG_H

#include "base/internal.h"

typedef struct {
  int on;             /* SYMHEAP_HEAP */
  uint64_t reserve;   /* per rank, whole chunks */
  uint64_t chunk;     /* whole granules */
  uint64_t threshold; /* larger allocations are registrations */
} symheap__heap_cfg_t;

/* Validated values; an error names the malformed variable. */
symheap_result_t symheap__heap_config(size_t granularity,
                                      symheap__heap_cfg_t *cfg);

#endif

#ifndef SYMHEAP_HEAP_CONFIG_H
#define SYMHEAP_HEAP_CONFIG_H

#include "base/internal.h"

typedef struct {
  int on;             /* SYMHEAP_HEAP */
  uint64_t reserve;   /* per rank, whole chunks */
  uint64_t chunk;     /* whole granules */
  uint64_t threshold; /* larger allocations are registrations */
} symheap__heap_cfg_t;

/* Validated values; an error names the malformed variable, or the two
 * that contradict each other.  host_memory: the device adaptor's chunks
 * are this host's memory (SYMHEAP_CAP_HOST_ACCESS), so a chunk is at most
 * the machine's physical memory; a GPU's may be more. */
symheap_result_t symheap__heap_config(size_t granularity, int host_memory,
                                      symheap__heap_cfg_t *cfg);
/* "NAME=value", or "NAME=value (its default)" when unset, for messages. */
void symheap__heap_var_text(const char *name, char *out, size_t len);

#endif

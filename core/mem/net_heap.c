/* Net registration of heap chunks: every chunk once, when it is made
 * (comm/net_reg.c does each); heap windows address them by offset. */
#include <stdlib.h>

#include "comm/agree.h"
#include "heap.h"
#include "net_heap.h"

symheap_result_t symheap__net_heap_commit(symheap_comm_t c, uint32_t first,
                                          uint32_t count) {
  symheap__netc_t *n = c->netc;
  symheap__heap_t *h = c->heap;
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (!n->chunks) {
    n->chunks = calloc(h->arena.nchunks, sizeof *n->chunks);
    if (n->chunks)
      n->nchunks = h->arena.nchunks;
    else
      r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "net registration: no memory");
    r = symheap__agree(c, r, 0, NULL, 0, NULL);
  }
  size_t ch = (size_t)h->arena.chunk;
  char *mine = h->base + (size_t)c->rank * (size_t)h->arena.size;
  /* The fresh chunks are the same on every rank (the growth was agreed). */
  for (uint32_t i = first; i < first + count && r == SYMHEAP_SUCCESS; i++)
    if (h->fresh[i] && !n->chunks[i])
      r = symheap__netreg_make(c, mine + (size_t)i * ch, ch, &n->chunks[i]);
  return r == SYMHEAP_SUCCESS
             ? r
             : symheap__error_context(r, "heap: registering chunks with the "
                                         "net adaptor");
}

void symheap__net_heap_release(symheap_comm_t c, uint32_t i) {
  symheap__netc_t *n = c->netc;
  if (!n || !n->chunks || i >= n->nchunks || !n->chunks[i])
    return;
  symheap__netreg_free(c, n->chunks[i]);
  n->chunks[i] = NULL;
}


/* Heap chunks' net regions (net_heap.c): each chunk of the symmetric heap
 * is registered once with the comm's net adaptor, when the comm has one
 * (comm/net.h), so heap windows reach other hosts by chunk and offset. */
#ifndef SYMHEAP_MEM_NET_HEAP_H
#define SYMHEAP_MEM_NET_HEAP_H

#include "comm/net.h"

/* Collective, from the heap's commit: chunks [first, first + count) made
 * now (fresh) get regions. */
symheap_result_t symheap__net_heap_commit(symheap_comm_t c, uint32_t first,
                                          uint32_t count);
/* Local, when heap chunk i goes. */
void symheap__net_heap_release(symheap_comm_t c, uint32_t i);

#endif

#ifndef SYMHEAP_EXCHANGE_H
#define SYMHEAP_EXCHANGE_H

#include "agree.h"

/* Collective.  Every rank offers *mine (unless `local` is a failure, or
 * root_only is set and it is not rank 0) and receives every offered handle in
 * all[] (nranks entries; all[rank] is left empty).  A descriptor in *mine is
 * consumed.  Returns SUCCESS only when every rank succeeded and every
 * expected handle arrived; on failure nothing received is left open. */
symheap_result_t symheap__exchange_handles(symheap_comm_t c,
                                           symheap_result_t local,
                                           symheap_shareable_t *mine,
                                           uint32_t kind, int root_only,
                                           symheap_shareable_t *all);

#endif

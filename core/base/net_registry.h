/* The net adaptors this process knows (net_registry.c): the built-ins
 * (adaptors/net/<name>/, linked-in plugins) and those plugins or callers
 * register.  The core's side of the net family (choosing one for a comm,
 * the one-sided API) reaches them only through here. */
#ifndef SYMHEAP_NET_REGISTRY_H
#define SYMHEAP_NET_REGISTRY_H

#include "internal.h"

/* A net adaptor as the core holds it: a full table (a stub returning
 * UNSUPPORTED where `atomic` was NULL) and what it really provides.
 * put_signal stays NULL when the adaptor has none: the caller then does
 * put, fence, atomic. */
typedef struct {
  symheap_net_ops ops;
  int has_atomic, has_put_signal;
} symheap__net_table_t;

/* Copy `in` into `out`, refusing a wrong ABI, a short table or a missing
 * required member with SYMHEAP_ERR_PLUGIN and a message naming it. */
symheap_result_t symheap__net_normalise(const symheap_net_ops *in,
                                        symheap__net_table_t *out);
/* The registered net adaptor called `name` (NULL or "auto": the first
 * whose available() says yes), copied into *out.  An unknown name is
 * SYMHEAP_ERR_INVALID_ARG listing the known ones; a known one that cannot
 * run here is SYMHEAP_ERR_UNSUPPORTED with its reason. */
symheap_result_t symheap__net_lookup(const char *name,
                                     symheap__net_table_t *out);
/* Snapshot of the registered net adaptors in registration order (built-ins
 * first): copies up to `max` into out (out may be NULL with max 0) and
 * returns how many there are. */
int symheap__net_list(symheap__net_table_t *out, int max);
/* Register a table without loading the built-ins first: what plugin
 * admission calls (the built-ins are being loaded then). */
symheap_result_t symheap__net_add(const symheap_net_ops *ops);

#endif

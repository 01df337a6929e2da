/* The device adaptors this process knows, their normalisation and choice. */
#ifndef SYMHEAP_REGISTRY_H
#define SYMHEAP_REGISTRY_H

#include "internal.h"

/* A device adaptor as the core holds it: a full table (stubs where the
 * adaptor left optional members NULL) and what it really provides. */
typedef struct {
  symheap_device_ops ops;
  int has_mem_retain, has_multicast, has_ipc, has_mem_zero, has_dmabuf;
  /* ops.host_alloc, host_free and copy_to_host are all set or all NULL. */
} symheap__device_table_t;

/* Copy `in` into `out`, refusing a wrong ABI or a missing required member
 * with SYMHEAP_ERR_PLUGIN and a message naming it. */
symheap_result_t symheap__device_normalise(const symheap_device_ops *in,
                                           symheap__device_table_t *out);
/* What query() reported, checked: granularities (powers of two, bounded),
 * handle kinds, a terminated name.  PLUGIN naming the adaptor and the lie. */
symheap_result_t symheap__caps_check(const symheap_device_caps_t *caps,
                                     const char *name);
/* va_reserve, its result checked (a range, aligned as asked); every
 * reservation the core makes goes through here, hooks included. */
symheap_result_t symheap__va_reserve(const symheap_device_ops *ops, void *ctx,
                                     size_t size, size_t align, void **va);
/* Choose by SYMHEAP_DEVICE's value; `why` says how the choice was made. */
symheap_result_t symheap__device_select(const char *want,
                                        symheap__device_table_t *out, char *why,
                                        size_t why_len);
/* Register a normalised copy (a name not taken yet). */
symheap_result_t symheap__device_add(const symheap_device_ops *ops);
/* Snapshot of the registered adaptors, for symheap-info. */
int symheap__device_count(void);
symheap_result_t symheap__device_get(int i, symheap__device_table_t *out);

#endif

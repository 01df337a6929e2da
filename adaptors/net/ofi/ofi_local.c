/* Operations this rank applies to its own memory with CPU atomics, where
 * that is the provider's own atomicity domain:
 *
 * - the signal of a put_signal sent as one message (fi_writedata with
 *   FI_REMOTE_CQ_DATA): the target reads the remote CQ entry in its
 *   progress, after the data is placed, and applies the signal the 64 bits
 *   of CQ data describe;
 * - atomics to this rank itself (libfabric 1.17's shm loses or crashes on
 *   atomics an endpoint sends to itself).
 *
 * Both only where the provider's atomics are applied in software by the
 * target's progress (ofi_soft_atomics): those run inside fi_cq_read on this
 * endpoint, which the core calls under the same lock as every other call of
 * this context, so a CPU atomic made here is serialised with them.  A NIC's
 * atomics would not be (and keep put + fence + atomic). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

/* The CQ data of a signal: op | key | offset in words | value. */
#define SIG_VALUE_BITS 20
#define SIG_WORD_BITS 28
#define SIG_KEY_BITS 15

/* rxm emulates atomics at the target inside its progress; shm applies
 * them when the target progresses.  (sockets has a progress thread of its
 * own, which no lock of ours serialises: not listed.) */
int ofi_soft_atomics(const char *prov) {
  return strstr(prov, "ofi_rxm") || !strcmp(prov, "shm");
}

symheap_result_t ofi_regions_add(ofi_ctx_t *c, ofi_mr_t *m) {
  if (c->prov_key || m->key >= (uint64_t)1 << 30)
    return SYMHEAP_SUCCESS; /* not ours to index: no local paths for it */
  if (m->key >= c->nregions) {
    size_t n = c->nregions ? c->nregions : 64;
    while (n <= m->key)
      n *= 2;
    ofi_mr_t **t = realloc(c->regions, n * sizeof *t);
    if (!t)
      return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "ofi: no memory");
    memset(t + c->nregions, 0, (n - c->nregions) * sizeof *t);
    c->regions = t;
    c->nregions = n;
  }
  c->regions[m->key] = m;
  return SYMHEAP_SUCCESS;
}

void ofi_regions_remove(ofi_ctx_t *c, const ofi_mr_t *m) {
  if (m->key < c->nregions && c->regions[m->key] == m)
    c->regions[m->key] = NULL;
}

/* This rank's memory at [offset, +size) of its region `key`, or NULL. */
static char *local_at(ofi_ctx_t *c, uint64_t key, uint64_t offset,
                      size_t size) {
  ofi_mr_t *m = key < c->nregions ? c->regions[key] : NULL;
  if (!m || offset > m->size || size > m->size - offset)
    return NULL;
  return m->base + offset;
}

#define CPU_OP(T)                                                              \
  do {                                                                         \
    T *x = (T *)(void *)p, v = 0, cmp = 0, o = 0;                              \
    if (operand)                                                               \
      memcpy(&v, operand, sizeof v);                                           \
    if (compare)                                                               \
      memcpy(&cmp, compare, sizeof cmp);                                       \
    switch (op) {                                                              \
    case SYMHEAP_NET_AMO_FETCH: o = __atomic_load_n(x, __ATOMIC_SEQ_CST); break;\
    case SYMHEAP_NET_AMO_SET: __atomic_store_n(x, v, __ATOMIC_SEQ_CST); break; \
    case SYMHEAP_NET_AMO_ADD:                                                  \
    case SYMHEAP_NET_AMO_FETCH_ADD:                                            \
      o = __atomic_fetch_add(x, v, __ATOMIC_SEQ_CST);                          \
      break;                                                                   \
    case SYMHEAP_NET_AMO_SWAP:                                                 \
      o = __atomic_exchange_n(x, v, __ATOMIC_SEQ_CST);                         \
      break;                                                                   \
    case SYMHEAP_NET_AMO_CSWAP:                                                \
      o = cmp;                                                                 \
      __atomic_compare_exchange_n(x, &o, v, 0, __ATOMIC_SEQ_CST,               \
                                  __ATOMIC_SEQ_CST);                           \
      break;                                                                   \
    case SYMHEAP_NET_AMO_AND: o = __atomic_fetch_and(x, v, __ATOMIC_SEQ_CST); break;\
    case SYMHEAP_NET_AMO_OR: o = __atomic_fetch_or(x, v, __ATOMIC_SEQ_CST); break;\
    case SYMHEAP_NET_AMO_XOR: o = __atomic_fetch_xor(x, v, __ATOMIC_SEQ_CST); break;\
    }                                                                          \
    if (fetch)                                                                 \
      memcpy(fetch, &o, sizeof o);                                             \
  } while (0)

static void cpu_op(char *p, symheap_net_amo_t op, size_t size,
                   const void *operand, const void *compare, void *fetch) {
  if (size == 4)
    CPU_OP(uint32_t);
  else
    CPU_OP(uint64_t);
}

int ofi_self_atomic(ofi_ctx_t *c, int peer, symheap_net_amo_t op, size_t size,
                    const ofi_key_t *k, uint64_t offset, const void *operand,
                    const void *compare, void *fetch) {
  if (!c->self_cpu || peer != c->rank)
    return 0;
  char *p = local_at(c, k->key, offset, size);
  if (!p)
    return 0; /* not a region of ours: let the provider say so */
  cpu_op(p, op, size, operand, compare, fetch);
  return 1;
}

int ofi_sig_encode(const ofi_ctx_t *c, const ofi_key_t *k, uint64_t sig_offset,
                   uint64_t value, symheap_net_amo_t op, uint64_t *data) {
  uint64_t word = sig_offset; /* from the region's start */
  if (!c->sig_data || c->prov_key || sig_offset % 8 ||
      k->key >= ((uint64_t)1 << SIG_KEY_BITS) ||
      value >= ((uint64_t)1 << SIG_VALUE_BITS) ||
      word / 8 >= ((uint64_t)1 << SIG_WORD_BITS))
    return 0;
  *data = (op == SYMHEAP_NET_AMO_ADD ? (uint64_t)1 << 63 : 0) |
          k->key << (SIG_VALUE_BITS + SIG_WORD_BITS) |
          (word / 8) << SIG_VALUE_BITS | value;
  return 1;
}

void ofi_sig_apply(ofi_ctx_t *c, uint64_t data) {
  uint64_t value = data & (((uint64_t)1 << SIG_VALUE_BITS) - 1);
  uint64_t off = ((data >> SIG_VALUE_BITS) &
                  (((uint64_t)1 << SIG_WORD_BITS) - 1)) * 8;
  uint64_t key = (data >> (SIG_VALUE_BITS + SIG_WORD_BITS)) &
                 (((uint64_t)1 << SIG_KEY_BITS) - 1);
  symheap_net_amo_t op =
      data >> 63 ? SYMHEAP_NET_AMO_ADD : SYMHEAP_NET_AMO_SET;
  char *p = local_at(c, key, off, 8);
  if (!p) {
    c->svc->log(SYMHEAP_LOG_WARN,
                "ofi: a put_signal's signal for region %llu at offset %llu "
                "arrived after the region was deregistered; dropped",
                (unsigned long long)key, (unsigned long long)off);
    return;
  }
  cpu_op(p, op, 8, &value, NULL, NULL);
}

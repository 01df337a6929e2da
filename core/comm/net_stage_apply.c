/* Target-side staging, one descriptor applied (net_stage.h): a put's data
 * copied from the shadow into device memory, then its atomic; a get's
 * device bytes copied into the initiator's bounce slot; a fetching atomic
 * applied with its old value kept for the initiator's acknowledgement.
 * Called under the drain lock only, so every network atomic on this rank's
 * staged windows is applied one at a time: that is their atomicity domain
 * (a kernel's own atomics on the same word are not atomic with them). */
#include <string.h>

#include "net_stage.h"

/* The staged region id as this rank registered it, holding [off, +len). */
static const symheap__stage_reg_t *reg_of(symheap__stage_t *s, uint32_t id,
                                          uint64_t off, uint64_t len) {
  if (id >= s->nregs || !s->regs[id].shadow || off > s->regs[id].size ||
      len > s->regs[id].size - off)
    return NULL;
  return &s->regs[id];
}

/* The word's new value under op, from cur; *write: whether it changes. */
static int amo_new(int op, uint64_t cur, uint64_t v, uint64_t cmp,
                   uint64_t *out, int *write) {
  *write = 1;
  switch (op) {
  case SYMHEAP_NET_AMO_FETCH:
    *write = 0, *out = cur;
    return 0;
  case SYMHEAP_NET_AMO_SET:
  case SYMHEAP_NET_AMO_SWAP:
    *out = v;
    return 0;
  case SYMHEAP_NET_AMO_ADD:
  case SYMHEAP_NET_AMO_FETCH_ADD:
    *out = cur + v;
    return 0;
  case SYMHEAP_NET_AMO_CSWAP:
    *write = cur == cmp;
    *out = *write ? v : cur;
    return 0;
  case SYMHEAP_NET_AMO_AND:
    *out = cur & v;
    return 0;
  case SYMHEAP_NET_AMO_OR:
    *out = cur | v;
    return 0;
  case SYMHEAP_NET_AMO_XOR:
    *out = cur ^ v;
    return 0;
  default:
    return -1;
  }
}

/* The atomic of d on its word (a read-modify-write through copies); *old:
 * the word before it, zero-extended when 4 bytes. */
static symheap_result_t amo(symheap__stage_t *s, const symheap__stage_desc_t *d,
                            uint64_t *old) {
  size_t sz = d->sig_size == 4 ? 4 : 8;
  const symheap__stage_reg_t *g = reg_of(s, d->sig_reg, d->sig_off, sz);
  if (!g || d->sig_off % sz || (d->sig_size != 4 && d->sig_size != 8))
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "staging: no staged region %u holds an aligned "
                          "%u-byte word at %llu",
                          d->sig_reg, d->sig_size,
                          (unsigned long long)d->sig_off);
  char *at = (char *)g->dev + d->sig_off;
  uint64_t cur = 0, nv = 0, v = d->value, cmp = d->compare;
  uint32_t cur4 = 0, nv4;
  symheap_result_t r = s->dev->copy_to_host(
      s->dev_ctx, sz == 4 ? (void *)&cur4 : (void *)&cur, at, sz);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (sz == 4)
    cur = cur4, v = (uint32_t)v, cmp = (uint32_t)cmp;
  int write = 0;
  if (amo_new(d->sig_op, cur, v, cmp, &nv, &write) != 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "staging: unknown atomic op %d", d->sig_op);
  *old = cur;
  if (!write)
    return SYMHEAP_SUCCESS;
  nv4 = (uint32_t)nv;
  return s->dev->copy_from_host(s->dev_ctx, at,
                                sz == 4 ? (void *)&nv4 : (void *)&nv, sz);
}

/* A get: device [off, +len) into initiator p's bounce slot. */
static symheap_result_t get(symheap__stage_t *s, int p,
                            const symheap__stage_desc_t *d) {
  const symheap__stage_reg_t *g = reg_of(s, d->reg, d->off, d->len);
  if (!g || d->len > s->slot)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "staging: no staged region %u holds [%llu, +%llu) "
                          "(deregistered?), or it exceeds the %zu-byte "
                          "bounce slot",
                          d->reg, (unsigned long long)d->off,
                          (unsigned long long)d->len, s->slot);
  return s->dev->copy_to_host(s->dev_ctx,
                              s->ctl + symheap__stage_slot_off(s, p),
                              (const char *)g->dev + d->off, d->len);
}

symheap_result_t symheap__stage_apply(symheap__stage_t *s, int p,
                                      const symheap__stage_desc_t *d) {
  uint64_t old = 0;
  symheap_result_t r;
  switch (d->kind) {
  case SYMHEAP__STAGE_GET:
    return get(s, p, d);
  case SYMHEAP__STAGE_FETCH:
    r = amo(s, d, &old);
    /* Named even when it failed: the initiator waits for this seq and
     * learns the failure from the count. */
    s->fetch_seq[p] = d->seq, s->fetched[p] = old;
    return r;
  case SYMHEAP__STAGE_PUT:
    break;
  default:
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "staging: unknown descriptor kind %u", d->kind);
  }
  const symheap__stage_reg_t *g = NULL;
  if (d->len && !(g = reg_of(s, d->reg, d->off, d->len)))
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "staging: no staged region %u holds [%llu, +%llu) "
                          "(deregistered?)",
                          d->reg, (unsigned long long)d->off,
                          (unsigned long long)d->len);
  r = SYMHEAP_SUCCESS;
  if (g)
    r = s->dev->copy_from_host(s->dev_ctx, (char *)g->dev + d->off,
                               (char *)g->shadow + d->off, d->len);
  if (r != SYMHEAP_SUCCESS || d->sig_op < 0)
    return r;
  return amo(s, d, &old);
}

/* Waiting on a signal: symheap_signal_wait_until on this rank's own 8-byte
 * word, which peers' put_signal and atomics update.  Its turns are a net
 * wait's (comm/net_wait.c): the engines progressed while it waits, asleep
 * on their wait fds while they are idle, bounded by its timeout. */
#include "comm/net_stage.h"
#include "onesided.h"

static int compare_ok(uint64_t v, symheap_cmp_t cmp, uint64_t value) {
  switch (cmp) {
  case SYMHEAP_CMP_EQ: return v == value;
  case SYMHEAP_CMP_NE: return v != value;
  case SYMHEAP_CMP_GT: return v > value;
  case SYMHEAP_CMP_GE: return v >= value;
  case SYMHEAP_CMP_LT: return v < value;
  case SYMHEAP_CMP_LE: return v <= value;
  }
  return 0;
}

SYMHEAP__EXPORT symheap_result_t
symheap_signal_wait_until(symheap_window_t win, size_t offset,
                          symheap_cmp_t cmp, uint64_t value,
                          uint64_t *observed, int timeout_ms) {
  const char *fn = "symheap_signal_wait_until";
  struct symheap_window *w = symheap__window_get(win, fn);
  if (!w)
    return SYMHEAP_ERR_INVALID_ARG;
  symheap_comm_t c = w->comm;
  symheap_result_t r = symheap__os_begin(win, c->rank, offset, 8, fn, &w);
  if (r == SYMHEAP_SUCCESS && (offset % 8 || (unsigned)cmp > SYMHEAP_CMP_LE))
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: %s", fn,
                       offset % 8 ? "offset is not 8-byte aligned"
                                  : "cmp is not a symheap_cmp_t");
  if (r == SYMHEAP_SUCCESS)
    r = symheap__os_host_access(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  const uint64_t *word = (const uint64_t *)(void *)(w->user_ptr + offset);
  int ms = timeout_ms < 0 ? c->timeout_ms : timeout_ms;
  symheap__net_wait_t wait;
  symheap__net_wait_begin(&wait, ms);
  for (;;) {
    uint64_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if (compare_ok(v, cmp, value)) {
      if (observed)
        *observed = v;
      return SYMHEAP_SUCCESS;
    }
    /* A wait of 0 ms still progresses the engine once (OpenSHMEM's layer
     * relies on it). */
    if (!symheap__net_wait_step(c->netc, &wait)) {
      if (observed)
        *observed = v;
      return symheap__error(SYMHEAP_ERR_TIMEOUT,
                            "%s: the word at offset %zu is still %llu after "
                            "%d ms (waiting for cmp %d against %llu)",
                            fn, offset, (unsigned long long)v, ms, (int)cmp,
                            (unsigned long long)value);
    }
  }
}

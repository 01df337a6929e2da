/* Atomics and put-with-signal.  One atomicity domain
 * per window: on a comm with a net adaptor (it spans hosts), every atomic
 * goes through the adaptor, this host's ranks and this rank included, since
 * an engine's atomics (rxm emulates them at the target) are not atomic with
 * the CPU's; on a comm of one host, CPU atomics through the flat VA.
 * Waiting on a signal is signal_wait.c. */
/* ThreadSanitizer does not model fences; gcc refuses them under it unless
 * told to let them be (the layer's tests run under TSan). */
#if defined(__SANITIZE_THREAD__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif
#include <string.h>

#include "onesided.h"

#define CPU_AMO(T, p, op, operand, compare, old)                               \
  do {                                                                         \
    T *x_ = (T *)(p), v_ = 0, c_ = 0;                                          \
    if (operand)                                                               \
      memcpy(&v_, operand, sizeof v_);                                         \
    if (compare)                                                               \
      memcpy(&c_, compare, sizeof c_);                                         \
    T o_ = 0;                                                                  \
    switch (op) {                                                              \
    case SYMHEAP_AMO_FETCH:                                                    \
      o_ = __atomic_load_n(x_, __ATOMIC_SEQ_CST);                              \
      break;                                                                   \
    case SYMHEAP_AMO_SET:                                                      \
      __atomic_store_n(x_, v_, __ATOMIC_SEQ_CST);                              \
      break;                                                                   \
    case SYMHEAP_AMO_ADD:                                                      \
    case SYMHEAP_AMO_FETCH_ADD:                                                \
      o_ = __atomic_fetch_add(x_, v_, __ATOMIC_SEQ_CST);                       \
      break;                                                                   \
    case SYMHEAP_AMO_SWAP:                                                     \
      o_ = __atomic_exchange_n(x_, v_, __ATOMIC_SEQ_CST);                      \
      break;                                                                   \
    case SYMHEAP_AMO_CSWAP:                                                    \
      o_ = c_;                                                                 \
      __atomic_compare_exchange_n(x_, &o_, v_, 0, __ATOMIC_SEQ_CST,            \
                                  __ATOMIC_SEQ_CST);                           \
      break;                                                                   \
    case SYMHEAP_AMO_AND:                                                      \
      o_ = __atomic_fetch_and(x_, v_, __ATOMIC_SEQ_CST);                       \
      break;                                                                   \
    case SYMHEAP_AMO_OR:                                                       \
      o_ = __atomic_fetch_or(x_, v_, __ATOMIC_SEQ_CST);                        \
      break;                                                                   \
    case SYMHEAP_AMO_XOR:                                                      \
      o_ = __atomic_fetch_xor(x_, v_, __ATOMIC_SEQ_CST);                       \
      break;                                                                   \
    }                                                                          \
    if (old)                                                                   \
      memcpy(old, &o_, sizeof o_);                                             \
  } while (0)

static void cpu_amo(void *p, symheap_amo_t op, size_t size,
                    const void *operand, const void *compare, void *old) {
  if (size == 4)
    CPU_AMO(uint32_t, p, op, operand, compare, old);
  else
    CPU_AMO(uint64_t, p, op, operand, compare, old);
}

/* Whether op hands back the old value (AND, OR, XOR: when asked). */
static int fetching(symheap_amo_t op, const void *result) {
  return op == SYMHEAP_AMO_FETCH || op == SYMHEAP_AMO_FETCH_ADD ||
         op == SYMHEAP_AMO_SWAP || op == SYMHEAP_AMO_CSWAP ||
         (op >= SYMHEAP_AMO_AND && result);
}

static symheap_result_t amo_args(symheap_amo_t op, size_t size, size_t off,
                                 const void *operand, const void *compare,
                                 void *result, const char *fn) {
  const char *bad =
      (unsigned)op > SYMHEAP_AMO_XOR      ? "op is not a symheap_amo_t"
      : size != 4 && size != 8            ? "size must be 4 or 8"
      : off % size                        ? "offset is not aligned to size"
      : op != SYMHEAP_AMO_FETCH && !operand ? "operand is NULL"
      : op == SYMHEAP_AMO_CSWAP && !compare ? "compare is NULL"
      : fetching(op, NULL) && !result     ? "result is NULL for a fetching op"
                                          : NULL;
  return bad ? symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: %s", fn, bad)
             : SYMHEAP_SUCCESS;
}

static symheap_result_t amo(struct symheap_window *w, int peer, size_t off,
                            symheap_amo_t op, size_t size, const void *operand,
                            const void *compare, void *result,
                            const char *fn) {
  symheap_comm_t c = w->comm;
  void *fetch = fetching(op, result) ? result : NULL;
  if (c->netc) /* the window's one domain: the adaptor's */
    return symheap__os_net_atomic(w, peer, off, (symheap_net_amo_t)op, size,
                                  operand, compare, fetch, fn);
  if (!c->reach[peer])
    return symheap__os_need_net(c, peer, fn);
  symheap_result_t r = symheap__os_host_access(c, fn);
  if (r == SYMHEAP_SUCCESS)
    cpu_amo(symheap__os_local(w, peer, off), op, size, operand, compare,
            fetch);
  return r;
}

SYMHEAP__EXPORT symheap_result_t symheap_atomic(symheap_window_t win, int peer,
                                                size_t offset, symheap_amo_t op,
                                                size_t size,
                                                const void *operand,
                                                const void *compare,
                                                void *result) {
  const char *fn = "symheap_atomic";
  struct symheap_window *w;
  symheap_result_t r = amo_args(op, size, offset, operand, compare, result, fn);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__os_begin(win, peer, offset, size, fn, &w);
  if (r != SYMHEAP_SUCCESS)
    return r;
  return amo(w, peer, offset, op, size, operand, compare, result, fn);
}

SYMHEAP__EXPORT symheap_result_t symheap_put_signal(
    symheap_window_t win, int peer, size_t offset, const void *src, size_t len,
    symheap_window_t sig_win, size_t sig_offset, uint64_t value,
    symheap_amo_t sig_op) {
  const char *fn = "symheap_put_signal";
  struct symheap_window *w, *sw;
  symheap_result_t r = symheap__os_begin(win, peer, offset, len, fn, &w);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__os_begin(sig_win, peer, sig_offset, 8, fn, &sw);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (sw->comm != w->comm || (len && !src) ||
      (sig_op != SYMHEAP_AMO_SET && sig_op != SYMHEAP_AMO_ADD) ||
      sig_offset % 8)
    return symheap__error(
        SYMHEAP_ERR_INVALID_ARG, "%s: %s", fn,
        sw->comm != w->comm ? "the windows belong to different comms"
        : len && !src       ? "src is NULL"
        : sig_offset % 8    ? "sig_offset is not 8-byte aligned"
                            : "sig_op must be SYMHEAP_AMO_SET or _ADD");
  symheap_comm_t c = w->comm;
  if (!c->reach[peer]) {
    r = symheap__os_need_net(c, peer, fn);
    return r == SYMHEAP_SUCCESS
               ? symheap__os_net_put_signal(w, peer, offset, src, len, sw,
                                            sig_offset, value,
                                            (symheap_net_amo_t)sig_op, fn)
               : r;
  }
  /* This host: the data by memcpy, visible before the signal's atomic
   * (through the window's domain: the adaptor's on a spanning comm). */
  if ((r = symheap__os_host_access(c, fn)) != SYMHEAP_SUCCESS)
    return r;
  if (len) /* src may overlap the range (this rank's own copy) */
    memmove(symheap__os_local(w, peer, offset), src, len);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return amo(sw, peer, sig_offset, sig_op, 8, &value, NULL, NULL, fn);
}

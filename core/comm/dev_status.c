/* The comm's device status (symheap_device_status_t, symheap_device.h):
 * where this rank's kernels record a wait for a peer that gave up after the
 * comm's SYMHEAP_TIMEOUT_MS, and the host's side of it.  Kernels cannot
 * return an error, and a context killed by __trap is lost for good, so a
 * kernel that gives up writes here and returns; the next call on the comm
 * that checks (every collective call, symheap_window_device_view,
 * symheap_comm_device_check) turns it into SYMHEAP_ERR_TIMEOUT and breaks
 * the comm: the ranks' collective state (epochs, flags) is out of step
 * after a kernel gave up, so nothing collective can go on.  Host-pinned
 * memory: reading it costs one load, no device call. */
#include <stdio.h>
#include <string.h>

#include "comm.h"

symheap_result_t symheap__dstatus_open(symheap_comm_t c) {
  const symheap_device_ops *d = &c->dev.ops;
  void *host = NULL, *dev = NULL;
  if (!d->host_alloc) {
    SYMHEAP_INFO("device adaptor '%s' has no host_alloc: the comm has no "
                 "device status, so libsymheap_cuda's collectives refuse "
                 "it and symheap_comm_device_check says UNSUPPORTED "
                 "(docs/device-api.md, \"Without a status\")",
                 d->name);
    return SYMHEAP_SUCCESS;
  }
  symheap_result_t r =
      d->host_alloc(c->dev_ctx, sizeof(symheap_device_status_t), &host, &dev);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "the comm's device status");
  memset(host, 0, sizeof(symheap_device_status_t));
  c->dstatus = host;
  c->dstatus_dev = dev;
  return SYMHEAP_SUCCESS;
}

void symheap__dstatus_close(symheap_comm_t c) {
  if (!c->dstatus)
    return;
  if (c->dev.ops.host_free(c->dev_ctx, c->dstatus) != SYMHEAP_SUCCESS)
    SYMHEAP_WARN("freeing the comm's device status: %s",
                 symheap__error_peek());
  c->dstatus = NULL;
  c->dstatus_dev = NULL;
}

static const char *wait_name(uint32_t w) {
  static const char *const names[] = {
      "?",
      "the collectives' barrier",
      "the LL all-reduce/reduce-scatter's data",
      "the push all-reduce's flags",
      "the LL128 all-reduce's lines",
      "the pipelined broadcast's progress",
      "all-to-all: the peer entering the call",
      "all-to-all: the peer's data",
      "a copy-engine path's flag",
      "symheap_dev_barrier",
      "symheap_dev_wait_signal",
  };
  return w < sizeof names / sizeof names[0] ? names[w] : names[0];
}

symheap_result_t symheap__dstatus_missing(symheap_comm_t c, const char *fn) {
  if (c->dstatus || !c->pad_ready)
    return SYMHEAP_SUCCESS; /* no pad: no view's kernel waits for a peer */
  return symheap__error(
      SYMHEAP_ERR_UNSUPPORTED,
      "%s: device adaptor '%s' has no host_alloc (symheap_device_ops), so "
      "the comm has no device status: whether a kernel gave up waiting for "
      "a peer cannot be known here (docs/device-api.md, \"Without a "
      "status\")",
      fn, c->dev.ops.name);
}

symheap_result_t symheap__dstatus_error(symheap_comm_t c, const char *fn) {
  volatile symheap_device_status_t *s = c->dstatus;
  if (!s || !__atomic_load_n(&s->done, __ATOMIC_ACQUIRE))
    return SYMHEAP_SUCCESS;
  symheap_result_t code = (symheap_result_t)s->code;
  if (code == SYMHEAP_SUCCESS)
    code = SYMHEAP_ERR_TIMEOUT;
  /* peer -1: a wait that knows no peer (symheap_dev_wait_signal). */
  char whom[32] = "a rank it cannot name";
  if (s->peer >= 0)
    snprintf(whom, sizeof whom, "rank %d", (int)s->peer);
  return symheap__error(
      code,
      "%s: a kernel of rank %d gave up waiting for %s after "
      "SYMHEAP_TIMEOUT_MS (%d ms; it waited %llu ms): block %d, %s, flag "
      "%llu wanted, %llu seen.  A peer died, or did not make the same "
      "collective call; the comm is broken (destroy it)",
      fn, c->rank, whom, c->timeout_ms,
      (unsigned long long)(s->waited_ns / 1000000u), (int)s->block,
      wait_name(s->wait), (unsigned long long)s->want,
      (unsigned long long)s->seen);
}

/* The probe (net_probe.h) through symheap's net adaptor table: the same
 * measurement as bench/net_raw.c, every operation a call of the built-in
 * adaptor's ops (found by name in the registry, as the core finds it), so
 * the difference between the two is the adaptor's own cost. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/net_registry.h"
#include "base/plugin.h"
#include "net_probe.h"

static symheap__net_table_t T;
static void *ctx, *mr, *rkey;
static char *local;
static const char *const name = "ofi";

/* Each process sees itself as index 0 and the other as index 1 (the
 * adaptor wants every rank's address; which number a process has does not
 * matter to it). */
static unsigned char addrs[2][SYMHEAP_NET_ADDR_MAX];
static int said(symheap_result_t r, const char *what) {
  if (r == SYMHEAP_SUCCESS)
    return 0;
  fprintf(stderr, "net_adaptor: %s: %s\n", what, symheap_last_error());
  return -1;
}

static int a_open(const char *prov, const char *dom, void *addr, size_t *len,
                  char *d, size_t dlen) {
  if (dom)
    setenv("SYMHEAP_NET_DOMAIN", dom, 1);
  symheap__builtins_load(); /* the registry is empty until then */
  if (said(symheap__net_lookup(name, &T), "lookup"))
    return -1;
  symheap_net_init_t a = {sizeof a, 0, 2, prov};
  if (said(T.ops.open(&symheap__host_services, &a, &ctx, addr, len), "open"))
    return -1;
  symheap_net_caps_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  if (said(T.ops.query(ctx, &c), "query"))
    return -1;
  memcpy(addrs[0], addr, *len);
  snprintf(d, dlen, "adaptor %s, provider %s, fabric %s, caps 0x%x", T.ops.name,
           c.provider, c.fabric, c.caps);
  return 0;
}

static int a_connect(const void *peer, size_t len) {
  if (len > SYMHEAP_NET_ADDR_MAX)
    return -1;
  memcpy(addrs[1], peer, len);
  return said(T.ops.connect(ctx, 2, addrs, SYMHEAP_NET_ADDR_MAX), "connect");
}

static int a_reg(char *region, size_t size, void *key, size_t *len) {
  local = region;
  return said(T.ops.mem_register(ctx, region, size, 0, &mr, key, len),
              "mem_register");
}

static int a_import(const void *key, size_t len) {
  return said(T.ops.rkey_import(ctx, 1, key, len, &rkey), "rkey_import");
}

static int a_put(size_t off, size_t len) {
  return said(
      T.ops.put(ctx, 1, local + off, mr, len, rkey, off, SYMHEAP_NET_NBI),
      "put");
}

static int a_get(size_t off, size_t len) {
  return said(T.ops.get(ctx, 1, local + off, mr, len, rkey, off, 0), "get");
}

static int a_fetch_add(size_t off, uint64_t *result) {
  uint64_t one = 1;
  return said(T.ops.atomic(ctx, 1, SYMHEAP_NET_AMO_FETCH_ADD, 8, rkey, off,
                           &one, NULL, result),
              "atomic");
}

static int a_wait(void) { return said(T.ops.quiet(ctx, 60000), "quiet"); }
static int a_progress(void) { return said(T.ops.progress(ctx), "progress"); }

/* --passive: sleep on the adaptor's wait fds (wait_fds), as the core's
 * waits and progress thread do; an adaptor without them spins. */
static int a_sleep(int fd) {
  struct pollfd p[5];
  int fds[4], k = T.ops.wait_fds ? T.ops.wait_fds(ctx, fds, 4) : -1;
  if (k < 0)
    return 0;
  if (k == 0)
    return 1; /* work pending */
  for (int i = 0; i < k; i++)
    p[i] = (struct pollfd){fds[i], POLLIN, 0};
  p[k] = (struct pollfd){fd, POLLIN, 0};
  if (poll(p, (nfds_t)k + 1, PROBE_SLEEP_MS) < 0)
    return -1;
  for (int i = 0; i < k; i++)
    if (p[i].revents)
      return 1;
  return 0;
}

static void a_close(void) {
  if (rkey)
    T.ops.rkey_release(ctx, rkey);
  if (mr)
    (void)T.ops.mem_deregister(ctx, mr);
  if (ctx)
    T.ops.close(ctx);
}

int main(int argc, char **argv) {
  const probe_engine_t e = {"symheap ofi adaptor (table calls)",
                            a_open,
                            a_connect,
                            a_reg,
                            a_import,
                            a_put,
                            a_get,
                            a_fetch_add,
                            a_wait,
                            a_progress,
                            a_close,
                            a_sleep};
  return probe_main(argc, argv, &e);
}

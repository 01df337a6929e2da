/* "loop": a software net adaptor for tests, written with the public headers
 * alone.  Ranks talk over non-blocking Unix datagram sockets (abstract
 * names, so one machine; ranks in processes or threads): put, get and atomic
 * are request messages the target's progress() applies to its registered
 * memory and answers.  Nothing moves unless the target calls into the
 * adaptor (SYMHEAP_NET_CAP_MANUAL, like tcp;ofi_rxm's emulated atomics), so
 * the core's progress in its waits and its progress thread are exercised.
 * Not thread-safe: the core serialises calls. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "net_loop.h"

#define CHUNK (16u << 10) /* data bytes per message */
#define SLOTS 1024u       /* operations outstanding at most */
#define ADDR_LEN 48

enum { PUT = 1, PUT_ACK, GET, GET_DATA, AMO, AMO_ACK };

typedef struct {
  uint32_t type, src;
  uint64_t seq, rid, off, len;
  uint32_t op, size;
  uint64_t operand, compare; /* AMO_ACK: operand is the old value */
} hdr_t;

typedef struct {
  uint64_t id;
  char *ptr;
  size_t size;
} region_t;

typedef struct {
  int peer;
  uint64_t rid;
  size_t size;
} rkey_t;

typedef struct out_msg {
  struct out_msg *next;
  int peer;
  size_t len;
  char buf[];
} out_msg_t;

typedef struct {
  uint64_t seq; /* 0: free */
  void *dst;    /* GET_DATA: where; AMO_ACK: the fetch (or NULL) */
  size_t len;
} slot_t;

typedef struct {
  const symheap_host_services_t *svc;
  int fd, rank, nranks;
  struct sockaddr_un *addrs;
  region_t *regions;
  int nregions, cap_regions;
  uint64_t next_rid, next_seq;
  size_t outstanding;
  slot_t slots[SLOTS];
  out_msg_t *outq, **outq_tail;
  char rx[sizeof(hdr_t) + CHUNK];
} ctx_t;

static _Thread_local int g_fail_register, g_fail_open;
void net_loop_fail_next_register(void) { g_fail_register = 1; }
void net_loop_fail_next_open(void) { g_fail_open = 1; }

/* Live objects in the process, to prove the core releases what it made. */
static int g_live_regions, g_live_rkeys, g_live_ctx, g_put_signals;
int net_loop_put_signals(void) {
  return __atomic_load_n(&g_put_signals, __ATOMIC_RELAXED);
}
void net_loop_counts(int *ctxs, int *regions, int *rkeys) {
  *ctxs = __atomic_load_n(&g_live_ctx, __ATOMIC_RELAXED);
  *regions = __atomic_load_n(&g_live_regions, __ATOMIC_RELAXED);
  *rkeys = __atomic_load_n(&g_live_rkeys, __ATOMIC_RELAXED);
}
#define LIVE(x, d) __atomic_add_fetch(&(x), (d), __ATOMIC_RELAXED)

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static socklen_t addr_len(void) {
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + ADDR_LEN);
}

static int available(const symheap_host_services_t *svc, char *why,
                     size_t len) {
  (void)svc, (void)why, (void)len;
  return 1;
}

static symheap_result_t providers(const symheap_host_services_t *svc,
                                  char *buf, size_t len) {
  (void)svc;
  snprintf(buf, len, "loop\n");
  return SYMHEAP_SUCCESS;
}

static symheap_result_t lopen(const symheap_host_services_t *svc,
                              const symheap_net_init_t *args, void **out,
                              void *addr, size_t *alen) {
  static unsigned counter;
  if (g_fail_open) {
    g_fail_open = 0;
    return svc->error(SYMHEAP_ERR_SYSTEM, "loop: open failed on purpose");
  }
  ctx_t *c = calloc(1, sizeof *c);
  if (!c)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "loop: no memory");
  c->svc = svc;
  c->rank = args->rank;
  c->nranks = args->nranks;
  c->next_seq = 1;
  c->outq_tail = &c->outq;
  c->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path + 1, ADDR_LEN - 1, "symheap-loop-%d-%u-%d", (int)getpid(),
           __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED), args->rank);
  if (c->fd < 0 || bind(c->fd, (struct sockaddr *)&a, addr_len()) != 0) {
    int e = errno;
    if (c->fd >= 0)
      close(c->fd);
    free(c);
    return svc->error(SYMHEAP_ERR_SYSTEM, "loop: socket: %s", strerror(e));
  }
  int big = 1 << 20;
  (void)setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  (void)setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  memcpy(addr, &a, sizeof a);
  *alen = sizeof a;
  *out = c;
  LIVE(g_live_ctx, 1);
  return SYMHEAP_SUCCESS;
}

static void lclose(void *ctx) {
  ctx_t *c = ctx;
  while (c->outq) {
    out_msg_t *m = c->outq;
    c->outq = m->next;
    free(m);
  }
  close(c->fd);
  LIVE(g_live_ctx, -1);
  free(c->addrs);
  free(c->regions);
  free(c);
}

static symheap_result_t query(void *ctx, symheap_net_caps_t *caps) {
  (void)ctx;
  caps->caps =
      SYMHEAP_NET_CAP_RMA | SYMHEAP_NET_CAP_ATOMIC | SYMHEAP_NET_CAP_MANUAL;
  caps->max_msg = 0; /* any: split here */
  caps->inject_size = SIZE_MAX;
  snprintf(caps->provider, sizeof caps->provider, "loop");
  snprintf(caps->fabric, sizeof caps->fabric, "unix-dgram");
  return SYMHEAP_SUCCESS;
}

static symheap_result_t lconnect(void *ctx, int nranks, const void *addrs,
                                 size_t stride) {
  ctx_t *c = ctx;
  c->addrs = calloc((size_t)nranks, sizeof *c->addrs);
  if (!c->addrs)
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "loop: no memory");
  for (int p = 0; p < nranks; p++)
    memcpy(&c->addrs[p], (const char *)addrs + (size_t)p * stride,
           sizeof c->addrs[p]);
  return SYMHEAP_SUCCESS;
}

/* One datagram now: 0 sent, 1 would block, -1 the peer is gone. */
static int send_now(ctx_t *c, int peer, const void *buf, size_t len) {
  ssize_t n = sendto(c->fd, buf, len, MSG_DONTWAIT,
                     (const struct sockaddr *)&c->addrs[peer], addr_len());
  if (n == (ssize_t)len)
    return 0;
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
             ? 1
             : -1;
}

/* A reply: sent now, or queued behind earlier ones (order kept). */
static void reply(ctx_t *c, int peer, hdr_t *h, const void *data, size_t len) {
  char buf[sizeof(hdr_t) + CHUNK];
  memcpy(buf, h, sizeof *h);
  if (len)
    memcpy(buf + sizeof *h, data, len);
  if (!c->outq && send_now(c, peer, buf, sizeof *h + len) != 1)
    return; /* sent, or the requester is gone: nothing to answer */
  out_msg_t *m = malloc(sizeof *m + sizeof *h + len);
  if (!m)
    return;
  m->next = NULL;
  m->peer = peer;
  m->len = sizeof *h + len;
  memcpy(m->buf, buf, m->len);
  *c->outq_tail = m;
  c->outq_tail = &m->next;
}

static void flush(ctx_t *c) {
  while (c->outq) {
    out_msg_t *m = c->outq;
    if (send_now(c, m->peer, m->buf, m->len) == 1)
      return;
    c->outq = m->next;
    if (!c->outq)
      c->outq_tail = &c->outq;
    free(m);
  }
}

static region_t *region(ctx_t *c, uint64_t rid, uint64_t off, uint64_t len) {
  for (int i = 0; i < c->nregions; i++)
    if (c->regions[i].id == rid)
      return off <= c->regions[i].size && len <= c->regions[i].size - off
                 ? &c->regions[i]
                 : NULL;
  return NULL;
}

#define AMO_APPLY(T, p, h)                                                     \
  do {                                                                         \
    T *x = (T *)(p), v = (T)(h)->operand, o = 0;                               \
    switch ((h)->op) {                                                         \
    case SYMHEAP_NET_AMO_FETCH: o = __atomic_load_n(x, __ATOMIC_SEQ_CST); break;\
    case SYMHEAP_NET_AMO_SET: o = __atomic_exchange_n(x, v, __ATOMIC_SEQ_CST); break;\
    case SYMHEAP_NET_AMO_ADD:                                                  \
    case SYMHEAP_NET_AMO_FETCH_ADD: o = __atomic_fetch_add(x, v, __ATOMIC_SEQ_CST); break;\
    case SYMHEAP_NET_AMO_SWAP: o = __atomic_exchange_n(x, v, __ATOMIC_SEQ_CST); break;\
    case SYMHEAP_NET_AMO_CSWAP:                                                \
      o = (T)(h)->compare;                                                     \
      __atomic_compare_exchange_n(x, &o, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);\
      break;                                                                   \
    case SYMHEAP_NET_AMO_AND: o = __atomic_fetch_and(x, v, __ATOMIC_SEQ_CST); break;\
    case SYMHEAP_NET_AMO_OR: o = __atomic_fetch_or(x, v, __ATOMIC_SEQ_CST); break;\
    case SYMHEAP_NET_AMO_XOR: o = __atomic_fetch_xor(x, v, __ATOMIC_SEQ_CST); break;\
    }                                                                          \
    (h)->operand = (uint64_t)o;                                                \
  } while (0)

/* Deliver a put as a NIC does: whole aligned words written at once, so a
 * target polling a word with atomic loads sees it old or new. */
static void deliver(char *dst, const char *src, size_t len) {
  if (((uintptr_t)dst | len) % 8) {
    memcpy(dst, src, len);
    return;
  }
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v;
    memcpy(&v, src + i, 8);
    __atomic_store_n((uint64_t *)(void *)(dst + i), v, __ATOMIC_RELAXED);
  }
}

static void complete(ctx_t *c, const hdr_t *h, const void *data) {
  slot_t *s = &c->slots[h->seq % SLOTS];
  if (s->seq != h->seq)
    return;
  if (h->type == GET_DATA && s->dst)
    memcpy(s->dst, data, h->len < s->len ? h->len : s->len);
  if (h->type == AMO_ACK && s->dst)
    memcpy(s->dst, &h->operand, s->len);
  s->seq = 0;
  c->outstanding--;
}

static void handle(ctx_t *c, hdr_t *h, const char *data) {
  region_t *g = NULL;
  int peer = (int)h->src;
  if (h->type == PUT || h->type == GET || h->type == AMO) {
    g = region(c, h->rid, h->off, h->type == AMO ? h->size : h->len);
    if (!g || peer < 0 || peer >= c->nranks)
      return; /* the core checked bounds: a stray message, dropped */
  }
  switch (h->type) {
  case PUT:
    deliver(g->ptr + h->off, data, h->len);
    h->type = PUT_ACK;
    h->src = (uint32_t)c->rank;
    reply(c, peer, h, NULL, 0);
    break;
  case GET:
    h->type = GET_DATA;
    h->src = (uint32_t)c->rank;
    reply(c, peer, h, g->ptr + h->off, h->len);
    break;
  case AMO:
    if (h->size == 4)
      AMO_APPLY(uint32_t, g->ptr + h->off, h);
    else
      AMO_APPLY(uint64_t, g->ptr + h->off, h);
    h->type = AMO_ACK;
    h->src = (uint32_t)c->rank;
    reply(c, peer, h, NULL, 0);
    break;
  default:
    complete(c, h, data);
  }
}

/* The calling thread's progress calls (net_loop_progress_calls). */
static _Thread_local long g_progress_calls;
long net_loop_progress_calls(void) { return g_progress_calls; }

static long g_progress_all; /* every thread's */
long net_loop_progress_calls_all(void) {
  return __atomic_load_n(&g_progress_all, __ATOMIC_RELAXED);
}

static symheap_result_t progress(void *ctx) {
  ctx_t *c = ctx;
  g_progress_calls++;
  __atomic_add_fetch(&g_progress_all, 1, __ATOMIC_RELAXED);
  flush(c);
  for (int i = 0; i < 256; i++) {
    ssize_t n = recv(c->fd, c->rx, sizeof c->rx, MSG_DONTWAIT);
    if (n < (ssize_t)sizeof(hdr_t))
      break;
    hdr_t h;
    memcpy(&h, c->rx, sizeof h);
    handle(c, &h, c->rx + sizeof h);
  }
  flush(c);
  return SYMHEAP_SUCCESS;
}

/* A request: a free slot, then the datagram, progressing while either
 * waits; REMOTE when the peer's socket is gone, TIMEOUT after 30 s. */
static symheap_result_t request(ctx_t *c, int peer, hdr_t *h, const void *data,
                                void *dst, size_t dst_len) {
  int64_t deadline = now_ms() + 30000;
  struct timespec nap = {0, 10000};
  while (c->slots[c->next_seq % SLOTS].seq) {
    (void)progress(c);
    if (now_ms() > deadline)
      return c->svc->error(SYMHEAP_ERR_TIMEOUT, "loop: no free slot");
    nanosleep(&nap, NULL);
  }
  h->seq = c->next_seq++;
  h->src = (uint32_t)c->rank;
  char buf[sizeof(hdr_t) + CHUNK];
  memcpy(buf, h, sizeof *h);
  if (data && h->type == PUT)
    memcpy(buf + sizeof *h, data, h->len);
  size_t len = sizeof *h + (h->type == PUT ? h->len : 0);
  for (;;) {
    int s = send_now(c, peer, buf, len);
    if (s < 0)
      return c->svc->error(SYMHEAP_ERR_REMOTE, "loop: rank %d is gone: %s",
                           peer, strerror(errno));
    if (s == 0)
      break;
    (void)progress(c);
    if (now_ms() > deadline)
      return c->svc->error(SYMHEAP_ERR_TIMEOUT,
                           "loop: rank %d takes no messages", peer);
    nanosleep(&nap, NULL);
  }
  c->slots[h->seq % SLOTS] = (slot_t){h->seq, dst, dst_len};
  c->outstanding++;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t mem_register(void *ctx, void *ptr, size_t size,
                                     int is_device, void **mr, void *key,
                                     size_t *key_len) {
  ctx_t *c = ctx;
  if (g_fail_register) {
    g_fail_register = 0;
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY,
                         "loop: registration failed on purpose (test)");
  }
  if (is_device)
    return c->svc->error(SYMHEAP_ERR_UNSUPPORTED, "loop: host memory only");
  if (c->nregions == c->cap_regions) {
    int cap = c->cap_regions ? 2 * c->cap_regions : 16;
    region_t *r = realloc(c->regions, (size_t)cap * sizeof *r);
    if (!r)
      return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "loop: no memory");
    c->regions = r;
    c->cap_regions = cap;
  }
  region_t *g = &c->regions[c->nregions++];
  *g = (region_t){++c->next_rid, ptr, size};
  uint64_t k[2] = {g->id, size};
  memcpy(key, k, sizeof k);
  *key_len = sizeof k;
  *mr = (void *)(uintptr_t)g->id;
  LIVE(g_live_regions, 1);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t mem_deregister(void *ctx, void *mr) {
  ctx_t *c = ctx;
  uint64_t id = (uint64_t)(uintptr_t)mr;
  for (int i = 0; i < c->nregions; i++)
    if (c->regions[i].id == id) {
      c->regions[i] = c->regions[--c->nregions];
      LIVE(g_live_regions, -1);
      return SYMHEAP_SUCCESS;
    }
  return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "loop: no region %llu",
                       (unsigned long long)id);
}

static symheap_result_t rkey_import(void *ctx, int peer, const void *key,
                                    size_t key_len, void **out) {
  ctx_t *c = ctx;
  uint64_t k[2];
  if (key_len != sizeof k)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "loop: a key of %zu bytes",
                         key_len);
  memcpy(k, key, sizeof k);
  rkey_t *r = malloc(sizeof *r);
  if (!r)
    return c->svc->error(SYMHEAP_ERR_NO_MEMORY, "loop: no memory");
  *r = (rkey_t){peer, k[0], (size_t)k[1]};
  *out = r;
  LIVE(g_live_rkeys, 1);
  return SYMHEAP_SUCCESS;
}

static void rkey_release(void *ctx, void *rkey) {
  (void)ctx;
  free(rkey);
  LIVE(g_live_rkeys, -1);
}

static symheap_result_t rma(ctx_t *c, int type, int peer, char *buf,
                            size_t len, rkey_t *k, uint64_t off) {
  for (size_t done = 0; done < len;) {
    size_t n = len - done < CHUNK ? len - done : CHUNK;
    hdr_t h = {0};
    h.type = (uint32_t)type;
    h.rid = k->rid;
    h.off = off + done;
    h.len = n;
    symheap_result_t r = request(c, peer, &h, buf + done,
                                 type == GET ? buf + done : NULL, n);
    if (r != SYMHEAP_SUCCESS)
      return r;
    done += n;
  }
  return SYMHEAP_SUCCESS;
}

static symheap_result_t put(void *ctx, int peer, const void *src, void *mr,
                            size_t len, void *rkey, uint64_t off,
                            unsigned flags) {
  (void)mr, (void)flags; /* copied into the message: src is free at once */
  return rma(ctx, PUT, peer, (char *)src, len, rkey, off);
}

static symheap_result_t get(void *ctx, int peer, void *dst, void *mr,
                            size_t len, void *rkey, uint64_t off,
                            unsigned flags) {
  (void)mr, (void)flags;
  return rma(ctx, GET, peer, dst, len, rkey, off);
}

static symheap_result_t atomic(void *ctx, int peer, symheap_net_amo_t op,
                               size_t size, void *rkey, uint64_t off,
                               const void *operand, const void *compare,
                               void *fetch) {
  ctx_t *c = ctx;
  hdr_t h = {0};
  h.type = AMO;
  h.rid = ((rkey_t *)rkey)->rid;
  h.off = off;
  h.op = (uint32_t)op;
  h.size = (uint32_t)size;
  if (size == 4) {
    uint32_t v = 0, w = 0;
    if (operand)
      memcpy(&v, operand, 4);
    if (compare)
      memcpy(&w, compare, 4);
    h.operand = v;
    h.compare = w;
  } else {
    if (operand)
      memcpy(&h.operand, operand, 8);
    if (compare)
      memcpy(&h.compare, compare, 8);
  }
  return request(c, peer, &h, NULL, fetch, size);
}

/* One call: the data's messages, then the signal's; a target applies a
 * sender's messages in order, so the data is there before the signal. */
static symheap_result_t put_signal(void *ctx, int peer, const void *src,
                                   void *mr, size_t len, void *rkey,
                                   uint64_t off, void *sig_rkey,
                                   uint64_t sig_off, uint64_t value,
                                   symheap_net_amo_t sig_op, unsigned flags) {
  (void)mr, (void)flags;
  ctx_t *c = ctx;
  /* As ofi: data needs its region's key (the core sends a signal of no
   * data as the atomic alone). */
  if (!rkey || !sig_rkey)
    return c->svc->error(SYMHEAP_ERR_INVALID_ARG, "loop put_signal: no key");
  LIVE(g_put_signals, 1);
  symheap_result_t r = rma(ctx, PUT, peer, (char *)src, len, rkey, off);
  return r == SYMHEAP_SUCCESS ? atomic(ctx, peer, sig_op, 8, sig_rkey, sig_off,
                                       &value, NULL, NULL)
                              : r;
}

static symheap_result_t quiet(void *ctx, int timeout_ms) {
  ctx_t *c = ctx;
  int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 30000);
  struct timespec nap = {0, 5000};
  while (c->outstanding) {
    (void)progress(c);
    if (!c->outstanding)
      break;
    if (now_ms() > deadline)
      return c->svc->error(SYMHEAP_ERR_TIMEOUT,
                           "loop: %zu operations still outstanding after %d "
                           "ms",
                           c->outstanding, timeout_ms);
    nanosleep(&nap, NULL);
  }
  return SYMHEAP_SUCCESS;
}

static symheap_result_t fence(void *ctx) { return quiet(ctx, 0); }

/* loop_wait's: the socket, readable when a peer's request or answer
 * arrives; 0 while messages wait to be sent (progress sends them). */
static int wait_fds(void *ctx, int *fds, int max) {
  ctx_t *c = ctx;
  if (max < 1)
    return -1;
  if (c->outq)
    return 0;
  fds[0] = c->fd;
  return 1;
}

static symheap_result_t query_signal(void *ctx, symheap_net_caps_t *caps) {
  symheap_result_t r = query(ctx, caps);
  caps->caps |= SYMHEAP_NET_CAP_REMOTE_CQ;
  return r;
}

/* The loop adaptor's three forms differ only in their name, query (the
 * remote-CQ capability), put_signal (NULL: the core's put + fence + atomic)
 * and wait_fds (NULL: none to sleep on). */
#define NET_LOOP_OPS(NAME, QUERY, PUT_SIGNAL, WAIT_FDS)                        \
  {                                                                            \
      .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,                              \
      .struct_size = sizeof(symheap_net_ops),                                  \
      .name = NAME,                                                            \
      .available = available,                                                  \
      .providers = providers,                                                  \
      .open = lopen,                                                           \
      .close = lclose,                                                         \
      .query = QUERY,                                                          \
      .connect = lconnect,                                                     \
      .mem_register = mem_register,                                            \
      .mem_deregister = mem_deregister,                                        \
      .rkey_import = rkey_import,                                              \
      .rkey_release = rkey_release,                                            \
      .put = put,                                                              \
      .get = get,                                                              \
      .atomic = atomic,                                                        \
      .put_signal = PUT_SIGNAL,                                                \
      .fence = fence,                                                          \
      .quiet = quiet,                                                          \
      .progress = progress,                                                    \
      .wait_fds = WAIT_FDS,                                                    \
  }

const symheap_net_ops net_loop_signal_ops =
    NET_LOOP_OPS("loop_signal", query_signal, put_signal, NULL);
const symheap_net_ops net_loop_ops = NET_LOOP_OPS("loop", query, NULL, NULL);
/* "loop" with wait descriptors: the core's progress thread sleeps on them. */
const symheap_net_ops net_loop_wait_ops =
    NET_LOOP_OPS("loop_wait", query, NULL, wait_fds);

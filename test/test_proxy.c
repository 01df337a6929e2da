/* The device host proxy without a GPU: the CPU plays the kernel, writing
 * ring entries exactly as kernels/symheap_device.cuh does (a ticket from
 * the pad's counter, room, the entry, a fence, its seq with release), over
 * the test net adaptor "loop" on two pretend hosts (SYMHEAP_HOST_ID).
 *   symheap-run -n 4 test_proxy            ranks 0..n/2-1 on host A, rest B
 *   symheap-run -n 2 test_proxy --mixed 2  each process a host of 2 threads
 *   symheap-run -n 4 test_proxy --off      SYMHEAP_DEVICE_PROXY=off
 * Every rank sends to its partner on the other host, (rank + n/2) % n. */
/* The kernel's fence, as the core's files write it: gcc refuses fences
 * under ThreadSanitizer unless told to let them be (CI's TSan build). */
#if defined(__SANITIZE_THREAD__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/proxy.h"
#include "harness.h"
#include "proxy_producer.h"
#include "net_loop.h"
#include "symheap_device.h"

static char tag[64] = "proxy";
static int g_per_host;
#define WIN_BYTES (12u << 20) /* over the heap threshold: a registration */
#define BIG (5u << 20) + 3u   /* more than one staging piece */
#define ROUNDS 64
#define WAIT_NS 20000000000ull /* the test's own waits: 20 s */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static void pause_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

/* --- the receiver -------------------------------------------------------- */
static uint64_t wait_signal(const symheap_device_window_t *v, unsigned i,
                            uint64_t want) {
  uint64_t *s = symheap_device_signal_ptr(v, v->rank, i), got = 0;
  uint64_t start = now_ns();
  while ((got = __atomic_load_n(s, __ATOMIC_ACQUIRE)) < want &&
         now_ns() - start < WAIT_NS)
    pause_us(10);
  return got;
}

static unsigned char pat(int from, uint64_t salt, size_t i) {
  return (unsigned char)(from * 31 + salt * 13 + i * 7 + 1);
}
static void fill(unsigned char *b, size_t n, int from, uint64_t salt) {
  for (size_t i = 0; i < n; i++)
    b[i] = pat(from, salt, i);
}
/* The first wrong byte of [at, at + n) of the local copy, or n. */
static size_t check(const symheap_device_window_t *v, size_t at, size_t n,
                    int from, uint64_t salt) {
  const unsigned char *m = symheap_device_local_ptr(v, at);
  for (size_t i = 0; i < n; i++)
    if (m[i] != pat(from, salt, i))
      return i;
  return n;
}

typedef struct {
  th_ctx_t *c;
  symheap_window_t w;
  symheap_device_window_t v;
  int peer; /* partner on the other host: we send to it, it to us */
} env_t;

static void case_view(env_t *e) {
  th_ctx_t *c = e->c;
  CHECK(e->v.version == SYMHEAP_DEVICE_WINDOW_VERSION &&
            (e->v.flags & SYMHEAP_VIEW_PROXY) && e->v.proxy_ring &&
            e->v.proxy_window == (uint64_t)(uintptr_t)e->w,
        "view: version %u flags %#x ring %p", e->v.version, e->v.flags,
        e->v.proxy_ring);
  if (!e->v.proxy_ring)
    return;
  symheap_proxy_ring_t *ring = e->v.proxy_ring;
  CHECK(ring->version == SYMHEAP_PROXY_RING_VERSION &&
            ring->entries == SYMHEAP_PROXY_ENTRIES && ring->timeout_ns > 0,
        "ring header: version %u entries %u", ring->version, ring->entries);
  for (int p = 0; p < c->n; p++) {
    int want = p / g_per_host == c->rank / g_per_host
                   ? SYMHEAP_DEVICE_REACH_LOAD_STORE
                   : SYMHEAP_DEVICE_REACH_PROXY;
    CHECK(symheap_device_reach(&e->v, p) == want, "reach of rank %d: %d", p,
          symheap_device_reach(&e->v, p));
  }
  CHECK(symheap_device_reach(&e->v, c->n) == SYMHEAP_DEVICE_REACH_NONE,
        "reach past the comm");
}

/* put_signal of 0 B, 8 B, 4 KiB and more than a staging piece: the data is
 * there once the signal is. */
static void case_sizes(env_t *e) {
  static const size_t sizes[] = {0, 8, 4096, BIG};
  unsigned char *src = malloc(BIG);
  for (unsigned k = 0; src && k < 4; k++) {
    size_t n = sizes[k];
    fill(src, n, e->c->rank, k);
    CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_PUT_SIGNAL, e->peer, 0, src, n,
                  (uint32_t)e->c->rank, SYMHEAP_PROXY_SIG_SET, k + 1, WAIT_NS));
    CHECK_OK(quiet(&e->v)); /* src is the proxy's until then */
    uint64_t got = wait_signal(&e->v, (unsigned)e->peer, k + 1);
    CHECK(got >= k + 1, "signal from %d: %llu, want %u", e->peer,
          (unsigned long long)got, k + 1);
    size_t bad = check(&e->v, 0, n, e->peer, k);
    CHECK(bad == n, "%zu bytes: byte %zu wrong once signalled", n, bad);
    CHECK_OK(symheap_comm_barrier(e->c->comm));
  }
  free(src);
}

/* ROUNDS put_signals back to back into distinct 4 KiB blocks, signal =
 * round: whenever the receiver sees s, blocks 0..s-1 are all there.  Then
 * plain puts and a lone signal (ADD): the puts are there once it is. */
static void case_order(env_t *e) {
  th_ctx_t *c = e->c;
  size_t blk = 4096, base = 1u << 20;
  unsigned char *src = malloc(blk * ROUNDS);
  for (int r = 0; src && r < ROUNDS; r++) {
    fill(src + r * blk, blk, c->rank, 100 + r);
    CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_PUT_SIGNAL, e->peer, base + r * blk,
                  src + r * blk, blk, (uint32_t)c->rank, SYMHEAP_PROXY_SIG_SET,
                  100 + r + 1, WAIT_NS));
  }
  /* The per-sender signal still holds case_sizes' last value (< 100). */
  uint64_t seen = 100, start = now_ns();
  while (seen < 100 + ROUNDS && now_ns() - start < WAIT_NS) {
    uint64_t s = wait_signal(&e->v, (unsigned)e->peer, seen + 1);
    if (s <= seen || s > 100 + ROUNDS)
      break;
    for (uint64_t r = seen - 100; r < s - 100; r++) {
      size_t bad = check(&e->v, base + r * blk, blk, e->peer, 100 + r);
      CHECK(bad == blk, "signal %llu seen, block %llu byte %zu not there",
            (unsigned long long)s, (unsigned long long)r, bad);
    }
    seen = s;
  }
  CHECK(seen == 100 + ROUNDS, "last signal %llu", (unsigned long long)seen);
  /* Plain puts, then a signal of its own (index past the per-sender ones). */
  unsigned idx = (unsigned)(c->n + c->rank),
           from_idx = (unsigned)(c->n + e->peer);
  for (int r = 0; src && r < 8; r++)
    CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_PUT, e->peer, 2 * base + r * blk,
                  src + r * blk, blk, 0, 0, 0, WAIT_NS));
  CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_SIGNAL, e->peer, 0, NULL, 0, idx,
                SYMHEAP_PROXY_SIG_ADD, 5, WAIT_NS));
  CHECK(wait_signal(&e->v, from_idx, 5) == 5, "lone signal not seen");
  for (int r = 0; r < 8; r++) {
    size_t bad = check(&e->v, 2 * base + r * blk, blk, e->peer, 100 + r);
    CHECK(bad == blk, "put %d byte %zu not there before its signal", r, bad);
  }
  CHECK_OK(quiet(&e->v));
  CHECK_OK(symheap_comm_barrier(c->comm));
  free(src);
}

/* A device quiet completes puts at their targets: after it and a
 * barrier, the partner sees them with no signal. */
static void case_quiet(env_t *e) {
  size_t n = 65536, at = 3u << 20;
  unsigned char *src = malloc(n);
  fill(src, n, e->c->rank, 7);
  CHECK_OK(
      post(&e->v, SYMHEAP_PROXY_OP_PUT, e->peer, at, src, n, 0, 0, 0, WAIT_NS));
  CHECK_OK(quiet(&e->v));
  CHECK_OK(symheap_comm_barrier(e->c->comm));
  size_t bad = check(&e->v, at, n, e->peer, 7);
  CHECK(bad == n, "byte %zu not there after quiet and barrier", bad);
  CHECK_OK(symheap_comm_barrier(e->c->comm));
  free(src);
}

/* A held proxy takes nothing: a producer fills the ring and then waits for
 * room; let go, everything goes out in order. */
typedef struct {
  env_t *e;
  const unsigned char *src;
  int posted; /* atomic */
  symheap_result_t r;
} producer_t;
#define BP_POSTS ((int)SYMHEAP_PROXY_ENTRIES + 44)
static void *producer(void *arg) {
  producer_t *p = arg;
  for (int i = 0; i < BP_POSTS && p->r == SYMHEAP_SUCCESS; i++) {
    p->r = post(&p->e->v, SYMHEAP_PROXY_OP_PUT, p->e->peer,
                (4u << 20) + (size_t)i * 8, p->src + (size_t)i * 8, 8, 0, 0, 0,
                WAIT_NS);
    __atomic_fetch_add(&p->posted, 1, __ATOMIC_RELEASE);
  }
  return NULL;
}
static void case_backpressure(env_t *e) {
  unsigned char *src = malloc(BP_POSTS * 8);
  fill(src, BP_POSTS * 8, e->c->rank, 9);
  symheap_proxy_ring_t *ring = e->v.proxy_ring;
  uint64_t before = __atomic_load_n(&ring->consumed, __ATOMIC_ACQUIRE);
  symheap__proxy_hold(e->c->comm, 1);
  int room =
      (int)(SYMHEAP_PROXY_ENTRIES -
            (__atomic_load_n(ticket_ctr(&e->v), __ATOMIC_ACQUIRE) - before));
  producer_t p = {e, src, 0, SYMHEAP_SUCCESS};
  pthread_t t;
  pthread_create(&t, NULL, producer, &p);
  /* It fills the ring's free entries and stops there. */
  uint64_t start = now_ns();
  while (__atomic_load_n(&p.posted, __ATOMIC_ACQUIRE) < room &&
         now_ns() - start < WAIT_NS)
    pause_us(100);
  pause_us(100000);
  int posted = __atomic_load_n(&p.posted, __ATOMIC_ACQUIRE);
  CHECK(posted == room, "a held proxy: %d entries posted, room for %d", posted,
        room);
  CHECK(__atomic_load_n(&ring->consumed, __ATOMIC_ACQUIRE) == before,
        "a held proxy took entries");
  symheap__proxy_hold(e->c->comm, 0);
  pthread_join(t, NULL);
  CHECK_OK(p.r);
  CHECK(p.posted == BP_POSTS, "posted %d of %d", p.posted, BP_POSTS);
  CHECK_OK(quiet(&e->v));
  CHECK_OK(symheap_comm_barrier(e->c->comm));
  size_t bad = check(&e->v, 4u << 20, BP_POSTS * 8, e->peer, 9);
  CHECK(bad == BP_POSTS * 8, "byte %zu of the held puts wrong", bad);
  CHECK_OK(symheap_comm_barrier(e->c->comm));
  free(src);
}

/* An entry outside the window fails (the device's quiet and the host's
 * check say so, first error kept); the ring goes on working. */
static void case_errors(env_t *e) {
  th_ctx_t *c = e->c;
  unsigned char src[64];
  fill(src, sizeof src, c->rank, 11);
  CHECK_OK(symheap_comm_proxy_check(c->comm));
  CHECK_ERR(symheap_comm_proxy_check(NULL), SYMHEAP_ERR_INVALID_ARG);
  CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_PUT, e->peer, WIN_BYTES - 8, src, 64, 0,
                0, 0, WAIT_NS));
  CHECK_ERR(quiet(&e->v), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_comm_proxy_check(c->comm), SYMHEAP_ERR_INVALID_ARG);
  CHECK(strstr(symheap_last_error(), "outside the window") != NULL,
        "message: %s", symheap_last_error());
  if (g_per_host > 1) { /* a peer of this host: refused, the first kept */
    int near = c->rank % g_per_host ? c->rank - 1 : c->rank + 1;
    CHECK_OK(
        post(&e->v, SYMHEAP_PROXY_OP_PUT, near, 0, src, 8, 0, 0, 0, WAIT_NS));
    CHECK_ERR(quiet(&e->v), SYMHEAP_ERR_INVALID_ARG);
    CHECK_ERR(symheap_comm_proxy_check(c->comm), SYMHEAP_ERR_INVALID_ARG);
    CHECK(strstr(symheap_last_error(), "outside the window") != NULL,
          "the first failure is kept: %s", symheap_last_error());
  }
  CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_PUT_SIGNAL, e->peer, 5u << 20, src,
                sizeof src, (uint32_t)c->rank, SYMHEAP_PROXY_SIG_SET, 1000,
                WAIT_NS));
  CHECK(wait_signal(&e->v, (unsigned)e->peer, 1000) == 1000,
        "the ring stopped working after an error");
  size_t bad = check(&e->v, 5u << 20, sizeof src, e->peer, 11);
  CHECK(bad == sizeof src, "byte %zu wrong after an error", bad);
  CHECK_OK(symheap_comm_barrier(c->comm));
}

/* A producer that finds no room times out; stopping the proxy (as comm
 * destroy does) drops what is queued, sends none of it, and tells the
 * device it is gone. */
static void case_shutdown(env_t *e) {
  th_ctx_t *c = e->c;
  symheap_proxy_ring_t *ring = e->v.proxy_ring;
  unsigned char src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  unsigned idx = (unsigned)(2 * c->n + c->rank);
  unsigned from_idx = (unsigned)(2 * c->n + e->peer);
  symheap__proxy_hold(c->comm, 1);
  uint64_t t0 = __atomic_load_n(ticket_ctr(&e->v), __ATOMIC_ACQUIRE);
  uint64_t room = SYMHEAP_PROXY_ENTRIES -
                  (t0 - __atomic_load_n(&ring->consumed, __ATOMIC_ACQUIRE));
  for (uint64_t i = 0; i < room; i++)
    CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_SIGNAL, e->peer, 0, src, 0, idx,
                  SYMHEAP_PROXY_SIG_SET, 77, WAIT_NS));
  uint64_t start = now_ns();
  CHECK_ERR(post(&e->v, SYMHEAP_PROXY_OP_PUT, e->peer, 0, src, 8, 0, 0, 0,
                 50000000ull),
            SYMHEAP_ERR_TIMEOUT);
  CHECK(now_ns() - start < 5000000000ull, "the full ring's wait took %llu ms",
        (unsigned long long)((now_ns() - start) / 1000000));
  symheap__proxy_stop(c->comm);
  CHECK(ring->stopped == 1, "the ring does not say the proxy stopped");
  CHECK(c->comm->proxy->dropped == room, "dropped %llu of %llu",
        (unsigned long long)c->comm->proxy->dropped, (unsigned long long)room);
  CHECK(ring->completed == ring->consumed, "completed %llu consumed %llu",
        (unsigned long long)ring->completed,
        (unsigned long long)ring->consumed);
  CHECK_ERR(
      post(&e->v, SYMHEAP_PROXY_OP_PUT, e->peer, 0, src, 8, 0, 0, 0, WAIT_NS),
      SYMHEAP_ERR_REMOTE);
  CHECK_OK(symheap_comm_barrier(c->comm));
  pause_us(50000);
  uint64_t *s = symheap_device_signal_ptr(&e->v, e->v.rank, from_idx);
  CHECK(__atomic_load_n(s, __ATOMIC_ACQUIRE) == 0,
        "a dropped signal arrived: %llu", (unsigned long long)*s);
  CHECK_OK(symheap_comm_barrier(c->comm));
}

typedef struct {
  const char *name;
  void (*fn)(env_t *e);
} case_t;
static const case_t cases[] = {
    {"view_reach", case_view},
    {"put_signal_sizes", case_sizes},
    {"data_before_signal", case_order},
    {"quiet_completes", case_quiet},
    {"ring_full_backpressure", case_backpressure},
    {"errors_propagated", case_errors},
    {"shutdown_with_pending", case_shutdown},
};

static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  env_t e = {c, NULL, {0}, (c->rank + c->n / 2) % c->n};
  th_begin(tag, "window", c->rank);
  CHECK_OK(symheap_malloc(c->comm, WIN_BYTES, 0, &e.w));
  if (e.w)
    CHECK_OK(symheap_window_device_view(e.w, &e.v));
  int ok = e.w && e.v.proxy_ring;
  CHECK(ok, "no proxy in the view (flags %#x)", e.v.flags);
  CHECK_OK(symheap_comm_barrier(c->comm));
  th_end();
  for (size_t i = 0; ok && i < sizeof cases / sizeof *cases; i++) {
    th_begin(tag, cases[i].name, c->rank);
    cases[i].fn(&e);
    th_end();
  }
  th_begin(tag, "free", c->rank);
  if (e.w)
    CHECK_OK(symheap_free(c->comm, e.w));
  th_end();
}

/* SYMHEAP_DEVICE_PROXY=off: views say other hosts' ranks are reached by
 * neither way, and nothing of the proxy is made. */
static void run_off(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin(tag, "off_no_proxy_in_view", c->rank);
  symheap_window_t w = NULL;
  symheap_device_window_t v;
  memset(&v, 0, sizeof v);
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  if (w)
    CHECK_OK(symheap_window_device_view(w, &v));
  CHECK(!(v.flags & SYMHEAP_VIEW_PROXY) && !v.proxy_ring && !v.proxy_window,
        "view flags %#x ring %p", v.flags, v.proxy_ring);
  for (int p = 0; p < c->n; p++)
    CHECK(symheap_device_reach(&v, p) == (p / g_per_host == c->rank / g_per_host
                                              ? SYMHEAP_DEVICE_REACH_LOAD_STORE
                                              : SYMHEAP_DEVICE_REACH_NONE),
          "reach of rank %d: %d", p, symheap_device_reach(&v, p));
  CHECK(!c->comm->proxy || !c->comm->proxy->started, "a proxy was started");
  CHECK_OK(symheap_comm_proxy_check(c->comm));
  if (w)
    CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

int main(int argc, char **argv) {
  setenv("SYMHEAP_HEAP_THRESHOLD", "8M", 0);
  setenv("SYMHEAP_NET", "loop", 0);
  setenv("SYMHEAP_DEVICE_PROXY", "on", 0);
  if (symheap_register_net_adaptor(&net_loop_ops) != SYMHEAP_SUCCESS) {
    printf("FAIL proxy/register: %s\n", symheap_last_error());
    return 1;
  }
  int rank, n;
  if (th_launcher_ranks("proxy/env", &rank, &n) != 0)
    return 1;
  char host[32];
  if (argc == 3 && strcmp(argv[1], "--mixed") == 0) {
    if (n != 2) {
      printf("FAIL proxy/env: --mixed needs 2 processes\n");
      return 1;
    }
    /* each process one host of its thread-ranks */
    g_per_host = atoi(argv[2]);
    snprintf(host, sizeof host, "host-%d", rank);
    setenv("SYMHEAP_HOST_ID", host, 1);
    return th_run_mixed(g_per_host, "proxy_", tag, sizeof tag, NULL, NULL,
                        run_cases, NULL);
  }
  if (n < 2 || n % 2) {
    printf("FAIL proxy/env: needs an even number of ranks\n");
    return 1;
  }
  g_per_host = n / 2;
  snprintf(host, sizeof host, "host-%d", rank / g_per_host);
  setenv("SYMHEAP_HOST_ID", host, 1);
  int off = argc == 2 && strcmp(argv[1], "--off") == 0;
  if (off)
    setenv("SYMHEAP_DEVICE_PROXY", "off", 1);
  return th_main(1, argv, "proxy_", tag, sizeof tag, NULL,
                 off ? run_off : run_cases, NULL);
}

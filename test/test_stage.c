/* Target-side staging (issue 27, docs/network.md "Staging"): windows in
 * device memory that the net adaptor cannot register (the fake CUDA
 * driver: the cuda adaptor gives the CPU no access; "loop" or tcp;ofi_rxm:
 * no HMEM) are reached by other hosts through pinned host shadows.  Every
 * check of window contents reads device memory through the device
 * adaptor's copies (the fake driver's cuMemcpyDtoHAsync).
 *   SYMHEAP_DEVICE=cuda SYMHEAP_CUDA_LIBRARY=.../libcuda.so.1 \
 *     symheap-run -n 4 test_stage       ranks 0..n/2-1 on host A, rest B
 * SYMHEAP_NET=loop_wait: the progress thread sleeps on the adaptor's fds.
 * SYMHEAP_TIMEOUT_MS (default 4000 here) bounds the "never progresses"
 * case's quiet.
 * Every rank sends to its partner on the other host, (rank + n/2) % n. */
#if defined(__SANITIZE_THREAD__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/proxy.h"
#include "comm/net_stage.h"
#include "harness.h"
#include "proxy_producer.h"
#include "net_loop.h"
#include "stage_env.h"
#include "symheap_device.h"
#include "win/window.h"

static char tag[64] = "stage";
int g_per_host;
#define ROUNDS 32
int TIMEOUT_MS = 4000; /* SYMHEAP_TIMEOUT_MS unless set */

uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
void pause_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* n bytes of this rank's device memory at dev, through the adaptor. */
void dev_read(env_t *e, void *dst, const void *dev, size_t n) {
  symheap_comm_t c = e->c->comm;
  CHECK_OK(c->dev.ops.copy_to_host(c->dev_ctx, dst, dev, n));
}
void dev_write(env_t *e, void *dev, const void *src, size_t n) {
  symheap_comm_t c = e->c->comm;
  CHECK_OK(c->dev.ops.copy_from_host(c->dev_ctx, dev, src, n));
}
uint64_t dev_word(env_t *e, const void *dev) {
  uint64_t v = 0;
  dev_read(e, &v, dev, 8);
  return v;
}
/* Wait (sleeping: the progress thread lands what arrives) for the word. */
static uint64_t wait_word(env_t *e, const void *dev, uint64_t want) {
  uint64_t got = 0, start = now_ns();
  while ((got = dev_word(e, dev)) < want && now_ns() - start < WAIT_NS)
    pause_us(50);
  return got;
}

unsigned char pat(int from, uint64_t salt, size_t i) {
  return (unsigned char)(from * 31 + salt * 13 + i * 7 + 1);
}
void fill(unsigned char *b, size_t n, int from, uint64_t salt) {
  for (size_t i = 0; i < n; i++)
    b[i] = pat(from, salt, i);
}
size_t check(env_t *e, const symheap_device_window_t *v, size_t at, size_t n,
             int from, uint64_t salt) {
  unsigned char *m = malloc(n ? n : 1);
  dev_read(e, m, symheap_device_local_ptr(v, at), n);
  size_t i = 0;
  while (i < n && m[i] == pat(from, salt, i))
    i++;
  free(m);
  return i;
}

/* Whether b holds the pattern from `from` (salt 9) at [at, at + n). */
static int check_from(const unsigned char *b, int from, size_t at, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pat(from, 9, at + i))
      return 0;
  return 1;
}

static void case_staged(env_t *e) {
  th_ctx_t *c = e->c;
  symheap_comm_t comm = c->comm;
  CHECK(!(comm->caps.caps & SYMHEAP_CAP_HOST_ACCESS),
        "the device adaptor gives the CPU access: nothing is staged");
  CHECK(comm->netc && comm->netc->stage, "no staging on this comm");
  struct symheap_window *w = symheap__window_get(e->w, "test");
  symheap__netreg_t *g = w && w->rdma ? w->rdma->netreg : NULL;
  CHECK(g && g->shadow && g->peer_stage[e->peer] && g->peer_stage[c->rank],
        "the window is not staged");
  int reach = 0;
  CHECK_OK(symheap_window_peer_reach(e->w, e->peer, &reach));
  CHECK(reach == SYMHEAP_REACH_NET, "reach %d", reach);
}

/* put (blocking and nbi), sizes 8 B to past 1 MiB: in device memory after
 * quiet and a barrier. */
static void case_put_quiet(env_t *e) {
  static const size_t sizes[] = {8, 4096, BIG};
  unsigned char *src = malloc(BIG);
  for (unsigned k = 0; src && k < 3; k++)
    for (int nbi = 0; nbi < 2; nbi++) {
      size_t n = sizes[k], at = (size_t)(2 * k + nbi) * (2u << 20);
      fill(src, n, e->c->rank, 2 * k + nbi);
      CHECK_OK(nbi ? symheap_put_nbi(e->w, e->peer, at, src, n)
                   : symheap_put(e->w, e->peer, at, src, n));
      CHECK_OK(symheap_quiet(e->c->comm));
      CHECK_OK(symheap_comm_barrier(e->c->comm));
      size_t bad = check(e, &e->v, at, n, e->peer, 2 * k + nbi);
      CHECK(bad == n, "%s of %zu bytes: byte %zu wrong after quiet",
            nbi ? "put_nbi" : "put", n, bad);
      CHECK_OK(symheap_comm_barrier(e->c->comm));
    }
  free(src);
}

/* ROUNDS put_signals into distinct blocks, signal = round (SET): whenever
 * the receiver sees s, blocks up to s are there.  Then a lone ADD. */
static void case_order(env_t *e) {
  th_ctx_t *c = e->c;
  size_t blk = 8192, base = 1u << 20;
  size_t sig = SIG_OFF + 8 * (size_t)c->rank, from = SIG_OFF + 8 * (size_t)e->peer;
  unsigned char *src = malloc(blk * ROUNDS);
  for (int r = 0; src && r < ROUNDS; r++) {
    fill(src + r * blk, blk, c->rank, 100 + r);
    CHECK_OK(symheap_put_signal(e->w, e->peer, base + r * blk, src + r * blk,
                                blk, e->w, sig, (uint64_t)r + 1,
                                SYMHEAP_AMO_SET));
  }
  uint64_t seen = 0, start = now_ns();
  const void *word = symheap_device_local_ptr(&e->v, from);
  while (seen < ROUNDS && now_ns() - start < WAIT_NS) {
    uint64_t s = wait_word(e, word, seen + 1);
    if (s <= seen || s > ROUNDS)
      break;
    for (uint64_t r = seen; r < s; r++) {
      size_t bad = check(e, &e->v, base + r * blk, blk, e->peer, 100 + r);
      CHECK(bad == blk, "signal %llu seen, block %llu byte %zu not there",
            (unsigned long long)s, (unsigned long long)r, bad);
    }
    seen = s;
  }
  CHECK(seen == ROUNDS, "last signal %llu", (unsigned long long)seen);
  CHECK_OK(symheap_comm_barrier(c->comm)); /* the partner saw them all */
  uint64_t five = 5;
  CHECK_OK(symheap_atomic(e->w, e->peer, sig, SYMHEAP_AMO_ADD, 8, &five, NULL,
                          NULL));
  CHECK(wait_word(e, word, ROUNDS + 5) == ROUNDS + 5, "the ADD not applied");
  CHECK_OK(symheap_quiet(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
  free(src);
}

/* Every rank adds to one word of rank 0 (other hosts' through staging):
 * the target applies them one at a time, so none is lost. */
static void case_contention(env_t *e) {
  th_ctx_t *c = e->c;
  size_t at = SIG_OFF - 64;
  uint64_t one = 1;
  int target = c->n - 1; /* on host B; host A's ranks stage to it */
  if (c->rank / g_per_host != target / g_per_host)
    for (int i = 0; i < 50; i++)
      CHECK_OK(symheap_atomic(e->w, target, at, SYMHEAP_AMO_ADD, 8, &one,
                              NULL, NULL));
  CHECK_OK(symheap_quiet(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == target) {
    uint64_t v = dev_word(e, symheap_device_local_ptr(&e->v, at));
    CHECK(v == 50u * (uint64_t)g_per_host, "sum %llu, want %u",
          (unsigned long long)v, 50 * g_per_host);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
}

/* Heap windows: their chunks are staged too. */
static void case_heap(env_t *e) {
  th_ctx_t *c = e->c;
  symheap_window_t h = NULL;
  symheap_device_window_t hv;
  memset(&hv, 0, sizeof hv);
  unsigned char src[3000];
  fill(src, sizeof src, c->rank, 55);
  CHECK_OK(symheap_malloc(c->comm, 65536, 0, &h));
  if (h)
    CHECK_OK(symheap_window_device_view(h, &hv));
  if (h) {
    CHECK_OK(symheap_put(h, e->peer, 1000, src, sizeof src));
    CHECK_OK(symheap_quiet(c->comm));
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (h) {
    size_t bad = check(e, &hv, 1000, sizeof src, e->peer, 55);
    CHECK(bad == sizeof src, "heap window byte %zu wrong", bad);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (h)
    CHECK_OK(symheap_free(c->comm, h)); /* quiet, then deregistered */
}

/* A target that never applies what it is sent (a peer that died mid-get
 * looks the same to the initiator): the initiator's get and quiet end in
 * TIMEOUT naming it (no hang), and succeed once it progresses. */
static void case_timeout(env_t *e) {
  th_ctx_t *c = e->c;
  int victim = c->n / 2; /* host B's first rank; rank 0 sends to it */
  unsigned char src[256];
  fill(src, sizeof src, c->rank, 77);
  size_t at = 9u << 20;
  if (c->rank == victim)
    symheap__stage_hold(c->comm, 1);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    get_times_out(e, victim); /* a get waits for the target too */
    CHECK_OK(symheap_put(e->w, victim, at, src, sizeof src));
    uint64_t t0 = now_ns();
    CHECK_ERR(symheap_quiet(c->comm), SYMHEAP_ERR_TIMEOUT);
    uint64_t ms = (now_ns() - t0) / 1000000;
    char want[32];
    snprintf(want, sizeof want, "rank %d", victim);
    CHECK(strstr(symheap_last_error(), want) != NULL, "message: %s",
          symheap_last_error());
    CHECK(ms + 100 >= (uint64_t)TIMEOUT_MS && ms < (uint64_t)TIMEOUT_MS + 2000,
          "the quiet gave up after %llu ms", (unsigned long long)ms);
  } else {
    pause_us((2 * TIMEOUT_MS + 3000) * 1000L); /* outside symheap */
  }
  if (c->rank == victim) {
    size_t bad = check(e, &e->v, at, sizeof src, 0, 77);
    CHECK(bad < sizeof src, "a held target applied the put");
    symheap__stage_hold(c->comm, 0);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    CHECK_OK(symheap_quiet(c->comm));
    /* A get after the one that timed out (its request applied late, into
     * this rank's slot) reads the put's bytes. */
    unsigned char back[sizeof src];
    memset(back, 0, sizeof back);
    CHECK_OK(symheap_get(e->w, victim, at, back, sizeof back));
    CHECK(memcmp(back, src, sizeof src) == 0,
          "a get after the timed-out one read other bytes");
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == victim) {
    size_t bad = check(e, &e->v, at, sizeof src, 0, 77);
    CHECK(bad == sizeof src, "byte %zu wrong once the target progressed",
          bad);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
}

/* --- The device proxy, the CPU as the kernel (test/proxy_producer.h) --- */

/* A kernel's put_signal (data from device memory) lands in the partner's
 * staged window, signalled in its staged pad; a lone signal after plain
 * puts; after the device quiet and a barrier, the puts are there. */
static void case_proxy(env_t *e) {
  th_ctx_t *c = e->c;
  CHECK(e->v.flags & SYMHEAP_VIEW_PROXY, "no proxy in the view (flags %#x)",
        e->v.flags);
  if (!(e->v.flags & SYMHEAP_VIEW_PROXY))
    return;
  CHECK(symheap_device_reach(&e->v, e->peer) == SYMHEAP_DEVICE_REACH_PROXY,
        "reach of the partner %d", symheap_device_reach(&e->v, e->peer));
  size_t n = BIG, blk = 4096;
  unsigned char *host = malloc(n);
  fill(host, n, c->rank, 9);
  char *src = symheap_device_local_ptr(&e->vsrc, 0); /* device memory */
  dev_write(e, src, host, n);
  uint32_t idx = (uint32_t)c->rank, from = (uint32_t)e->peer;
  CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_PUT_SIGNAL, e->peer, 0, src, n, idx,
                SYMHEAP_PROXY_SIG_SET, 1, WAIT_NS));
  uint64_t *sw = symheap_device_signal_ptr(&e->v, e->v.rank, from);
  CHECK(wait_word(e, sw, 1) == 1, "the proxied signal never landed");
  size_t bad = check(e, &e->v, 0, n, e->peer, 9);
  CHECK(bad == n, "byte %zu not there once signalled", bad);
  /* Plain puts, then a lone ADD signal on another index. */
  uint32_t idx2 = (uint32_t)(c->n + c->rank), from2 = (uint32_t)(c->n + e->peer);
  for (int r = 0; r < 8; r++)
    CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_PUT, e->peer, (4u << 20) + r * blk,
                  src + r * blk, blk, 0, 0, 0, WAIT_NS));
  CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_SIGNAL, e->peer, 0, NULL, 0, idx2,
                SYMHEAP_PROXY_SIG_ADD, 3, WAIT_NS));
  uint64_t *sw2 = symheap_device_signal_ptr(&e->v, e->v.rank, from2);
  CHECK(wait_word(e, sw2, 3) == 3, "the lone signal never landed");
  for (int r = 0; r < 8; r++) { /* src + r * blk: the pattern's salt 9 */
    unsigned char *m = malloc(blk);
    dev_read(e, m, symheap_device_local_ptr(&e->v, (4u << 20) + r * blk), blk);
    CHECK(m && check_from(m, e->peer, r * blk, blk),
          "put %d not there before its signal", r);
    free(m);
  }
  /* Quiet: a put with no signal is in device memory after it. */
  CHECK_OK(post(&e->v, SYMHEAP_PROXY_OP_PUT, e->peer, 6u << 20, src, n, 0, 0,
                0, WAIT_NS));
  CHECK_OK(quiet(&e->v));
  CHECK_OK(symheap_comm_proxy_check(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
  bad = check(e, &e->v, 6u << 20, n, e->peer, 9);
  CHECK(bad == n, "byte %zu not there after the device quiet", bad);
  CHECK_OK(symheap_comm_barrier(c->comm));
  free(host);
}

typedef struct {
  const char *name;
  void (*fn)(env_t *e);
} case_t;
static const case_t cases[] = {
    {"window_staged", case_staged},
    {"put_quiet_in_device_memory", case_put_quiet},
    {"put_signal_data_before_signal", case_order},
    {"atomic_add_contention", case_contention},
    {"get_blocking_nbi_pieces", case_get},
    {"get_racing_puts_none_lost", case_get_put_race},
    {"atomics_fetching_32_64", case_amo_fetch},
    {"atomics_contention_every_rank", case_amo_contention_all},
    {"bad_input_refused_nothing_sent", case_bad_input},
    {"heap_window_staged", case_heap},
    {"proxy_put_signal_lands", case_proxy},
    {"target_never_progresses_timeout", case_timeout},
};

static void run_cases(th_ctx_t *c, void *arg) {
  (void)arg;
  env_t e;
  memset(&e, 0, sizeof e);
  e.c = c;
  e.peer = (c->rank + c->n / 2) % c->n;
  th_begin(tag, "windows", c->rank);
  CHECK_OK(symheap_malloc(c->comm, WIN_BYTES, 0, &e.w));
  CHECK_OK(symheap_malloc(c->comm, WIN_BYTES, 0, &e.src));
  if (e.w)
    CHECK_OK(symheap_window_device_view(e.w, &e.v));
  if (e.src)
    CHECK_OK(symheap_window_device_view(e.src, &e.vsrc));
  int ok = e.w && e.src;
  CHECK_OK(symheap_comm_barrier(c->comm));
  th_end();
  for (size_t i = 0; ok && i < sizeof cases / sizeof *cases; i++) {
    th_begin(tag, cases[i].name, c->rank);
    cases[i].fn(&e);
    th_end();
  }
  th_begin(tag, "free", c->rank);
  if (e.src)
    CHECK_OK(symheap_free(c->comm, e.src));
  if (e.w)
    CHECK_OK(symheap_free(c->comm, e.w));
  th_end();
}

int main(int argc, char **argv) {
  (void)argc;
  setenv("SYMHEAP_HEAP_THRESHOLD", "8M", 0);
  setenv("SYMHEAP_NET", "loop", 0);
  setenv("SYMHEAP_DEVICE", "cuda", 0);
  setenv("SYMHEAP_DEVICE_PROXY", "on", 0);
  setenv("SYMHEAP_DISABLE_MULTICAST", "1", 0);
  setenv("SYMHEAP_TIMEOUT_MS", "4000", 0); /* tcp's open may need more */
  TIMEOUT_MS = atoi(getenv("SYMHEAP_TIMEOUT_MS"));
  if (symheap_register_net_adaptor(&net_loop_ops) != SYMHEAP_SUCCESS ||
      symheap_register_net_adaptor(&net_loop_wait_ops) != SYMHEAP_SUCCESS) {
    printf("FAIL stage/register: %s\n", symheap_last_error());
    return 1;
  }
  const char *rk = getenv("SYMHEAP_RANK"), *nr = getenv("SYMHEAP_NRANKS");
  if (!rk || !nr || !getenv("SYMHEAP_CUDA_LIBRARY")) {
    printf("FAIL stage/env: run under symheap-run with "
           "SYMHEAP_CUDA_LIBRARY naming the fake driver\n");
    return 1;
  }
  int rank = atoi(rk), n = atoi(nr);
  if (n < 2 || n % 2) {
    printf("FAIL stage/env: needs an even number of ranks\n");
    return 1;
  }
  g_per_host = n / 2;
  char host[32];
  snprintf(host, sizeof host, "host-%d", rank / g_per_host);
  setenv("SYMHEAP_HOST_ID", host, 1);
  return th_main(1, argv, "stage_", tag, sizeof tag, NULL, run_cases, NULL);
}

/* The kit's net ordering and keys: put_signal (data visible before its
 * signal), fence (operations after it seen after those before it), and
 * keys (each reaches its own region, edges respected, a stale key
 * refused). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kit.h"

#define REGION (1u << 20)
#define ITERS 2000
#define WORDS 64 /* 512 bytes of data per put_signal */
#define DATA 4096

static uint64_t peek(const char *p) {
  return __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_ACQUIRE);
}

/* put_signal through the table, or what the core does without it. */
static symheap_result_t put_signal(kit_net_t *n, const void *src, size_t len,
                                   uint64_t off, uint64_t sig_off,
                                   uint64_t value, symheap_net_amo_t op) {
  if (n->T->has_put_signal)
    return n->T->ops.put_signal(n->ctx, 1, src, NULL, len, n->rkey, off,
                                n->rkey, sig_off, value, op, 0);
  symheap_result_t r =
      n->T->ops.put(n->ctx, 1, src, NULL, len, n->rkey, off, 0);
  if (r == SYMHEAP_SUCCESS)
    r = n->T->ops.fence(n->ctx);
  if (r == SYMHEAP_SUCCESS)
    r = n->T->ops.atomic(n->ctx, 1, op, 8, n->rkey, sig_off, &value, NULL,
                         NULL);
  return r;
}

/* Rank 1 watches signal word sig and the data after it: each time the
 * signal says s, every data word must be at least s. */
static void watch(kit_net_t *n, size_t sig, size_t data, const char *what) {
  uint64_t last = 0, seen = 0;
  double end = symheap__host_services.now_ns() / 1e9 + K.timeout_s;
  while (last < ITERS && !kit_failed()) {
    (void)n->T->ops.progress(n->ctx);
    uint64_t s = peek(n->mem + sig);
    if (s == last)
      goto next;
    seen++;
    for (int w = 0; w < WORDS; w++) {
      uint64_t d = peek(n->mem + data + 8 * (size_t)w);
      if (d < s) {
        kit_fail("%s: the signal said %llu while data word %d held %llu: "
                 "the signal arrived before its data",
                 what, (unsigned long long)s, w, (unsigned long long)d);
        break;
      }
    }
    last = s;
  next:
    if (symheap__host_services.now_ns() / 1e9 > end) {
      kit_fail("%s: the signal reached only %llu of %d in %d s", what,
               (unsigned long long)last, ITERS, K.timeout_s);
      break;
    }
  }
  (void)seen;
  kit_net_send(n, seen);
}

/* Rank 1 (the target): stay, progressing, until rank 0's quiet is done,
 * then close.  Seeing the last value land is not that: the initiator's
 * quiet may still wait on the target (UCX over tcp flushes through it), and
 * a target that closes first fails it (UCX reports the closed connection
 * as an endpoint timeout: net_fence over ucx under ASan, round 6). */
static void quiet_done(kit_net_t *n) {
  uint64_t done;
  (void)kit_net_recv(n, &done);
  kit_net_finish(n);
}

static void check_put_signal(void) {
  kit_net_t n;
  if (!kit_net_start(&n, REGION))
    return;
  if (!(n.caps.caps & SYMHEAP_NET_CAP_ATOMIC) && !n.T->has_put_signal) {
    if (n.rank == 0)
      kit_skip("no put_signal and no atomics to signal with");
    kit_net_finish(&n);
  }
  if (n.rank == 1) {
    watch(&n, 0, DATA, "put_signal(SET)");
    watch(&n, 8, 2 * DATA, "put_signal(ADD)");
    quiet_done(&n);
  }
  uint64_t src[WORDS], seen_set = 0, seen_add = 0;
  for (int pass = 0; pass < 2 && !kit_failed(); pass++) {
    symheap_net_amo_t op = pass ? SYMHEAP_NET_AMO_ADD : SYMHEAP_NET_AMO_SET;
    for (uint64_t i = 1; i <= ITERS && !kit_failed(); i++) {
      for (int w = 0; w < WORDS; w++)
        src[w] = i;
      kit_stage("rank 0: put_signal %llu (%s)", (unsigned long long)i,
                pass ? "ADD" : "SET");
      kit_clear_error();
      symheap_result_t r =
          put_signal(&n, src, sizeof src, pass ? 2 * DATA : DATA, pass ? 8 : 0,
                     pass ? 1 : i, op);
      if (r != SYMHEAP_SUCCESS)
        kit_fail("put_signal %llu %s", (unsigned long long)i, kit_said(r));
    }
    if (!kit_failed() && kit_net_quiet(&n, "the put_signals"))
      (void)kit_net_recv(&n, pass ? &seen_add : &seen_set);
  }
  kit_pass("%d put_signals with SET and %d with ADD (%s): the target saw "
           "the signal change %llu and %llu times, never before its data",
           ITERS, ITERS,
           n.T->has_put_signal ? "the adaptor's put_signal"
                               : "put, fence, atomic",
           (unsigned long long)seen_set, (unsigned long long)seen_add);
  (void)kit_net_send(&n, 1); /* quiet is done: rank 1 may close */
  kit_net_finish(&n);
}

/* put x = i; fence; put y = i: whenever rank 1 sees y = v, x >= v. */
static void check_fence(void) {
  kit_net_t n;
  if (!kit_net_start(&n, REGION))
    return;
  if (n.rank == 1) {
    uint64_t last = 0, seen = 0;
    while (last < ITERS && !kit_failed()) {
      (void)n.T->ops.progress(n.ctx);
      uint64_t y = peek(n.mem + 128), x = peek(n.mem + 64);
      if (y != last) {
        seen++;
        if (x < y)
          kit_fail("after a fence: the later put (%llu) was seen before the "
                   "earlier one (%llu)",
                   (unsigned long long)y, (unsigned long long)x);
        last = y;
      }
    }
    (void)kit_net_send(&n, seen);
    quiet_done(&n);
  }
  uint64_t seen = 0;
  for (uint64_t i = 1; i <= ITERS && !kit_failed(); i++) {
    kit_stage("rank 0: put, fence, put %llu", (unsigned long long)i);
    kit_clear_error();
    symheap_result_t r = n.T->ops.put(n.ctx, 1, &i, NULL, 8, n.rkey, 64, 0);
    if (r == SYMHEAP_SUCCESS)
      r = n.T->ops.fence(n.ctx);
    if (r == SYMHEAP_SUCCESS)
      r = n.T->ops.put(n.ctx, 1, &i, NULL, 8, n.rkey, 128, 0);
    if (r != SYMHEAP_SUCCESS)
      kit_fail("put, fence, put %llu %s", (unsigned long long)i, kit_said(r));
  }
  if (!kit_failed() && kit_net_quiet(&n, "the fenced puts") &&
      kit_net_recv(&n, &seen))
    kit_pass("%d rounds of put, fence, put (%s): the later put was never "
             "seen first (%llu changes watched)",
             ITERS,
             (n.caps.caps & SYMHEAP_NET_CAP_FENCE) ? "a real fence"
                                                   : "fence = quiet",
             (unsigned long long)seen);
  (void)kit_net_send(&n, 1); /* quiet is done: rank 1 may close */
  kit_net_finish(&n);
}

/* Rank 1 registers a second region B (one page inside three) and sends its
 * key; rank 0 writes the edges of A and all of B; then B is deregistered
 * and rank 0 tries its stale key. */
static void keys_target(kit_net_t *n, char *b3) {
  void *mr = NULL;
  unsigned char key[SYMHEAP_NET_KEY_MAX];
  size_t klen = 0;
  memset(b3, 0x5A, 3 * 4096);
  kit_clear_error();
  symheap_result_t e =
      n->T->ops.mem_register(n->ctx, b3 + 4096, 4096, 0, &mr, key, &klen);
  if (e != SYMHEAP_SUCCESS) {
    kit_fail("rank 1: mem_register of a second region %s", kit_said(e));
    kit_net_finish(n);
  }
  uint64_t w = klen;
  kit_net_send(n, w);
  for (size_t i = 0; i < klen; i += 8) {
    uint64_t v = 0;
    memcpy(&v, key + i, klen - i < 8 ? klen - i : 8);
    kit_net_send(n, v);
  }
  if (!kit_net_recv(n, &w))
    kit_net_finish(n);
  const unsigned char *a = (const unsigned char *)n->mem;
  int bad = a[0] != 0x11 || a[1] != 0 || a[REGION - 4097] != 0 ||
            a[REGION - 4096] != 0x11 || a[REGION - 1] != 0x11;
  for (int i = 0; i < 3 * 4096 && !bad; i++)
    bad = (unsigned char)b3[i] != (i >= 4096 && i < 8192 ? 0x22 : 0x5A);
  if (bad)
    kit_fail("the puts through two keys did not land exactly in their "
             "regions (bytes outside them changed, or inside them missing)");
  kit_clear_error();
  symheap_result_t r = n->T->ops.mem_deregister(n->ctx, mr);
  if (r != SYMHEAP_SUCCESS)
    kit_fail("rank 1: mem_deregister %s", kit_said(r));
  kit_net_send(n, 1);
  (void)kit_net_recv(n, &w);
  for (int i = 4096; i < 8192; i++)
    if ((unsigned char)b3[i] != 0x22) {
      kit_fail("a put with the key of a deregistered region wrote into it");
      break;
    }
  kit_net_send(n, 1);
  kit_net_finish(n);
}

static void check_keys(void) {
  kit_net_t n;
  char *b3 = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!kit_net_start(&n, REGION))
    return;
  if (n.rank == 1)
    keys_target(&n, b3);
  uint64_t klen = 0, w;
  unsigned char key[SYMHEAP_NET_KEY_MAX + 8];
  void *bkey = NULL;
  if (!kit_net_recv(&n, &klen) || klen > SYMHEAP_NET_KEY_MAX)
    goto out;
  for (size_t i = 0; i < klen; i += 8)
    if (!kit_net_recv(&n, &w))
      goto out;
    else
      memcpy(key + i, &w, 8);
  symheap_result_t r = n.T->ops.rkey_import(n.ctx, 1, key, klen, &bkey);
  memset(b3, 0x11, 4096);
  if (r == SYMHEAP_SUCCESS)
    r = n.T->ops.put(n.ctx, 1, b3, NULL, 1, n.rkey, 0, 0);
  if (r == SYMHEAP_SUCCESS)
    r = n.T->ops.put(n.ctx, 1, b3, NULL, 4096, n.rkey, REGION - 4096, 0);
  memset(b3, 0x22, 4096);
  if (r == SYMHEAP_SUCCESS)
    r = n.T->ops.put(n.ctx, 1, b3, NULL, 4096, bkey, 0, 0);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("puts through two keys %s", kit_said(r));
    goto out;
  }
  if (!kit_net_quiet(&n, "puts through two keys") || !kit_net_send(&n, 1) ||
      !kit_net_recv(&n, &w))
    goto out;
  /* B is deregistered now: its stale key must not write. */
  memset(b3, 0x33, 4096);
  kit_clear_error();
  r = n.T->ops.put(n.ctx, 1, b3, NULL, 64, bkey, 0, 0);
  symheap_result_t q = r == SYMHEAP_SUCCESS ? n.T->ops.quiet(n.ctx, 5000) : r;
  char said[300];
  snprintf(said, sizeof said, "%s", kit_said(q));
  if (kit_net_send(&n, 1) && kit_net_recv(&n, &w) && !kit_failed()) {
    if (q == SYMHEAP_SUCCESS)
      kit_fail("a put with the key of a deregistered region completed "
               "without an error (it must be refused)");
    else
      kit_pass("each key reached its own region, edges exact; the key of a "
               "deregistered region was refused: %s",
               said);
  }
out:
  if (bkey)
    n.T->ops.rkey_release(n.ctx, bkey);
  kit_net_finish(&n);
}

const kit_check_t kit_net_order_checks[] = {
    {"net_put_signal", check_put_signal,
     "put_signal (SET and ADD), 2000 rounds: data visible before the signal"},
    {"net_fence", check_fence,
     "put, fence, put, 2000 rounds: the later put never seen first"},
    {"net_keys", check_keys,
     "two regions' keys reach their own; edges; a stale key is refused"},
    {NULL, NULL, NULL}};

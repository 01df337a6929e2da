/* test_stage's gets and atomics on staged windows (issue 27, docs/network.md
 * "Staging"): gets served through the target's bounce slot, atomics applied
 * by the target one at a time, fetched values returned in its
 * acknowledgement.  Window contents are checked in device memory through
 * the device adaptor's copies (stage_env.h). */
#include <stdlib.h>
#include <string.h>

#include "comm/net_stage.h"
#include "stage_env.h"
#include "win/window.h"

#define GET_AT (8u << 20)
#define RACE_AT ((11u << 20) + (64u << 10)) /* a 4 KiB block per rank */
#define AMO_AT ((11u << 20) + (512u << 10)) /* 64 bytes per rank */
#define SHARED_AT (AMO_AT + 64u * 64u)      /* every rank's word */

static int pattern_ok(const unsigned char *b, size_t n, int from, uint64_t salt,
                      size_t start) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pat(from, salt, start + i))
      return 0;
  return 1;
}

/* get and get_nbi from the partner's device memory (its own pattern,
 * written through its device adaptor): 8 B, a page, several bounce slots,
 * past 1 MiB; four get_nbi then quiet; a get after this rank's own put to
 * the same bytes reads the put (the same ring, applied in order). */
void case_get(env_t *e) {
  th_ctx_t *c = e->c;
  unsigned char *mine = malloc(BIG), *got = malloc(BIG);
  if (!mine || !got) {
    CHECK(0, "no memory");
    free(mine), free(got);
    return;
  }
  fill(mine, BIG, c->rank, 21);
  dev_write(e, symheap_device_local_ptr(&e->v, GET_AT), mine, BIG);
  CHECK_OK(symheap_comm_barrier(c->comm));
  static const size_t sizes[] = {8, 4096, 200003, BIG};
  for (unsigned k = 0; k < 4; k++)
    for (int nbi = 0; nbi < 2; nbi++) {
      size_t o = k < 3 ? 5 : 0, n = sizes[k];
      memset(got, 0xee, n);
      CHECK_OK(nbi ? symheap_get_nbi(e->w, e->peer, GET_AT + o, got, n)
                   : symheap_get(e->w, e->peer, GET_AT + o, got, n));
      if (nbi)
        CHECK_OK(symheap_quiet(c->comm));
      CHECK(pattern_ok(got, n, e->peer, 21, o), "%s of %zu bytes: wrong",
            nbi ? "get_nbi" : "get", n);
    }
  memset(got, 0, 4000);
  for (int j = 0; j < 4; j++)
    CHECK_OK(symheap_get_nbi(e->w, e->peer, GET_AT + 1000u * j, got + 1000 * j,
                             1000));
  CHECK_OK(symheap_quiet(c->comm));
  CHECK(pattern_ok(got, 4000, e->peer, 21, 0), "four get_nbi: wrong");
  size_t at = GET_AT + 3 * 4096;
  fill(mine, 4096, c->rank, 22);
  CHECK_OK(symheap_put(e->w, e->peer, at, mine, 4096));
  CHECK_OK(symheap_get(e->w, e->peer, at, got, 4096));
  CHECK(memcmp(got, mine, 4096) == 0, "a get after this rank's put missed it");
  CHECK_OK(symheap_quiet(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
  free(mine);
  free(got);
}

static void block_of(uint64_t *b, int rank, int round) {
  for (int i = 0; i < 512; i++)
    b[i] = (uint64_t)rank << 32 | (uint64_t)round;
}

/* Host A's ranks each put their own 4 KiB block of the last rank's window
 * (host B), round after round, and get the whole range back in between
 * (racing the other ranks' puts): a get's copy never goes through the
 * shadow, so no put is lost (each block ends at its last round), and a
 * rank's get after its own put sees that put.  (Host B's ranks reach the
 * target by load/store, which the fake driver's memory does not allow.) */
void case_get_put_race(env_t *e) {
  th_ctx_t *c = e->c;
  int target = c->n - 1, rounds = 20, on_a = c->rank < g_per_host;
  size_t span = 4096u * (size_t)g_per_host;
  uint64_t blk[512], *all = malloc(span);
  if (c->rank == target) {
    memset(all, 0, span);
    dev_write(e, symheap_device_local_ptr(&e->v, RACE_AT), all, span);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int r = 1; all && r <= rounds && on_a; r++) {
    block_of(blk, c->rank, r);
    CHECK_OK(
        symheap_put(e->w, target, RACE_AT + 4096u * c->rank, blk, sizeof blk));
    CHECK_OK(symheap_get(e->w, target, RACE_AT, all, span));
    CHECK(memcmp((char *)all + 4096u * c->rank, blk, sizeof blk) == 0,
          "round %d: a get after this rank's put missed it", r);
  }
  CHECK_OK(symheap_quiet(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == target)
    for (int p = 0; all && p < g_per_host; p++) {
      dev_read(e, blk, symheap_device_local_ptr(&e->v, RACE_AT + 4096u * p),
               sizeof blk);
      uint64_t want[512];
      block_of(want, p, rounds);
      CHECK(memcmp(blk, want, sizeof blk) == 0,
            "rank %d's block ends at %#llx, not its last round (a put lost)", p,
            (unsigned long long)blk[0]);
    }
  CHECK_OK(symheap_comm_barrier(c->comm));
  free(all);
}

static uint64_t amo8(env_t *e, size_t at, symheap_amo_t op, uint64_t v,
                     uint64_t cmp) {
  uint64_t old = 0xdeadbeef;
  CHECK_OK(symheap_atomic(e->w, e->peer, at, op, 8, &v, &cmp, &old));
  return old;
}
static uint32_t amo4(env_t *e, size_t at, symheap_amo_t op, uint32_t v,
                     uint32_t cmp) {
  uint32_t old = 0xdeadbeef;
  CHECK_OK(symheap_atomic(e->w, e->peer, at, op, 4, &v, &cmp, &old));
  return old;
}

/* Every atomic, 64- and 32-bit, on a word of the partner's window (this
 * rank's own word): fetched values and the final words in device memory. */
void case_amo_fetch(env_t *e) {
  th_ctx_t *c = e->c;
  size_t w = AMO_AT + 64u * c->rank;
  uint64_t v = 10, got;
  CHECK_OK(
      symheap_atomic(e->w, e->peer, w, SYMHEAP_AMO_SET, 8, &v, NULL, NULL));
  CHECK((got = amo8(e, w, SYMHEAP_AMO_FETCH, 0, 0)) == 10, "fetch %llu",
        (unsigned long long)got);
  CHECK((got = amo8(e, w, SYMHEAP_AMO_FETCH_ADD, 5, 0)) == 10, "fetch_add %llu",
        (unsigned long long)got);
  CHECK((got = amo8(e, w, SYMHEAP_AMO_SWAP, 7, 0)) == 15, "swap %llu",
        (unsigned long long)got);
  CHECK((got = amo8(e, w, SYMHEAP_AMO_CSWAP, 9, 7)) == 7, "cswap %llu",
        (unsigned long long)got);
  CHECK((got = amo8(e, w, SYMHEAP_AMO_CSWAP, 100, 1)) == 9,
        "failing cswap %llu", (unsigned long long)got);
  CHECK((got = amo8(e, w, SYMHEAP_AMO_AND, 8, 0)) == 9, "and %llu",
        (unsigned long long)got);
  v = 1;
  CHECK_OK(
      symheap_atomic(e->w, e->peer, w, SYMHEAP_AMO_XOR, 8, &v, NULL, NULL));
  CHECK((got = amo8(e, w, SYMHEAP_AMO_FETCH, 0, 0)) == 9, "xor: %llu",
        (unsigned long long)got);
  /* 32-bit: a word and its neighbour, wrapping at 32 bits. */
  uint32_t g4, hi = 0xaabbccdd, lo = 0xfffffff0;
  CHECK_OK(symheap_atomic(e->w, e->peer, w + 36, SYMHEAP_AMO_SET, 4, &hi, NULL,
                          NULL));
  CHECK_OK(symheap_atomic(e->w, e->peer, w + 32, SYMHEAP_AMO_SET, 4, &lo, NULL,
                          NULL));
  CHECK((g4 = amo4(e, w + 32, SYMHEAP_AMO_FETCH_ADD, 0x20, 0)) == lo,
        "fetch_add4 %#x", g4);
  CHECK((g4 = amo4(e, w + 32, SYMHEAP_AMO_SWAP, 3, 0)) == 0x10, "swap4 %#x",
        g4);
  CHECK((g4 = amo4(e, w + 32, SYMHEAP_AMO_CSWAP, 4, 3)) == 3, "cswap4 %#x", g4);
  CHECK((g4 = amo4(e, w + 36, SYMHEAP_AMO_FETCH, 0, 0)) == hi,
        "the neighbour %#x", g4);
  CHECK_OK(symheap_quiet(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
  size_t mine = AMO_AT + 64u * e->peer; /* the partner's word here */
  uint64_t w8 = dev_word(e, symheap_device_local_ptr(&e->v, mine));
  uint32_t w4[2];
  dev_read(e, w4, symheap_device_local_ptr(&e->v, mine + 32), 8);
  CHECK(w8 == 9 && w4[0] == 4 && w4[1] == hi,
        "device words %llu %#x %#x, want 9 4 %#x", (unsigned long long)w8,
        w4[0], w4[1], hi);
  CHECK_OK(symheap_comm_barrier(c->comm));
}

/* Every rank, this host's and the target itself included, updates words of
 * the last rank's window: fetch_add (64- and 32-bit: fetched values rise on
 * each rank) and increments by compare-swap.  The target applies them one
 * at a time, so the final words are exact. */
void case_amo_contention_all(env_t *e) {
  th_ctx_t *c = e->c;
  int target = c->n - 1, k = 30, k2 = 10;
  if (c->rank == target) {
    uint64_t zero[3] = {0, 0, 0};
    dev_write(e, symheap_device_local_ptr(&e->v, SHARED_AT), zero, sizeof zero);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  uint64_t one = 1, last = 0, old = 0, total = (uint64_t)k * c->n;
  uint32_t one4 = 1, last4 = 0, old4 = 0;
  for (int i = 0; i < k; i++) {
    CHECK_OK(symheap_atomic(e->w, target, SHARED_AT, SYMHEAP_AMO_FETCH_ADD, 8,
                            &one, NULL, &old));
    CHECK(old < total && (i == 0 || old > last), "fetched %llu after %llu",
          (unsigned long long)old, (unsigned long long)last);
    last = old;
    CHECK_OK(symheap_atomic(e->w, target, SHARED_AT + 16, SYMHEAP_AMO_FETCH_ADD,
                            4, &one4, NULL, &old4));
    CHECK(old4 < total && (i == 0 || old4 > last4), "fetched4 %u after %u",
          old4, last4);
    last4 = old4;
  }
  int done = 0;
  for (int tries = 0; done < k2 && tries < 100000; tries++) {
    uint64_t cur = 0, nv, seen = 0;
    CHECK_OK(symheap_atomic(e->w, target, SHARED_AT + 8, SYMHEAP_AMO_FETCH, 8,
                            NULL, NULL, &cur));
    nv = cur + 1;
    CHECK_OK(symheap_atomic(e->w, target, SHARED_AT + 8, SYMHEAP_AMO_CSWAP, 8,
                            &nv, &cur, &seen));
    done += seen == cur;
  }
  CHECK(done == k2, "%d compare-swap increments of %d", done, k2);
  CHECK_OK(symheap_quiet(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == target) {
    uint64_t w[3];
    dev_read(e, w, symheap_device_local_ptr(&e->v, SHARED_AT), sizeof w);
    CHECK(w[0] == total && w[1] == (uint64_t)k2 * c->n &&
              (uint32_t)w[2] == total,
          "words %llu %llu %u, want %llu %llu %llu", (unsigned long long)w[0],
          (unsigned long long)w[1], (uint32_t)w[2], (unsigned long long)total,
          (unsigned long long)k2 * c->n, (unsigned long long)total);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
}

/* Bad input is refused before anything is sent: no descriptor posted, the
 * word as case_amo_fetch left it. */
void case_bad_input(env_t *e) {
  th_ctx_t *c = e->c;
  symheap__stage_t *s = c->comm->netc ? c->comm->netc->stage : NULL;
  CHECK(s != NULL, "no staging");
  if (!s)
    return;
  unsigned char buf[64];
  uint64_t one = 1, old = 0, sent = s->sent[e->peer];
  size_t w = AMO_AT + 64u * c->rank;
  CHECK_ERR(symheap_get(e->w, e->peer, WIN_BYTES - 8, buf, 64),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK(strstr(symheap_last_error(), "nothing was sent"), "message: %s",
        symheap_last_error());
  CHECK_ERR(symheap_get_nbi(e->w, e->peer, 0, NULL, 8),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_get(e->w, c->n, 0, buf, 8), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_atomic(e->w, e->peer, w + 4, SYMHEAP_AMO_FETCH_ADD, 8, &one,
                           NULL, &old),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(
      symheap_atomic(e->w, e->peer, w, (symheap_amo_t)99, 8, &one, NULL, &old),
      SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_atomic(e->w, e->peer, w, SYMHEAP_AMO_FETCH_ADD, 2, &one,
                           NULL, &old),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_atomic(e->w, e->peer, WIN_BYTES, SYMHEAP_AMO_FETCH, 8, NULL,
                           NULL, &old),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(
      symheap_atomic(e->w, e->peer, w, SYMHEAP_AMO_CSWAP, 8, &one, NULL, &old),
      SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_put(e->w, e->peer, WIN_BYTES - 8, buf, 64),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_put_signal(e->w, e->peer, 0, buf, 8, e->w, w + 4, 1,
                               SYMHEAP_AMO_SET),
            SYMHEAP_ERR_INVALID_ARG);
  CHECK(s->sent[e->peer] == sent, "refused calls posted %llu descriptors",
        (unsigned long long)(s->sent[e->peer] - sent));
  CHECK((old = amo8(e, w, SYMHEAP_AMO_FETCH, 0, 0)) == 9,
        "a refused atomic changed the word: %llu", (unsigned long long)old);
  CHECK_OK(symheap_quiet(c->comm));
  CHECK_OK(symheap_comm_barrier(c->comm));
}

void get_times_out(env_t *e, int victim) {
  unsigned char b[128];
  uint64_t t0 = now_ns();
  CHECK_ERR(symheap_get(e->w, victim, 9u << 20, b, sizeof b),
            SYMHEAP_ERR_TIMEOUT);
  uint64_t ms = (now_ns() - t0) / 1000000;
  char want[32];
  snprintf(want, sizeof want, "rank %d", victim);
  CHECK(strstr(symheap_last_error(), want) != NULL, "message: %s",
        symheap_last_error());
  CHECK(ms + 100 >= (uint64_t)TIMEOUT_MS && ms < (uint64_t)TIMEOUT_MS + 2000,
        "the get gave up after %llu ms", (unsigned long long)ms);
}

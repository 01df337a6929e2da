/* The kit's net atomics: every operation at 4 and 8 bytes with the value it
 * fetches and leaves; contention from both processes on one word (one of
 * them targeting itself through the adaptor); and keys: each region's key
 * reaches its region only, edges respected, a stale key refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

#define REGION (1u << 20)
#define NOPS 10 /* the nine operations, CSWAP twice (match, mismatch) */

static symheap_net_amo_t op_of(int k) {
  return k == 9 ? SYMHEAP_NET_AMO_CSWAP : (symheap_net_amo_t)k;
}
static const char *const op_names[NOPS] = {
    "fetch",        "set", "add", "fetch_add", "swap",
    "cswap(match)", "and", "or",  "xor",       "cswap(mismatch)"};

static uint64_t mask(size_t size) {
  return size == 8 ? ~(uint64_t)0 : 0xffffffffu;
}
/* Values with high bits set, so a 4-byte op done as 8 (or the reverse)
 * shows. */
static uint64_t init_of(int k, size_t size) {
  return (0x8000000180000001ull + (uint64_t)k * 0x0101010101ull) & mask(size);
}
static uint64_t operand_of(int k, size_t size) {
  return (0xF0F0F0F07F7F7F7Full ^ (uint64_t)k * 0x1111ull) & mask(size);
}
/* What op k leaves and fetches. */
static void expect(int k, size_t size, uint64_t *left, uint64_t *fetched) {
  uint64_t i = init_of(k, size), o = operand_of(k, size), m = mask(size);
  *fetched = i;
  switch (op_of(k)) {
  case SYMHEAP_NET_AMO_FETCH:
    *left = i;
    break;
  case SYMHEAP_NET_AMO_ADD:
  case SYMHEAP_NET_AMO_FETCH_ADD:
    *left = (i + o) & m;
    break;
  case SYMHEAP_NET_AMO_CSWAP:
    *left = k == 5 ? o : i;
    break;
  case SYMHEAP_NET_AMO_AND:
    *left = i & o;
    break;
  case SYMHEAP_NET_AMO_OR:
    *left = i | o;
    break;
  case SYMHEAP_NET_AMO_XOR:
    *left = i ^ o;
    break;
  default: /* set, swap */
    *left = o;
  }
}
static int fetches(int k) {
  return k == 0 || k == 3 || k == 4 || k == 5 || k == 9;
}
/* Slot of op k at size: 16 bytes apart, neighbours left as guards. */
static size_t at(int k, size_t size) {
  return (size == 8 ? 0 : 512) + 16 * (size_t)k;
}

static uint64_t load(const char *p, size_t size) {
  uint64_t v = 0;
  if (size == 8)
    memcpy(&v, p, 8);
  else {
    uint32_t w;
    memcpy(&w, p, 4);
    v = w;
  }
  return v;
}
static void store(char *p, size_t size, uint64_t v) {
  if (size == 8)
    memcpy(p, &v, 8);
  else {
    uint32_t w = (uint32_t)v;
    memcpy(p, &w, 4);
  }
}

static int atomic_skip(kit_net_t *n) {
  if (n->caps.caps & SYMHEAP_NET_CAP_ATOMIC)
    return 0;
  if (n->rank == 0)
    kit_skip("the adaptor reports no SYMHEAP_NET_CAP_ATOMIC with this "
             "provider");
  kit_net_finish(n);
  return 1;
}

/* Rank 1's side: prepare every slot, then check what was left. */
static void ops_target(kit_net_t *n) {
  memset(n->mem, 0xA5, 1024);
  for (size_t size = 4; size <= 8; size += 4)
    for (int k = 0; k < NOPS; k++)
      store(n->mem + at(k, size), size, init_of(k, size));
  uint64_t w;
  if (!kit_net_send(n, 1) || !kit_net_recv(n, &w))
    kit_net_finish(n);
  for (size_t size = 4; size <= 8; size += 4)
    for (int k = 0; k < NOPS; k++) {
      uint64_t left, f;
      expect(k, size, &left, &f);
      const char *p = n->mem + at(k, size);
      uint64_t got = load(p, size);
      if (got != left)
        kit_fail("%s of %zu bytes left 0x%llx at the target, expected "
                 "0x%llx",
                 op_names[k], size, (unsigned long long)got,
                 (unsigned long long)left);
      for (size_t b = size; b < 16; b++)
        if ((unsigned char)p[b] != 0xA5) {
          kit_fail("%s of %zu bytes changed byte %zu after the word",
                   op_names[k], size, b);
          break;
        }
    }
  (void)kit_net_send(n, 1);
  kit_net_finish(n);
}

static void check_atomic_ops(void) {
  kit_net_t n;
  if (!kit_net_start(&n, REGION) || atomic_skip(&n))
    return;
  if (n.rank == 1)
    ops_target(&n);
  uint64_t w, fetched[2][NOPS];
  memset(fetched, 0xCC, sizeof fetched);
  if (!kit_net_recv(&n, &w))
    goto out;
  for (size_t size = 4; size <= 8; size += 4)
    for (int k = 0; k < NOPS; k++) {
      uint64_t opnd = operand_of(k, size), cmp = init_of(k, size);
      if (k == 9)
        cmp ^= 1; /* a compare that does not match */
      void *f = fetches(k) ? &fetched[size / 8][k] : NULL;
      kit_stage("rank 0: %s of %zu bytes", op_names[k], size);
      kit_clear_error();
      /* A 4-byte op reads and writes 4-byte operands: little-endian low
       * halves of these. */
      symheap_result_t r =
          n.T->ops.atomic(n.ctx, 1, op_of(k), size, n.rkey, at(k, size),
                          op_of(k) == SYMHEAP_NET_AMO_FETCH ? NULL : &opnd,
                          op_of(k) == SYMHEAP_NET_AMO_CSWAP ? &cmp : NULL, f);
      if (r != SYMHEAP_SUCCESS) {
        kit_fail("%s of %zu bytes %s", op_names[k], size, kit_said(r));
        goto out;
      }
    }
  if (!kit_net_quiet(&n, "the atomics"))
    goto out;
  for (size_t size = 4; size <= 8; size += 4)
    for (int k = 0; k < NOPS; k++) {
      uint64_t left, f;
      expect(k, size, &left, &f);
      if (!fetches(k))
        continue;
      uint64_t got = load((const char *)&fetched[size / 8][k], size);
      if (got != f)
        kit_fail("%s of %zu bytes fetched 0x%llx, expected 0x%llx", op_names[k],
                 size, (unsigned long long)got, (unsigned long long)f);
    }
  if (kit_net_send(&n, 1) && kit_net_recv(&n, &w))
    kit_pass("fetch, set, add, fetch_add, swap, cswap (match and not), and, "
             "or, xor at 4 and 8 bytes: the values fetched and left, the "
             "bytes around untouched");
out:
  kit_net_finish(&n);
}

#define CONTEND 1000

/* Both processes fetch-add 1 to the same 4- and 8-byte words in rank 1's
 * region (rank 1 through its own key, as a peer would): the totals and the
 * set of values fetched show every add was atomic. */
static void check_atomic_contention(void) {
  kit_net_t n;
  if (!kit_net_start(&n, REGION) || atomic_skip(&n))
    return;
  void *rkey = n.rank == 0 ? n.rkey : n.self_rkey;
  uint64_t *f8 = calloc(2 * CONTEND, sizeof *f8);
  uint32_t *f4 = calloc(2 * CONTEND, sizeof *f4);
  uint64_t one = 1;
  kit_stage("rank %d: %d fetch-adds at 8 and 4 bytes", n.rank, CONTEND);
  for (int i = 0; i < CONTEND && !kit_failed(); i++) {
    kit_clear_error();
    symheap_result_t r = n.T->ops.atomic(n.ctx, 1, SYMHEAP_NET_AMO_FETCH_ADD, 8,
                                         rkey, 0, &one, NULL, &f8[i]);
    if (r == SYMHEAP_SUCCESS)
      r = n.T->ops.atomic(n.ctx, 1, SYMHEAP_NET_AMO_FETCH_ADD, 4, rkey, 8, &one,
                          NULL, &f4[i]);
    if (r != SYMHEAP_SUCCESS)
      kit_fail("rank %d: fetch_add %d %s", n.rank, i, kit_said(r));
    if (i % 64 == 63 && !kit_net_quiet(&n, "64 fetch-adds"))
      break;
  }
  if (!kit_failed())
    (void)kit_net_quiet(&n, "the fetch-adds");
  uint64_t w;
  /* Rank 0 sends its fetched values over the socket; rank 1 checks all. */
  if (n.rank == 0) {
    for (int i = 0; i < CONTEND; i++)
      if (!kit_net_send(&n, f8[i]) || !kit_net_send(&n, f4[i]))
        break;
    if (kit_net_recv(&n, &w))
      kit_pass("%d fetch-adds from each process on one 8-byte and one "
               "4-byte word: totals %d, every value fetched once",
               CONTEND, 2 * CONTEND);
  } else {
    for (int i = 0; i < CONTEND && !kit_failed(); i++) {
      uint64_t a = 0, b = 0;
      if (kit_net_recv(&n, &a) && kit_net_recv(&n, &b))
        f8[CONTEND + i] = a, f4[CONTEND + i] = (uint32_t)b;
    }
    uint64_t t8 = load(n.mem, 8), t4 = load(n.mem + 8, 4);
    char *seen = calloc(2 * 2 * CONTEND, 1);
    for (int i = 0; i < 2 * CONTEND; i++) {
      if (f8[i] < 2 * CONTEND)
        seen[f8[i]]++;
      if (f4[i] < 2 * CONTEND)
        seen[2 * CONTEND + f4[i]]++;
    }
    int dup = -1;
    for (int i = 0; i < 4 * CONTEND && dup < 0; i++)
      if (seen[i] != 1)
        dup = i;
    if (t8 != 2 * CONTEND || t4 != 2 * CONTEND)
      kit_fail("after %d fetch-adds from each process the words hold %llu "
               "(8 bytes) and %llu (4 bytes), expected %d: adds were lost",
               CONTEND, (unsigned long long)t8, (unsigned long long)t4,
               2 * CONTEND);
    else if (dup >= 0)
      kit_fail("value %d of the %d-byte word was fetched %d times (each "
               "must be fetched once)",
               dup % (2 * CONTEND), dup < 2 * CONTEND ? 8 : 4, seen[dup]);
    free(seen);
    (void)kit_net_send(&n, 1);
  }
  free(f8);
  free(f4);
  kit_net_finish(&n);
}

const kit_check_t kit_net_amo_checks[] = {
    {"net_atomic_ops", check_atomic_ops,
     "every atomic at 4 and 8 bytes: value fetched, value left, neighbours"},
    {"net_atomic_contention", check_atomic_contention,
     "fetch-add from both processes on one word: none lost or repeated"},
    {NULL, NULL, NULL}};

/* The kit's net section (symheap-conformance --net NAME [--provider P]):
 * the contracts of symheap_net_ops between two processes of this machine.
 * Availability, put and get with quiet, every atomic at 4 and 8 bytes and
 * under contention, keys and bounds, closing with operations outstanding,
 * and bounded waits when the peer stops or dies.  Ordering (put_signal,
 * fence) is in net_order.c. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"

#define REGION (4u << 20)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void check_available(void) {
  char why[512] = "";
  kit_stage("available");
  if (!K.N.ops.available(&symheap__host_services, why, sizeof why)) {
    kit_skip("the net adaptor cannot run here: %s",
             why[0] ? why : "(no reason)");
    return;
  }
  char list[2048] = "";
  kit_stage("providers");
  kit_clear_error();
  symheap_result_t r =
      K.N.ops.providers(&symheap__host_services, list, sizeof list);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("providers %s", kit_said(r));
    return;
  }
  if (!memchr(list, '\0', sizeof list)) {
    kit_fail("providers wrote an unterminated list");
    return;
  }
  for (char *p = list; *p; p++)
    if (*p == '\n')
      *p = p[1] ? ',' : '\0';
  /* Opening is what tells whether the provider asked for is here. */
  symheap_net_init_t a = {sizeof a, 0, 1, K.provider};
  unsigned char addr[SYMHEAP_NET_ADDR_MAX];
  size_t alen = 0;
  void *ctx = NULL;
  kit_stage("open");
  kit_clear_error();
  r = K.N.ops.open(&symheap__host_services, &a, &ctx, addr, &alen);
  if (r != SYMHEAP_SUCCESS) {
    kit_skip("provider %s cannot be opened here: %s",
             K.provider ? K.provider : "(default)", kit_said(r));
    return;
  }
  symheap_net_caps_t caps;
  memset(&caps, 0, sizeof caps);
  caps.struct_size = sizeof caps;
  r = K.N.ops.query(ctx, &caps);
  K.N.ops.close(ctx);
  if (r != SYMHEAP_SUCCESS)
    kit_fail("query %s", kit_said(r));
  else if (alen == 0 || alen > SYMHEAP_NET_ADDR_MAX)
    kit_fail("open wrote an address of %zu bytes (1..%d allowed)", alen,
             SYMHEAP_NET_ADDR_MAX);
  else if (!(caps.caps & SYMHEAP_NET_CAP_RMA) || !caps.max_msg ||
           !memchr(caps.provider, '\0', sizeof caps.provider) ||
           !caps.provider[0])
    kit_fail("query reports caps 0x%x, max_msg %zu, provider '%.64s': RMA, "
             "a largest message and a provider name are required",
             caps.caps, caps.max_msg, caps.provider);
  else
    kit_pass("provider %s (%s), caps 0x%x, max_msg %zu, inject %zu, "
             "address %zu bytes; providers here: %s",
             caps.provider, caps.fabric, caps.caps, caps.max_msg,
             caps.inject_size, alen, list);
}

/* Bytes of put number i: distinct per put and per position. */
static unsigned char pat(size_t i, size_t j) {
  return (unsigned char)(i * 31 + j * 7 + (j >> 8) + 1);
}
static const size_t sizes[] = {1, 8, 100, 4096, 8192, 8193, 65536, 1u << 20};
#define NSIZES (sizeof sizes / sizeof *sizes)

/* Where put i lands in the region (each its own range, 8-aligned). */
static size_t slot(size_t i) {
  size_t o = 0;
  for (size_t k = 0; k < i; k++)
    o += (sizes[k] + 64) & ~(size_t)7;
  return o;
}

static int verify(const char *mem, size_t base_i, int rank, const char *what) {
  for (size_t i = 0; i < NSIZES; i++) {
    const char *p = mem + slot(i) + (base_i ? REGION / 2 : 0);
    for (size_t j = 0; j < sizes[i]; j++)
      if ((unsigned char)p[j] != pat(i + base_i, j)) {
        kit_fail("rank %d: %s of %zu bytes: byte %zu is 0x%02x, expected "
                 "0x%02x after the writer's quiet",
                 rank, what, sizes[i], j, (unsigned char)p[j],
                 pat(i + base_i, j));
        return 0;
      }
  }
  return 1;
}

/* Rank 0 puts every size twice: from a malloc'd buffer, blocking, which it
 * scribbles over as soon as put returns (the source is free then); and from
 * its registered region with SYMHEAP_NET_NBI.  Then quiet, then a word on
 * the socket: rank 1 must see every byte at once. */
static void check_put(void) {
  kit_net_t n;
  if (!kit_net_start(&n, REGION))
    return;
  if (n.rank == 1) {
    uint64_t w;
    if (kit_net_recv(&n, &w))
      (void)kit_net_send(&n, verify(n.mem, 0, 1, "blocking put") &&
                                 verify(n.mem, NSIZES, 1, "non-blocking put"));
    kit_net_finish(&n);
  }
  char *src = malloc(1u << 20);
  for (size_t i = 0; i < NSIZES; i++) {
    for (size_t j = 0; j < sizes[i]; j++)
      src[j] = (char)pat(i, j);
    kit_stage("rank 0: put of %zu bytes", sizes[i]);
    kit_clear_error();
    symheap_result_t r =
        n.T->ops.put(n.ctx, 1, src, NULL, sizes[i], n.rkey, slot(i), 0);
    memset(src, 0xEE, sizes[i]); /* the source is the caller's again */
    if (r != SYMHEAP_SUCCESS) {
      kit_fail("put of %zu bytes %s", sizes[i], kit_said(r));
      goto out;
    }
    char *nb = n.mem + REGION / 2 + slot(i);
    for (size_t j = 0; j < sizes[i]; j++)
      nb[j] = (char)pat(i + NSIZES, j);
    r = n.T->ops.put(n.ctx, 1, nb, n.mr, sizes[i], n.rkey, REGION / 2 + slot(i),
                     SYMHEAP_NET_NBI);
    if (r != SYMHEAP_SUCCESS) {
      kit_fail("non-blocking put of %zu bytes %s", sizes[i], kit_said(r));
      goto out;
    }
  }
  uint64_t ok = 0;
  if (kit_net_quiet(&n, "the puts") && kit_net_send(&n, 1) &&
      kit_net_recv(&n, &ok))
    kit_pass("%zu sizes (1 B to 1 MiB), blocking from any memory and "
             "non-blocking from a registered region: every byte there "
             "after quiet",
             NSIZES);
out:
  free(src);
  kit_net_finish(&n);
}

/* Rank 1 fills its region; rank 0 gets every size into malloc'd memory
 * and into its own registered region; after quiet the bytes are there. */
static void check_get(void) {
  kit_net_t n;
  if (!kit_net_start(&n, REGION))
    return;
  if (n.rank == 1) {
    for (size_t i = 0; i < NSIZES; i++)
      for (size_t j = 0; j < sizes[i]; j++)
        n.mem[slot(i) + j] = (char)pat(i, j);
    uint64_t w;
    if (kit_net_send(&n, 1))
      (void)kit_net_recv(&n, &w);
    kit_net_finish(&n);
  }
  uint64_t w;
  char *dst = malloc(1u << 20);
  if (!kit_net_recv(&n, &w))
    goto out;
  for (size_t i = 0; i < NSIZES; i++) {
    memset(dst, 0, sizes[i]);
    kit_stage("rank 0: get of %zu bytes", sizes[i]);
    kit_clear_error();
    symheap_result_t r =
        n.T->ops.get(n.ctx, 1, dst, NULL, sizes[i], n.rkey, slot(i), 0);
    if (r == SYMHEAP_SUCCESS)
      r = n.T->ops.get(n.ctx, 1, n.mem + slot(i), n.mr, sizes[i], n.rkey,
                       slot(i), SYMHEAP_NET_NBI);
    if (r != SYMHEAP_SUCCESS) {
      kit_fail("get of %zu bytes %s", sizes[i], kit_said(r));
      goto out;
    }
    if (!kit_net_quiet(&n, "a get"))
      goto out;
    for (size_t j = 0; j < sizes[i]; j++)
      if ((unsigned char)dst[j] != pat(i, j) ||
          (unsigned char)n.mem[slot(i) + j] != pat(i, j)) {
        kit_fail("get of %zu bytes: byte %zu is 0x%02x (malloc'd) / 0x%02x "
                 "(registered), expected 0x%02x after quiet",
                 sizes[i], j, (unsigned char)dst[j],
                 (unsigned char)n.mem[slot(i) + j], pat(i, j));
        goto out;
      }
  }
  if (kit_net_send(&n, 1))
    kit_pass("%zu sizes (1 B to 1 MiB) into malloc'd and registered memory: "
             "every byte there after quiet",
             NSIZES);
out:
  free(dst);
  kit_net_finish(&n);
}

/* Rank 1's whole part where only rank 0 acts on the pair: wait for rank 0's
 * word, then close and exit (kit_net_finish does not return in rank 1). */
static void rank1_waits(kit_net_t *n) {
  uint64_t w;
  (void)kit_net_recv(n, &w);
  kit_net_finish(n);
}

/* Operations outstanding when close comes: nothing crashes, both exit. */
static void check_close_outstanding(void) {
  kit_net_t n;
  if (!kit_net_start(&n, REGION))
    return;
  if (n.rank == 1)
    rank1_waits(&n);
  kit_stage("rank 0: 32 puts of 64 KiB and 32 atomics, then close");
  uint64_t one = 1, fetched[32];
  for (int i = 0; i < 32; i++) {
    (void)n.T->ops.put(n.ctx, 1, n.mem + (size_t)i * 65536, n.mr, 65536, n.rkey,
                       (size_t)i * 65536, SYMHEAP_NET_NBI);
    if (n.caps.caps & SYMHEAP_NET_CAP_ATOMIC)
      (void)n.T->ops.atomic(n.ctx, 1, SYMHEAP_NET_AMO_FETCH_ADD, 8, n.rkey,
                            REGION - 64, &one, NULL, &fetched[i]);
  }
  n.T->ops.close(n.ctx);
  n.ctx = NULL;
  if (kit_net_send(&n, 1))
    kit_pass("close with 32 puts and 32 atomics outstanding returned; both "
             "processes went on and exited");
  kit_net_finish(&n);
}

/* The peer stops (SIGSTOP), then dies: quiet returns within its bound. */
static void check_timeout(void) {
  kit_net_t n;
  if (!kit_net_start(&n, REGION))
    return;
  if (n.rank == 1)
    rank1_waits(&n);
  /* One round trip first, so that the connection exists: the bound under
   * test is quiet's, not that of connecting to a process that is stopped. */
  uint64_t one = 1, f = 0;
  kit_stage("rank 0: a first put and quiet");
  if (n.T->ops.put(n.ctx, 1, n.mem, n.mr, 8, n.rkey, 0, 0) ||
      !kit_net_quiet(&n, "a first put")) {
    kit_net_send(&n, 1);
    kit_net_finish(&n);
    return;
  }
  kill(n.other, SIGSTOP);
  kit_stage("rank 0: put and atomic to a stopped peer, quiet(1000 ms)");
  symheap_result_t r =
      n.T->ops.put(n.ctx, 1, n.mem, n.mr, 65536, n.rkey, 0, SYMHEAP_NET_NBI);
  if (r == SYMHEAP_SUCCESS && (n.caps.caps & SYMHEAP_NET_CAP_ATOMIC))
    r = n.T->ops.atomic(n.ctx, 1, SYMHEAP_NET_AMO_FETCH_ADD, 8, n.rkey, 65536,
                        &one, NULL, &f);
  double t0 = now();
  symheap_result_t q = n.T->ops.quiet(n.ctx, 1000);
  double stopped = now() - t0;
  kill(n.other, SIGCONT);
  char said[256];
  snprintf(said, sizeof said, "%s", kit_said(q));
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("issuing to a stopped peer %s", kit_said(r));
  } else if (stopped > 2.0) {
    kit_fail("quiet(1000 ms) with the peer stopped took %.2f s", stopped);
  } else if (q != SYMHEAP_SUCCESS && q != SYMHEAP_ERR_TIMEOUT) {
    kit_fail("quiet with the peer stopped %s: expected TIMEOUT (or success)",
             said);
  } else if (kit_net_quiet(&n, "the peer resumed")) {
    /* Now it dies: the next quiet ends within its bound too. */
    kill(n.other, SIGKILL);
    waitpid(n.other, NULL, 0);
    n.other = 0;
    (void)n.T->ops.put(n.ctx, 1, n.mem, n.mr, 4096, n.rkey, 0, 0);
    t0 = now();
    symheap_result_t d = n.T->ops.quiet(n.ctx, 1000);
    double dead = now() - t0;
    if (dead > 2.0)
      kit_fail("quiet(1000 ms) after the peer died took %.2f s", dead);
    else if (d == SYMHEAP_SUCCESS)
      kit_fail("quiet after a put to a dead peer succeeded: delivery "
               "complete cannot be true");
    else
      kit_pass("peer stopped: quiet(1000 ms) %s after %.2f s, then succeeded "
               "once it resumed; peer dead: %s after %.2f s",
               said, stopped, kit_said(d), dead);
  }
  if (n.other) { /* still alive: let it finish */
    (void)kit_net_send(&n, 1);
    kit_net_finish(&n);
    return;
  }
  n.T->ops.rkey_release(n.ctx, n.rkey);
  n.T->ops.rkey_release(n.ctx, n.self_rkey);
  n.T->ops.close(n.ctx);
  close(n.fd);
}

/* An unknown provider: refused, and the message lists the ones there are. */
static void check_unknown_provider(void) {
  char list[2048] = "";
  if (K.N.ops.providers(&symheap__host_services, list, sizeof list) ||
      !list[0]) {
    kit_skip("no providers listed to compare with");
    return;
  }
  list[strcspn(list, "\n")] = '\0';
  symheap_net_init_t a = {sizeof a, 0, 1, "no-such-provider"};
  unsigned char addr[SYMHEAP_NET_ADDR_MAX];
  size_t alen = 0;
  void *ctx = NULL;
  kit_stage("open(provider no-such-provider)");
  kit_clear_error();
  symheap_result_t r =
      K.N.ops.open(&symheap__host_services, &a, &ctx, addr, &alen);
  const char *msg = symheap_last_error();
  if (r == SYMHEAP_SUCCESS) {
    K.N.ops.close(ctx);
    kit_fail("open with provider 'no-such-provider' succeeded");
  } else if (r != SYMHEAP_ERR_INVALID_ARG || !strstr(msg, list))
    kit_fail("open with provider 'no-such-provider' %s: expected "
             "INVALID_ARG listing the providers (such as '%s')",
             kit_said(r), list);
  else
    kit_pass("refused: %s", msg);
}

const kit_check_t kit_net_checks[] = {
    {"net_available", check_available,
     "the adaptor loads, lists providers, opens the one asked for; query"},
    {"net_unknown_provider", check_unknown_provider,
     "an unknown provider is refused, naming the available ones"},
    {"net_put", check_put,
     "put (blocking and NBI, 1 B-1 MiB) then quiet: the target sees every "
     "byte"},
    {"net_get", check_get, "get (1 B-1 MiB) into any and registered memory"},
    {"net_close_outstanding", check_close_outstanding,
     "close with puts and atomics outstanding: no crash"},
    {"net_timeout", check_timeout,
     "quiet is bounded when the peer stops or dies"},
    {NULL, NULL, NULL}};

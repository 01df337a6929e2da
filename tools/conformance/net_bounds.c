/* The kit's net bounds: an access that reaches past a key's region is
 * refused (by the initiator before sending, or by the target) and changes
 * nothing there.  Rank 1 registers one page inside three readable ones (so
 * that an engine which does not check would write into its neighbours, not
 * fault) and sends its key; rank 0 tries puts, a get and an atomic across
 * and past the page's end; rank 1 then says whether any byte around (or
 * in) the page changed. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "kit.h"

#define REGION (1u << 20)
#define PAGE 4096u

static void bounds_target(kit_net_t *n) {
  char *b3 = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *mr = NULL;
  unsigned char key[SYMHEAP_NET_KEY_MAX];
  size_t klen = 0;
  if (b3 == MAP_FAILED)
    kit_net_finish(n);
  memset(b3, 0x5A, 3 * PAGE);
  kit_clear_error();
  if (n->T->ops.mem_register(n->ctx, b3 + PAGE, PAGE, 0, &mr, key, &klen) !=
      SYMHEAP_SUCCESS)
    kit_net_finish(n);
  kit_net_send(n, klen);
  for (size_t i = 0; i < klen; i += 8) {
    uint64_t v = 0;
    memcpy(&v, key + i, klen - i < 8 ? klen - i : 8);
    kit_net_send(n, v);
  }
  uint64_t w;
  (void)kit_net_recv(n, &w);
  /* The verdict: 0, or 1 + the first byte that changed. */
  uint64_t changed = 0;
  for (size_t i = 0; i < 3 * PAGE && !changed; i++)
    if ((unsigned char)b3[i] != 0x5A)
      changed = 1 + i;
  (void)n->T->ops.mem_deregister(n->ctx, mr);
  kit_net_send(n, changed);
  kit_net_finish(n);
}

/* One access past the region: refused at the call or by its quiet. */
static int refused(kit_net_t *n, void *key, int kind, uint64_t off,
                   size_t len, const char *what) {
  static char buf[128];
  uint64_t one = 1, f = 0;
  memset(buf, 0x33, sizeof buf);
  kit_clear_error();
  symheap_result_t r =
      kind == 0 ? n->T->ops.put(n->ctx, 1, buf, NULL, len, key, off, 0)
      : kind == 1
          ? n->T->ops.get(n->ctx, 1, buf, NULL, len, key, off, 0)
          : n->T->ops.atomic(n->ctx, 1, SYMHEAP_NET_AMO_FETCH_ADD, 8, key,
                             off, &one, NULL, &f);
  symheap_result_t q = r == SYMHEAP_SUCCESS ? n->T->ops.quiet(n->ctx, 5000) : r;
  if (q == SYMHEAP_SUCCESS)
    kit_fail("%s (%zu bytes at offset %llu of a %u-byte region) completed "
             "without an error: it must be refused",
             what, len, (unsigned long long)off, PAGE);
  return q != SYMHEAP_SUCCESS;
}

static void check_bounds(void) {
  kit_net_t n;
  if (!kit_net_start(&n, REGION))
    return;
  if (n.rank == 1)
    bounds_target(&n);
  uint64_t klen = 0, w, changed = 1;
  unsigned char key[SYMHEAP_NET_KEY_MAX + 8];
  void *bkey = NULL;
  if (!kit_net_recv(&n, &klen) || klen > SYMHEAP_NET_KEY_MAX)
    goto out;
  for (size_t i = 0; i < klen; i += 8) {
    if (!kit_net_recv(&n, &w))
      goto out;
    memcpy(key + i, &w, 8);
  }
  kit_stage("rank 0: accesses past a one-page region's end");
  symheap_result_t r = n.T->ops.rkey_import(n.ctx, 1, key, klen, &bkey);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("rkey_import of the one-page region %s", kit_said(r));
    goto out;
  }
  int ok = refused(&n, bkey, 0, PAGE - 32, 64, "a put across the end");
  ok &= refused(&n, bkey, 0, PAGE, 8, "a put just past the end");
  ok &= refused(&n, bkey, 0, PAGE + 8, 8, "a put 8 bytes past the end");
  ok &= refused(&n, bkey, 1, PAGE - 32, 64, "a get across the end");
  if (n.caps.caps & SYMHEAP_NET_CAP_ATOMIC)
    ok &= refused(&n, bkey, 2, PAGE, 8, "a fetch-add just past the end");
  if (!kit_net_send(&n, 1) || !kit_net_recv(&n, &changed))
    goto out;
  if (changed)
    kit_fail("a refused access changed byte %llu of the three pages around "
             "(and in) the region",
             (unsigned long long)(changed - 1));
  else if (ok)
    kit_pass("puts, a get and an atomic across and past a region's end were "
             "refused; nothing around or in it changed");
out:
  if (bkey)
    n.T->ops.rkey_release(n.ctx, bkey);
  kit_net_finish(&n);
}

const kit_check_t kit_net_bounds_checks[] = {
    {"net_key_bounds", check_bounds,
     "accesses past a key's region are refused and change nothing"},
    {NULL, NULL, NULL}};

/* Checks of the optional single members the core calls without a comm's
 * multicast: mem_retain, dmabuf_export, capture_check.  (Multicast is not
 * created by the kit: on shared GPU hosts it can take the host's GPUs out
 * of service; the fake drivers' tests cover the order.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"

static void check_mem_retain(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  symheap_mem_handle_t h = 0, r = 0;
  char *va = NULL;
  size_t sz = 2 * d.g;
  if (!K.T.has_mem_retain) {
    kit_skip("mem_retain is not provided: only memory from symheap_mem_alloc "
             "registers");
    goto out;
  }
  if (!kit_create(&d, sz, &h) || !kit_map(&d, h, 0, sz, &va))
    goto out;
  void *base = NULL;
  size_t size = 0;
  kit_stage("mem_retain of a pointer inside a mapping");
  kit_clear_error();
  symheap_result_t e =
      d.t.ops.mem_retain(d.ctx, va + d.g + 64, &r, &base, &size);
  if (e != SYMHEAP_SUCCESS) {
    kit_fail("mem_retain of a pointer inside the adaptor's own mapping %s",
             kit_said(e));
    goto out;
  }
  if (!r || base != va || size != sz) {
    kit_fail("mem_retain(base + g + 64) gave handle 0x%llx, base %p, size "
             "%zu: expected a nonzero handle, base %p, size %zu",
             (unsigned long long)r, base, size, (void *)va, sz);
    goto out;
  }
  kit_clear_error();
  e = d.t.ops.mem_release(d.ctx, r);
  r = 0;
  if (e != SYMHEAP_SUCCESS) {
    kit_fail("mem_release of a retained handle %s", kit_said(e));
    goto out;
  }
  /* Memory that is not the adaptor's: UNSUPPORTED, so the core tries IPC. */
  char *mine = malloc(8192);
  kit_stage("mem_retain of malloc'd memory");
  kit_clear_error();
  symheap_mem_handle_t x = 0;
  e = d.t.ops.mem_retain(d.ctx, mine, &x, &base, &size);
  free(mine);
  if (e == SYMHEAP_SUCCESS) {
    kit_fail("mem_retain accepted malloc'd memory: expected "
             "SYMHEAP_ERR_UNSUPPORTED (not this adaptor's memory)");
    if (x)
      d.t.ops.mem_release(d.ctx, x);
  } else if (e != SYMHEAP_ERR_UNSUPPORTED) {
    kit_fail("mem_retain of malloc'd memory %s: expected "
             "SYMHEAP_ERR_UNSUPPORTED, which sends the core to IPC",
             kit_said(e));
  } else {
    kit_pass("a pointer inside a mapping gives its allocation's base and "
             "size; malloc'd memory is UNSUPPORTED");
  }
out:
  if (r)
    d.t.ops.mem_release(d.ctx, r);
  kit_unmap(&d, va, sz);
  if (h)
    d.t.ops.mem_release(d.ctx, h);
  kit_close(&d);
}

static void check_dmabuf_export(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  symheap_mem_handle_t h = 0;
  char *va = NULL;
  size_t sz = 2 * d.g;
  if (!K.T.has_dmabuf) {
    kit_skip("dmabuf_export is not provided%s",
             d.host ? ""
                    : ": this device's memory cannot be registered for "
                      "RDMA");
    goto out;
  }
  if (!kit_create(&d, sz, &h) || !kit_map(&d, h, 0, sz, &va))
    goto out;
  kit_res_t a, b;
  int rounds = K.cycles / 2;
  for (int i = 0; i <= rounds; i++) {
    if (i == 1)
      kit_res(&a); /* after a warm-up round */
    int fd = -1;
    uint64_t off = ~0ull;
    kit_stage("dmabuf_export");
    kit_clear_error();
    symheap_result_t e =
        d.t.ops.dmabuf_export(d.ctx, va + 100, 1000, &fd, &off);
    if (e != SYMHEAP_SUCCESS) {
      kit_fail("dmabuf_export of 1000 bytes at mapping + 100 %s", kit_said(e));
      goto out;
    }
    if (!kit_fd_open(fd) || off >= sz) {
      kit_fail("dmabuf_export gave descriptor %d (%s) and offset %llu: "
               "expected an open descriptor and where the pointer lies in it",
               fd, kit_fd_open(fd) ? "open" : "not open",
               (unsigned long long)off);
      goto out;
    }
    close(fd); /* the caller's, by the contract */
  }
  kit_res(&b);
  char what[200];
  if (kit_leaked(&a, &b, rounds, 0, what, sizeof what))
    kit_fail("dmabuf_export + close, %d rounds: %s leaked", rounds, what);
  else
    kit_pass("%d exports of a mapped range: an open descriptor each, which "
             "the caller closes; nothing left behind",
             rounds + 1);
out:
  kit_unmap(&d, va, sz);
  if (h)
    d.t.ops.mem_release(d.ctx, h);
  kit_close(&d);
}

/* Whether the adaptor has its own capture_check, or the core's stub (the
 * stub is what normalising a table without one puts there). */
static int own_capture_check(void) {
  symheap_device_ops o = K.T.ops;
  symheap__device_table_t t;
  o.capture_check = NULL;
  return symheap__device_normalise(&o, &t) != SYMHEAP_SUCCESS ||
         t.ops.capture_check != K.T.ops.capture_check;
}

static void check_capture_check(void) {
  kit_dev_t d;
  if (!own_capture_check()) {
    kit_skip("capture_check is not provided: nothing is refused during a "
             "graph capture");
    return;
  }
  if (!kit_open(&d))
    return;
  kit_stage("capture_check");
  kit_clear_error();
  symheap_result_t e = d.t.ops.capture_check(d.ctx);
  if (e != SYMHEAP_SUCCESS)
    kit_fail("capture_check with nothing being captured %s: expected "
             "SYMHEAP_SUCCESS (the core would refuse every allocation)",
             kit_said(e));
  else
    kit_pass("SYMHEAP_SUCCESS with nothing being captured");
  kit_close(&d);
}

const kit_check_t kit_optional_checks[] = {
    {"mem_retain", check_mem_retain,
     "a pointer inside a mapping gives its allocation's base and size; "
     "malloc'd memory is UNSUPPORTED"},
    {"dmabuf_export", check_dmabuf_export,
     "an open descriptor and an offset for a mapped range, each the "
     "caller's; rounds leave nothing"},
    {"capture_check", check_capture_check,
     "SYMHEAP_SUCCESS when nothing is being captured"},
    {NULL, NULL, NULL}};

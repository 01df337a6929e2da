/* The adaptor under test, opened the way a comm opens it (init, the hooks
 * of plugins that target it, query), and the preparations every check
 * repeats, each failing the check with what the adaptor said. */
#include <stdio.h>
#include <string.h>

#include "kit.h"
#include "base/plugin.h"

void kit_clear_error(void) { symheap__error_clear(); }

const char *kit_said(symheap_result_t r) {
  static char buf[4][600];
  static int next;
  char *b = buf[next++ % 4];
  const char *e = symheap_last_error();
  if (e && e[0])
    snprintf(b, 600, "returned %d (%s): %s", (int)r, symheap_strerror(r), e);
  else
    snprintf(b, 600,
             "returned %d (%s) with no error text (the adaptor must say why "
             "through svc->error)",
             (int)r, symheap_strerror(r));
  return b;
}

int kit_open_raw(kit_dev_t *d) {
  memset(d, 0, sizeof *d);
  d->t = K.T;
  symheap_device_init_t a = {sizeof a, 0, 1, 0, 1};
  kit_stage("init");
  kit_clear_error();
  symheap_result_t r = d->t.ops.init(&symheap__host_services, &a, &d->ctx);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("precondition: init (rank 0 of 1) %s", kit_said(r));
    return 0;
  }
  kit_stage("plugin hooks over the adaptor");
  if (symheap__plugins_wrap(&d->t, &d->ctx) != SYMHEAP_SUCCESS) {
    kit_fail("precondition: plugin hooks: %s", symheap_last_error());
    d->t.ops.fini(d->ctx);
    return 0;
  }
  kit_stage("query");
  d->caps.struct_size = sizeof d->caps;
  kit_clear_error();
  r = d->t.ops.query(d->ctx, &d->caps);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("precondition: query %s", kit_said(r));
    d->t.ops.fini(d->ctx);
    return 0;
  }
  d->g = d->caps.granularity;
  d->host = (d->caps.caps & SYMHEAP_CAP_HOST_ACCESS) != 0;
  d->vmm = (d->caps.caps & SYMHEAP_CAP_VMM) != 0;
  return 1;
}

int kit_open(kit_dev_t *d) {
  if (!kit_open_raw(d))
    return 0;
  if (!kit_pow2(d->g) || d->g > ((size_t)1 << 30)) {
    /* Every other check sizes by it: say so rather than map nonsense. */
    kit_fail("precondition: granularity %zu is not a power of two in "
             "[1, 1 GiB]",
             d->g);
    d->t.ops.fini(d->ctx);
    return 0;
  }
  return 1;
}

int kit_open_vmm(kit_dev_t *d) {
  if (!kit_open(d))
    return 0;
  if (!d->vmm) {
    kit_skip("the adaptor has no VMM (SYMHEAP_CAP_VMM): its memory is "
             "reached through the IPC fallback only");
    kit_close(d);
    return 0;
  }
  return 1;
}

void kit_close(kit_dev_t *d) {
  kit_stage("fini");
  if (d->ctx)
    d->t.ops.fini(d->ctx);
  d->ctx = NULL;
}

int kit_create(kit_dev_t *d, size_t size, symheap_mem_handle_t *h) {
  kit_stage("mem_create(%zu bytes)", size);
  kit_clear_error();
  *h = 0;
  symheap_result_t r = d->t.ops.mem_create(d->ctx, size, h);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("precondition: mem_create(%zu bytes, %zu granules) %s", size,
             size / d->g, kit_said(r));
    return 0;
  }
  if (*h == 0) {
    kit_fail("mem_create(%zu bytes) returned handle 0, which is never a valid "
             "handle",
             size);
    return 0;
  }
  return 1;
}

int kit_reserve(kit_dev_t *d, size_t size, size_t align, char **va) {
  void *p = NULL;
  kit_stage("va_reserve(%zu, align %zu)", size, align);
  kit_clear_error();
  symheap_result_t r = d->t.ops.va_reserve(d->ctx, size, align, &p);
  if (r != SYMHEAP_SUCCESS || !p) {
    kit_fail("precondition: va_reserve(%zu bytes, align %zu) %s", size, align,
             r != SYMHEAP_SUCCESS ? kit_said(r) : "gave a NULL address");
    return 0;
  }
  *va = p;
  return 1;
}

int kit_map(kit_dev_t *d, symheap_mem_handle_t h, size_t off, size_t size,
            char **va) {
  char *p;
  if (!kit_reserve(d, size, d->g, &p))
    return 0;
  kit_stage("map(%p, %zu bytes, offset %zu)", (void *)p, size, off);
  kit_clear_error();
  symheap_result_t r = d->t.ops.map(d->ctx, p, size, h, off);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("map of [%zu, %zu) of a handle %s", off, off + size, kit_said(r));
    d->t.ops.va_free(d->ctx, p, size);
    return 0;
  }
  kit_stage("set_access(%p, %zu bytes)", (void *)p, size);
  kit_clear_error();
  r = d->t.ops.set_access(d->ctx, p, size);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("set_access(%zu bytes) %s", size, kit_said(r));
    d->t.ops.unmap(d->ctx, p, size);
    d->t.ops.va_free(d->ctx, p, size);
    return 0;
  }
  /* Touch it here, so that a set_access that does nothing fails every
   * check that needs memory with a reason instead of a SIGSEGV. */
  if (d->host && !kit_probe(p, 1)) {
    kit_fail("after map and set_access, a store at the mapping's first byte "
             "faulted: set_access did not make the range accessible to the "
             "CPU, which SYMHEAP_CAP_HOST_ACCESS promises");
    d->t.ops.unmap(d->ctx, p, size);
    d->t.ops.va_free(d->ctx, p, size);
    return 0;
  }
  *va = p;
  return 1;
}

void kit_unmap(kit_dev_t *d, char *va, size_t size) {
  if (!va)
    return;
  kit_stage("unmap(%p, %zu)", (void *)va, size);
  d->t.ops.unmap(d->ctx, va, size);
  kit_stage("va_free(%p, %zu)", (void *)va, size);
  d->t.ops.va_free(d->ctx, va, size);
}

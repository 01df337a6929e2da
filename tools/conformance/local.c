/* Checks of the table, the capabilities and the handles: one process, the
 * adaptor alone, no data. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"

static void check_available(void) {
  char why[256];
  memset(why, 0, sizeof why);
  kit_stage("available");
  int ok = K.T.ops.available(&symheap__host_services, why, sizeof why);
  why[sizeof why - 1] = '\0';
  if (ok)
    kit_pass("the adaptor says it can run here");
  else
    kit_skip("the adaptor cannot run here: %s",
             why[0] ? why : "(available() gave no reason)");
}

static void check_table(void) {
  const symheap__device_table_t *t = &K.T;
  kit_pass("accepted by the core (ABI %u, required members present); "
           "optional: mem_retain %s, multicast %s, ipc %s, mem_zero %s, "
           "dmabuf_export %s",
           t->ops.abi_version, t->has_mem_retain ? "yes" : "no",
           t->has_multicast ? "yes" : "no", t->has_ipc ? "yes" : "no",
           t->has_mem_zero ? "yes" : "no", t->has_dmabuf ? "yes" : "no");
}

/* Names are C strings, bounded, printable: the core copies them into
 * fixed fields and logs them. */
static const char *bad_name(const char *s, size_t cap) {
  const char *nul = memchr(s, '\0', cap);
  if (!nul)
    return "is not NUL-terminated within its bound";
  if (nul == s)
    return "is empty";
  for (const char *p = s; p < nul; p++)
    if (!isprint((unsigned char)*p))
      return "has a character that is not printable";
  return NULL;
}

static void check_names(void) {
  const char *why = bad_name(K.T.ops.name, 32);
  if (why) {
    kit_fail("the table's name %s (32 bytes with its NUL)", why);
    return;
  }
  kit_dev_t d;
  if (!kit_open_raw(&d))
    return;
  /* query once more over bytes that are not NUL, so that a name the
   * adaptor leaves unterminated shows */
  symheap_device_caps_t c;
  memset(&c, 'x', sizeof c);
  c.struct_size = sizeof c;
  kit_stage("query (over a caps struct full of 'x')");
  kit_clear_error();
  symheap_result_t r = d.t.ops.query(d.ctx, &c);
  if (r != SYMHEAP_SUCCESS)
    kit_fail("query %s", kit_said(r));
  else if ((why = bad_name(c.device_name, sizeof c.device_name)))
    kit_fail("caps.device_name %s (%zu bytes with its NUL)", why,
             sizeof c.device_name);
  else
    kit_pass("adaptor '%s', device '%s': NUL-terminated, bounded, printable",
             K.T.ops.name, c.device_name);
  kit_close(&d);
}

static void check_granularity(void) {
  kit_dev_t d;
  if (!kit_open_raw(&d))
    return;
  const symheap_device_caps_t *c = &d.caps;
  long page = sysconf(_SC_PAGESIZE);
  if (!kit_pow2(c->granularity) || c->granularity > ((size_t)1 << 30))
    kit_fail("granularity %zu: expected a power of two in [1, 1 GiB]",
             c->granularity);
  else if (d.host && c->granularity % (size_t)page)
    kit_fail("granularity %zu with SYMHEAP_CAP_HOST_ACCESS: expected a "
             "multiple of the CPU page (%ld)",
             c->granularity, page);
  else if (!c->recommended_granularity ||
           c->recommended_granularity % c->granularity ||
           c->recommended_granularity > ((size_t)1 << 30))
    /* The core's limit (core/registry.c): more is refused at comm init. */
    kit_fail("recommended granularity %zu: expected a multiple of the "
             "granularity (%zu), at most 1 GiB (the core refuses more)",
             c->recommended_granularity, c->granularity);
  else if ((c->caps & SYMHEAP_CAP_MULTICAST) &&
           (!kit_pow2(c->multicast_granularity) ||
            c->multicast_granularity > ((size_t)1 << 30)))
    kit_fail("multicast granularity %zu: expected a power of two, at most "
             "1 GiB (the core refuses more)",
             c->multicast_granularity);
  else
    kit_pass("granularity %zu, recommended %zu, multicast %zu", c->granularity,
             c->recommended_granularity, c->multicast_granularity);
  kit_close(&d);
}

/* The capability bits say what the ops can do; the core trusts them. */
static void check_caps(void) {
  kit_dev_t d;
  if (!kit_open_raw(&d))
    return;
  const symheap_device_caps_t *c = &d.caps;
  const uint32_t known = SYMHEAP_CAP_VMM | SYMHEAP_CAP_MULTICAST |
                         SYMHEAP_CAP_IPC | SYMHEAP_CAP_HOST_ACCESS |
                         SYMHEAP_CAP_MAP_PARTIAL;
  const uint32_t kinds =
      (1u << SYMHEAP_HANDLE_FD) | (1u << SYMHEAP_HANDLE_BYTES);
  if (c->caps & ~known)
    kit_fail("caps 0x%x has bits no SYMHEAP_CAP_* defines (0x%x)", c->caps,
             c->caps & ~known);
  else if (!(c->caps & (SYMHEAP_CAP_VMM | SYMHEAP_CAP_IPC)))
    kit_fail("caps 0x%x: neither SYMHEAP_CAP_VMM nor SYMHEAP_CAP_IPC, so "
             "nothing could be mapped",
             c->caps);
  else if ((c->caps & SYMHEAP_CAP_IPC) && !K.T.has_ipc)
    kit_fail("caps claim SYMHEAP_CAP_IPC but the table has no ipc_get, "
             "ipc_open, ipc_close");
  else if ((c->caps & SYMHEAP_CAP_MULTICAST) && !K.T.has_multicast)
    kit_fail("caps claim SYMHEAP_CAP_MULTICAST but the table has no mc_* "
             "members");
  else if (!(c->caps & SYMHEAP_CAP_MULTICAST) && c->multicast_granularity)
    kit_fail("multicast granularity %zu without SYMHEAP_CAP_MULTICAST "
             "(expected 0)",
             c->multicast_granularity);
  else if ((c->caps & SYMHEAP_CAP_VMM) && !(c->handle_kinds & kinds))
    kit_fail("SYMHEAP_CAP_VMM but handle_kinds 0x%x names no kind "
             "(SYMHEAP_HANDLE_FD or _BYTES) to share memory with",
             c->handle_kinds);
  else if (c->handle_kinds & ~kinds)
    kit_fail("handle_kinds 0x%x has bits for no symheap_handle_kind_t",
             c->handle_kinds);
  else
    kit_pass("caps 0x%x, handle kinds 0x%x: consistent with the table", c->caps,
             c->handle_kinds);
  kit_close(&d);
}

static void check_mem_create_release(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  symheap_mem_handle_t h[3] = {0, 0, 0};
  int ok = 1;
  for (int i = 0; i < 3 && ok; i++)
    ok = kit_create(&d, (size_t)(i + 1) * d.g, &h[i]);
  for (int i = 0; i < 3 && ok; i++)
    for (int j = 0; j < i && ok; j++)
      if (h[i] == h[j]) {
        kit_fail("mem_create gave the same handle 0x%llx twice",
                 (unsigned long long)h[i]);
        ok = 0;
      }
  for (int i = 0; i < 3; i++) {
    if (!h[i])
      continue;
    kit_stage("mem_release");
    kit_clear_error();
    symheap_result_t r = d.t.ops.mem_release(d.ctx, h[i]);
    if (r != SYMHEAP_SUCCESS && ok) {
      kit_fail("mem_release of a handle from mem_create %s", kit_said(r));
      ok = 0;
    }
  }
  if (ok)
    kit_pass("1, 2 and 3 granules made and released; handles distinct");
  kit_close(&d);
}

/* Zero is never a handle: the core uses it for "none". */
static void check_handles_nonzero(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  symheap_mem_handle_t h[8];
  int n = 0, imported = 0;
  memset(h, 0, sizeof h);
  while (n < 6 && kit_create(&d, d.g, &h[n]))
    n++;
  uint32_t kind = (d.caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD))
                      ? SYMHEAP_HANDLE_FD
                      : SYMHEAP_HANDLE_BYTES;
  if (!kit_failed() && n) {
    symheap_shareable_t sh;
    kit_stage("mem_export + mem_import");
    kit_clear_error();
    symheap_result_t r = d.t.ops.mem_export(d.ctx, h[0], kind, &sh);
    if (r == SYMHEAP_SUCCESS)
      r = d.t.ops.mem_import(d.ctx, &sh, &h[n]);
    if (r != SYMHEAP_SUCCESS)
      kit_fail("precondition: export and import %s", kit_said(r));
    else if (h[n] == 0)
      kit_fail("mem_import returned handle 0, which is never a valid handle");
    else
      imported = 1;
  }
  for (int i = 0; i < n + imported; i++)
    if (h[i])
      d.t.ops.mem_release(d.ctx, h[i]);
  kit_pass("%d handles from mem_create and %d from mem_import, none 0", n,
           imported);
  kit_close(&d);
}

static void check_va_reserve_align(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  size_t aligns[] = {d.g, 16 * d.g, (size_t)1 << 21, (size_t)1 << 26};
  char *va[8];
  for (size_t a = 0; a < sizeof aligns / sizeof *aligns && !kit_failed(); a++) {
    size_t al = aligns[a] < d.g ? d.g : aligns[a];
    int n = 0;
    for (; n < 8 && kit_reserve(&d, d.g, al, &va[n]); n++)
      if ((uintptr_t)va[n] % al) {
        kit_fail("va_reserve(%zu bytes, align %zu) gave %p, which is not "
                 "aligned as asked",
                 d.g, al, (void *)va[n]);
        n++;
        break;
      }
    for (int i = 0; i < n; i++)
      d.t.ops.va_free(d.ctx, va[i], d.g);
  }
  kit_pass("8 reservations at each alignment from %zu to 64 MiB, all aligned",
           d.g);
  kit_close(&d);
}

/* A failure must come with a message: it becomes symheap_last_error() on
 * every rank. */
static void check_errors_carry_message(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  symheap_mem_handle_t h = 0, h2 = 0;
  symheap_shareable_t sh, bad;
  memset(&bad, 0, sizeof bad);
  bad.kind = 99; /* no such kind */
  bad.fd = -1;
  void *va = NULL;
  struct {
    const char *what;
    symheap_result_t r;
  } t[3];
  kit_clear_error();
  kit_stage("mem_import(kind 99)");
  t[0].what = "mem_import of a handle of kind 99 (no such kind)";
  t[0].r = d.t.ops.mem_import(d.ctx, &bad, &h2);
  int silent[3];
  silent[0] = !symheap_last_error()[0];
  kit_clear_error();
  if (!kit_create(&d, d.g, &h)) {
    kit_close(&d);
    return;
  }
  kit_stage("mem_export(kind 99)");
  t[1].what = "mem_export to kind 99 (no such kind)";
  t[1].r = d.t.ops.mem_export(d.ctx, h, 99, &sh);
  silent[1] = !symheap_last_error()[0];
  kit_clear_error();
  kit_stage("va_reserve(2^62 bytes)");
  t[2].what = "va_reserve of 2^62 bytes";
  t[2].r = d.t.ops.va_reserve(d.ctx, (size_t)1 << 62, d.g, &va);
  silent[2] = !symheap_last_error()[0];
  for (int i = 0; i < 3 && !kit_failed(); i++)
    if (t[i].r == SYMHEAP_SUCCESS)
      kit_fail("%s succeeded: expected an error", t[i].what);
    else if (silent[i])
      kit_fail("%s returned %d (%s) with no error text: an adaptor reports "
               "failures through svc->error(code, \"why\")",
               t[i].what, (int)t[i].r, symheap_strerror(t[i].r));
  if (t[0].r == SYMHEAP_SUCCESS && h2)
    d.t.ops.mem_release(d.ctx, h2);
  if (t[2].r == SYMHEAP_SUCCESS && va)
    d.t.ops.va_free(d.ctx, va, (size_t)1 << 62);
  d.t.ops.mem_release(d.ctx, h);
  kit_pass("refused with a message: an unknown handle kind on import and on "
           "export, an impossible reservation");
  kit_close(&d);
}

/* One of everything, for check_quiet. */
static void exercise(kit_dev_t *d) {
  symheap_mem_handle_t h = 0, imp = 0;
  symheap_shareable_t sh, bad;
  char *a = NULL, *b = NULL;
  uint32_t kind = (d->caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD))
                      ? SYMHEAP_HANDLE_FD
                      : SYMHEAP_HANDLE_BYTES;
  memset(&bad, 0, sizeof bad);
  bad.kind = 99;
  bad.fd = -1;
  if (!kit_create(d, 2 * d->g, &h) || !kit_map(d, h, 0, 2 * d->g, &a))
    goto out;
  if (K.T.has_mem_zero)
    d->t.ops.mem_zero(d->ctx, a, d->g);
  kit_stage("export, import, map");
  if (d->t.ops.mem_export(d->ctx, h, kind, &sh) == SYMHEAP_SUCCESS &&
      d->t.ops.mem_import(d->ctx, &sh, &imp) == SYMHEAP_SUCCESS)
    kit_map(d, imp, 0, 2 * d->g, &b);
  kit_stage("a refused import");
  symheap_mem_handle_t none = 0;
  if (d->t.ops.mem_import(d->ctx, &bad, &none) == SYMHEAP_SUCCESS && none)
    d->t.ops.mem_release(d->ctx, none);
out:
  kit_unmap(d, b, 2 * d->g);
  kit_unmap(d, a, 2 * d->g);
  if (imp)
    d->t.ops.mem_release(d->ctx, imp);
  if (h)
    d->t.ops.mem_release(d->ctx, h);
}

/* An adaptor logs through svc->log, never to stderr itself: every line on
 * stderr while it works must be the core logger's ("symheap <pid> ..."). */
static void check_quiet(void) {
  FILE *cap = tmpfile();
  if (!cap) {
    kit_fail("the kit could not make a temporary file to catch stderr");
    return;
  }
  fflush(stderr);
  int saved = dup(2);
  dup2(fileno(cap), 2);
  kit_dev_t d;
  int opened = kit_open_vmm(&d);
  if (opened) {
    exercise(&d);
    kit_close(&d);
  }
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  if (!opened) {
    fclose(cap);
    return;
  }
  rewind(cap);
  char line[512];
  int lines = 0;
  while (fgets(line, sizeof line, cap)) {
    lines++;
    if (strncmp(line, "symheap ", 8) != 0) {
      line[strcspn(line, "\n")] = '\0';
      kit_fail("the adaptor wrote to stderr itself: '%.160s': an adaptor "
               "logs through svc->log (the core's logger, SYMHEAP_DEBUG)",
               line);
      break;
    }
  }
  fclose(cap);
  kit_pass("create, map, zero, export, import, a refused import, release, "
           "fini: %d lines on stderr, all through the core's logger",
           lines);
}

const kit_check_t kit_local_checks[] = {
    {"table", check_table,
     "the core accepts the table (ABI, required members)"},
    {"available", check_available,
     "available() says whether the adaptor can run here, and why not"},
    {"names", check_names,
     "the table's name and caps.device_name are NUL-terminated, bounded, "
     "printable"},
    {"granularity", check_granularity,
     "granularity a power of two in [1, 1 GiB] (a page multiple with host "
     "access); recommended a multiple of it"},
    {"caps", check_caps,
     "capability bits and handle kinds consistent with the members present"},
    {"mem_create_release", check_mem_create_release,
     "memory of 1, 2, 3 granules made and released, distinct handles"},
    {"handles_nonzero", check_handles_nonzero,
     "no handle from mem_create or mem_import is 0"},
    {"va_reserve_align", check_va_reserve_align,
     "va_reserve honours align (granularity up to 64 MiB)"},
    {"errors_carry_message", check_errors_carry_message,
     "an error returned by the adaptor carries a message (svc->error)"},
    {"quiet", check_quiet,
     "the adaptor writes nothing to stderr itself (it logs through "
     "svc->log)"},
    {NULL, NULL, NULL}};

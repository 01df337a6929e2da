/* Checks of shareable handles: export and import round trips, who owns an
 * exported descriptor, and imports of handles that are not memory. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kit.h"

static const char *kind_name(uint32_t k) {
  return k == SYMHEAP_HANDLE_FD ? "fd" : "bytes";
}

/* Open the adaptor and check it makes handles of `kind` (SKIP if not). */
static int open_kind(kit_dev_t *d, uint32_t kind) {
  if (!kit_open_vmm(d))
    return 0;
  if (!(d->caps.handle_kinds & (1u << kind))) {
    kit_skip("the adaptor does not make SYMHEAP_HANDLE_%s handles",
             kind == SYMHEAP_HANDLE_FD ? "FD" : "BYTES");
    kit_close(d);
    return 0;
  }
  return 1;
}

static int export_(kit_dev_t *d, symheap_mem_handle_t h, uint32_t kind,
                   symheap_shareable_t *sh) {
  memset(sh, 0, sizeof *sh);
  sh->fd = -1;
  kit_stage("mem_export(kind %s)", kind_name(kind));
  kit_clear_error();
  symheap_result_t r = d->t.ops.mem_export(d->ctx, h, kind, sh);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("mem_export(kind %s) %s", kind_name(kind), kit_said(r));
    return 0;
  }
  if (sh->kind != kind || (kind == SYMHEAP_HANDLE_FD && !kit_fd_open(sh->fd)) ||
      (kind == SYMHEAP_HANDLE_BYTES &&
       (!sh->nbytes || sh->nbytes > SYMHEAP_SHAREABLE_MAX_BYTES))) {
    kit_fail("mem_export(kind %s) gave kind %u, fd %d (%s), %u bytes: "
             "expected the kind asked with an open descriptor or 1..%d bytes",
             kind_name(kind), sh->kind, sh->fd,
             kit_fd_open(sh->fd) ? "open" : "not open", sh->nbytes,
             SYMHEAP_SHAREABLE_MAX_BYTES);
    return 0;
  }
  return 1;
}

static int import_(kit_dev_t *d, const symheap_shareable_t *sh,
                   symheap_mem_handle_t *h) {
  kit_stage("mem_import(kind %s)", kind_name(sh->kind));
  kit_clear_error();
  *h = 0;
  symheap_result_t r = d->t.ops.mem_import(d->ctx, sh, h);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("mem_import of the adaptor's own export %s", kit_said(r));
    return 0;
  }
  if (!*h) {
    kit_fail("mem_import returned handle 0, which is never a valid handle");
    return 0;
  }
  return 1;
}

/* Bytes written through one mapping are read through the other. */
static int same_bytes(char *a, char *b, size_t size, const char *how) {
  for (size_t i = 0; i < size; i += 997)
    a[i] = (char)(i * 7 + 3);
  for (size_t i = 0; i < size; i += 997)
    if (b[i] != (char)(i * 7 + 3)) {
      kit_fail("%s: byte %zu reads 0x%02x, expected 0x%02x", how, i,
               (unsigned char)b[i], (unsigned char)(i * 7 + 3));
      return 0;
    }
  return 1;
}

static void round_trip(uint32_t kind) {
  kit_dev_t d;
  if (!open_kind(&d, kind))
    return;
  size_t sz = 3 * d.g;
  symheap_mem_handle_t h = 0, imp = 0;
  symheap_shareable_t sh;
  char *a = NULL, *b = NULL;
  int ok = kit_create(&d, sz, &h) && export_(&d, h, kind, &sh) &&
           import_(&d, &sh, &imp) && kit_map(&d, h, 0, sz, &a) &&
           kit_map(&d, imp, 0, sz, &b);
  /* The core releases handles as soon as they are mapped: the memory must
   * live on in the mappings. */
  if (ok) {
    kit_stage("mem_release of both handles while mapped");
    kit_clear_error();
    symheap_result_t r = d.t.ops.mem_release(d.ctx, imp);
    if (r == SYMHEAP_SUCCESS)
      r = d.t.ops.mem_release(d.ctx, h);
    h = imp = 0;
    if (r != SYMHEAP_SUCCESS) {
      kit_fail("mem_release while mapped %s", kit_said(r));
      ok = 0;
    }
  }
  if (ok && d.host) {
    kit_stage("data through both mappings");
    ok = same_bytes(a, b, sz,
                    "written through the exporter's mapping, read "
                    "through the importer's") &&
         same_bytes(b + 1, a + 1, sz - 1,
                    "written through the importer's mapping, read through "
                    "the exporter's");
  }
  kit_unmap(&d, b, sz);
  kit_unmap(&d, a, sz);
  if (imp)
    d.t.ops.mem_release(d.ctx, imp);
  if (h)
    d.t.ops.mem_release(d.ctx, h);
  if (ok)
    kit_pass("exported, imported, both mapped, handles released while "
             "mapped%s",
             d.host ? "; bytes written through either are read through the "
                      "other"
                    : " (no CPU access: data is checked by device code)");
  kit_close(&d);
}
static void check_export_import_fd(void) { round_trip(SYMHEAP_HANDLE_FD); }
static void check_export_import_bytes(void) {
  round_trip(SYMHEAP_HANDLE_BYTES);
}

/* The caller owns an exported descriptor: each export is a new one, and
 * closing it leaves the adaptor's memory and handle working. */
static void check_export_owned(void) {
  kit_dev_t d;
  if (!open_kind(&d, SYMHEAP_HANDLE_FD))
    return;
  size_t sz = 2 * d.g;
  symheap_mem_handle_t h = 0, imp = 0;
  symheap_shareable_t s1, s2, s3;
  char *a = NULL, *b = NULL;
  int ok = kit_create(&d, sz, &h) && kit_map(&d, h, 0, sz, &a) &&
           export_(&d, h, SYMHEAP_HANDLE_FD, &s1) &&
           export_(&d, h, SYMHEAP_HANDLE_FD, &s2);
  if (ok && s1.fd == s2.fd) {
    kit_fail("mem_export gave the same descriptor (%d) twice: each exported "
             "descriptor belongs to the caller, who closes it (dup yours)",
             s1.fd);
    ok = 0;
  }
  kit_stage("write through the mapping, close the exports");
  if (ok && d.host)
    memset(a, 0x5a, sz);
  if (ok) {
    close(s1.fd);
    close(s2.fd);
  }
  /* The adaptor must not have given away its own descriptor. */
  char *p = NULL;
  if (ok && (ok = kit_reserve(&d, sz, d.g, &p))) {
    kit_stage("map after the exported descriptors were closed");
    kit_clear_error();
    symheap_result_t r = d.t.ops.map(d.ctx, p, sz, h, 0);
    if (r == SYMHEAP_SUCCESS)
      r = d.t.ops.set_access(d.ctx, p, sz);
    if (r != SYMHEAP_SUCCESS) {
      kit_fail("after the caller closed both exported descriptors, mapping "
               "the handle %s: the adaptor gave away a descriptor it still "
               "uses (each export must be a new descriptor)",
               kit_said(r));
      d.t.ops.va_free(d.ctx, p, sz);
      ok = 0;
    } else {
      b = p;
    }
  }
  if (ok && d.host && (b[0] != 0x5a || b[sz - 1] != 0x5a)) {
    kit_fail("after closing the exported descriptors, a new mapping of the "
             "handle reads 0x%02x, expected 0x5a",
             (unsigned char)b[0]);
    ok = 0;
  }
  ok = ok && export_(&d, h, SYMHEAP_HANDLE_FD, &s3) && import_(&d, &s3, &imp);
  if (imp)
    d.t.ops.mem_release(d.ctx, imp);
  kit_unmap(&d, b, sz);
  kit_unmap(&d, a, sz);
  if (h)
    d.t.ops.mem_release(d.ctx, h);
  if (ok)
    kit_pass("two exports gave two descriptors; with both closed the handle "
             "still maps%s and exports",
             d.host ? ", shows its bytes," : "");
  kit_close(&d);
}

/* Descriptors that are not this adaptor's memory: refused, and closed (the
 * import owns in->fd whether or not it succeeds). */
static int refuse_fd(kit_dev_t *d, int fd, const char *what) {
  symheap_shareable_t sh;
  memset(&sh, 0, sizeof sh);
  sh.kind = SYMHEAP_HANDLE_FD;
  sh.fd = fd;
  symheap_mem_handle_t h = 0;
  kit_stage("mem_import(%s)", what);
  kit_clear_error();
  symheap_result_t r = d->t.ops.mem_import(d->ctx, &sh, &h);
  if (r == SYMHEAP_SUCCESS) {
    kit_fail("mem_import accepted %s as memory: expected it refused "
             "(INVALID_ARG)",
             what);
    if (h)
      d->t.ops.mem_release(d->ctx, h);
    return 0;
  }
  if (fd >= 0 && kit_fd_open(fd)) {
    kit_fail("mem_import refused %s but left the descriptor open: it owns "
             "in->fd, success or not (a leak on every refused import)",
             what);
    close(fd);
    return 0;
  }
  return 1;
}

static int refuse_bytes(kit_dev_t *d, const symheap_shareable_t *sh,
                        const char *what) {
  symheap_mem_handle_t h = 0;
  kit_stage("mem_import(%s)", what);
  kit_clear_error();
  symheap_result_t r = d->t.ops.mem_import(d->ctx, sh, &h);
  if (r == SYMHEAP_SUCCESS) {
    kit_fail("mem_import accepted %s: expected it refused (INVALID_ARG)", what);
    if (h)
      d->t.ops.mem_release(d->ctx, h);
    return 0;
  }
  return 1;
}

static void check_import_refuses_foreign(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  int n = 0;
  if (d.caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD)) {
    int p[2] = {-1, -1};
    if (pipe(p) == 0) {
      n += refuse_fd(&d, p[0], "a pipe's descriptor");
      close(p[1]);
    }
    int e = eventfd(0, EFD_CLOEXEC);
    if (!kit_failed() && e >= 0)
      n += refuse_fd(&d, e, "an eventfd");
    int z = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (!kit_failed() && z >= 0)
      n += refuse_fd(&d, z, "/dev/null's descriptor");
    if (!kit_failed())
      n += refuse_fd(&d, -1, "descriptor -1");
    /* Shared memory that is not the adaptor's: mapping it would hand a
     * peer's window memory of any other program (or one a peer may
     * truncate under this rank).  A regular file of the right size, and a
     * memfd of someone else's, sealed as an adaptor may seal its own. */
    char tmpl[] = "/tmp/symheap-kit-XXXXXX";
    int f = kit_failed() ? -1 : mkstemp(tmpl);
    if (f >= 0) {
      unlink(tmpl);
      if (ftruncate(f, (off_t)d.g) == 0)
        n += refuse_fd(&d, f, "a regular file's descriptor");
      else
        close(f);
    }
    int m = kit_failed() ? -1
                         : memfd_create("not-the-adaptors",
                                        MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (m >= 0) {
      if (ftruncate(m, (off_t)d.g) == 0 &&
          fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0)
        n += refuse_fd(&d, m, "someone else's memfd");
      else
        close(m);
    }
  }
  if (!kit_failed() && (d.caps.handle_kinds & (1u << SYMHEAP_HANDLE_BYTES))) {
    symheap_shareable_t sh;
    memset(&sh, 0, sizeof sh);
    sh.kind = SYMHEAP_HANDLE_BYTES;
    sh.fd = -1;
    n += refuse_bytes(&d, &sh, "an empty byte handle");
    sh.nbytes = SYMHEAP_SHAREABLE_MAX_BYTES;
    memset(sh.bytes, 0xff, sizeof sh.bytes);
    if (!kit_failed())
      n += refuse_bytes(&d, &sh, "128 bytes of 0xff");
    symheap_mem_handle_t h = 0;
    if (!kit_failed() && kit_create(&d, d.g, &h)) {
      kit_clear_error();
      if (d.t.ops.mem_export(d.ctx, h, SYMHEAP_HANDLE_BYTES, &sh) ==
              SYMHEAP_SUCCESS &&
          sh.nbytes > 2) {
        sh.bytes[sh.nbytes / 2] ^= 0x5;
        n += refuse_bytes(&d, &sh, "a real handle with one byte changed");
      }
      d.t.ops.mem_release(d.ctx, h);
    }
  }
  if (!kit_failed()) {
    symheap_shareable_t sh;
    memset(&sh, 0, sizeof sh);
    sh.kind = 99;
    sh.fd = -1;
    n += refuse_bytes(&d, &sh, "a handle of kind 99 (no such kind)");
  }
  kit_pass("%d handles that are not this adaptor's memory refused%s", n,
           (d.caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD))
               ? ", their descriptors closed"
               : "");
  kit_close(&d);
}

static void check_import_refuses_closed(void) {
  kit_dev_t d;
  if (!open_kind(&d, SYMHEAP_HANDLE_FD))
    return;
  symheap_mem_handle_t h = 0;
  symheap_shareable_t sh;
  if (kit_create(&d, d.g, &h) && export_(&d, h, SYMHEAP_HANDLE_FD, &sh)) {
    close(sh.fd); /* its number is free now, and nothing reuses it here */
    if (refuse_fd(&d, sh.fd, "a descriptor that was closed"))
      kit_pass("an exported descriptor, once closed, is refused");
  }
  if (h)
    d.t.ops.mem_release(d.ctx, h);
  kit_close(&d);
}

const kit_check_t kit_handle_checks[] = {
    {"export_import_fd", check_export_import_fd,
     "descriptor handles: export, import, both mapped, released while "
     "mapped, bytes both ways"},
    {"export_import_bytes", check_export_import_bytes,
     "byte handles: the same"},
    {"export_owned", check_export_owned,
     "each export is a new descriptor the caller owns; closing it leaves the "
     "adaptor working"},
    {"import_refuses_foreign", check_import_refuses_foreign,
     "mem_import refuses a pipe, an eventfd, /dev/null, -1, garbage bytes, "
     "an unknown kind, and closes what it refuses"},
    {"import_refuses_closed", check_import_refuses_closed,
     "mem_import refuses a descriptor that was closed"},
    {NULL, NULL, NULL}};

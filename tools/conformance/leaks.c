/* Resource checks: each operation pair runs K.cycles times between two
 * counts of the process's descriptors, mappings and address space
 * (/proc/self), after one warm-up round; what grew is named with the
 * operation that leaked it. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"

typedef int (*round_fn)(kit_dev_t *d, void *arg);

/* Warm up once, count, run the rounds, count; FAIL naming `ops` and
 * `must` when something grew about once a round.  Returns 1 when it
 * passed. */
static int cycle(kit_dev_t *d, round_fn fn, void *arg, size_t va_unit,
                 const char *ops, const char *must) {
  if (!fn(d, arg))
    return 0;
  kit_res_t a, b;
  kit_res(&a);
  for (int i = 0; i < K.cycles; i++)
    if (!fn(d, arg))
      return 0;
  kit_res(&b);
  char what[200];
  if (kit_leaked(&a, &b, K.cycles, va_unit, what, sizeof what)) {
    kit_fail("%s, %d rounds: %s leaked (%s)", ops, K.cycles, what, must);
    return 0;
  }
  kit_pass("%s, %d rounds: descriptors %d -> %d, mappings %ld -> %ld, "
           "address space %+lld bytes",
           ops, K.cycles, a.fds, b.fds, a.maps, b.maps,
           (long long)(b.va - a.va));
  return 1;
}

static int call_ok(symheap_result_t r, const char *what) {
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("%s %s", what, kit_said(r));
    return 0;
  }
  return 1;
}

static void check_leak_init_fini(void) {
  kit_dev_t d;
  if (!kit_open(&d))
    return;
  kit_close(&d);
  kit_res_t a, b;
  kit_res(&a);
  int n = K.cycles / 2;
  for (int i = 0; i < n; i++) {
    if (!kit_open(&d))
      return;
    kit_close(&d);
  }
  kit_res(&b);
  char what[200];
  if (kit_leaked(&a, &b, n, 0, what, sizeof what))
    kit_fail("init + query + fini, %d rounds: %s leaked (fini must release "
             "everything init made)",
             n, what);
  else
    kit_pass("init + query + fini, %d rounds: descriptors %d -> %d, mappings "
             "%ld -> %ld",
             n, a.fds, b.fds, a.maps, b.maps);
}

static int create_release(kit_dev_t *d, void *arg) {
  (void)arg;
  symheap_mem_handle_t h;
  if (!kit_create(d, d->g, &h))
    return 0;
  kit_clear_error();
  return call_ok(d->t.ops.mem_release(d->ctx, h), "mem_release");
}
static void check_leak_mem_create_release(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  cycle(&d, create_release, NULL, 0, "mem_create + mem_release",
        "mem_release must drop everything mem_create made");
  kit_close(&d);
}

static int reserve_free(kit_dev_t *d, void *arg) {
  (void)arg;
  char *va;
  if (!kit_reserve(d, 4 * d->g, d->g, &va))
    return 0;
  kit_clear_error();
  return call_ok(d->t.ops.va_free(d->ctx, va, 4 * d->g), "va_free");
}
static void check_leak_va_reserve_free(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  cycle(&d, reserve_free, NULL, 4 * d.g, "va_reserve + va_free",
        "va_free must give the whole range back");
  kit_close(&d);
}

typedef struct {
  symheap_mem_handle_t h;
  char *va;
} mapping_t;
static int map_unmap(kit_dev_t *d, void *arg) {
  mapping_t *m = arg;
  size_t sz = 2 * d->g;
  kit_stage("map + set_access + unmap");
  kit_clear_error();
  return call_ok(d->t.ops.map(d->ctx, m->va, sz, m->h, 0), "map") &&
         call_ok(d->t.ops.set_access(d->ctx, m->va, sz), "set_access") &&
         call_ok(d->t.ops.unmap(d->ctx, m->va, sz), "unmap");
}
static void check_leak_map_unmap(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  mapping_t m = {0, NULL};
  if (kit_create(&d, 2 * d.g, &m.h) && kit_reserve(&d, 2 * d.g, d.g, &m.va))
    cycle(&d, map_unmap, &m, 2 * d.g,
          "map + set_access + unmap in one "
          "reservation",
          "unmap must undo one map exactly");
  if (m.va)
    d.t.ops.va_free(d.ctx, m.va, 2 * d.g);
  if (m.h)
    d.t.ops.mem_release(d.ctx, m.h);
  kit_close(&d);
}

typedef struct {
  symheap_mem_handle_t h;
  uint32_t kind;
} export_t;
static int export_import(kit_dev_t *d, void *arg) {
  export_t *e = arg;
  symheap_shareable_t sh;
  symheap_mem_handle_t imp = 0;
  memset(&sh, 0, sizeof sh);
  kit_stage("mem_export + mem_import + mem_release");
  kit_clear_error();
  if (!call_ok(d->t.ops.mem_export(d->ctx, e->h, e->kind, &sh), "mem_export"))
    return 0;
  if (!call_ok(d->t.ops.mem_import(d->ctx, &sh, &imp), "mem_import"))
    return 0;
  return call_ok(d->t.ops.mem_release(d->ctx, imp),
                 "mem_release of an imported handle");
}
static void check_leak_export_import(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  export_t e = {0, (d.caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD))
                       ? SYMHEAP_HANDLE_FD
                       : SYMHEAP_HANDLE_BYTES};
  if (kit_create(&d, d.g, &e.h))
    cycle(&d, export_import, &e, 0,
          "mem_export + mem_import + mem_release of the import",
          "mem_import owns the exported descriptor; mem_release must drop "
          "what mem_import made");
  if (e.h)
    d.t.ops.mem_release(d.ctx, e.h);
  kit_close(&d);
}

/* A refused import: a pipe's descriptor (FD kinds) or garbage bytes. */
static int refused_import(kit_dev_t *d, void *arg) {
  uint32_t kind = *(uint32_t *)arg;
  symheap_shareable_t sh;
  memset(&sh, 0, sizeof sh);
  sh.kind = kind;
  sh.fd = -1;
  int p[2] = {-1, -1};
  if (kind == SYMHEAP_HANDLE_FD) {
    if (pipe(p) != 0) {
      kit_fail("the kit could not make a pipe");
      return 0;
    }
    sh.fd = p[0];
    close(p[1]);
  } else {
    sh.nbytes = 24;
    memset(sh.bytes, 0xee, 24);
  }
  symheap_mem_handle_t h = 0;
  kit_stage("mem_import of a foreign handle");
  if (d->t.ops.mem_import(d->ctx, &sh, &h) == SYMHEAP_SUCCESS) {
    kit_fail("mem_import accepted a foreign handle (see "
             "import_refuses_foreign)");
    return 0;
  }
  return 1;
}
static void check_leak_import_failure(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  uint32_t kind = (d.caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD))
                      ? SYMHEAP_HANDLE_FD
                      : SYMHEAP_HANDLE_BYTES;
  cycle(&d, refused_import, &kind, 0,
        kind == SYMHEAP_HANDLE_FD ? "refused mem_import of a pipe's descriptor"
                                  : "refused mem_import of garbage bytes",
        "mem_import leaked on failure: it owns in->fd, success or not, and "
        "must undo what it began");
  kit_close(&d);
}

const kit_check_t kit_leak_checks[] = {
    {"leak_init_fini", check_leak_init_fini,
     "init + query + fini rounds leave no descriptor or mapping"},
    {"leak_mem_create_release", check_leak_mem_create_release,
     "mem_create + mem_release rounds leave nothing"},
    {"leak_va_reserve_free", check_leak_va_reserve_free,
     "va_reserve + va_free rounds leave no address space"},
    {"leak_map_unmap", check_leak_map_unmap,
     "map + set_access + unmap rounds leave no mapping"},
    {"leak_export_import", check_leak_export_import,
     "mem_export + mem_import + mem_release rounds leave nothing"},
    {"leak_import_failure", check_leak_import_failure,
     "refused imports leave no descriptor (the import owns it)"},
    {NULL, NULL, NULL}};

/* symheap-conformance: does a device adaptor keep the contracts of the
 * vtable?  One line per check, PASS / FAIL / SKIP with the reason; exit 1 on
 * any FAIL.  Works on built-in adaptors and on plugins (SYMHEAP_PLUGIN).
 *   symheap-conformance --device NAME      (also: make conformance DEVICE=NAME)
 *
 * The checks: the table and its capabilities; create/release; export and
 * import round trip (data visible through both mappings); mapping at
 * offsets; unmap leaving the range reserved; mem_zero; rollback when any
 * operation fails (a fault-injecting layer over the adaptor, two ranks as
 * threads: every rank fails alike, nothing stays); and the flat VA across
 * ranks.  Data checks need the CPU to reach the adaptor's memory
 * (SYMHEAP_CAP_HOST_ACCESS); without it they say SKIP and why. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../test/harness.h"
#include "config.h"
#include "plugin.h"
#include "registry.h"

static symheap__device_table_t T; /* the adaptor under test */
static const char *NAME;
static int failures;
static char tag[80];

#define RESULT(kind, check, ...)                                               \
  do {                                                                         \
    printf(kind " conformance/%s: ", check);                                   \
    printf(__VA_ARGS__);                                                       \
    printf("\n");                                                              \
  } while (0)
#define PASS(check, ...) RESULT("PASS", check, __VA_ARGS__)
#define SKIP(check, ...) RESULT("SKIP", check, __VA_ARGS__)
#define FAILED(check, ...)                                                     \
  do {                                                                         \
    failures++;                                                                \
    RESULT("FAIL", check, __VA_ARGS__);                                        \
  } while (0)

static int is_pow2(size_t v) { return v && !(v & (v - 1)); }

/* --- one process, the adaptor alone ------------------------------------ */
typedef struct {
  void *ctx;
  symheap_device_caps_t caps;
} dev_t_;

static int open_dev(dev_t_ *d) {
  symheap_device_init_t a = {sizeof a, 0, 1, 0, 1};
  memset(d, 0, sizeof *d);
  d->caps.struct_size = sizeof d->caps;
  return T.ops.init(&symheap__host_services, &a, &d->ctx) == SYMHEAP_SUCCESS &&
         T.ops.query(d->ctx, &d->caps) == SYMHEAP_SUCCESS;
}

static int map_rw(dev_t_ *d, symheap_mem_handle_t h, size_t off, size_t size,
                  char **va) {
  void *p = NULL;
  if (T.ops.va_reserve(d->ctx, size, d->caps.granularity, &p) !=
      SYMHEAP_SUCCESS)
    return 0;
  if (T.ops.map(d->ctx, p, size, h, off) != SYMHEAP_SUCCESS) {
    T.ops.va_free(d->ctx, p, size);
    return 0;
  }
  if (T.ops.set_access(d->ctx, p, size) != SYMHEAP_SUCCESS) {
    T.ops.unmap(d->ctx, p, size);
    T.ops.va_free(d->ctx, p, size);
    return 0;
  }
  *va = p;
  return 1;
}
static int unmap_free(dev_t_ *d, char *va, size_t size) {
  return T.ops.unmap(d->ctx, va, size) == SYMHEAP_SUCCESS &&
         T.ops.va_free(d->ctx, va, size) == SYMHEAP_SUCCESS;
}

static void check_local(void) {
  dev_t_ d;
  if (!open_dev(&d)) {
    FAILED("init_query", "init or query failed: %s", symheap_last_error());
    return;
  }
  size_t g = d.caps.granularity;
  int host = (d.caps.caps & SYMHEAP_CAP_HOST_ACCESS) != 0;
  if (is_pow2(g) && d.caps.recommended_granularity % g == 0 &&
      d.caps.handle_kinds &&
      (d.caps.caps & (SYMHEAP_CAP_VMM | SYMHEAP_CAP_IPC)))
    PASS("init_query", "granularity %zu (recommended %zu), handles 0x%x, caps "
                       "0x%x, device '%s'",
         g, d.caps.recommended_granularity, d.caps.handle_kinds, d.caps.caps,
         d.caps.device_name);
  else
    FAILED("init_query",
           "granularity %zu (power of two?), recommended %zu (a multiple?), "
           "handle kinds 0x%x (none?), caps 0x%x (neither VMM nor IPC?)",
           g, d.caps.recommended_granularity, d.caps.handle_kinds,
           d.caps.caps);
  if (!(d.caps.caps & SYMHEAP_CAP_VMM)) {
    SKIP("mem_create_release", "the adaptor has no VMM");
    T.ops.fini(d.ctx);
    return;
  }
  symheap_mem_handle_t a = 0, b = 0;
  if (T.ops.mem_create(d.ctx, g, &a) == SYMHEAP_SUCCESS && a &&
      T.ops.mem_create(d.ctx, 3 * g, &b) == SYMHEAP_SUCCESS && b &&
      T.ops.mem_release(d.ctx, a) == SYMHEAP_SUCCESS)
    PASS("mem_create_release", "1 and 3 granules; handles nonzero");
  else
    FAILED("mem_create_release", "%s", symheap_last_error());
  if (!b) {
    T.ops.fini(d.ctx);
    return;
  }
  /* export / import round trip, each kind the adaptor claims */
  for (uint32_t kind = SYMHEAP_HANDLE_FD; kind <= SYMHEAP_HANDLE_BYTES;
       kind++) {
    char check[48];
    snprintf(check, sizeof check, "export_import_%s",
             kind == SYMHEAP_HANDLE_FD ? "fd" : "bytes");
    if (!(d.caps.handle_kinds & (1u << kind))) {
      SKIP(check, "the adaptor does not produce this kind");
      continue;
    }
    symheap_shareable_t sh;
    symheap_mem_handle_t imp = 0;
    char *va1 = NULL, *va2 = NULL;
    int ok = T.ops.mem_export(d.ctx, b, kind, &sh) == SYMHEAP_SUCCESS &&
             sh.kind == kind &&
             (kind != SYMHEAP_HANDLE_BYTES ||
              sh.nbytes <= SYMHEAP_SHAREABLE_MAX_BYTES) &&
             T.ops.mem_import(d.ctx, &sh, &imp) == SYMHEAP_SUCCESS && imp;
    ok = ok && map_rw(&d, b, 0, 3 * g, &va1) && map_rw(&d, imp, 0, 3 * g, &va2);
    if (ok && host) {
      for (size_t i = 0; i < 3 * g; i += 4093)
        va1[i] = (char)(i * 7 + 1);
      for (size_t i = 0; i < 3 * g && ok; i += 4093)
        ok = va2[i] == (char)(i * 7 + 1);
    }
    if (va2)
      ok &= unmap_free(&d, va2, 3 * g);
    if (va1)
      ok &= unmap_free(&d, va1, 3 * g);
    if (imp)
      ok &= T.ops.mem_release(d.ctx, imp) == SYMHEAP_SUCCESS;
    if (ok)
      PASS(check, "exported, imported, both mapped%s",
           host ? "; data written through one is read through the other"
                : " (no CPU access: data not checked here)");
    else
      FAILED(check, "%s", symheap_last_error());
  }
  /* mapping at an offset (where the adaptor says it can), and unmap
   * leaving the range reserved */
  int offsets = (d.caps.caps & SYMHEAP_CAP_MAP_PARTIAL) != 0;
  size_t off = offsets ? g : 0, psz = offsets ? 2 * g : 3 * g;
  char *whole = NULL, *part = NULL;
  int ok = map_rw(&d, b, 0, 3 * g, &whole);
  void *p = NULL;
  ok = ok && T.ops.va_reserve(d.ctx, psz, g, &p) == SYMHEAP_SUCCESS;
  part = p;
  ok = ok && T.ops.map(d.ctx, part, psz, b, off) == SYMHEAP_SUCCESS &&
       T.ops.set_access(d.ctx, part, psz) == SYMHEAP_SUCCESS;
  if (ok && host) {
    whole[g + 5] = 42;
    whole[3 * g - 1] = 43;
    ok = part[g + 5 - off] == 42 && part[3 * g - 1 - off] == 43;
  }
  if (ok && offsets)
    PASS("map_at_offsets", "[g, 3g) of a 3-granule allocation%s",
         host ? "; bytes land where they should" : "");
  else if (ok)
    SKIP("map_at_offsets",
         "no SYMHEAP_CAP_MAP_PARTIAL: the adaptor maps whole allocations "
         "only (the core places windows inside them); a second whole "
         "mapping worked%s",
         host ? " and shows the same bytes" : "");
  else
    FAILED("map_at_offsets", "%s", symheap_last_error());
  int again = ok && T.ops.unmap(d.ctx, part, psz) == SYMHEAP_SUCCESS &&
              T.ops.map(d.ctx, part, psz, b, off) == SYMHEAP_SUCCESS &&
              T.ops.set_access(d.ctx, part, psz) == SYMHEAP_SUCCESS &&
              (!host || part[g + 5 - off] == 42);
  if (again)
    PASS("unmap_keeps_reservation", "mapped again at the same address");
  else
    FAILED("unmap_keeps_reservation", "%s", symheap_last_error());
  if (!T.has_mem_zero) {
    SKIP("mem_zero", "not provided: views will carry no pad (no device "
                     "signals or collectives)");
  } else if (part && T.ops.mem_zero(d.ctx, part, psz) == SYMHEAP_SUCCESS &&
             (!host || (part[g + 5 - off] == 0 && whole[g + 5] == 0))) {
    PASS("mem_zero", "%zu granules cleared%s", psz / g,
         host ? ", and read back" : "");
  } else {
    FAILED("mem_zero", "%s", symheap_last_error());
  }
  if (part)
    unmap_free(&d, part, psz);
  if (whole)
    unmap_free(&d, whole, 3 * g);
  T.ops.mem_release(d.ctx, b);
  T.ops.fini(d.ctx);
}

/* --- rollback: a fault-injecting layer over the adaptor ---------------- */
static struct {
  char op[32];
  int rank, nth, count;
  long live; /* handles + reservations + mappings made through the layer */
} F;
static pthread_mutex_t flock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
  void *inner;
  int rank;
} fctx_t;

static symheap_result_t fhit(fctx_t *c, const char *op) {
  pthread_mutex_lock(&flock);
  int fire = F.nth && c->rank == F.rank && strcmp(F.op, op) == 0 &&
             ++F.count == F.nth;
  pthread_mutex_unlock(&flock);
  return fire ? symheap__host_services.error(SYMHEAP_ERR_DEVICE,
                                             "conformance: injected failure "
                                             "of %s on rank %d",
                                             op, c->rank)
              : SYMHEAP_SUCCESS;
}
static void flive(long d) {
  pthread_mutex_lock(&flock);
  F.live += d;
  pthread_mutex_unlock(&flock);
}
#define FI ((fctx_t *)ctx)
#define HIT(op)                                                                \
  do {                                                                         \
    symheap_result_t h_ = fhit(FI, op);                                        \
    if (h_ != SYMHEAP_SUCCESS)                                                 \
      return h_;                                                               \
  } while (0)
static int f_available(const symheap_host_services_t *s, char *w, size_t l) {
  return T.ops.available(s, w, l);
}
static symheap_result_t f_init(const symheap_host_services_t *s,
                               const symheap_device_init_t *a, void **ctx) {
  fctx_t *c = calloc(1, sizeof *c);
  if (!c)
    return SYMHEAP_ERR_NO_MEMORY;
  c->rank = a->rank;
  symheap_result_t r = T.ops.init(s, a, &c->inner);
  if (r != SYMHEAP_SUCCESS)
    free(c);
  else
    *ctx = c;
  return r;
}
static void f_fini(void *ctx) {
  T.ops.fini(FI->inner);
  free(ctx);
}
static symheap_result_t f_query(void *ctx, symheap_device_caps_t *caps) {
  return T.ops.query(FI->inner, caps);
}
static symheap_result_t f_mem_create(void *ctx, size_t s,
                                     symheap_mem_handle_t *h) {
  HIT("mem_create");
  symheap_result_t r = T.ops.mem_create(FI->inner, s, h);
  if (r == SYMHEAP_SUCCESS)
    flive(1);
  return r;
}
static symheap_result_t f_mem_release(void *ctx, symheap_mem_handle_t h) {
  flive(-1);
  return T.ops.mem_release(FI->inner, h);
}
static symheap_result_t f_mem_export(void *ctx, symheap_mem_handle_t h,
                                     uint32_t k, symheap_shareable_t *o) {
  HIT("mem_export");
  return T.ops.mem_export(FI->inner, h, k, o);
}
static symheap_result_t f_mem_import(void *ctx, const symheap_shareable_t *in,
                                     symheap_mem_handle_t *h) {
  symheap_result_t hr = fhit(FI, "mem_import");
  if (hr != SYMHEAP_SUCCESS) {
    if (in->kind == SYMHEAP_HANDLE_FD && in->fd >= 0)
      close(in->fd); /* the contract: the import owns it either way */
    return hr;
  }
  symheap_result_t r = T.ops.mem_import(FI->inner, in, h);
  if (r == SYMHEAP_SUCCESS)
    flive(1);
  return r;
}
static symheap_result_t f_va_reserve(void *ctx, size_t s, size_t a, void **v) {
  HIT("va_reserve");
  symheap_result_t r = T.ops.va_reserve(FI->inner, s, a, v);
  if (r == SYMHEAP_SUCCESS)
    flive(1);
  return r;
}
static symheap_result_t f_va_free(void *ctx, void *v, size_t s) {
  flive(-1);
  return T.ops.va_free(FI->inner, v, s);
}
static symheap_result_t f_map(void *ctx, void *v, size_t s,
                              symheap_mem_handle_t h, size_t o) {
  HIT("map");
  symheap_result_t r = T.ops.map(FI->inner, v, s, h, o);
  if (r == SYMHEAP_SUCCESS)
    flive(1);
  return r;
}
static symheap_result_t f_unmap(void *ctx, void *v, size_t s) {
  flive(-1);
  return T.ops.unmap(FI->inner, v, s);
}
static symheap_result_t f_set_access(void *ctx, void *v, size_t s) {
  HIT("set_access");
  return T.ops.set_access(FI->inner, v, s);
}
static symheap_result_t f_mem_zero(void *ctx, void *v, size_t s) {
  HIT("mem_zero");
  return T.ops.mem_zero(FI->inner, v, s);
}
#undef FI
#undef HIT

static symheap_device_ops fault_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
    .name = "conformance",
    .available = f_available,
    .init = f_init,
    .fini = f_fini,
    .query = f_query,
    .mem_create = f_mem_create,
    .mem_release = f_mem_release,
    .mem_export = f_mem_export,
    .mem_import = f_mem_import,
    .va_reserve = f_va_reserve,
    .va_free = f_va_free,
    .map = f_map,
    .unmap = f_unmap,
    .set_access = f_set_access,
};

static const char *fault_list[] = {"mem_create", "mem_export", "mem_import",
                                   "va_reserve", "map",        "set_access"};
typedef struct {
  int injected, bad;
  char why[256];
} rb_t;

static void rollback_body(th_ctx_t *c, void *arg) {
  rb_t *rb = arg;
  symheap_window_t w;
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  /* The heap's reservation first (it lives as long as the comm), so that
   * the sweep is of its growth and of registrations. */
  if (symheap_malloc(c->comm, 4096, 0, &w) == SYMHEAP_SUCCESS)
    symheap_free(c->comm, w);
  symheap_heap_trim(c->comm);
  symheap_comm_barrier(c->comm);
  symheap_comm_get_stats(c->comm, &s0);
  long live0 = F.live;
  for (size_t k = 0; k < sizeof fault_list / sizeof *fault_list; k++)
    for (int victim = 0; victim < c->n; victim++)
      for (int nth = 1; nth <= 2; nth++) {
        symheap_comm_barrier(c->comm);
        if (c->rank == 0) {
          pthread_mutex_lock(&flock);
          snprintf(F.op, sizeof F.op, "%s", fault_list[k]);
          F.rank = victim;
          F.nth = nth;
          F.count = 0;
          pthread_mutex_unlock(&flock);
        }
        symheap_comm_barrier(c->comm);
        symheap_result_t r = symheap_malloc(c->comm, 3 * 65536, 0, &w);
        symheap_comm_barrier(c->comm);
        if (c->rank == 0) {
          pthread_mutex_lock(&flock);
          int fired = F.count >= F.nth;
          F.nth = 0;
          pthread_mutex_unlock(&flock);
          rb->injected += fired;
        }
        int ok = r == SYMHEAP_SUCCESS, all[8] = {0};
        symheap_comm_allgather(c->comm, &ok, all, sizeof ok);
        for (int p = 0; p < c->n; p++)
          if (all[p] != ok && !rb->bad++)
            snprintf(rb->why, sizeof rb->why,
                     "%s#%d on rank %d: ranks disagree", fault_list[k], nth,
                     victim);
        if (ok)
          symheap_free(c->comm, w);
        /* The heap keeps its chunks until trimmed: not a leak. */
        symheap_heap_trim(c->comm);
        symheap_comm_get_stats(c->comm, &s1);
        if (memcmp(&s0, &s1, sizeof s0) != 0 && !rb->bad++)
          snprintf(rb->why, sizeof rb->why,
                   "%s#%d on rank %d: the accounting moved", fault_list[k],
                   nth, victim);
        symheap_comm_barrier(c->comm);
        if (c->rank == 0 && F.live != live0 && !rb->bad++)
          snprintf(rb->why, sizeof rb->why,
                   "%s#%d on rank %d: %ld objects left in the adaptor",
                   fault_list[k], nth, victim, F.live - live0);
      }
}

/* --- the flat VA across ranks ------------------------------------------- */
typedef struct {
  int bad, host;
  char why[200];
} flat_t;
static void flat_body(th_ctx_t *c, void *arg) {
  flat_t *f = arg;
  symheap_window_t w;
  if (symheap_malloc(c->comm, 200000, 0, &w) != SYMHEAP_SUCCESS) {
    f->bad = 1;
    snprintf(f->why, sizeof f->why, "malloc: %s", symheap_last_error());
    return;
  }
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  symheap_comm_get_info(c->comm, &info);
  f->host = info.cpu_access;
  char *base = NULL;
  size_t stride = 0;
  if (symheap_window_flat_base(w, (void **)&base, &stride) != SYMHEAP_SUCCESS)
    f->bad = 1;
  if (f->host && base) {
    for (size_t i = 0; i < 200000; i += 997)
      base[(size_t)c->rank * stride + i] = (char)(c->rank * 31 + i);
    symheap_comm_barrier(c->comm);
    for (int p = 0; p < c->n; p++)
      for (size_t i = 0; i < 200000; i += 997)
        if (base[(size_t)p * stride + i] != (char)(p * 31 + i) && !f->bad++)
          snprintf(f->why, sizeof f->why, "rank %d's byte %zu is wrong", p, i);
  }
  symheap_comm_barrier(c->comm);
  symheap_free(c->comm, w);
}

int main(int argc, char **argv) {
  if (argc != 3 || strcmp(argv[1], "--device") != 0) {
    fprintf(stderr, "usage: symheap-conformance --device NAME\n");
    return 2;
  }
  NAME = argv[2];
  snprintf(tag, sizeof tag, "%s", NAME);
  if (symheap__plugins_load() != SYMHEAP_SUCCESS) {
    FAILED("plugins", "%s", symheap_last_error());
    return 1;
  }
  int found = 0;
  for (int i = 0; i < symheap__device_count() && !found; i++)
    found = symheap__device_get(i, &T) == SYMHEAP_SUCCESS &&
            strcmp(T.ops.name, NAME) == 0;
  printf("# symheap-conformance: device adaptor '%s'\n", NAME);
  if (!found) {
    FAILED("table", "no device adaptor '%s' is registered (a plugin? set "
                    "SYMHEAP_PLUGIN)",
           NAME);
    return 1;
  }
  PASS("table", "accepted (required members present); optional: mem_retain "
                "%s, multicast %s, ipc %s, mem_zero %s",
       T.has_mem_retain ? "yes" : "no", T.has_multicast ? "yes" : "no",
       T.has_ipc ? "yes" : "no", T.has_mem_zero ? "yes" : "no");
  char why[256] = "";
  if (!T.ops.available(&symheap__host_services, why, sizeof why)) {
    const char *rest[] = {"init_query", "mem_create_release",
                          "export_import", "map_at_offsets",
                          "unmap_keeps_reservation", "mem_zero",
                          "rollback_on_injected_failures",
                          "flat_va_two_ranks"};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
      SKIP(rest[i], "the adaptor cannot run here: %s", why);
    return 0;
  }
  check_local();

  /* Rollback and the flat VA run through the core, two ranks as threads. */
  setenv("SYMHEAP_DEBUG", "NONE", 1); /* the injected failures' warnings */
  dev_t_ d;
  int vmm = open_dev(&d) && (d.caps.caps & SYMHEAP_CAP_VMM);
  if (d.ctx)
    T.ops.fini(d.ctx);
  if (!vmm) {
    const char *e = symheap_last_error();
    SKIP("rollback_on_injected_failures", "the adaptor has no VMM%s%s",
         e[0] ? ": " : "", e);
    SKIP("flat_va_two_ranks", "the adaptor has no VMM");
    return failures ? 1 : 0;
  }
  char fname[48];
  snprintf(fname, sizeof fname, "conformance-%s", NAME);
  fault_ops.name = fname;
  if (T.has_mem_zero)
    fault_ops.mem_zero = f_mem_zero;
  if (symheap_register_device_adaptor(&fault_ops) != SYMHEAP_SUCCESS) {
    FAILED("rollback_on_injected_failures", "%s", symheap_last_error());
    return 1;
  }
  setenv("SYMHEAP_DEVICE", fname, 1);
  rb_t rb;
  memset(&rb, 0, sizeof rb);
  int rc = th_run_threads(2, rollback_body, &rb);
  if (rc == 0 && rb.bad == 0 && rb.injected > 0)
    PASS("rollback_on_injected_failures",
         "%d failures injected into registrations on either rank: every rank "
         "failed alike, accounting and adaptor objects back where they were",
         rb.injected);
  else
    FAILED("rollback_on_injected_failures", "%s (%d injected, run %d)",
           rb.why[0] ? rb.why : "no failure was injected", rb.injected, rc);
  setenv("SYMHEAP_DEVICE", NAME, 1);
  flat_t f;
  memset(&f, 0, sizeof f);
  rc = th_run_threads(2, flat_body, &f);
  if (rc != 0 || f.bad)
    FAILED("flat_va_two_ranks", "%s", f.why[0] ? f.why : "see above");
  else if (!f.host)
    SKIP("flat_va_two_ranks",
         "flat base present, but no CPU access: visibility is checked by "
         "device code (the GPU suites)");
  else
    PASS("flat_va_two_ranks", "every rank's bytes read back through "
                              "base + rank * stride on every rank");
  return failures ? 1 : 0;
}

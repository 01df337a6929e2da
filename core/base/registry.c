/* The device adaptors this process knows: the built-ins (linked-in plugins,
 * admitted by plugin.c) and the ones plugins or callers register;
 * normalisation and choice. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "registry.h"

#define MAX_ADAPTORS 16

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static symheap__device_table_t reg[MAX_ADAPTORS];
static int reg_count;

/* Typed stubs for optional members an adaptor leaves NULL, so the core never
 * tests for NULL on a hot path. */
static symheap_result_t unsupported(const char *op) {
  return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                        "the device adaptor does not implement %s", op);
}
static symheap_result_t stub_mem_retain(void *c, void *p,
                                        symheap_mem_handle_t *h, void **b,
                                        size_t *s) {
  (void)c, (void)p, (void)h, (void)b, (void)s;
  return unsupported("mem_retain");
}
static symheap_result_t stub_mc_create(void *c, size_t s, int n,
                                       symheap_mem_handle_t *m) {
  (void)c, (void)s, (void)n, (void)m;
  return unsupported("mc_create");
}
static symheap_result_t stub_mc_add_device(void *c, symheap_mem_handle_t m) {
  (void)c, (void)m;
  return unsupported("mc_add_device");
}
static symheap_result_t stub_mc_bind(void *c, symheap_mem_handle_t m, size_t mo,
                                     symheap_mem_handle_t h, size_t o,
                                     size_t s) {
  (void)c, (void)m, (void)mo, (void)h, (void)o, (void)s;
  return unsupported("mc_bind");
}
static symheap_result_t stub_mc_unbind(void *c, symheap_mem_handle_t m,
                                       size_t o, size_t s) {
  (void)c, (void)m, (void)o, (void)s;
  return unsupported("mc_unbind");
}
static symheap_result_t stub_ipc_get(void *c, void *p, size_t s,
                                     symheap_shareable_t *o) {
  (void)c, (void)p, (void)s, (void)o;
  return unsupported("ipc_get");
}
static symheap_result_t stub_ipc_open(void *c, const symheap_shareable_t *i,
                                      void **p) {
  (void)c, (void)i, (void)p;
  return unsupported("ipc_open");
}
static symheap_result_t stub_ipc_close(void *c, void *p) {
  (void)c, (void)p;
  return unsupported("ipc_close");
}

/* An adaptor that cannot see captures has none to report. */
static symheap_result_t stub_capture_check(void *ctx) {
  (void)ctx;
  return SYMHEAP_SUCCESS;
}
static symheap_result_t stub_mem_zero(void *ctx, void *va, size_t size) {
  (void)ctx, (void)va, (void)size;
  return unsupported("mem_zero");
}

symheap_result_t symheap__device_normalise(const symheap_device_ops *in,
                                           symheap__device_table_t *out) {
  if (!in)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "device adaptor table is NULL");
  const char *name = in->name ? in->name : "(unnamed)";
  if (in->abi_version != SYMHEAP_ADAPTOR_ABI_VERSION)
    return symheap__error(
        SYMHEAP_ERR_PLUGIN,
        "device adaptor '%s' has ABI version %u; this library "
        "speaks %u",
        name, in->abi_version, SYMHEAP_ADAPTOR_ABI_VERSION);
  if (!SYMHEAP_HAS_MEMBER(in, symheap_device_ops, set_access))
    return symheap__error(
        SYMHEAP_ERR_PLUGIN,
        "device adaptor '%s' declares struct_size %u, smaller "
        "than the %zu bytes of the required members",
        name, in->struct_size,
        offsetof(symheap_device_ops, set_access) + sizeof in->set_access);
  if (!in->name || !in->name[0] || strlen(in->name) >= 32)
    return symheap__error(SYMHEAP_ERR_PLUGIN,
                          "device adaptor has no name or a name of 32 "
                          "characters or more");
  memset(out, 0, sizeof *out);
  /* Read only what the adaptor's struct_size covers: members appended later
   * stay NULL for an adaptor built against an older header. */
  size_t n = in->struct_size < sizeof(symheap_device_ops)
                 ? in->struct_size
                 : sizeof(symheap_device_ops);
  memcpy(&out->ops, in, n);
  out->ops.struct_size = sizeof(symheap_device_ops);
#define REQUIRE(m)                                                             \
  if (!out->ops.m)                                                             \
    return symheap__error(SYMHEAP_ERR_PLUGIN,                                  \
                          "device adaptor '%s' lacks the required operation "  \
                          "'" #m "'",                                          \
                          name);
  REQUIRE(available)
  REQUIRE(init)
  REQUIRE(fini)
  REQUIRE(query) REQUIRE(mem_create) REQUIRE(mem_release) REQUIRE(mem_export)
      REQUIRE(mem_import) REQUIRE(va_reserve) REQUIRE(va_free) REQUIRE(map)
          REQUIRE(unmap) REQUIRE(set_access)
#undef REQUIRE
              out->has_mem_retain = out->ops.mem_retain != NULL;
  out->has_multicast = out->ops.mc_create && out->ops.mc_add_device &&
                       out->ops.mc_bind && out->ops.mc_unbind;
  out->has_ipc = out->ops.ipc_get && out->ops.ipc_open && out->ops.ipc_close;
  out->has_mem_zero = out->ops.mem_zero != NULL;
  out->has_dmabuf = out->ops.dmabuf_export != NULL;
  if (!(out->ops.host_alloc && out->ops.host_free &&
        out->ops.copy_to_host)) /* a part of the three is none of them */
    out->ops.host_alloc = NULL, out->ops.host_free = NULL,
    out->ops.copy_to_host = NULL;
  if (!out->ops.host_alloc) /* staging lands through host_alloc's memory */
    out->ops.copy_from_host = NULL;
  int partial_mc = (out->ops.mc_create || out->ops.mc_add_device ||
                    out->ops.mc_bind || out->ops.mc_unbind) &&
                   !out->has_multicast;
  int partial_ipc =
      (out->ops.ipc_get || out->ops.ipc_open || out->ops.ipc_close) &&
      !out->has_ipc;
  if (partial_mc || partial_ipc)
    return symheap__error(SYMHEAP_ERR_PLUGIN,
                          "device adaptor '%s' provides only part of the %s "
                          "operations; provide all of them or none",
                          name, partial_mc ? "multicast (mc_*)" : "ipc_*");
  if (!out->ops.mem_retain)
    out->ops.mem_retain = stub_mem_retain;
  if (!out->has_multicast) {
    out->ops.mc_create = stub_mc_create;
    out->ops.mc_add_device = stub_mc_add_device;
    out->ops.mc_bind = stub_mc_bind;
    out->ops.mc_unbind = stub_mc_unbind;
  }
  if (!out->ops.mem_zero)
    out->ops.mem_zero = stub_mem_zero;
  if (!out->ops.capture_check)
    out->ops.capture_check = stub_capture_check;
  if (!out->has_ipc) {
    out->ops.ipc_get = stub_ipc_get;
    out->ops.ipc_open = stub_ipc_open;
    out->ops.ipc_close = stub_ipc_close;
  }
  return SYMHEAP_SUCCESS;
}

/* Bounds on what an adaptor may claim: a granularity beyond these is a
 * lie or a bug (the core would zero or reserve absurd amounts for it). */
#define MAX_GRANULARITY ((size_t)1 << 30)

static int pow2(size_t v) { return v && !(v & (v - 1)); }

symheap_result_t symheap__caps_check(const symheap_device_caps_t *caps,
                                     const char *name) {
  const char *fault = NULL;
  char buf[160];
  if (!pow2(caps->granularity) || caps->granularity > MAX_GRANULARITY) {
    snprintf(buf, sizeof buf,
             "granularity %zu (a power of two up to %zu is required)",
             caps->granularity, MAX_GRANULARITY);
    fault = buf;
  } else if (caps->recommended_granularity &&
             (caps->recommended_granularity % caps->granularity ||
              caps->recommended_granularity > MAX_GRANULARITY)) {
    snprintf(buf, sizeof buf,
             "recommended granularity %zu (a multiple of the granularity, "
             "up to %zu, is required)",
             caps->recommended_granularity, MAX_GRANULARITY);
    fault = buf;
  } else if ((caps->caps & SYMHEAP_CAP_MULTICAST) &&
             (!pow2(caps->multicast_granularity) ||
              caps->multicast_granularity > MAX_GRANULARITY)) {
    snprintf(buf, sizeof buf, "multicast granularity %zu",
             caps->multicast_granularity);
    fault = buf;
  } else if (caps->handle_kinds &
             ~((1u << SYMHEAP_HANDLE_FD) | (1u << SYMHEAP_HANDLE_BYTES))) {
    snprintf(buf, sizeof buf, "handle kinds 0x%x (only FD and BYTES exist)",
             caps->handle_kinds);
    fault = buf;
  } else if (!memchr(caps->device_name, '\0', sizeof caps->device_name)) {
    fault = "a device name without its terminating NUL";
  }
  if (!fault)
    return SYMHEAP_SUCCESS;
  return symheap__error(SYMHEAP_ERR_PLUGIN,
                        "device adaptor '%s': query reports %s", name, fault);
}

symheap_result_t symheap__va_reserve(const symheap_device_ops *ops, void *ctx,
                                     size_t size, size_t align, void **va) {
  void *got = NULL;
  symheap_result_t r = ops->va_reserve(ctx, size, align, &got);
  if (r != SYMHEAP_SUCCESS)
    return r;
  const char *fault = !got ? "no range (NULL)"
                      : (uintptr_t)got & (align - 1)
                          ? "a range not aligned as asked"
                      : (uintptr_t)got + size < (uintptr_t)got
                          ? "a range that wraps the address space"
                          : NULL;
  if (!fault) {
    *va = got;
    return SYMHEAP_SUCCESS;
  }
  /* Give back what it did reserve, if anything: it is the adaptor's. */
  if (got)
    SYMHEAP__KEEP_ERROR((void)ops->va_free(ctx, got, size));
  return symheap__error(SYMHEAP_ERR_PLUGIN,
                        "device adaptor '%s': va_reserve(%zu bytes, aligned "
                        "to %zu) succeeded with %s (%p)",
                        ops->name, size, align, fault, got);
}

/* Caller holds reg_lock. */
static symheap_result_t add_locked(const symheap_device_ops *ops) {
  symheap__device_table_t t;
  symheap_result_t r = symheap__device_normalise(ops, &t);
  if (r != SYMHEAP_SUCCESS)
    return r;
  for (int i = 0; i < reg_count; i++)
    if (strcmp(reg[i].ops.name, t.ops.name) == 0)
      return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                            "a device adaptor named '%s' is already registered",
                            t.ops.name);
  if (reg_count == MAX_ADAPTORS)
    return symheap__error(SYMHEAP_ERR_NO_MEMORY,
                          "too many device adaptors (at most %d)",
                          MAX_ADAPTORS);
  reg[reg_count++] = t;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__device_add(const symheap_device_ops *ops) {
  pthread_mutex_lock(&reg_lock);
  symheap_result_t r = add_locked(ops);
  pthread_mutex_unlock(&reg_lock);
  return r;
}

int symheap__device_count(void) {
  pthread_mutex_lock(&reg_lock);
  int n = reg_count;
  pthread_mutex_unlock(&reg_lock);
  return n;
}

symheap_result_t symheap__device_get(int i, symheap__device_table_t *out) {
  pthread_mutex_lock(&reg_lock);
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (i < 0 || i >= reg_count)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG, "no device adaptor %d", i);
  else
    *out = reg[i];
  pthread_mutex_unlock(&reg_lock);
  return r;
}

symheap_result_t symheap__device_select(const char *want,
                                        symheap__device_table_t *out, char *why,
                                        size_t why_len) {
  int n = symheap__device_count();
  symheap__device_table_t t;
  if (strcmp(want, "auto") == 0) {
    char skipped[512] = "";
    size_t o = 0;
    for (int i = 0; i < n; i++) {
      if (symheap__device_get(i, &t) != SYMHEAP_SUCCESS)
        continue;
      if (strcmp(t.ops.name, "host") == 0)
        continue;
      char reason[256] = "not available";
      if (t.ops.available(&symheap__host_services, reason, sizeof reason)) {
        *out = t;
        snprintf(why, why_len,
                 "SYMHEAP_DEVICE=auto chose '%s', the first "
                 "available adaptor other than host",
                 t.ops.name);
        return SYMHEAP_SUCCESS;
      }
      if (o < sizeof skipped)
        o += (size_t)snprintf(skipped + o, sizeof skipped - o, "; %s: %s",
                              t.ops.name, reason);
    }
    for (int i = 0; i < n; i++) {
      if (symheap__device_get(i, &t) == SYMHEAP_SUCCESS &&
          strcmp(t.ops.name, "host") == 0) {
        *out = t;
        snprintf(
            why, why_len,
            "SYMHEAP_DEVICE=auto chose 'host': no other adaptor is usable%s",
            skipped);
        return SYMHEAP_SUCCESS;
      }
    }
    return symheap__error(SYMHEAP_ERR_INTERNAL, "the host adaptor is missing");
  }
  char known[512] = "auto";
  size_t o = strlen(known);
  for (int i = 0; i < n; i++) {
    if (symheap__device_get(i, &t) != SYMHEAP_SUCCESS)
      continue;
    if (strcmp(t.ops.name, want) == 0) {
      char reason[256] = "not available";
      if (!t.ops.available(&symheap__host_services, reason, sizeof reason))
        return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                              "SYMHEAP_DEVICE=%s: that adaptor cannot run "
                              "here: %s",
                              want, reason);
      *out = t;
      snprintf(why, why_len, "SYMHEAP_DEVICE=%s", want);
      return SYMHEAP_SUCCESS;
    }
    if (o < sizeof known)
      o += (size_t)snprintf(known + o, sizeof known - o, ", %s", t.ops.name);
  }
  return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                        "SYMHEAP_DEVICE='%s' is not a known device adaptor; "
                        "known: %s",
                        want, known);
}

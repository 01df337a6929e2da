/* Broken plugins, one per BAD value, for test/test_plugins.c: each must be
 * refused with SYMHEAP_ERR_PLUGIN and a message naming the file and why. */
#include <stdio.h>

#include "symheap_adaptor.h"

static const symheap_host_services_t *svc;
static symheap_result_t p_init(const symheap_host_services_t *s) {
  svc = s;
#if BAD == 6
  return s->error(SYMHEAP_ERR_DEVICE, "the bad plugin's init says no");
#else
  return SYMHEAP_SUCCESS;
#endif
}
static void p_fini(void) {}
static int av(const symheap_host_services_t *s, char *w, size_t l) {
  (void)s, (void)w, (void)l;
  return BAD == 8; /* BAD 8 runs; the others are never chosen */
}

/* BAD 8: a device that lies about its granularity (2^40: the core would
 * zero a 1 TiB pad). */
static symheap_result_t lying_init(const symheap_host_services_t *s,
                                   const symheap_device_init_t *a, void **ctx) {
  (void)s, (void)a;
  *ctx = (void *)&svc;
  return SYMHEAP_SUCCESS;
}
static symheap_result_t lying_query(void *ctx, symheap_device_caps_t *caps) {
  (void)ctx;
  caps->caps = SYMHEAP_CAP_VMM | SYMHEAP_CAP_HOST_ACCESS;
  caps->handle_kinds = 1u << SYMHEAP_HANDLE_FD;
  caps->granularity = (size_t)1 << 40;
  caps->recommended_granularity = caps->granularity;
  snprintf(caps->device_name, sizeof caps->device_name, "liar");
  return SYMHEAP_SUCCESS;
}

/* BAD 9 and 10: hooks whose va_reserve "succeeds" with no range, or with a
 * range that is not aligned as asked. */
static symheap_result_t lying_reserve(const symheap_hook_below_t *below,
                                      size_t size, size_t align, void **va) {
#if BAD == 9
  (void)below, (void)size, (void)align;
  *va = NULL;
  return SYMHEAP_SUCCESS;
#else
  symheap_result_t r =
      below->ops->va_reserve(below->ctx, size + align, align, va);
  if (r == SYMHEAP_SUCCESS)
    *va = (char *)*va + align / 2;
  return r;
#endif
}
static const symheap_device_hooks lying_hooks = {
    .struct_size = sizeof(symheap_device_hooks),
    .target = "*",
    .va_reserve = lying_reserve,
};
static symheap_result_t nope(void) {
  return svc->error(SYMHEAP_ERR_UNSUPPORTED, "bad plugin");
}
typedef symheap_result_t (*any_t)(void);

static const symheap_device_ops dev = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
    .name = "bad",
    .available = av,
    .init = BAD == 8 ? (void *)lying_init : (void *)nope,
    .fini = (void *)p_fini,
    .query = BAD == 8 ? (void *)lying_query : (void *)nope,
    .mem_create = (void *)nope,
    .mem_release = (void *)nope,
    .mem_export = (void *)nope,
    .mem_import = (void *)nope,
    .va_reserve = (void *)nope,
    .va_free = (void *)nope,
#if BAD != 4
    .map = (void *)nope, /* BAD 4: a required operation missing */
#endif
    .unmap = (void *)nope,
    .set_access = (void *)nope,
};

static int one(void *c) {
  (void)c;
  return 1;
}
/* BAD 7: a ccl adaptor without an allgather. */
static const symheap_ccl_ops ccl = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_ccl_ops),
    .name = "badccl",
    .rank = one,
    .size = one,
};

SYMHEAP_PLUGIN_EXPORT const symheap_plugin_t
#if BAD == 1
    not_the_symbol /* BAD 1: the symbol is missing */
#else
    symheap_plugin_v1
#endif
    = {
        .abi_major = BAD == 2 ? 2 : SYMHEAP_PLUGIN_ABI_MAJOR, /* BAD 2 */
        .abi_minor = 0,
        .struct_size = sizeof(symheap_plugin_t),
        .name = "bad",
        .init = BAD == 3 ? NULL : p_init, /* BAD 3: no init */
        .fini = p_fini,
        .device =
            BAD == 5 || BAD == 7 || BAD >= 9 ? NULL : &dev, /* BAD 5: nothing */
        .ccl = BAD == 7 ? &ccl : NULL,
        .hooks = BAD >= 9 ? &lying_hooks : NULL,
};

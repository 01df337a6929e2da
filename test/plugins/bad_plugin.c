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
  return 0;
}
static symheap_result_t nope(void) {
  return svc->error(SYMHEAP_ERR_UNSUPPORTED, "bad plugin");
}
typedef symheap_result_t (*any_t)(void);

static const symheap_device_ops dev = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
    .name = "bad",
    .available = av,
    .init = (void *)nope,
    .fini = (void *)p_fini,
    .query = (void *)nope,
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
        .device = BAD == 5 || BAD == 7 ? NULL : &dev, /* BAD 5: nothing */
        .ccl = BAD == 7 ? &ccl : NULL,
};

/* Template: a vendor whose driver has VMM-style memory (physical allocations,
 * reserved address ranges, map/unmap, access control, exportable handles),
 * like CUDA's cuMem* or HIP's hipMem*.  It compiles, registers as
 * "stub_vmm", says it cannot run here, and answers SYMHEAP_ERR_UNSUPPORTED
 * from every operation, naming what a port must call instead.  Copy it, fill
 * the operations in with your driver's calls (adaptors/device/cuda.c is a
 * complete one), and check the result with symheap-conformance. */
#include <stdio.h>

#include "symheap_adaptor.h"

static const symheap_host_services_t *svc;

/* Every operation a port fills in starts out like this. */
#define TODO(op, with)                                                         \
  svc->error(SYMHEAP_ERR_UNSUPPORTED,                                          \
             "stub_vmm: " op " is a template; a port implements it with "      \
             "the driver's " with)

static int vmm_available(const symheap_host_services_t *s, char *why,
                         size_t len) {
  (void)s;
  /* A port probes its driver here (dlopen it, count devices). */
  snprintf(why, len,
           "template adaptor with no driver behind it (start a "
           "port from plugins/stub_vmm.c)");
  return 0;
}
static symheap_result_t vmm_init(const symheap_host_services_t *s,
                                 const symheap_device_init_t *a, void **ctx) {
  (void)s, (void)a, (void)ctx;
  return TODO("init", "context creation for the rank's device");
}
static void vmm_fini(void *ctx) { (void)ctx; }
/* The shape this template is for: VMM memory, descriptor handles, CPU
 * access unknown (not claimed), no multicast. */
static symheap_result_t vmm_query(void *ctx, symheap_device_caps_t *caps) {
  (void)ctx;
  caps->caps = SYMHEAP_CAP_VMM;
  caps->handle_kinds = 1u << SYMHEAP_HANDLE_FD;
  snprintf(caps->device_name, sizeof caps->device_name, "none (template)");
  return TODO("query", "granularity query (cuMemGetAllocationGranularity)");
}
static symheap_result_t vmm_mem_create(void *c, size_t s,
                                       symheap_mem_handle_t *h) {
  (void)c, (void)s, (void)h;
  return TODO("mem_create", "physical allocation (cuMemCreate)");
}
static symheap_result_t vmm_mem_release(void *c, symheap_mem_handle_t h) {
  (void)c, (void)h;
  return TODO("mem_release", "handle release (cuMemRelease)");
}
static symheap_result_t vmm_mem_export(void *c, symheap_mem_handle_t h,
                                       uint32_t k, symheap_shareable_t *o) {
  (void)c, (void)h, (void)k, (void)o;
  return TODO("mem_export", "export to a descriptor "
                            "(cuMemExportToShareableHandle)");
}
static symheap_result_t vmm_mem_import(void *c, const symheap_shareable_t *i,
                                       symheap_mem_handle_t *h) {
  (void)c, (void)i, (void)h;
  return TODO("mem_import", "import (cuMemImportFromShareableHandle); it "
                            "owns i->fd afterwards");
}
static symheap_result_t vmm_va_reserve(void *c, size_t s, size_t a, void **v) {
  (void)c, (void)s, (void)a, (void)v;
  return TODO("va_reserve", "address reservation (cuMemAddressReserve)");
}
static symheap_result_t vmm_va_free(void *c, void *v, size_t s) {
  (void)c, (void)v, (void)s;
  return TODO("va_free", "address release (cuMemAddressFree)");
}
static symheap_result_t vmm_map(void *c, void *v, size_t s,
                                symheap_mem_handle_t h, size_t o) {
  (void)c, (void)v, (void)s, (void)h, (void)o;
  return TODO("map", "map (cuMemMap)");
}
static symheap_result_t vmm_unmap(void *c, void *v, size_t s) {
  (void)c, (void)v, (void)s;
  return TODO("unmap", "unmap (cuMemUnmap)");
}
static symheap_result_t vmm_set_access(void *c, void *v, size_t s) {
  (void)c, (void)v, (void)s;
  return TODO("set_access", "access control (cuMemSetAccess)");
}

static const symheap_device_ops stub_vmm_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
    .name = "stub_vmm",
    .available = vmm_available,
    .init = vmm_init,
    .fini = vmm_fini,
    .query = vmm_query,
    .mem_create = vmm_mem_create,
    .mem_release = vmm_mem_release,
    .mem_export = vmm_mem_export,
    .mem_import = vmm_mem_import,
    .va_reserve = vmm_va_reserve,
    .va_free = vmm_va_free,
    .map = vmm_map,
    .unmap = vmm_unmap,
    .set_access = vmm_set_access,
    /* A port may add mem_retain (memory the core did not allocate),
     * mem_zero (device signals and collectives need it), capture_check,
     * and the multicast group if the hardware has one. */
};

SYMHEAP_PLUGIN_DEFINE(stub_vmm, svc, .device = &stub_vmm_ops);

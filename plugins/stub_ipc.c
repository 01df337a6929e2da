/* Template: a vendor whose driver has no VMM, only per-allocation IPC
 * handles (like legacy cudaIpcGetMemHandle / hipIpcGetMemHandle): memory is
 * allocated by the application, and each peer opens a rank's handle at an
 * address of the driver's choosing, so windows get per-peer pointers instead
 * of the flat VA.  It compiles, registers as "stub_ipc", says it cannot run
 * here, and answers SYMHEAP_ERR_UNSUPPORTED from every operation, naming what
 * a port must call.  The VMM operations are required members of the table;
 * an IPC-only vendor answers UNSUPPORTED from them for good, and the core
 * then registers memory through ipc_get / ipc_open / ipc_close. */
#include <stdio.h>

#include "symheap_adaptor.h"

static const symheap_host_services_t *svc;

#define NO_VMM(op)                                                             \
  svc->error(SYMHEAP_ERR_UNSUPPORTED,                                          \
             "stub_ipc: " op ": this vendor has no VMM; memory registers "     \
             "through IPC handles (per-peer pointers)")
#define TODO(op, with)                                                         \
  svc->error(SYMHEAP_ERR_UNSUPPORTED,                                          \
             "stub_ipc: " op " is a template; a port implements it with "      \
             "the driver's " with)

static int ipc_available(const symheap_host_services_t *s, char *why,
                         size_t len) {
  (void)s;
  snprintf(why, len,
           "template adaptor with no driver behind it (start a "
           "port from plugins/stub_ipc.c)");
  return 0;
}
static symheap_result_t ipc_init(const symheap_host_services_t *s,
                                 const symheap_device_init_t *a, void **ctx) {
  (void)s, (void)a, (void)ctx;
  return TODO("init", "context creation for the rank's device");
}
static void ipc_fini(void *ctx) { (void)ctx; }
/* Honest capabilities: IPC only; no VMM, no flat VA, no multicast. */
static symheap_result_t ipc_query(void *ctx, symheap_device_caps_t *caps) {
  (void)ctx;
  caps->caps = SYMHEAP_CAP_IPC;
  caps->handle_kinds = 1u << SYMHEAP_HANDLE_BYTES;
  snprintf(caps->device_name, sizeof caps->device_name, "none (template)");
  return TODO("query", "device query (name, page size)");
}
static symheap_result_t ipc_mem_create(void *c, size_t s,
                                       symheap_mem_handle_t *h) {
  (void)c, (void)s, (void)h;
  return NO_VMM("mem_create");
}
static symheap_result_t ipc_mem_release(void *c, symheap_mem_handle_t h) {
  (void)c, (void)h;
  return NO_VMM("mem_release");
}
static symheap_result_t ipc_mem_export(void *c, symheap_mem_handle_t h,
                                       uint32_t k, symheap_shareable_t *o) {
  (void)c, (void)h, (void)k, (void)o;
  return NO_VMM("mem_export");
}
static symheap_result_t ipc_mem_import(void *c, const symheap_shareable_t *i,
                                       symheap_mem_handle_t *h) {
  (void)c, (void)i, (void)h;
  return NO_VMM("mem_import");
}
static symheap_result_t ipc_va_reserve(void *c, size_t s, size_t a, void **v) {
  (void)c, (void)s, (void)a, (void)v;
  return NO_VMM("va_reserve");
}
static symheap_result_t ipc_va_free(void *c, void *v, size_t s) {
  (void)c, (void)v, (void)s;
  return NO_VMM("va_free");
}
static symheap_result_t ipc_map(void *c, void *v, size_t s,
                                symheap_mem_handle_t h, size_t o) {
  (void)c, (void)v, (void)s, (void)h, (void)o;
  return NO_VMM("map");
}
static symheap_result_t ipc_unmap(void *c, void *v, size_t s) {
  (void)c, (void)v, (void)s;
  return NO_VMM("unmap");
}
static symheap_result_t ipc_set_access(void *c, void *v, size_t s) {
  (void)c, (void)v, (void)s;
  return NO_VMM("set_access");
}
/* What a port really implements. */
static symheap_result_t ipc_get(void *c, void *p, size_t s,
                                symheap_shareable_t *o) {
  (void)c, (void)p, (void)s, (void)o;
  return TODO("ipc_get", "IPC handle of an allocation (cudaIpcGetMemHandle): "
                         "bytes, or a descriptor");
}
static symheap_result_t ipc_open(void *c, const symheap_shareable_t *i,
                                 void **p) {
  (void)c, (void)i, (void)p;
  return TODO("ipc_open", "open of a peer's handle (cudaIpcOpenMemHandle)");
}
static symheap_result_t ipc_close(void *c, void *p) {
  (void)c, (void)p;
  return TODO("ipc_close", "close (cudaIpcCloseMemHandle)");
}

static const symheap_device_ops stub_ipc_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
    .name = "stub_ipc",
    .available = ipc_available,
    .init = ipc_init,
    .fini = ipc_fini,
    .query = ipc_query,
    .mem_create = ipc_mem_create,
    .mem_release = ipc_mem_release,
    .mem_export = ipc_mem_export,
    .mem_import = ipc_mem_import,
    .va_reserve = ipc_va_reserve,
    .va_free = ipc_va_free,
    .map = ipc_map,
    .unmap = ipc_unmap,
    .set_access = ipc_set_access,
    .ipc_get = ipc_get,
    .ipc_open = ipc_open,
    .ipc_close = ipc_close,
};

SYMHEAP_PLUGIN_DEFINE(stub_ipc, svc, .device = &stub_ipc_ops);

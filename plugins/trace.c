/* The trace plugin: hooks over whatever device adaptor a comm uses
 * (target "*"), logging every export, import and flat-VA map call with its
 * arguments, result and time at SYMHEAP_DEBUG=INFO.  It shows composition:
 * each hook does its own work and calls the adaptor below through `below`.
 *   SYMHEAP_PLUGIN=trace SYMHEAP_DEBUG=INFO symheap-run -n 2 prog */
#include <stdio.h>
#include <time.h>

#include "symheap_adaptor.h"

static const symheap_host_services_t *svc;

/* The core's clock (the host services'). */
static double now_us(void) { return (double)svc->now_ns() / 1e3; }

/* Time `call` (a call to the adaptor below) and log it. */
#define TRACED(what, call, ...)                                                \
  do {                                                                         \
    double t0_ = now_us();                                                     \
    symheap_result_t r_ = (call);                                              \
    svc->log(SYMHEAP_LOG_INFO, "trace: " what " -> %d in %.1f us",             \
             __VA_ARGS__, (int)r_, now_us() - t0_);                            \
    return r_;                                                                 \
  } while (0)

static symheap_result_t tr_mem_export(const symheap_hook_below_t *b,
                                      symheap_mem_handle_t h, uint32_t kind,
                                      symheap_shareable_t *out) {
  TRACED("mem_export(handle %llu, kind %u)",
         b->ops->mem_export(b->ctx, h, kind, out), (unsigned long long)h, kind);
}
static symheap_result_t tr_mem_import(const symheap_hook_below_t *b,
                                      const symheap_shareable_t *in,
                                      symheap_mem_handle_t *h) {
  TRACED("mem_import(kind %u, %u bytes)", b->ops->mem_import(b->ctx, in, h),
         in->kind, in->nbytes);
}
static symheap_result_t tr_va_reserve(const symheap_hook_below_t *b,
                                      size_t size, size_t align, void **va) {
  TRACED("va_reserve(%zu, align %zu)",
         b->ops->va_reserve(b->ctx, size, align, va), size, align);
}
static symheap_result_t tr_map(const symheap_hook_below_t *b, void *va,
                               size_t size, symheap_mem_handle_t h,
                               size_t off) {
  TRACED("map(%p, %zu, offset %zu)", b->ops->map(b->ctx, va, size, h, off), va,
         size, off);
}
static symheap_result_t tr_unmap(const symheap_hook_below_t *b, void *va,
                                 size_t size) {
  TRACED("unmap(%p, %zu)", b->ops->unmap(b->ctx, va, size), va, size);
}
static symheap_result_t tr_set_access(const symheap_hook_below_t *b, void *va,
                                      size_t size) {
  TRACED("set_access(%p, %zu)", b->ops->set_access(b->ctx, va, size), va, size);
}

static const symheap_device_hooks trace_hooks = {
    .struct_size = sizeof(symheap_device_hooks),
    .target = "*",
    .va_reserve = tr_va_reserve,
    .map = tr_map,
    .unmap = tr_unmap,
    .set_access = tr_set_access,
    .mem_export = tr_mem_export,
    .mem_import = tr_mem_import,
};

SYMHEAP_PLUGIN_DEFINE(trace, svc, .hooks = &trace_hooks);

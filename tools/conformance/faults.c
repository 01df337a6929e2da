/* A fault-injecting layer over the adaptor under test, registered as a
 * device adaptor of its own ("kit-<name>"), so that the core's
 * rollback can be driven through it: the armed operation fails on the armed
 * rank at its nth call, with an error and a message as an adaptor would.
 * It counts what lives through it (handles, reservations, mappings) per
 * rank, so that a rollback that leaves something in the adaptor shows.  Its
 * state is shared memory: ranks that are forked processes see it too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit.h"

#define MAX_RANKS 16
typedef struct {
  char op[32];
  int rank, nth, count, fired;
  long live[MAX_RANKS];
} fault_state_t;
static fault_state_t *F;

const char *const kit_fault_ops[] = {"mem_create", "mem_export", "mem_import",
                                     "va_reserve", "map",        "set_access",
                                     "mem_zero",   NULL};

void kit_faults_arm(const char *op, int rank, int nth) {
  snprintf(F->op, sizeof F->op, "%s", op);
  F->count = 0;
  F->fired = 0;
  __atomic_store_n(&F->rank, rank, __ATOMIC_SEQ_CST);
  __atomic_store_n(&F->nth, nth, __ATOMIC_SEQ_CST);
}
int kit_faults_fired(void) {
  __atomic_store_n(&F->nth, 0, __ATOMIC_SEQ_CST);
  return __atomic_load_n(&F->fired, __ATOMIC_SEQ_CST);
}
long kit_faults_live(int rank) {
  return __atomic_load_n(&F->live[rank % MAX_RANKS], __ATOMIC_SEQ_CST);
}

typedef struct {
  void *inner;
  int rank;
} fctx_t;

/* Only the armed rank counts calls, so the count needs no lock across
 * processes. */
static symheap_result_t hit(fctx_t *c, const char *op) {
  int nth = __atomic_load_n(&F->nth, __ATOMIC_SEQ_CST);
  if (!nth || c->rank != F->rank || strcmp(F->op, op) != 0 ||
      __atomic_add_fetch(&F->count, 1, __ATOMIC_SEQ_CST) != nth)
    return SYMHEAP_SUCCESS;
  __atomic_store_n(&F->fired, 1, __ATOMIC_SEQ_CST);
  return symheap__host_services.error(
      SYMHEAP_ERR_DEVICE, "conformance: injected failure of %s on rank %d", op,
      c->rank);
}
static void live(fctx_t *c, long d) {
  __atomic_add_fetch(&F->live[c->rank % MAX_RANKS], d, __ATOMIC_SEQ_CST);
}

#define FC ((fctx_t *)ctx)
#define HIT(op)                                                                \
  do {                                                                         \
    symheap_result_t h_ = hit(FC, op);                                         \
    if (h_ != SYMHEAP_SUCCESS)                                                 \
      return h_;                                                               \
  } while (0)
/* Count a successful call that made (+1) or ended (-1) an object. */
#define COUNT(call, d)                                                         \
  do {                                                                         \
    symheap_result_t r_ = (call);                                              \
    if (r_ == SYMHEAP_SUCCESS)                                                 \
      live(FC, d);                                                             \
    return r_;                                                                 \
  } while (0)

static int f_available(const symheap_host_services_t *s, char *w, size_t l) {
  return K.T.ops.available(s, w, l);
}
static symheap_result_t f_init(const symheap_host_services_t *s,
                               const symheap_device_init_t *a, void **ctx) {
  fctx_t *c = calloc(1, sizeof *c);
  if (!c)
    return SYMHEAP_ERR_NO_MEMORY;
  c->rank = a->rank;
  symheap_result_t r = K.T.ops.init(s, a, &c->inner);
  if (r != SYMHEAP_SUCCESS)
    free(c);
  else
    *ctx = c;
  return r;
}
static void f_fini(void *ctx) {
  K.T.ops.fini(FC->inner);
  free(ctx);
}
static symheap_result_t f_query(void *ctx, symheap_device_caps_t *caps) {
  return K.T.ops.query(FC->inner, caps);
}
static symheap_result_t f_mem_create(void *ctx, size_t s,
                                     symheap_mem_handle_t *h) {
  HIT("mem_create");
  COUNT(K.T.ops.mem_create(FC->inner, s, h), 1);
}
static symheap_result_t f_mem_release(void *ctx, symheap_mem_handle_t h) {
  COUNT(K.T.ops.mem_release(FC->inner, h), -1);
}
static symheap_result_t f_mem_export(void *ctx, symheap_mem_handle_t h,
                                     uint32_t k, symheap_shareable_t *o) {
  HIT("mem_export");
  return K.T.ops.mem_export(FC->inner, h, k, o);
}
static symheap_result_t f_mem_import(void *ctx, const symheap_shareable_t *in,
                                     symheap_mem_handle_t *h) {
  symheap_result_t hr = hit(FC, "mem_import");
  if (hr != SYMHEAP_SUCCESS) {
    if (in->kind == SYMHEAP_HANDLE_FD && in->fd >= 0)
      close(in->fd); /* the contract: the import owns it either way */
    return hr;
  }
  COUNT(K.T.ops.mem_import(FC->inner, in, h), 1);
}
static symheap_result_t f_va_reserve(void *ctx, size_t s, size_t a, void **v) {
  HIT("va_reserve");
  COUNT(K.T.ops.va_reserve(FC->inner, s, a, v), 1);
}
static symheap_result_t f_va_free(void *ctx, void *v, size_t s) {
  COUNT(K.T.ops.va_free(FC->inner, v, s), -1);
}
static symheap_result_t f_map(void *ctx, void *v, size_t s,
                              symheap_mem_handle_t h, size_t o) {
  HIT("map");
  COUNT(K.T.ops.map(FC->inner, v, s, h, o), 1);
}
static symheap_result_t f_unmap(void *ctx, void *v, size_t s) {
  COUNT(K.T.ops.unmap(FC->inner, v, s), -1);
}
static symheap_result_t f_set_access(void *ctx, void *v, size_t s) {
  HIT("set_access");
  return K.T.ops.set_access(FC->inner, v, s);
}
static symheap_result_t f_mem_zero(void *ctx, void *v, size_t s) {
  HIT("mem_zero");
  return K.T.ops.mem_zero(FC->inner, v, s);
}
static symheap_result_t f_capture_check(void *ctx) {
  return K.T.ops.capture_check(FC->inner);
}
#undef FC
#undef HIT
#undef COUNT

symheap_result_t kit_faults_register(char *name, size_t len) {
  static symheap_device_ops ops;
  if (!F)
    F = kit_shared(sizeof *F);
  /* adaptor names are shorter than 32 bytes */
  snprintf(name, len < 32 ? len : 32, "kit-%s", K.name);
  ops = (symheap_device_ops){
      .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
      .struct_size = sizeof(symheap_device_ops),
      .name = name,
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
      .mem_zero = K.T.has_mem_zero ? f_mem_zero : NULL,
      .capture_check = f_capture_check,
  };
  return symheap_register_device_adaptor(&ops);
}

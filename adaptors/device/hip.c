/* The HIP device adaptor (AMD GPUs), the same shape as the CUDA one.
 *
 * libamdhip64.so (SYMHEAP_HIP_LIBRARY) is loaded with dlopen at first use;
 * without it the adaptor says so and `auto` moves on.  Memory is VMM memory
 * (hipMemCreate) with POSIX file-descriptor handles, mapped with
 * hipMemAddressReserve / hipMemMap / hipMemSetAccess.  Memory that is not
 * VMM (plain hipMalloc) falls back to legacy IPC handles (per-peer pointers;
 * ranks in one process use the pointer with peer access, as the runtime
 * refuses a process's own handles).  No multicast.  The HIP runtime keeps a
 * current device per thread, so every operation first sets the rank's.
 *
 * Public headers and the host services only, like any vendor's adaptor:
 * with hip_api.h and ipc_table.[ch] beside it, it builds out of the tree as
 * a plugin (-DSYMHEAP_PLUGIN_BUILD). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dl.h"
#include "hip_api.h"
#include "ipc_table.h"
#include "symheap_adaptor.h"

/* The core's services, from plugin init on. */
static const symheap_host_services_t *hip_svc;

typedef struct {
#define X(name, params) hip_error_t(*name) params;
  HIP_FUNCS(X)
#undef X
  const char *(*hipGetErrorName)(hip_error_t e);
} hip_lib_t;

static hip_lib_t hip;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int load_state; /* 0 untried, 1 loaded, -1 failed */
static char load_why[512];

static symheap_result_t hip_load(void) {
  pthread_mutex_lock(&load_lock);
  if (load_state == 0) {
    const char *lib = NULL;
    void *h = NULL;
    char why[384];
    load_state = -1;
    if (hip_svc->param_get_string("SYMHEAP_HIP_LIBRARY", &lib) !=
        SYMHEAP_SUCCESS)
      snprintf(load_why, sizeof load_why, "%s", hip_svc->error_message());
    else if (!(h = symheap_dl_open(lib, why, sizeof why)))
      snprintf(load_why, sizeof load_why, "cannot load the HIP runtime %s: %s",
               lib, why);
    if (h) {
      const char *missing = NULL;
      const symheap_dl_sym_t syms[] = {
#define X(name, params) {(void **)&hip.name, #name},
          HIP_FUNCS(X)
#undef X
          {(void **)&hip.hipGetErrorName, "hipGetErrorName"},
      };
      missing = symheap_dl_syms(h, syms, sizeof syms / sizeof syms[0]);
      if (missing) {
        snprintf(load_why, sizeof load_why,
                 "the HIP runtime %s lacks %s (ROCm 6 or later needed)", lib,
                 missing);
        symheap_dl_close(h);
      } else {
        load_state = 1;
      }
    }
  }
  int ok = load_state == 1;
  pthread_mutex_unlock(&load_lock);
  return ok ? SYMHEAP_SUCCESS
            : hip_svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", load_why);
}

static symheap_result_t hip_fail(const char *fn, hip_error_t e) {
  const char *name = hip.hipGetErrorName ? hip.hipGetErrorName(e) : NULL;
  return hip_svc->error(e == HIP_ERR_OUT_OF_MEMORY ? SYMHEAP_ERR_NO_MEMORY
                                                   : SYMHEAP_ERR_DEVICE,
                        "%s failed: %s (%d)", fn, name ? name : "?", e);
}

#define HIP_TRY(call)                                                          \
  do {                                                                         \
    hip_error_t e_ = hip.call;                                                 \
    if (e_ != HIP_OK)                                                          \
      return hip_fail(#call, e_);                                              \
  } while (0)

typedef struct {
  int ordinal;
  size_t gran;
  symheap_ipc_rec_t *ipc; /* pointers ipc_open handed out */
} hipa_t;

#define BIND(c) HIP_TRY(hipSetDevice((c)->ordinal))

static void prop_for(const hipa_t *c, hip_mem_prop_t *p) {
  memset(p, 0, sizeof *p);
  p->type = HIP_ALLOC_PINNED;
  p->requested_handle_type = HIP_HANDLE_POSIX_FD;
  p->location.type = HIP_LOCATION_DEVICE;
  p->location.id = c->ordinal;
}

static int hip_available(const symheap_host_services_t *svc, char *why,
                         size_t len) {
  (void)svc;
  char saved[1024];
  snprintf(saved, sizeof saved, "%s", svc->error_message());
  int n = 0, ok = 0;
  if (hip_load() != SYMHEAP_SUCCESS)
    snprintf(why, len, "%s", svc->error_message());
  else if (hip.hipGetDeviceCount(&n) != HIP_OK || n == 0)
    snprintf(why, len, "the HIP runtime sees no device");
  else
    ok = 1;
  svc->error(SYMHEAP_SUCCESS, "%s", saved);
  return ok;
}

static symheap_result_t hip_init(const symheap_host_services_t *svc,
                                 const symheap_device_init_t *args,
                                 void **ctx) {
  symheap_result_t r = hip_load();
  if (r != SYMHEAP_SUCCESS)
    return r;
  int n = 0;
  HIP_TRY(hipGetDeviceCount(&n));
  if (n == 0)
    return svc->error(SYMHEAP_ERR_DEVICE, "the HIP runtime sees no device");
  long want = args->local_rank % n;
  if (svc->param_is_set("SYMHEAP_HIP_DEVICE")) {
    if ((r = svc->param_get_int("SYMHEAP_HIP_DEVICE", &want)) !=
        SYMHEAP_SUCCESS)
      return r;
    if (want >= n)
      return svc->error(SYMHEAP_ERR_INVALID_ARG,
                        "SYMHEAP_HIP_DEVICE=%ld but only %d device(s) are "
                        "visible",
                        want, n);
  }
  hipa_t *c = calloc(1, sizeof *c);
  if (!c)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "hip adaptor: out of memory");
  c->ordinal = (int)want;
  *ctx = c;
  return SYMHEAP_SUCCESS;
}

static void ipc_close_base(uint64_t base, void *arg) {
  hipa_t *c = arg;
  if (hip.hipSetDevice(c->ordinal) == HIP_OK)
    hip.hipIpcCloseMemHandle((void *)(uintptr_t)base);
}

/* Pointers still open from peers' memory are closed (IPC is a per-process
 * mapping the runtime keeps until closed). */
static void hip_fini(void *ctx) {
  hipa_t *c = ctx;
  symheap_ipc_table_drain(&c->ipc, ipc_close_base, c);
  free(c);
}

static symheap_result_t hip_query(void *ctx, symheap_device_caps_t *caps) {
  hipa_t *c = ctx;
  BIND(c);
  hip_mem_prop_t p;
  prop_for(c, &p);
  hip_error_t e = hip.hipMemGetAllocationGranularity(&caps->granularity, &p,
                                                     HIP_GRANULARITY_MINIMUM);
  if (e == HIP_ERR_NOT_SUPPORTED)
    return hip_svc->error(SYMHEAP_ERR_UNSUPPORTED,
                          "HIP device %d has no virtual memory management "
                          "(hipMemGetAllocationGranularity: not supported)",
                          c->ordinal);
  if (e != HIP_OK)
    return hip_fail("hipMemGetAllocationGranularity", e);
  HIP_TRY(hipMemGetAllocationGranularity(&caps->recommended_granularity, &p,
                                         HIP_GRANULARITY_RECOMMENDED));
  c->gran = caps->granularity;
  caps->caps = SYMHEAP_CAP_VMM | SYMHEAP_CAP_IPC;
  caps->handle_kinds = 1u << SYMHEAP_HANDLE_FD;
  caps->multicast_granularity = 0;
  char name[48] = "AMD GPU";
  (void)hip.hipDeviceGetName(name, (int)sizeof name, c->ordinal);
  snprintf(caps->device_name, sizeof caps->device_name, "%s (device %d)", name,
           c->ordinal);
  return SYMHEAP_SUCCESS;
}

static symheap_mem_handle_t to_h(hip_mem_handle_t h) {
  return (symheap_mem_handle_t)(uintptr_t)h;
}
static hip_mem_handle_t from_h(symheap_mem_handle_t h) {
  return (hip_mem_handle_t)(uintptr_t)h;
}

static symheap_result_t hip_mem_create(void *ctx, size_t size,
                                       symheap_mem_handle_t *out) {
  hipa_t *c = ctx;
  BIND(c);
  hip_mem_prop_t p;
  prop_for(c, &p);
  hip_mem_handle_t h = NULL;
  HIP_TRY(hipMemCreate(&h, size, &p, 0));
  *out = to_h(h);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t hip_mem_release(void *ctx, symheap_mem_handle_t h) {
  hipa_t *c = ctx;
  BIND(c);
  HIP_TRY(hipMemRelease(from_h(h)));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t hip_mem_export(void *ctx, symheap_mem_handle_t h,
                                       uint32_t kind,
                                       symheap_shareable_t *out) {
  hipa_t *c = ctx;
  if (kind != SYMHEAP_HANDLE_FD)
    return hip_svc->error(SYMHEAP_ERR_UNSUPPORTED,
                          "hip adaptor exports file descriptors only");
  BIND(c);
  int fd = -1;
  HIP_TRY(
      hipMemExportToShareableHandle(&fd, from_h(h), HIP_HANDLE_POSIX_FD, 0));
  memset(out, 0, sizeof *out);
  out->kind = SYMHEAP_HANDLE_FD;
  out->fd = fd;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t hip_mem_import(void *ctx, const symheap_shareable_t *in,
                                       symheap_mem_handle_t *out) {
  hipa_t *c = ctx;
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (in->kind != SYMHEAP_HANDLE_FD || in->fd < 0)
    r = hip_svc->error(SYMHEAP_ERR_INVALID_ARG,
                       "hip adaptor imports file descriptors only");
  hip_mem_handle_t h = NULL;
  if (r == SYMHEAP_SUCCESS) {
    hip_error_t e = hip.hipSetDevice(c->ordinal);
    if (e == HIP_OK)
      e = hip.hipMemImportFromShareableHandle(&h, (void *)(uintptr_t)in->fd,
                                              HIP_HANDLE_POSIX_FD);
    if (e != HIP_OK)
      r = hip_fail("hipMemImportFromShareableHandle", e);
  }
  if (in->fd >= 0)
    close(in->fd); /* ours either way; the runtime holds its own */
  if (r == SYMHEAP_SUCCESS)
    *out = to_h(h);
  return r;
}

static symheap_result_t hip_va_reserve(void *ctx, size_t size, size_t align,
                                       void **va) {
  hipa_t *c = ctx;
  BIND(c);
  HIP_TRY(hipMemAddressReserve(va, size, align, NULL, 0));
  return SYMHEAP_SUCCESS;
}
static symheap_result_t hip_va_free(void *ctx, void *va, size_t size) {
  hipa_t *c = ctx;
  BIND(c);
  HIP_TRY(hipMemAddressFree(va, size));
  return SYMHEAP_SUCCESS;
}
static symheap_result_t hip_map(void *ctx, void *va, size_t size,
                                symheap_mem_handle_t h, size_t offset) {
  hipa_t *c = ctx;
  BIND(c);
  HIP_TRY(hipMemMap(va, size, offset, from_h(h), 0));
  return SYMHEAP_SUCCESS;
}
static symheap_result_t hip_unmap(void *ctx, void *va, size_t size) {
  hipa_t *c = ctx;
  BIND(c);
  HIP_TRY(hipMemUnmap(va, size));
  return SYMHEAP_SUCCESS;
}
static symheap_result_t hip_set_access(void *ctx, void *va, size_t size) {
  hipa_t *c = ctx;
  BIND(c);
  hip_access_desc_t d;
  memset(&d, 0, sizeof d);
  d.location.type = HIP_LOCATION_DEVICE;
  d.location.id = c->ordinal;
  d.flags = HIP_ACCESS_READWRITE;
  HIP_TRY(hipMemSetAccess(va, size, &d, 1));
  return SYMHEAP_SUCCESS;
}

/* Memory the caller mapped itself with hipMemCreate + hipMemMap. */
static symheap_result_t hip_mem_retain(void *ctx, void *ptr,
                                       symheap_mem_handle_t *out, void **base,
                                       size_t *size) {
  hipa_t *c = ctx;
  BIND(c);
  hip_mem_handle_t h = NULL;
  if (hip.hipMemRetainAllocationHandle(&h, ptr) != HIP_OK)
    return hip_svc->error(SYMHEAP_ERR_UNSUPPORTED, "%p is not HIP VMM memory",
                          ptr);
  hip_error_t e = hip.hipMemGetAddressRange(base, size, ptr);
  if (e != HIP_OK) {
    hip.hipMemRelease(h);
    return hip_fail("hipMemGetAddressRange", e);
  }
  *out = to_h(h);
  return SYMHEAP_SUCCESS;
}

/* Legacy IPC, for hipMalloc memory: what peers need to open it. */
typedef struct {
  uint32_t magic;
  int32_t pid;
  int32_t ordinal;
  uint32_t reserved;
  uint64_t base;   /* the allocation in the owner */
  uint64_t offset; /* of the window inside it */
  hip_ipc_mem_handle_t handle;
} ipc_blob_t;
#define IPC_MAGIC 0x53484849u /* "SHHI" */
_Static_assert(sizeof(ipc_blob_t) <= SYMHEAP_SHAREABLE_MAX_BYTES,
               "IPC description must fit a shareable handle");

static symheap_result_t hip_ipc_get(void *ctx, void *ptr, size_t size,
                                    symheap_shareable_t *out) {
  hipa_t *c = ctx;
  BIND(c);
  void *base = NULL;
  size_t asz = 0;
  if (hip.hipMemGetAddressRange(&base, &asz, ptr) != HIP_OK)
    return hip_svc->error(SYMHEAP_ERR_INVALID_ARG,
                          "%p is not HIP device memory (allocate it with "
                          "symheap_mem_alloc, hipMemCreate or hipMalloc)",
                          ptr);
  uint64_t off = (uint64_t)((char *)ptr - (char *)base);
  if (off + size > asz)
    return hip_svc->error(SYMHEAP_ERR_INVALID_ARG,
                          "[%p, +%zu) extends past its HIP allocation", ptr,
                          size);
  ipc_blob_t b;
  memset(&b, 0, sizeof b);
  b.magic = IPC_MAGIC;
  b.pid = (int32_t)getpid();
  b.ordinal = c->ordinal;
  b.base = (uint64_t)(uintptr_t)base;
  b.offset = off;
  HIP_TRY(hipIpcGetMemHandle(&b.handle, base));
  memset(out, 0, sizeof *out);
  out->kind = SYMHEAP_HANDLE_BYTES;
  out->fd = -1;
  out->nbytes = sizeof b;
  memcpy(out->bytes, &b, sizeof b);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t hip_ipc_open(void *ctx, const symheap_shareable_t *in,
                                     void **ptr) {
  hipa_t *c = ctx;
  ipc_blob_t b;
  if (in->kind != SYMHEAP_HANDLE_BYTES || in->nbytes != sizeof b)
    return hip_svc->error(SYMHEAP_ERR_REMOTE, "malformed HIP IPC handle");
  memcpy(&b, in->bytes, sizeof b);
  if (b.magic != IPC_MAGIC)
    return hip_svc->error(SYMHEAP_ERR_REMOTE, "malformed HIP IPC handle");
  BIND(c);
  symheap_result_t r = SYMHEAP_SUCCESS;
  uint64_t base = 0;
  int opened = b.pid != (int32_t)getpid(), fresh = 0;
  if (!opened) {
    if (b.ordinal != c->ordinal) {
      hip_error_t e = hip.hipDeviceEnablePeerAccess(b.ordinal, 0);
      if (e != HIP_OK && e != HIP_ERR_PEER_ACCESS_ALREADY_ENABLED)
        r = hip_fail("hipDeviceEnablePeerAccess", e);
    }
    base = b.base;
  } else if (!(base = symheap_ipc_table_opened_base(c->ipc, b.pid, b.base))) {
    /* An allocation opened once serves every window over it. */
    void *p = NULL;
    hip_error_t e =
        hip.hipIpcOpenMemHandle(&p, b.handle, HIP_IPC_LAZY_ENABLE_PEER_ACCESS);
    if (e != HIP_OK)
      r = hip_fail("hipIpcOpenMemHandle", e);
    base = (uint64_t)(uintptr_t)p;
    fresh = 1;
  }
  char *out = (char *)(uintptr_t)(base + b.offset);
  if (r == SYMHEAP_SUCCESS)
    r = symheap_ipc_table_add(hip_svc, &c->ipc, b.pid, b.base, base, opened,
                              out);
  if (r != SYMHEAP_SUCCESS && fresh && base)
    hip.hipIpcCloseMemHandle((void *)(uintptr_t)base);
  if (r == SYMHEAP_SUCCESS)
    *ptr = out;
  return r;
}

static symheap_result_t hip_ipc_close(void *ctx, void *ptr) {
  hipa_t *c = ctx;
  uint64_t base = 0;
  symheap_result_t r =
      symheap_ipc_table_take(hip_svc, &c->ipc, ptr, &base, "hip");
  if (r != SYMHEAP_SUCCESS || !base)
    return r;
  hip_error_t e = hip.hipSetDevice(c->ordinal);
  if (e == HIP_OK)
    e = hip.hipIpcCloseMemHandle((void *)(uintptr_t)base);
  return e == HIP_OK ? SYMHEAP_SUCCESS : hip_fail("hipIpcCloseMemHandle", e);
}

/* On a private stream, so clearing neither waits for nor delays the
 * caller's work. */
static symheap_result_t hip_mem_zero(void *ctx, void *va, size_t size) {
  hipa_t *c = ctx;
  BIND(c);
  hip_stream_t s = NULL;
  HIP_TRY(hipStreamCreateWithFlags(&s, HIP_STREAM_NON_BLOCKING));
  hip_error_t e = hip.hipMemsetAsync(va, 0, size, s);
  const char *fn = "hipMemsetAsync";
  if (e == HIP_OK) {
    e = hip.hipStreamSynchronize(s);
    fn = "hipStreamSynchronize";
  }
  hip_error_t ed = hip.hipStreamDestroy(s);
  if (e != HIP_OK)
    return hip_fail(fn, e);
  if (ed != HIP_OK)
    return hip_fail("hipStreamDestroy", ed);
  return SYMHEAP_SUCCESS;
}

static const symheap_device_ops hip_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
    .name = "hip",
    .available = hip_available,
    .init = hip_init,
    .fini = hip_fini,
    .query = hip_query,
    .mem_create = hip_mem_create,
    .mem_release = hip_mem_release,
    .mem_export = hip_mem_export,
    .mem_import = hip_mem_import,
    .va_reserve = hip_va_reserve,
    .va_free = hip_va_free,
    .map = hip_map,
    .unmap = hip_unmap,
    .set_access = hip_set_access,
    .mem_retain = hip_mem_retain,
    .ipc_get = hip_ipc_get,
    .ipc_open = hip_ipc_open,
    .ipc_close = hip_ipc_close,
    .mem_zero = hip_mem_zero,
};

static const symheap_param_t hip_params[] = {
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_HIP_LIBRARY",
     "libamdhip64.so", 0, 0, NULL,
     "the HIP runtime the hip adaptor loads with dlopen (a name searched the "
     "usual way, or a path)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_INT, "SYMHEAP_HIP_DEVICE", NULL, 0,
     1023, NULL,
     "HIP device ordinal for every rank of this process; unset: local rank "
     "modulo the device count"},
};

static symheap_result_t hip_plugin_init(const symheap_host_services_t *svc) {
  if (!SYMHEAP_HAS_MEMBER(svc, symheap_host_services_t, now_ns))
    return svc->error(SYMHEAP_ERR_PLUGIN,
                      "the hip adaptor needs host services with "
                      "param_define (a newer libsymheap)");
  hip_svc = svc;
  return symheap_params_define(svc, "hip", hip_params,
                               sizeof hip_params / sizeof hip_params[0]);
}

static void hip_plugin_fini(void) {}

SYMHEAP_PLUGIN_ENTRY(hip) = {
    .abi_major = SYMHEAP_PLUGIN_ABI_MAJOR,
    .abi_minor = SYMHEAP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(symheap_plugin_t),
    .name = "hip",
    .init = hip_plugin_init,
    .fini = hip_plugin_fini,
    .device = &hip_ops,
};

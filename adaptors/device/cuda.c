/* The CUDA device adaptor, over the driver API.
 *
 * libcuda is loaded with dlopen (SYMHEAP_CUDA_LIBRARY, default libcuda.so.1)
 * and every entry point is resolved through cuGetProcAddress at a pinned
 * version, so libsymheap has no link-time dependency on CUDA and keeps the
 * ABI it was written for on newer drivers.  Memory is VMM memory (cuMemCreate)
 * exportable as POSIX file descriptors; the core passes the descriptors
 * between local ranks and builds the flat VA with the map operations below.
 * Memory that is not VMM (plain cuMemAlloc / cudaMalloc) falls back to legacy
 * IPC handles.  Multicast is here too, and is refused whenever
 * SYMHEAP_DISABLE_MULTICAST=1 or NCCL_NVLS_ENABLE=0 (the core checks first;
 * mc_create checks again, because creating a multicast object on a shared
 * machine can take its GPUs out of service). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/config.h"
#include "cuda.h"
#include "cuda_api.h"

typedef struct {
#define X(name, ver, params) cu_result_t (*name) params;
  CU_FUNCS(X) CU_MC_FUNCS(X)
#undef X
  int driver_version;
  int have_mc;
} cu_lib_t;

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static cu_lib_t lib;
static void *lib_handle;
static char lib_path[256];
static char lib_error[512];

/* Load and resolve once per process.  A failed load is retried only for
 * another path (tests point SYMHEAP_CUDA_LIBRARY elsewhere). */
static symheap_result_t load_locked(const char *path) {
  if (lib_handle && strcmp(path, lib_path) == 0)
    return SYMHEAP_SUCCESS;
  if (lib_handle)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "the CUDA driver %s is already loaded in this "
                          "process; SYMHEAP_CUDA_LIBRARY=%s cannot replace it",
                          lib_path, path);
  if (lib_error[0] && strcmp(path, lib_path) == 0)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  snprintf(lib_path, sizeof lib_path, "%s", path);
  cu_lib_t l;
  memset(&l, 0, sizeof l);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(lib_error, sizeof lib_error, "cannot load the CUDA driver %s: %s",
             path, dlerror());
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  }
  cu_get_proc_address_t gpa =
      (cu_get_proc_address_t)dlsym(h, "cuGetProcAddress_v2");
  if (!gpa) {
    snprintf(lib_error, sizeof lib_error,
             "the CUDA driver %s has no cuGetProcAddress_v2: it is older than "
             "CUDA 12.0, which symheap needs",
             path);
    dlclose(h);
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  }
  int status = 0;
  const char *missing = NULL;
#define X(name, ver, params)                                                   \
  if (!missing && (gpa(#name, (void **)&l.name, ver, 0, &status) != CU_OK ||   \
                   !l.name))                                                   \
    missing = #name;
  CU_FUNCS(X)
#undef X
  if (!missing && l.cuDriverGetVersion(&l.driver_version) != CU_OK)
    missing = "cuDriverGetVersion";
  if (missing) {
    snprintf(lib_error, sizeof lib_error,
             "the CUDA driver %s does not provide %s", path, missing);
    dlclose(h);
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  }
  if (l.driver_version < 12000) {
    snprintf(lib_error, sizeof lib_error,
             "the CUDA driver %s is version %d.%d; symheap needs 12.0 or newer",
             path, l.driver_version / 1000, l.driver_version % 1000 / 10);
    dlclose(h);
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  }
  l.have_mc = l.driver_version >= 12010;
#define X(name, ver, params)                                                   \
  if (l.have_mc && (gpa(#name, (void **)&l.name, ver, 0, &status) != CU_OK ||  \
                    !l.name))                                                  \
    l.have_mc = 0;
  CU_MC_FUNCS(X)
#undef X
  cu_result_t e = l.cuInit(0);
  if (e != CU_OK) {
    const char *name = "?";
    l.cuGetErrorName(e, &name);
    snprintf(lib_error, sizeof lib_error, "cuInit failed: %s (%d)", name, e);
    dlclose(h);
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  }
  lib = l;
  lib_handle = h;
  lib_error[0] = '\0';
  return SYMHEAP_SUCCESS;
}

static symheap_result_t load(void) {
  const char *path;
  symheap_result_t r = symheap__cfg_string("SYMHEAP_CUDA_LIBRARY", &path);
  if (r != SYMHEAP_SUCCESS)
    return r;
  pthread_mutex_lock(&lib_lock);
  r = load_locked(path);
  pthread_mutex_unlock(&lib_lock);
  return r;
}

/* Turn a driver error into ours, with the driver's own words. */
static symheap_result_t cu_fail(const char *fn, cu_result_t e) {
  const char *name = "?", *text = "?";
  if (lib.cuGetErrorName)
    lib.cuGetErrorName(e, &name);
  if (lib.cuGetErrorString)
    lib.cuGetErrorString(e, &text);
  symheap_result_t r = e == CU_ERR_OUT_OF_MEMORY ? SYMHEAP_ERR_NO_MEMORY
                       : e == CU_ERR_NOT_SUPPORTED ? SYMHEAP_ERR_UNSUPPORTED
                                                   : SYMHEAP_ERR_DEVICE;
  return symheap__error(r, "%s failed: %s (%d): %s", fn, name, e, text);
}

#define CU_TRY(call)                                                           \
  do {                                                                         \
    cu_result_t e_ = lib.call;                                                 \
    if (e_ != CU_OK)                                                           \
      return cu_fail(#call, e_);                                               \
  } while (0)

/* One legacy-IPC mapping handed out by ipc_open. */
typedef struct ipc_rec {
  struct ipc_rec *next;
  char *ptr;                 /* what ipc_open returned */
  cu_deviceptr_t local_base; /* the opened allocation here */
  int32_t pid;               /* owner process */
  uint64_t remote_base;      /* the allocation in the owner */
  int opened;                /* 0: same process, nothing to close */
} ipc_rec_t;

typedef struct {
  cu_device_t dev;
  int ordinal;
  cu_context_t ctx;
  int retained; /* we retained the primary context */
  int local_nranks;
  ipc_rec_t *ipc;
} cuda_t;

static symheap_result_t bind(cuda_t *c) {
  CU_TRY(cuCtxSetCurrent(c->ctx));
  return SYMHEAP_SUCCESS;
}

static int cuda_available(const symheap_host_services_t *svc, char *why,
                          size_t len) {
  (void)svc;
  char saved[1024];
  snprintf(saved, sizeof saved, "%s", symheap__error_peek());
  int ok = 0, n = 0, vmm = 0, fd = 0;
  cu_device_t d;
  if (load() != SYMHEAP_SUCCESS)
    snprintf(why, len, "%s", symheap__error_peek());
  else if (lib.cuDeviceGetCount(&n) != CU_OK || n == 0)
    snprintf(why, len, "the CUDA driver sees no device");
  else if (lib.cuDeviceGet(&d, 0) != CU_OK ||
           lib.cuDeviceGetAttribute(&vmm, CU_ATTR_VMM_SUPPORTED, d) != CU_OK ||
           !vmm)
    snprintf(why, len, "CUDA device 0 does not support virtual memory "
                       "management");
  else if (lib.cuDeviceGetAttribute(&fd, CU_ATTR_POSIX_FD_SUPPORTED, d) !=
               CU_OK ||
           !fd)
    snprintf(why, len, "CUDA device 0 cannot export POSIX file descriptors");
  else
    ok = 1;
  symheap__error(SYMHEAP_SUCCESS, "%s", saved);
  return ok;
}

static symheap_result_t pick_device(const symheap_device_init_t *args,
                                    cuda_t *c) {
  cu_context_t cur = NULL;
  CU_TRY(cuCtxGetCurrent(&cur));
  if (cur) {
    /* The caller already chose (cudaSetDevice, a framework): follow it. */
    CU_TRY(cuCtxGetDevice(&c->dev));
    c->ctx = cur;
    for (int i = 0, n = 0; lib.cuDeviceGetCount(&n) == CU_OK && i < n; i++) {
      cu_device_t d;
      if (lib.cuDeviceGet(&d, i) == CU_OK && d == c->dev)
        c->ordinal = i;
    }
    return SYMHEAP_SUCCESS;
  }
  int n = 0;
  CU_TRY(cuDeviceGetCount(&n));
  if (n == 0)
    return symheap__error(SYMHEAP_ERR_DEVICE, "the CUDA driver sees no device");
  long want = -1;
  if (symheap__cfg_raw("SYMHEAP_CUDA_DEVICE")) {
    symheap_result_t r = symheap__cfg_int("SYMHEAP_CUDA_DEVICE", &want);
    if (r != SYMHEAP_SUCCESS)
      return r;
    if (want >= n)
      return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                            "SYMHEAP_CUDA_DEVICE=%ld but only %d device(s) are "
                            "visible",
                            want, n);
  } else {
    want = args->local_rank % n;
  }
  c->ordinal = (int)want;
  CU_TRY(cuDeviceGet(&c->dev, c->ordinal));
  CU_TRY(cuDevicePrimaryCtxRetain(&c->ctx, c->dev));
  c->retained = 1;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_init(const symheap_host_services_t *svc,
                                  const symheap_device_init_t *args,
                                  void **ctx) {
  symheap_result_t r = load();
  if (r != SYMHEAP_SUCCESS)
    return r;
  cuda_t *c = calloc(1, sizeof *c);
  if (!c)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "cuda adaptor: out of memory");
  c->local_nranks = args->local_nranks > 0 ? args->local_nranks : 1;
  r = pick_device(args, c);
  if (r == SYMHEAP_SUCCESS)
    r = bind(c);
  if (r != SYMHEAP_SUCCESS) {
    if (c->retained)
      lib.cuDevicePrimaryCtxRelease(c->dev);
    free(c);
    return r;
  }
  svc->log(SYMHEAP_LOG_INFO, "cuda adaptor: rank %d uses device %d (driver %d)",
           args->rank, c->ordinal, lib.driver_version);
  *ctx = c;
  return SYMHEAP_SUCCESS;
}

static void cuda_fini(void *ctx) {
  cuda_t *c = ctx;
  while (c->ipc) {
    ipc_rec_t *e = c->ipc;
    c->ipc = e->next;
    if (e->opened)
      lib.cuIpcCloseMemHandle(e->local_base);
    free(e);
  }
  if (c->retained)
    lib.cuDevicePrimaryCtxRelease(c->dev);
  free(c);
}

static cu_mem_prop_t mem_prop(const cuda_t *c) {
  cu_mem_prop_t p;
  memset(&p, 0, sizeof p);
  p.type = CU_ALLOC_TYPE_PINNED;
  p.requested_handle_types = CU_MEM_HANDLE_TYPE_POSIX_FD;
  p.location.type = CU_LOCATION_DEVICE;
  p.location.id = c->dev;
  return p;
}

static symheap_result_t cuda_query(void *ctx, symheap_device_caps_t *caps) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  cu_mem_prop_t p = mem_prop(c);
  CU_TRY(cuMemGetAllocationGranularity(&caps->granularity, &p,
                                       CU_GRANULARITY_MINIMUM));
  CU_TRY(cuMemGetAllocationGranularity(&caps->recommended_granularity, &p,
                                       CU_GRANULARITY_RECOMMENDED));
  char name[48] = "";
  CU_TRY(cuDeviceGetName(name, (int)sizeof name, c->dev));
  snprintf(caps->device_name, sizeof caps->device_name, "%s (device %d)", name,
           c->ordinal);
  caps->caps = SYMHEAP_CAP_VMM | SYMHEAP_CAP_IPC;
  caps->handle_kinds = 1u << SYMHEAP_HANDLE_FD;
  caps->multicast_granularity = 0;
  int mc = 0;
  if (lib.have_mc &&
      lib.cuDeviceGetAttribute(&mc, CU_ATTR_MULTICAST_SUPPORTED, c->dev) ==
          CU_OK &&
      mc) {
    /* Only a query: no multicast object is created here. */
    cu_mc_prop_t mp = {(unsigned)c->local_nranks, caps->granularity,
                       CU_MEM_HANDLE_TYPE_POSIX_FD, 0};
    size_t g = 0;
    if (lib.cuMulticastGetGranularity(&g, &mp, CU_GRANULARITY_RECOMMENDED) ==
            CU_OK &&
        g) {
      caps->caps |= SYMHEAP_CAP_MULTICAST;
      caps->multicast_granularity = g;
    }
  }
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mem_create(void *ctx, size_t size,
                                        symheap_mem_handle_t *h) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  cu_mem_prop_t p = mem_prop(c);
  cu_mem_handle_t mh = 0;
  CU_TRY(cuMemCreate(&mh, size, &p, 0));
  *h = mh;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mem_release(void *ctx, symheap_mem_handle_t h) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  CU_TRY(cuMemRelease(h));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mem_export(void *ctx, symheap_mem_handle_t h,
                                        uint32_t kind,
                                        symheap_shareable_t *out) {
  cuda_t *c = ctx;
  if (kind != SYMHEAP_HANDLE_FD)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "the cuda adaptor exports file descriptors only");
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  int fd = -1;
  cu_result_t e = lib.cuMemExportToShareableHandle(&fd, h,
                                                   CU_MEM_HANDLE_TYPE_POSIX_FD, 0);
  if (e != CU_OK)
    return symheap__error_context(cu_fail("cuMemExportToShareableHandle", e),
                                  "exporting memory (was it created with POSIX "
                                  "file-descriptor handles?)");
  memset(out, 0, sizeof *out);
  out->kind = SYMHEAP_HANDLE_FD;
  out->fd = fd;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mem_import(void *ctx, const symheap_shareable_t *in,
                                        symheap_mem_handle_t *h) {
  cuda_t *c = ctx;
  if (in->kind != SYMHEAP_HANDLE_FD || in->fd < 0) {
    if (in->kind == SYMHEAP_HANDLE_FD && in->fd >= 0)
      close(in->fd);
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "the cuda adaptor imports file descriptors only");
  }
  symheap_result_t r = bind(c);
  cu_mem_handle_t mh = 0;
  if (r == SYMHEAP_SUCCESS) {
    cu_result_t e = lib.cuMemImportFromShareableHandle(
        &mh, (void *)(uintptr_t)in->fd, CU_MEM_HANDLE_TYPE_POSIX_FD);
    if (e != CU_OK)
      r = cu_fail("cuMemImportFromShareableHandle", e);
  }
  close(in->fd); /* the driver keeps its own reference */
  if (r == SYMHEAP_SUCCESS)
    *h = mh;
  return r;
}

static symheap_result_t cuda_va_reserve(void *ctx, size_t size, size_t align,
                                        void **va) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  cu_deviceptr_t p = 0;
  CU_TRY(cuMemAddressReserve(&p, size, align, 0, 0));
  *va = (void *)(uintptr_t)p;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_va_free(void *ctx, void *va, size_t size) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  CU_TRY(cuMemAddressFree((cu_deviceptr_t)(uintptr_t)va, size));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_map(void *ctx, void *va, size_t size,
                                 symheap_mem_handle_t h, size_t offset) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  CU_TRY(cuMemMap((cu_deviceptr_t)(uintptr_t)va, size, offset, h, 0));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_unmap(void *ctx, void *va, size_t size) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  CU_TRY(cuMemUnmap((cu_deviceptr_t)(uintptr_t)va, size));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_set_access(void *ctx, void *va, size_t size) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  cu_access_desc_t d = {{CU_LOCATION_DEVICE, c->dev},
                        CU_MEM_ACCESS_READWRITE};
  CU_TRY(cuMemSetAccess((cu_deviceptr_t)(uintptr_t)va, size, &d, 1));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mem_retain(void *ctx, void *ptr,
                                        symheap_mem_handle_t *h,
                                        void **alloc_base, size_t *alloc_size) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  cu_mem_handle_t mh = 0;
  if (lib.cuMemRetainAllocationHandle(&mh, ptr) != CU_OK)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "%p is not VMM memory", ptr);
  cu_deviceptr_t base = 0;
  size_t size = 0;
  cu_result_t e = lib.cuMemGetAddressRange(&base, &size,
                                           (cu_deviceptr_t)(uintptr_t)ptr);
  if (e != CU_OK) {
    lib.cuMemRelease(mh);
    return cu_fail("cuMemGetAddressRange", e);
  }
  *h = mh;
  *alloc_base = (void *)(uintptr_t)base;
  *alloc_size = size;
  return SYMHEAP_SUCCESS;
}

/* What a legacy IPC registration sends: enough to open the allocation in
 * another process, or to use the pointer directly in this one (the driver
 * refuses to open a process's own handles, and thread-ranks need none). */
typedef struct {
  uint32_t magic;
  int32_t pid;
  int32_t ordinal;
  uint32_t reserved;
  uint64_t base;   /* the allocation in the owner */
  uint64_t offset; /* of the window inside it */
  cu_ipc_mem_handle_t handle;
} ipc_blob_t;
#define IPC_MAGIC 0x53484950u /* "SHIP" */
_Static_assert(sizeof(ipc_blob_t) <= SYMHEAP_SHAREABLE_MAX_BYTES,
               "IPC description must fit a shareable handle");

static symheap_result_t cuda_ipc_get(void *ctx, void *ptr, size_t size,
                                     symheap_shareable_t *out) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  cu_deviceptr_t base = 0;
  size_t asz = 0;
  if (lib.cuMemGetAddressRange(&base, &asz, (cu_deviceptr_t)(uintptr_t)ptr) !=
      CU_OK)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%p is not CUDA device memory (allocate it with "
                          "symheap_mem_alloc, cuMemCreate or cudaMalloc)",
                          ptr);
  uint64_t off = (uint64_t)(uintptr_t)ptr - base;
  if (off + size > asz)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "[%p, +%zu) extends past its CUDA allocation of %zu "
                          "bytes",
                          ptr, size, asz);
  ipc_blob_t b;
  memset(&b, 0, sizeof b);
  b.magic = IPC_MAGIC;
  b.pid = (int32_t)getpid();
  b.ordinal = c->ordinal;
  b.base = base;
  b.offset = off;
  CU_TRY(cuIpcGetMemHandle(&b.handle, base));
  memset(out, 0, sizeof *out);
  out->kind = SYMHEAP_HANDLE_BYTES;
  out->fd = -1;
  out->nbytes = sizeof b;
  memcpy(out->bytes, &b, sizeof b);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t enable_peer(cuda_t *c, int ordinal) {
  cu_device_t peer;
  CU_TRY(cuDeviceGet(&peer, ordinal));
  if (peer == c->dev)
    return SYMHEAP_SUCCESS;
  int can = 0;
  CU_TRY(cuDeviceCanAccessPeer(&can, c->dev, peer));
  if (!can)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "device %d cannot access device %d's memory", c->ordinal,
                          ordinal);
  cu_context_t pctx;
  CU_TRY(cuDevicePrimaryCtxRetain(&pctx, peer));
  cu_result_t e = lib.cuCtxEnablePeerAccess(pctx, 0);
  lib.cuDevicePrimaryCtxRelease(peer);
  if (e != CU_OK && e != CU_ERR_PEER_ACCESS_ALREADY_ENABLED)
    return cu_fail("cuCtxEnablePeerAccess", e);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_ipc_open(void *ctx, const symheap_shareable_t *in,
                                      void **ptr) {
  cuda_t *c = ctx;
  ipc_blob_t b;
  if (in->kind != SYMHEAP_HANDLE_BYTES || in->nbytes != sizeof b)
    return symheap__error(SYMHEAP_ERR_REMOTE, "malformed CUDA IPC handle");
  memcpy(&b, in->bytes, sizeof b);
  if (b.magic != IPC_MAGIC)
    return symheap__error(SYMHEAP_ERR_REMOTE, "malformed CUDA IPC handle");
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  ipc_rec_t *rec = calloc(1, sizeof *rec);
  if (!rec)
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "cuda ipc: out of memory");
  rec->pid = b.pid;
  rec->remote_base = b.base;
  if (b.pid == (int32_t)getpid()) {
    r = enable_peer(c, b.ordinal);
    rec->local_base = b.base;
  } else {
    /* An allocation opened once serves every window over it. */
    for (ipc_rec_t *e = c->ipc; e; e = e->next)
      if (e->opened && e->pid == b.pid && e->remote_base == b.base) {
        rec->local_base = e->local_base;
        break;
      }
    if (!rec->local_base) {
      cu_result_t e = lib.cuIpcOpenMemHandle(&rec->local_base, b.handle,
                                             CU_IPC_LAZY_ENABLE_PEER_ACCESS);
      if (e != CU_OK)
        r = cu_fail("cuIpcOpenMemHandle", e);
    }
    rec->opened = 1;
  }
  if (r != SYMHEAP_SUCCESS) {
    free(rec);
    return r;
  }
  rec->ptr = (char *)(uintptr_t)(rec->local_base + b.offset);
  rec->next = c->ipc;
  c->ipc = rec;
  *ptr = rec->ptr;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_ipc_close(void *ctx, void *ptr) {
  cuda_t *c = ctx;
  ipc_rec_t **pp = &c->ipc;
  while (*pp && (*pp)->ptr != ptr)
    pp = &(*pp)->next;
  if (!*pp)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "cuda ipc: %p was not opened here", ptr);
  ipc_rec_t *rec = *pp;
  *pp = rec->next;
  int shared = 0;
  for (ipc_rec_t *e = c->ipc; e; e = e->next)
    shared |= e->opened && e->local_base == rec->local_base;
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (rec->opened && !shared) {
    r = bind(c);
    cu_result_t e = lib.cuIpcCloseMemHandle(rec->local_base);
    if (r == SYMHEAP_SUCCESS && e != CU_OK)
      r = cu_fail("cuIpcCloseMemHandle", e);
  }
  free(rec);
  return r;
}

/* Multicast.  The core never gets here when multicast is disabled; this
 * second check is for safety on shared machines, not for control flow. */
static symheap_result_t mc_allowed(void) {
  const char *off = symheap__cfg_raw("SYMHEAP_DISABLE_MULTICAST");
  const char *nvls = symheap__cfg_raw("NCCL_NVLS_ENABLE");
  if ((off && strcmp(off, "0") != 0) || (nvls && strcmp(nvls, "0") == 0))
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "multicast is disabled (SYMHEAP_DISABLE_MULTICAST / "
                          "NCCL_NVLS_ENABLE)");
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mc_create(void *ctx, size_t size, int ndevices,
                                       symheap_mem_handle_t *mc) {
  cuda_t *c = ctx;
  symheap_result_t r = mc_allowed();
  if (r == SYMHEAP_SUCCESS)
    r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  cu_mc_prop_t p = {(unsigned)ndevices, size, CU_MEM_HANDLE_TYPE_POSIX_FD, 0};
  cu_mem_handle_t h = 0;
  CU_TRY(cuMulticastCreate(&h, &p));
  *mc = h;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mc_add_device(void *ctx, symheap_mem_handle_t mc) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  CU_TRY(cuMulticastAddDevice(mc, c->dev));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mc_bind(void *ctx, symheap_mem_handle_t mc,
                                     size_t mc_offset, symheap_mem_handle_t mem,
                                     size_t mem_offset, size_t size) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  CU_TRY(cuMulticastBindMem(mc, mc_offset, mem, mem_offset, size, 0));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mc_unbind(void *ctx, symheap_mem_handle_t mc,
                                       size_t mc_offset, size_t size) {
  cuda_t *c = ctx;
  symheap_result_t r = bind(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  CU_TRY(cuMulticastUnbind(mc, c->dev, mc_offset, size));
  return SYMHEAP_SUCCESS;
}

const symheap_device_ops symheap__cuda_device_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
    .name = "cuda",
    .available = cuda_available,
    .init = cuda_init,
    .fini = cuda_fini,
    .query = cuda_query,
    .mem_create = cuda_mem_create,
    .mem_release = cuda_mem_release,
    .mem_export = cuda_mem_export,
    .mem_import = cuda_mem_import,
    .va_reserve = cuda_va_reserve,
    .va_free = cuda_va_free,
    .map = cuda_map,
    .unmap = cuda_unmap,
    .set_access = cuda_set_access,
    .mem_retain = cuda_mem_retain,
    .mc_create = cuda_mc_create,
    .mc_add_device = cuda_mc_add_device,
    .mc_bind = cuda_mc_bind,
    .mc_unbind = cuda_mc_unbind,
    .ipc_get = cuda_ipc_get,
    .ipc_open = cuda_ipc_open,
    .ipc_close = cuda_ipc_close,
};

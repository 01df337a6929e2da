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
 * machine can take its GPUs out of service).
 *
 * Public headers and the host services only, like any vendor's adaptor:
 * with ipc_table.[ch] and adaptors/common's cuda_api.h, cuda_driver.[ch]
 * and dl.[ch] beside it, it builds out of the tree as a plugin
 * (-DSYMHEAP_PLUGIN_BUILD). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_api.h"
#include "cuda_driver.h"
#include "ipc_table.h"

typedef struct {
  cu_device_t dev;
  int ordinal;
  cu_context_t ctx;
  int retained; /* we retained the primary context */
  int local_nranks;
  symheap_ipc_rec_t *ipc; /* pointers ipc_open handed out */
  cu_stream_t copy;       /* copy_to_host's stream (the proxy thread's) */
} cuda_t;

/* Every operation runs in the rank's context: thread-ranks share the
 * process, and the caller may have made another context current since. */
static symheap_result_t bind(cuda_t *c) {
  CU_TRY(cuCtxSetCurrent(c->ctx));
  return SYMHEAP_SUCCESS;
}
#define BIND(c) CU_TRY(cuCtxSetCurrent((c)->ctx))

static int cuda_available(const symheap_host_services_t *svc, char *why,
                          size_t len) {
  (void)svc;
  char saved[1024];
  snprintf(saved, sizeof saved, "%s", svc->error_message());
  int ok = 0, n = 0, vmm = 0, fd = 0;
  cu_device_t d;
  if (symheap_cu_load() != SYMHEAP_SUCCESS)
    snprintf(why, len, "%s", svc->error_message());
  else if (symheap_cu.cuDeviceGetCount(&n) != CU_OK || n == 0)
    snprintf(why, len, "the CUDA driver sees no device");
  else if (symheap_cu.cuDeviceGet(&d, 0) != CU_OK ||
           symheap_cu.cuDeviceGetAttribute(&vmm, CU_ATTR_VMM_SUPPORTED, d) !=
               CU_OK ||
           !vmm)
    snprintf(why, len,
             "CUDA device 0 does not support virtual memory "
             "management");
  else if (symheap_cu.cuDeviceGetAttribute(&fd, CU_ATTR_POSIX_FD_SUPPORTED,
                                           d) != CU_OK ||
           !fd)
    snprintf(why, len, "CUDA device 0 cannot export POSIX file descriptors");
  else
    ok = 1;
  svc->error(SYMHEAP_SUCCESS, "%s", saved);
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
    for (int i = 0, n = 0; symheap_cu.cuDeviceGetCount(&n) == CU_OK && i < n;
         i++) {
      cu_device_t d;
      if (symheap_cu.cuDeviceGet(&d, i) == CU_OK && d == c->dev)
        c->ordinal = i;
    }
    return SYMHEAP_SUCCESS;
  }
  int n = 0;
  CU_TRY(cuDeviceGetCount(&n));
  if (n == 0)
    return symheap_cu_svc->error(SYMHEAP_ERR_DEVICE,
                                 "the CUDA driver sees no device");
  long want = -1;
  if (symheap_cu_svc->param_is_set("SYMHEAP_CUDA_DEVICE")) {
    symheap_result_t r =
        symheap_cu_svc->param_get_int("SYMHEAP_CUDA_DEVICE", &want);
    if (r != SYMHEAP_SUCCESS)
      return r;
    if (want >= n)
      return symheap_cu_svc->error(
          SYMHEAP_ERR_INVALID_ARG,
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
  symheap_result_t r = symheap_cu_load();
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
      symheap_cu.cuDevicePrimaryCtxRelease(c->dev);
    free(c);
    return r;
  }
  svc->log(SYMHEAP_LOG_INFO, "cuda adaptor: rank %d uses device %d (driver %d)",
           args->rank, c->ordinal, symheap_cu.driver_version);
  *ctx = c;
  return SYMHEAP_SUCCESS;
}

static void ipc_close_base(uint64_t base, void *arg) {
  (void)arg;
  symheap_cu.cuIpcCloseMemHandle((cu_deviceptr_t)base);
}

static void cuda_fini(void *ctx) {
  cuda_t *c = ctx;
  if (c->copy && symheap_cu.cuCtxSetCurrent(c->ctx) == CU_OK)
    symheap_cu.cuStreamDestroy(c->copy);
  symheap_ipc_table_drain(&c->ipc, ipc_close_base, NULL);
  if (c->retained) {
    /* The context we made current may go with our reference: leave no
     * dangling current context behind for the thread's next user. */
    cu_context_t cur = NULL;
    if (symheap_cu.cuCtxGetCurrent(&cur) == CU_OK && cur == c->ctx)
      symheap_cu.cuCtxSetCurrent(NULL);
    symheap_cu.cuDevicePrimaryCtxRelease(c->dev);
  }
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
  BIND(c);
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
  if (symheap_cu.have_mc &&
      symheap_cu.cuDeviceGetAttribute(&mc, CU_ATTR_MULTICAST_SUPPORTED,
                                      c->dev) == CU_OK &&
      mc) {
    /* Only a query: no multicast object is created here. */
    cu_mc_prop_t mp = {(unsigned)c->local_nranks, caps->granularity,
                       CU_MEM_HANDLE_TYPE_POSIX_FD, 0};
    size_t g = 0;
    if (symheap_cu.cuMulticastGetGranularity(
            &g, &mp, CU_GRANULARITY_RECOMMENDED) == CU_OK &&
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
  BIND(c);
  cu_mem_prop_t p = mem_prop(c);
  cu_mem_handle_t mh = 0;
  CU_TRY(cuMemCreate(&mh, size, &p, 0));
  *h = mh;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mem_release(void *ctx, symheap_mem_handle_t h) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMemRelease(h));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mem_export(void *ctx, symheap_mem_handle_t h,
                                        uint32_t kind,
                                        symheap_shareable_t *out) {
  cuda_t *c = ctx;
  if (kind != SYMHEAP_HANDLE_FD)
    return symheap_cu_svc->error(
        SYMHEAP_ERR_UNSUPPORTED,
        "the cuda adaptor exports file descriptors only");
  BIND(c);
  int fd = -1;
  cu_result_t e = symheap_cu.cuMemExportToShareableHandle(
      &fd, h, CU_MEM_HANDLE_TYPE_POSIX_FD, 0);
  if (e != CU_OK)
    return symheap_cu_svc->error_context(
        symheap_cu_fail("cuMemExportToShareableHandle", e),
        "exporting memory (was it created with POSIX "
        "file-descriptor handles?)");
  memset(out, 0, sizeof *out);
  out->kind = SYMHEAP_HANDLE_FD;
  out->fd = fd;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mem_import(void *ctx,
                                        const symheap_shareable_t *in,
                                        symheap_mem_handle_t *h) {
  cuda_t *c = ctx;
  if (in->kind != SYMHEAP_HANDLE_FD || in->fd < 0) {
    if (in->kind == SYMHEAP_HANDLE_FD && in->fd >= 0)
      close(in->fd);
    return symheap_cu_svc->error(
        SYMHEAP_ERR_INVALID_ARG,
        "the cuda adaptor imports file descriptors only");
  }
  symheap_result_t r = bind(c);
  cu_mem_handle_t mh = 0;
  if (r == SYMHEAP_SUCCESS) {
    cu_result_t e = symheap_cu.cuMemImportFromShareableHandle(
        &mh, (void *)(uintptr_t)in->fd, CU_MEM_HANDLE_TYPE_POSIX_FD);
    if (e != CU_OK)
      r = symheap_cu_fail("cuMemImportFromShareableHandle", e);
  }
  close(in->fd); /* the driver keeps its own reference */
  if (r == SYMHEAP_SUCCESS)
    *h = mh;
  return r;
}

static symheap_result_t cuda_va_reserve(void *ctx, size_t size, size_t align,
                                        void **va) {
  cuda_t *c = ctx;
  BIND(c);
  cu_deviceptr_t p = 0;
  CU_TRY(cuMemAddressReserve(&p, size, align, 0, 0));
  *va = (void *)(uintptr_t)p;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_va_free(void *ctx, void *va, size_t size) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMemAddressFree((cu_deviceptr_t)(uintptr_t)va, size));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_map(void *ctx, void *va, size_t size,
                                 symheap_mem_handle_t h, size_t offset) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMemMap((cu_deviceptr_t)(uintptr_t)va, size, offset, h, 0));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_unmap(void *ctx, void *va, size_t size) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMemUnmap((cu_deviceptr_t)(uintptr_t)va, size));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_set_access(void *ctx, void *va, size_t size) {
  cuda_t *c = ctx;
  BIND(c);
  cu_access_desc_t d = {{CU_LOCATION_DEVICE, c->dev}, CU_MEM_ACCESS_READWRITE};
  CU_TRY(cuMemSetAccess((cu_deviceptr_t)(uintptr_t)va, size, &d, 1));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mem_retain(void *ctx, void *ptr,
                                        symheap_mem_handle_t *h,
                                        void **alloc_base, size_t *alloc_size) {
  cuda_t *c = ctx;
  BIND(c);
  cu_mem_handle_t mh = 0;
  if (symheap_cu.cuMemRetainAllocationHandle(&mh, ptr) != CU_OK)
    return symheap_cu_svc->error(SYMHEAP_ERR_UNSUPPORTED,
                                 "%p is not VMM memory", ptr);
  cu_deviceptr_t base = 0;
  size_t size = 0;
  cu_result_t e = symheap_cu.cuMemGetAddressRange(
      &base, &size, (cu_deviceptr_t)(uintptr_t)ptr);
  if (e != CU_OK) {
    symheap_cu.cuMemRelease(mh);
    return symheap_cu_fail("cuMemGetAddressRange", e);
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
  BIND(c);
  cu_deviceptr_t base = 0;
  size_t asz = 0;
  if (symheap_cu.cuMemGetAddressRange(&base, &asz,
                                      (cu_deviceptr_t)(uintptr_t)ptr) != CU_OK)
    return symheap_cu_svc->error(
        SYMHEAP_ERR_INVALID_ARG,
        "%p is not CUDA device memory (allocate it with "
        "symheap_mem_alloc, cuMemCreate or cudaMalloc)",
        ptr);
  uint64_t off = (uint64_t)(uintptr_t)ptr - base;
  if (off + size > asz)
    return symheap_cu_svc->error(
        SYMHEAP_ERR_INVALID_ARG,
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
    return symheap_cu_svc->error(SYMHEAP_ERR_UNSUPPORTED,
                                 "device %d cannot access device %d's memory",
                                 c->ordinal, ordinal);
  cu_context_t pctx;
  CU_TRY(cuDevicePrimaryCtxRetain(&pctx, peer));
  cu_result_t e = symheap_cu.cuCtxEnablePeerAccess(pctx, 0);
  symheap_cu.cuDevicePrimaryCtxRelease(peer);
  if (e != CU_OK && e != CU_ERR_PEER_ACCESS_ALREADY_ENABLED)
    return symheap_cu_fail("cuCtxEnablePeerAccess", e);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_ipc_open(void *ctx, const symheap_shareable_t *in,
                                      void **ptr) {
  cuda_t *c = ctx;
  ipc_blob_t b;
  if (in->kind != SYMHEAP_HANDLE_BYTES || in->nbytes != sizeof b)
    return symheap_cu_svc->error(SYMHEAP_ERR_REMOTE,
                                 "malformed CUDA IPC handle");
  memcpy(&b, in->bytes, sizeof b);
  if (b.magic != IPC_MAGIC)
    return symheap_cu_svc->error(SYMHEAP_ERR_REMOTE,
                                 "malformed CUDA IPC handle");
  BIND(c);
  symheap_result_t r = SYMHEAP_SUCCESS;
  uint64_t base = 0;
  int opened = b.pid != (int32_t)getpid(), fresh = 0;
  if (!opened) {
    r = enable_peer(c, b.ordinal);
    base = b.base;
  } else if (!(base = symheap_ipc_table_opened_base(c->ipc, b.pid, b.base))) {
    /* An allocation opened once serves every window over it. */
    cu_deviceptr_t p = 0;
    cu_result_t e = symheap_cu.cuIpcOpenMemHandle(
        &p, b.handle, CU_IPC_LAZY_ENABLE_PEER_ACCESS);
    if (e != CU_OK)
      r = symheap_cu_fail("cuIpcOpenMemHandle", e);
    base = p;
    fresh = 1;
  }
  char *out = (char *)(uintptr_t)(base + b.offset);
  if (r == SYMHEAP_SUCCESS)
    r = symheap_ipc_table_add(symheap_cu_svc, &c->ipc, b.pid, b.base, base,
                              opened, out);
  if (r != SYMHEAP_SUCCESS && fresh && base)
    symheap_cu.cuIpcCloseMemHandle((cu_deviceptr_t)base);
  if (r == SYMHEAP_SUCCESS)
    *ptr = out;
  return r;
}

static symheap_result_t cuda_ipc_close(void *ctx, void *ptr) {
  cuda_t *c = ctx;
  uint64_t base = 0;
  symheap_result_t r =
      symheap_ipc_table_take(symheap_cu_svc, &c->ipc, ptr, &base, "cuda");
  if (r != SYMHEAP_SUCCESS || !base)
    return r;
  if ((r = bind(c)) != SYMHEAP_SUCCESS)
    return r;
  cu_result_t e = symheap_cu.cuIpcCloseMemHandle((cu_deviceptr_t)base);
  return e == CU_OK ? SYMHEAP_SUCCESS
                    : symheap_cu_fail("cuIpcCloseMemHandle", e);
}

/* Multicast.  The core never gets here when multicast is disabled; this
 * second check is for safety on shared machines, not for control flow. */
static symheap_result_t mc_allowed(void) {
  const symheap_host_services_t *svc = symheap_cu_svc;
  int off = 1;
  long nvls = 1;
  /* A malformed value counts as "disabled": never create by mistake. */
  if (svc->param_get_bool("SYMHEAP_DISABLE_MULTICAST", &off) != SYMHEAP_SUCCESS)
    off = 1;
  if (svc->param_is_set("NCCL_NVLS_ENABLE") &&
      svc->param_get_int("NCCL_NVLS_ENABLE", &nvls) != SYMHEAP_SUCCESS)
    nvls = 0;
  if (off || nvls == 0)
    return symheap_cu_svc->error(
        SYMHEAP_ERR_UNSUPPORTED,
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
  BIND(c);
  CU_TRY(cuMulticastAddDevice(mc, c->dev));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mc_bind(void *ctx, symheap_mem_handle_t mc,
                                     size_t mc_offset, symheap_mem_handle_t mem,
                                     size_t mem_offset, size_t size) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMulticastBindMem(mc, mc_offset, mem, mem_offset, size, 0));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_mc_unbind(void *ctx, symheap_mem_handle_t mc,
                                       size_t mc_offset, size_t size) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMulticastUnbind(mc, c->dev, mc_offset, size));
  return SYMHEAP_SUCCESS;
}

/* On a private stream, so that clearing the pad neither waits for nor
 * delays the caller's work on other streams. */
static symheap_result_t cuda_mem_zero(void *ctx, void *va, size_t size) {
  cuda_t *c = ctx;
  BIND(c);
  cu_stream_t s = NULL;
  CU_TRY(cuStreamCreate(&s, CU_STREAM_FLAG_NON_BLOCKING));
  cu_result_t e =
      symheap_cu.cuMemsetD8Async((cu_deviceptr_t)(uintptr_t)va, 0, size, s);
  const char *fn = "cuMemsetD8Async";
  if (e == CU_OK) {
    e = symheap_cu.cuStreamSynchronize(s);
    fn = "cuStreamSynchronize";
  }
  cu_result_t ed = symheap_cu.cuStreamDestroy(s);
  if (e != CU_OK)
    return symheap_cu_fail(fn, e);
  if (ed != CU_OK)
    return symheap_cu_fail("cuStreamDestroy", ed);
  return SYMHEAP_SUCCESS;
}

/* What the driver lets us see without the caller's stream: a blocking stream
 * of the context capturing (the legacy stream then answers "implicit"), or
 * the per-thread default stream capturing.  A non-blocking stream capturing
 * in relaxed mode is invisible here; in global mode the driver itself fails
 * the VMM calls, and the registration is rolled back. */
static symheap_result_t cuda_capture_check(void *ctx) {
  cuda_t *c = ctx;
  BIND(c);
  int st = CU_CAPTURE_STATUS_NONE;
  cu_result_t e = symheap_cu.cuStreamIsCapturing(CU_STREAM_LEGACY_HANDLE, &st);
  if (e == CU_ERR_STREAM_CAPTURE_IMPLICIT ||
      (e == CU_OK && st != CU_CAPTURE_STATUS_NONE))
    return symheap_cu_svc->error(
        SYMHEAP_ERR_UNSUPPORTED,
        "a stream of device %d is capturing a CUDA graph: "
        "registration, deregistration and allocation map or "
        "unmap memory and cannot be captured; do them before "
        "cudaStreamBeginCapture or after cudaStreamEndCapture",
        c->ordinal);
  if (e != CU_OK)
    return symheap_cu_fail("cuStreamIsCapturing", e);
  CU_TRY(cuStreamIsCapturing(CU_STREAM_PER_THREAD_HANDLE, &st));
  if (st != CU_CAPTURE_STATUS_NONE)
    return symheap_cu_svc->error(
        SYMHEAP_ERR_UNSUPPORTED,
        "the per-thread default stream of device %d is "
        "capturing a CUDA graph: registration, "
        "deregistration and allocation cannot be captured",
        c->ordinal);
  return SYMHEAP_SUCCESS;
}

/* For RDMA registration (ibv_reg_dmabuf_mr): the driver exports whole host
 * pages, so the dma-buf starts at the page holding ptr. */
static symheap_result_t cuda_dmabuf_export(void *ctx, void *ptr, size_t size,
                                           int *fd, uint64_t *offset) {
  cuda_t *c = ctx;
  BIND(c);
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)ptr & ~(page - 1);
  uintptr_t hi = ((uintptr_t)ptr + size + page - 1) & ~(page - 1);
  int out = -1;
  CU_TRY(cuMemGetHandleForAddressRange(&out, (cu_deviceptr_t)lo, hi - lo,
                                       CU_RANGE_DMA_BUF_FD, 0));
  *fd = out;
  *offset = (uintptr_t)ptr - lo;
  return SYMHEAP_SUCCESS;
}

/* The device proxy's ring and staging (docs/device-api.md): page-locked,
 * mapped into the device, usable from every context. */
static symheap_result_t cuda_host_alloc(void *ctx, size_t size, void **host,
                                        void **dev) {
  cuda_t *c = ctx;
  BIND(c);
  void *p = NULL;
  CU_TRY(cuMemHostAlloc(&p, size,
                        CU_HOSTALLOC_PORTABLE | CU_HOSTALLOC_DEVICEMAP));
  cu_deviceptr_t d = 0;
  cu_result_t e = symheap_cu.cuMemHostGetDevicePointer(&d, p, 0);
  if (e != CU_OK) {
    symheap_cu.cuMemFreeHost(p);
    return symheap_cu_fail("cuMemHostGetDevicePointer", e);
  }
  memset(p, 0, size);
  *host = p;
  *dev = (void *)(uintptr_t)d;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t cuda_host_free(void *ctx, void *host) {
  cuda_t *c = ctx;
  BIND(c);
  CU_TRY(cuMemFreeHost(host));
  return SYMHEAP_SUCCESS;
}

/* The copies' stream, made at first use.  The proxy thread and the net
 * floor's staging (progress thread, waits) may both be first: one stream
 * wins, the other is destroyed. */
static symheap_result_t copy_stream(cuda_t *c) {
  if (__atomic_load_n(&c->copy, __ATOMIC_ACQUIRE))
    return SYMHEAP_SUCCESS;
  cu_stream_t s = NULL, none = NULL;
  CU_TRY(cuStreamCreate(&s, CU_STREAM_FLAG_NON_BLOCKING));
  if (!__atomic_compare_exchange_n(&c->copy, &none, s, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    (void)symheap_cu.cuStreamDestroy(s);
  return SYMHEAP_SUCCESS;
}

/* On a non-blocking stream of its own: a copy on the legacy stream would
 * wait for the kernel that is waiting for this very copy's descriptor. */
static symheap_result_t cuda_copy_to_host(void *ctx, void *dst,
                                          const void *src, size_t size) {
  cuda_t *c = ctx;
  BIND(c);
  symheap_result_t r = copy_stream(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  CU_TRY(cuMemcpyDtoHAsync(dst, (cu_deviceptr_t)(uintptr_t)src, size,
                           c->copy));
  CU_TRY(cuStreamSynchronize(c->copy));
  return SYMHEAP_SUCCESS;
}

/* Landing staged data (the net floor's staging): the same stream as
 * copy_to_host, for the same reason. */
static symheap_result_t cuda_copy_from_host(void *ctx, void *dst,
                                            const void *src, size_t size) {
  cuda_t *c = ctx;
  BIND(c);
  symheap_result_t r = copy_stream(c);
  if (r != SYMHEAP_SUCCESS)
    return r;
  CU_TRY(cuMemcpyHtoDAsync((cu_deviceptr_t)(uintptr_t)dst, src, size,
                           c->copy));
  CU_TRY(cuStreamSynchronize(c->copy));
  return SYMHEAP_SUCCESS;
}

static const symheap_device_ops cuda_ops = {
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
    .mem_zero = cuda_mem_zero,
    .capture_check = cuda_capture_check,
    .dmabuf_export = cuda_dmabuf_export,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .copy_to_host = cuda_copy_to_host,
    .copy_from_host = cuda_copy_from_host,
};

static const symheap_param_t cuda_params[] = {
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_CUDA_LIBRARY",
     "libcuda.so.1", 0, 0, NULL,
     "the CUDA driver library the cuda adaptor loads with dlopen (a name "
     "searched the usual way, or a path)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_INT, "SYMHEAP_CUDA_DEVICE", NULL, 0,
     1023, NULL,
     "CUDA device ordinal for ranks whose thread has no current context; "
     "unset: local rank modulo the device count"},
    /* Read by libsymheap_cuda.so (kernels/), declared here with the rest of
     * CUDA's variables so that symheap-info -e lists them. */
    {sizeof(symheap_param_t), SYMHEAP_PARAM_BOOL, "SYMHEAP_CUDA_ZERO_SM", "0",
     0, 0, NULL,
     "read by libsymheap_cuda.so: 1 makes every all-gather and broadcast "
     "use the copy engines only (no SM), as the per-call flag "
     "SYMHEAP_CUDA_ZERO_SM does"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_INT, "SYMHEAP_CUDA_CE_BYTES",
     "67108864", 0, 1L << 40, NULL,
     "read by libsymheap_cuda.so: SYMHEAP_ALGO_AUTO all-reduces of at least "
     "this many bytes as reduce-scatter by SM, then all-gather by the copy "
     "engines (where no tuning table has a row for the size)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_INT, "SYMHEAP_CUDA_PIPE_CHUNK",
     "0", 0, 1L << 40, NULL,
     "read by libsymheap_cuda.so: bytes per chunk of the pipelined rs+ce "
     "all-reduce (rs_ce_pipe); 0: an eighth of the buffer, 8 to 32 MiB"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_TUNING_FILE",
     NULL, 0, 0, NULL,
     "read by libsymheap_cuda.so: the tuning table SYMHEAP_ALGO_AUTO "
     "chooses from (docs/tuning.md), instead of "
     "<libdir>/../share/symheap/tuning/<gpu>.tsv; 'none': no table, the "
     "built-in thresholds; a bad or missing named file fails AUTO calls, "
     "naming the line"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE, "SYMHEAP_ALL_REDUCE_ALGO",
     "auto", 0, 0,
     "auto|one_shot|two_shot|rs_ce|one_shot_push|two_shot_push|rs_ce_pipe|"
     "ll128",
     "read by libsymheap_cuda.so: the algorithm SYMHEAP_ALGO_AUTO all-reduces "
     "take (auto: the tuning table, else the thresholds); where it cannot "
     "run a call (one_shot in place above the LL capacity, rs_ce or "
     "rs_ce_pipe (rs_ce in chunks, the copies of one under the reduction of "
     "the next) without stream memory operations, the push ones at other "
     "than 2, 4 or 8 ranks or above what their staging holds), two_shot"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE,
     "SYMHEAP_REDUCE_SCATTER_ALGO", "auto", 0, 0, "auto|one_shot|two_shot",
     "read by libsymheap_cuda.so: the algorithm SYMHEAP_ALGO_AUTO "
     "reduce-scatters take (one_shot above the LL capacity: two_shot)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE, "SYMHEAP_ALL_GATHER_ALGO",
     "auto", 0, 0, "auto|sm|zero_sm",
     "read by libsymheap_cuda.so: sm (kernel) or zero_sm (copy engines) for "
     "all-gathers without the SYMHEAP_CUDA_ZERO_SM flag (auto: the tuning "
     "table, else sm)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE, "SYMHEAP_BROADCAST_ALGO",
     "auto", 0, 0, "auto|sm|zero_sm|scatter|scatter_pipe|ce_pipe",
     "read by libsymheap_cuda.so: sm (kernel: every rank reads root's "
     "buffer), zero_sm (copy engines) or scatter (kernel: each rank pushes "
     "its part of root's buffer to every rank) or scatter_pipe (kernel: root "
     "pushes each rank its part in steps, which it forwards to the others "
     "as they land) or ce_pipe (the same by the copy engines, no SM) for "
     "broadcasts without the SYMHEAP_CUDA_ZERO_SM flag "
     "(auto: the tuning table, else sm)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE, "SYMHEAP_ALL_TO_ALL_ALGO",
     "auto", 0, 0, "auto|sm|zero_sm",
     "read by libsymheap_cuda.so: sm (kernel: stores into the peers' "
     "outputs) or zero_sm (a copy-engine copy per peer, ordered by stream "
     "memory operations) for all-to-alls (not all-to-all-v; auto: the "
     "tuning table, else sm)"},
};

static symheap_result_t cuda_plugin_init(const symheap_host_services_t *svc) {
  if (!SYMHEAP_HAS_MEMBER(svc, symheap_host_services_t, now_ns))
    return svc->error(SYMHEAP_ERR_PLUGIN,
                      "the cuda adaptor needs host services with "
                      "param_define (a newer libsymheap)");
  symheap_cu_svc = svc;
  return symheap_params_define(svc, "cuda", cuda_params,
                               sizeof cuda_params / sizeof cuda_params[0]);
}

/* The driver stays loaded: contexts of other libraries may use it. */
static void cuda_plugin_fini(void) {}

SYMHEAP_PLUGIN_ENTRY(cuda) = {
    .abi_major = SYMHEAP_PLUGIN_ABI_MAJOR,
    .abi_minor = SYMHEAP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(symheap_plugin_t),
    .name = "cuda",
    .init = cuda_plugin_init,
    .fini = cuda_plugin_fini,
    .device = &cuda_ops,
};

/* The cuda adaptor's legacy IPC fallback (cuda_adaptor.h): memory that is
 * not VMM (plain cuMemAlloc / cudaMalloc) travels as CUDA IPC handles,
 * opened once per allocation in another process and used as it is in
 * this one. */
#include <string.h>
#include <unistd.h>

#include "cuda_adaptor.h"

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

symheap_result_t cuda_ipc_get(void *ctx, void *ptr, size_t size,
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

symheap_result_t cuda_ipc_open(void *ctx, const symheap_shareable_t *in,
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

symheap_result_t cuda_ipc_close(void *ctx, void *ptr) {
  cuda_t *c = ctx;
  uint64_t base = 0;
  symheap_result_t r =
      symheap_ipc_table_take(symheap_cu_svc, &c->ipc, ptr, &base, "cuda");
  if (r != SYMHEAP_SUCCESS || !base)
    return r;
  if ((r = cuda_bind(c)) != SYMHEAP_SUCCESS)
    return r;
  cu_result_t e = symheap_cu.cuIpcCloseMemHandle((cu_deviceptr_t)base);
  return e == CU_OK ? SYMHEAP_SUCCESS
                    : symheap_cu_fail("cuIpcCloseMemHandle", e);
}

static void close_base(uint64_t base, void *arg) {
  (void)arg;
  symheap_cu.cuIpcCloseMemHandle((cu_deviceptr_t)base);
}

void cuda_ipc_close_all(cuda_t *c) {
  symheap_ipc_table_drain(&c->ipc, close_base, NULL);
}

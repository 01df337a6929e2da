/* A fake CUDA driver: a libcuda.so.1 stand-in implementing exactly the entry
 * points symheap's cuda adaptor resolves (plus cuMemAlloc/cuMemFree, for
 * tests that need non-VMM memory), over host memory.
 *
 * - Devices: FAKE_CUDA_DEVICES (default 2), each with a primary context.
 *   FAKE_CUDA_DRIVER_VERSION (default 13000), FAKE_CUDA_NO_MULTICAST=1.
 * - Physical memory is a memfd; shareable handles are file descriptors.
 *   Reserved VA is PROT_NONE; cuMemMap maps the memfd there, so CPU code can
 *   check data.  The rules the real driver enforces and the adaptor relies on
 *   are enforced here: maps inside reservations, unmap of exactly a mapping,
 *   no address free with live mappings, granularity alignment.
 * - Multicast objects record their devices and bindings; binding before every
 *   device was added fails, as on real hardware.  Multicast works among ranks
 *   that are threads of one process (the object's state is process memory).
 * - Legacy IPC: cuMemAlloc memory lives in POSIX shared memory whose name is
 *   the IPC handle; opening a handle of the calling process fails, as it
 *   does with the real driver.
 * - Any entry point can be told to fail its Nth call on a given device, and
 *   every call is logged, so tests can check order and unwinding. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_cuda_impl.h"

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
int ndev = -1, driver_version, no_mc;
int inited;
struct cu_ctx_st ctxs[MAXDEV];
_Thread_local cu_context_t current;
mem_t *mems;
int streams_live;
char stream_token;
int capturing[64];

static struct {
  char fn[48];
  int dev, nth, err, count;
} fault;
static char calllog[1 << 16];

static void setup_locked(void) {
  if (ndev >= 0)
    return;
  const char *s = getenv("FAKE_CUDA_DEVICES");
  ndev = s ? atoi(s) : 2;
  if (ndev > MAXDEV)
    ndev = MAXDEV;
  s = getenv("FAKE_CUDA_DRIVER_VERSION");
  driver_version = s ? atoi(s) : 13000;
  s = getenv("FAKE_CUDA_NO_MULTICAST");
  no_mc = s && strcmp(s, "1") == 0;
  for (int i = 0; i < MAXDEV; i++)
    ctxs[i].dev = i;
}

int cur_dev(void) { return current ? current->dev : -1; }

cu_result_t enter(const char *fn) {
  setup_locked();
  size_t len = strlen(calllog);
  if (len + 64 < sizeof calllog)
    snprintf(calllog + len, sizeof calllog - len, "%s%s@%d", len ? "," : "", fn,
             cur_dev());
  if (fault.nth && strcmp(fault.fn, fn) == 0 && fault.dev == cur_dev() &&
      ++fault.count == fault.nth)
    return fault.err;
  return CU_OK;
}

/* --- control interface ------------------------------------------------- */
EXPORT void fake_cuda_set_fault(const char *fn, int dev, int nth, int err) {
  pthread_mutex_lock(&lock);
  memset(&fault, 0, sizeof fault);
  if (fn) {
    snprintf(fault.fn, sizeof fault.fn, "%s", fn);
    fault.dev = dev;
    fault.nth = nth;
    fault.err = err;
  }
  pthread_mutex_unlock(&lock);
}

EXPORT void fake_cuda_set_capturing(int dev, int mode) {
  pthread_mutex_lock(&lock);
  if (dev >= 0 && dev < 64)
    capturing[dev] = mode;
  pthread_mutex_unlock(&lock);
}



/* A copy taken under the lock: ranks as threads keep calling the driver
 * while a test reads, and an append briefly exposes stale text past the
 * end of the live log. */
EXPORT const char *fake_cuda_log(void) {
  static _Thread_local char snap[sizeof calllog];
  pthread_mutex_lock(&lock);
  memcpy(snap, calllog, strlen(calllog) + 1);
  pthread_mutex_unlock(&lock);
  return snap;
}
EXPORT void fake_cuda_log_reset(void) {
  pthread_mutex_lock(&lock);
  calllog[0] = '\0';
  pthread_mutex_unlock(&lock);
}


/* --- helpers ----------------------------------------------------------- */
mem_t *find_mem(cu_mem_handle_t h) {
  for (mem_t *m = mems; m; m = m->next)
    if ((cu_mem_handle_t)(uintptr_t)m == h && m->refs > 0)
      return m;
  return NULL;
}

void maybe_free(mem_t *m) {
  if (m->refs > 0 || m->maps > 0)
    return;
  for (mem_t **pp = &mems; *pp; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      break;
    }
  mem_t *obj = m->mc_of;
  close(m->fd);
  free(m);
  /* The object lives while any handle to it does, as in the driver. */
  if (obj) {
    obj->refs--;
    maybe_free(obj);
  }
}

mem_t *new_mem(size_t size, int dev) {
  int fd = memfd_create("fakecuda", MFD_CLOEXEC);
  if (fd < 0)
    return NULL;
  if (ftruncate(fd, (off_t)size) != 0) {
    close(fd);
    return NULL;
  }
  mem_t *m = calloc(1, sizeof *m);
  m->fd = fd;
  m->size = size;
  m->refs = 1;
  m->dev = dev;
  m->next = mems;
  mems = m;
  return m;
}


/* --- the driver API ---------------------------------------------------- */
static cu_result_t f_cuInit(unsigned int flags) {
  ENTER("cuInit");
  if (flags)
    LEAVE(CU_ERR_INVALID_VALUE);
  inited = 1;
  LEAVE(CU_OK);
}
static cu_result_t f_cuDriverGetVersion(int *v) {
  ENTER("cuDriverGetVersion");
  *v = driver_version;
  LEAVE(CU_OK);
}
static cu_result_t f_cuGetErrorName(cu_result_t e, const char **s) {
  switch (e) {
  case CU_OK:
    *s = "CUDA_SUCCESS";
    break;
  case CU_ERR_INVALID_VALUE:
    *s = "CUDA_ERROR_INVALID_VALUE";
    break;
  case CU_ERR_OUT_OF_MEMORY:
    *s = "CUDA_ERROR_OUT_OF_MEMORY";
    break;
  case CU_ERR_NOT_INITIALIZED:
    *s = "CUDA_ERROR_NOT_INITIALIZED";
    break;
  case CU_ERR_INVALID_CONTEXT:
    *s = "CUDA_ERROR_INVALID_CONTEXT";
    break;
  case CU_ERR_ILLEGAL_STATE:
    *s = "CUDA_ERROR_ILLEGAL_STATE";
    break;
  case CU_ERR_NOT_SUPPORTED:
    *s = "CUDA_ERROR_NOT_SUPPORTED";
    break;
  default:
    *s = "CUDA_ERROR_UNKNOWN";
    break;
  }
  return CU_OK;
}
static cu_result_t f_cuGetErrorString(cu_result_t e, const char **s) {
  *s = e == CU_OK ? "no error" : "fake driver error";
  return CU_OK;
}
static cu_result_t f_cuDeviceGetCount(int *n) {
  ENTER("cuDeviceGetCount");
  NEED_INIT();
  *n = ndev;
  LEAVE(CU_OK);
}
static cu_result_t f_cuDeviceGet(cu_device_t *d, int ordinal) {
  ENTER("cuDeviceGet");
  NEED_INIT();
  if (ordinal < 0 || ordinal >= ndev)
    LEAVE(CU_ERR_INVALID_DEVICE);
  *d = ordinal;
  LEAVE(CU_OK);
}
static cu_result_t f_cuDeviceGetAttribute(int *v, int attr, cu_device_t d) {
  ENTER("cuDeviceGetAttribute");
  NEED_INIT();
  if (d < 0 || d >= ndev)
    LEAVE(CU_ERR_INVALID_DEVICE);
  *v = attr == CU_ATTR_VMM_SUPPORTED || attr == CU_ATTR_POSIX_FD_SUPPORTED ||
       (attr == CU_ATTR_MULTICAST_SUPPORTED && !no_mc);
  LEAVE(CU_OK);
}
static cu_result_t f_cuDeviceGetName(char *name, int len, cu_device_t d) {
  ENTER("cuDeviceGetName");
  snprintf(name, (size_t)len, "Fake GPU %d", d);
  LEAVE(CU_OK);
}
static cu_result_t f_cuDeviceCanAccessPeer(int *can, cu_device_t d,
                                           cu_device_t p) {
  ENTER("cuDeviceCanAccessPeer");
  *can = d != p && d >= 0 && p >= 0 && d < ndev && p < ndev;
  LEAVE(CU_OK);
}
static cu_result_t f_cuCtxGetCurrent(cu_context_t *c) {
  ENTER("cuCtxGetCurrent");
  NEED_INIT();
  *c = current;
  LEAVE(CU_OK);
}
static cu_result_t f_cuCtxSetCurrent(cu_context_t c) {
  pthread_mutex_lock(&lock); /* not logged: the adaptor calls it per op */
  setup_locked();
  if (c && (c < ctxs || c >= ctxs + ndev || c->refs == 0))
    LEAVE(CU_ERR_INVALID_CONTEXT);
  current = c;
  LEAVE(CU_OK);
}
static cu_result_t f_cuCtxGetDevice(cu_device_t *d) {
  ENTER("cuCtxGetDevice");
  NEED_CTX();
  *d = current->dev;
  LEAVE(CU_OK);
}
static cu_result_t f_cuCtxEnablePeerAccess(cu_context_t peer, unsigned flags) {
  ENTER("cuCtxEnablePeerAccess");
  NEED_CTX();
  if (flags || !peer || peer == current)
    LEAVE(CU_ERR_INVALID_VALUE);
  LEAVE(CU_OK);
}
static cu_result_t f_cuDevicePrimaryCtxRetain(cu_context_t *c, cu_device_t d) {
  ENTER("cuDevicePrimaryCtxRetain");
  NEED_INIT();
  if (d < 0 || d >= ndev)
    LEAVE(CU_ERR_INVALID_DEVICE);
  ctxs[d].refs++;
  *c = &ctxs[d];
  LEAVE(CU_OK);
}
static cu_result_t f_cuDevicePrimaryCtxRelease(cu_device_t d) {
  ENTER("cuDevicePrimaryCtxRelease");
  if (d < 0 || d >= ndev || ctxs[d].refs == 0)
    LEAVE(CU_ERR_INVALID_CONTEXT);
  ctxs[d].refs--;
  LEAVE(CU_OK);
}

/* Streams: work runs at once, so a stream is only a token to check. */
static cu_result_t f_cuStreamCreate(cu_stream_t *st, unsigned int flags) {
  ENTER("cuStreamCreate");
  NEED_CTX();
  if (!st || flags > CU_STREAM_FLAG_NON_BLOCKING)
    LEAVE(CU_ERR_INVALID_VALUE);
  streams_live++;
  *st = (cu_stream_t)(void *)&stream_token;
  LEAVE(CU_OK);
}
static cu_result_t f_cuStreamSynchronize(cu_stream_t st) {
  ENTER("cuStreamSynchronize");
  LEAVE(st == (cu_stream_t)(void *)&stream_token && streams_live > 0
            ? CU_OK
            : CU_ERR_INVALID_HANDLE);
}
static cu_result_t f_cuStreamDestroy(cu_stream_t st) {
  ENTER("cuStreamDestroy");
  if (st != (cu_stream_t)(void *)&stream_token || streams_live == 0)
    LEAVE(CU_ERR_INVALID_HANDLE);
  streams_live--;
  LEAVE(CU_OK);
}
/* Mode 1: a blocking stream captures (the legacy stream answers
 * "implicit"); mode 2: the per-thread default stream captures. */
static cu_result_t f_cuStreamIsCapturing(cu_stream_t st, int *status) {
  ENTER("cuStreamIsCapturing");
  if (!status)
    LEAVE(CU_ERR_INVALID_VALUE);
  *status = CU_CAPTURE_STATUS_NONE;
  int mode = cur_dev() >= 0 && cur_dev() < 64 ? capturing[cur_dev()] : 0;
  if (st == CU_STREAM_LEGACY_HANDLE && mode == 1)
    LEAVE(CU_ERR_STREAM_CAPTURE_IMPLICIT);
  if (st == CU_STREAM_PER_THREAD_HANDLE && mode == 2)
    *status = CU_CAPTURE_STATUS_ACTIVE;
  LEAVE(CU_OK);
}
static const fake_cu_entry_t dev_entries[] = {
    {"cuInit", (void *)f_cuInit, 2000},
    {"cuDriverGetVersion", (void *)f_cuDriverGetVersion, 2020},
    {"cuGetErrorName", (void *)f_cuGetErrorName, 6000},
    {"cuGetErrorString", (void *)f_cuGetErrorString, 6000},
    {"cuDeviceGetCount", (void *)f_cuDeviceGetCount, 2000},
    {"cuDeviceGet", (void *)f_cuDeviceGet, 2000},
    {"cuDeviceGetAttribute", (void *)f_cuDeviceGetAttribute, 2000},
    {"cuDeviceGetName", (void *)f_cuDeviceGetName, 2000},
    {"cuDeviceCanAccessPeer", (void *)f_cuDeviceCanAccessPeer, 4000},
    {"cuCtxGetCurrent", (void *)f_cuCtxGetCurrent, 4000},
    {"cuCtxSetCurrent", (void *)f_cuCtxSetCurrent, 4000},
    {"cuCtxGetDevice", (void *)f_cuCtxGetDevice, 2000},
    {"cuCtxEnablePeerAccess", (void *)f_cuCtxEnablePeerAccess, 4000},
    {"cuDevicePrimaryCtxRetain", (void *)f_cuDevicePrimaryCtxRetain, 7000},
    {"cuDevicePrimaryCtxRelease", (void *)f_cuDevicePrimaryCtxRelease, 11000},
    {"cuStreamCreate", (void *)f_cuStreamCreate, 2000},
    {"cuStreamSynchronize", (void *)f_cuStreamSynchronize, 2000},
    {"cuStreamDestroy", (void *)f_cuStreamDestroy, 4000},
    {"cuStreamIsCapturing", (void *)f_cuStreamIsCapturing, 10000},
};
static const size_t dev_entries_n = sizeof dev_entries / sizeof dev_entries[0];

/* --- cuGetProcAddress -------------------------------------------------- */
static const fake_cu_entry_t *lookup(const char *symbol) {
  const struct {
    const fake_cu_entry_t *e;
    size_t n;
  } tables[] = {{dev_entries, dev_entries_n},
                {fake_cu_mem_entries, fake_cu_mem_entries_n},
                {fake_cu_mc_entries, fake_cu_mc_entries_n}};
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (size_t i = 0; i < tables[t].n; i++)
      if (strcmp(tables[t].e[i].name, symbol) == 0)
        return &tables[t].e[i];
  return NULL;
}

EXPORT cu_result_t cuGetProcAddress_v2(const char *symbol, void **pfn,
                                       int version, unsigned long long flags,
                                       int *status) {
  pthread_mutex_lock(&lock);
  setup_locked();
  int dv = driver_version;
  pthread_mutex_unlock(&lock);
  if (!symbol || !pfn || flags)
    return CU_ERR_INVALID_VALUE;
  const fake_cu_entry_t *e = lookup(symbol);
  if (e) {
    if (e->since > version || e->since > dv) {
      if (status)
        *status = 2; /* CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT */
      *pfn = NULL;
      return CU_ERR_NOT_FOUND;
    }
    if (status)
      *status = 0;
    *pfn = e->fn;
    return CU_OK;
  }
  if (status)
    *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  *pfn = NULL;
  return CU_ERR_NOT_FOUND;
}


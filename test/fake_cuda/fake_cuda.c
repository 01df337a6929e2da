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
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../fake_memfd.h"

#include "../../adaptors/common/cuda_api.h"
#include "fake_cuda.h"

#define EXPORT __attribute__((visibility("default")))
#define MAXDEV 16
#define GRAN (2u << 20)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int ndev = -1, driver_version, no_mc;
static int inited;
static struct cu_ctx_st {
  int dev;
  int refs;
} ctxs[MAXDEV];
static _Thread_local cu_context_t current;

typedef struct mem {
  struct mem *next;
  int fd;
  size_t size;
  int refs; /* handle references */
  int maps;
  int dev;
  int is_mc;
  unsigned mc_ndev, mc_added, mc_bound;
  struct mem *mc_of; /* an imported multicast handle: the object */
} mem_t;
static mem_t *mems;

/* The regions: reservations, mappings, cuMemAlloc blocks (kind 2), opened
 * IPC memory and cuMemHostAlloc memory (kind 4). */
#include "../fake_va.h"

static struct {
  char fn[48];
  int dev, nth, err, count;
} fault;
static char calllog[1 << 16];
static unsigned shm_seq;

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

static int cur_dev(void) { return current ? current->dev : -1; }

/* Log the call and decide whether it fails.  Caller holds the lock. */
static cu_result_t enter(const char *fn) {
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

#define ENTER(fn)                                                              \
  pthread_mutex_lock(&lock);                                                   \
  cu_result_t e_ = enter(fn);                                                  \
  if (e_ != CU_OK) {                                                           \
    pthread_mutex_unlock(&lock);                                               \
    return e_;                                                                 \
  }
#define LEAVE(v)                                                               \
  do {                                                                         \
    cu_result_t v_ = (v);                                                      \
    pthread_mutex_unlock(&lock);                                               \
    return v_;                                                                 \
  } while (0)
#define NEED_INIT()                                                            \
  if (!inited)                                                                 \
  LEAVE(CU_ERR_NOT_INITIALIZED)
#define NEED_CTX()                                                             \
  if (!current)                                                                \
  LEAVE(CU_ERR_INVALID_CONTEXT)

static int streams_live;
static char stream_token;
static int capturing[64]; /* per device: fake_cuda_set_capturing */

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

EXPORT void fake_cuda_live(fake_cuda_live_t *out) {
  pthread_mutex_lock(&lock);
  memset(out, 0, sizeof *out);
  for (mem_t *m = mems; m; m = m->next) {
    out->handles += m->refs > 0;
    out->mc_objects += m->is_mc;
  }
  for (region_t *r = regions; r; r = r->next) {
    out->reservations += r->kind == 0;
    out->mappings += r->kind == 1;
    out->allocs += r->kind == 2;
    out->host_allocs += r->kind == 4;
    out->ipc_opened += r->kind == 3;
  }
  out->streams = streams_live;
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
static mem_t *find_mem(cu_mem_handle_t h) {
  for (mem_t *m = mems; m; m = m->next)
    if ((cu_mem_handle_t)(uintptr_t)m == h && m->refs > 0)
      return m;
  return NULL;
}

static void maybe_free(mem_t *m) {
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

static mem_t *new_mem(size_t size, int dev) {
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
static cu_result_t
f_cuMemGetAllocationGranularity(size_t *g, const cu_mem_prop_t *p, int opt) {
  ENTER("cuMemGetAllocationGranularity");
  if (!p || p->type != CU_ALLOC_TYPE_PINNED || opt < 0 || opt > 1)
    LEAVE(CU_ERR_INVALID_VALUE);
  *g = GRAN;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemCreate(cu_mem_handle_t *h, size_t size,
                                 const cu_mem_prop_t *p,
                                 unsigned long long flags) {
  ENTER("cuMemCreate");
  NEED_CTX();
  if (!p || flags || size == 0 || size % GRAN ||
      p->location.type != CU_LOCATION_DEVICE || p->location.id < 0 ||
      p->location.id >= ndev)
    LEAVE(CU_ERR_INVALID_VALUE);
  mem_t *m = new_mem(size, p->location.id);
  if (!m)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  *h = (cu_mem_handle_t)(uintptr_t)m;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemRelease(cu_mem_handle_t h) {
  ENTER("cuMemRelease");
  mem_t *m = find_mem(h);
  if (!m)
    LEAVE(CU_ERR_INVALID_VALUE);
  m->refs--;
  maybe_free(m);
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemExportToShareableHandle(void *out, cu_mem_handle_t h,
                                                  int type,
                                                  unsigned long long flags) {
  ENTER("cuMemExportToShareableHandle");
  mem_t *m = find_mem(h);
  if (!m || type != CU_MEM_HANDLE_TYPE_POSIX_FD || flags)
    LEAVE(CU_ERR_INVALID_VALUE);
  int fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  *(int *)out = fd;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemImportFromShareableHandle(cu_mem_handle_t *h,
                                                    void *os, int type) {
  ENTER("cuMemImportFromShareableHandle");
  NEED_CTX();
  int fd = (int)(uintptr_t)os;
  struct stat st;
  /* Like the driver, a descriptor that is not device memory (a pipe, a
   * device node) is refused. */
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FD || fstat(fd, &st) != 0 ||
      !S_ISREG(st.st_mode) || !own_memfd(fd, "fakecuda"))
    LEAVE(CU_ERR_INVALID_VALUE);
  /* Like the driver: the caller keeps its descriptor. */
  int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  mem_t *m = calloc(1, sizeof *m);
  m->fd = mine;
  m->size = (size_t)st.st_size;
  m->refs = 1;
  m->dev = cur_dev();
  struct stat b;
  for (mem_t *o = mems; o; o = o->next)
    if (o->is_mc && fstat(o->fd, &b) == 0 && b.st_ino == st.st_ino) {
      m->mc_of = o;
      o->refs++;
      break;
    }
  m->next = mems;
  mems = m;
  *h = (cu_mem_handle_t)(uintptr_t)m;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemAddressReserve(cu_deviceptr_t *ptr, size_t size,
                                         size_t align, cu_deviceptr_t addr,
                                         unsigned long long flags) {
  ENTER("cuMemAddressReserve");
  if (size == 0 || size % GRAN || addr || flags || (align & (align - 1)))
    LEAVE(CU_ERR_INVALID_VALUE);
  char *start = reserve_aligned(size, align < GRAN ? GRAN : align);
  if (!start)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  add_region(start, size, 0);
  *ptr = (cu_deviceptr_t)(uintptr_t)start;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemAddressFree(cu_deviceptr_t ptr, size_t size) {
  ENTER("cuMemAddressFree");
  char *p = (char *)(uintptr_t)ptr;
  region_t *r = find_region(p, 0, 1);
  if (!r || r->size != size)
    LEAVE(CU_ERR_INVALID_VALUE);
  if (has_mapping_in(p, size))
    LEAVE(CU_ERR_INVALID_VALUE); /* still mapped */
  munmap(p, size);
  drop_region(r);
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemMap(cu_deviceptr_t ptr, size_t size, size_t offset,
                              cu_mem_handle_t h, unsigned long long flags) {
  ENTER("cuMemMap");
  char *p = (char *)(uintptr_t)ptr;
  mem_t *m = find_mem(h);
  region_t *res = find_region(p, 0, 0);
  /* The real driver maps whole allocations only (CUDA_ERROR_NOT_SUPPORTED
   * for an offset or a part, as measured on H200). */
  if (m && (offset != 0 || size != m->size))
    LEAVE(CU_ERR_NOT_SUPPORTED);
  if (!m || flags || size == 0 || size % GRAN || offset % GRAN ||
      (uintptr_t)p % GRAN || offset + size > m->size || !res ||
      p + size > res->va + res->size)
    LEAVE(CU_ERR_INVALID_VALUE);
  if (overlaps_mapping(p, size))
    LEAVE(CU_ERR_INVALID_VALUE);
  /* Mapped but not accessible until cuMemSetAccess, as on a GPU. */
  if (mmap(p, size, PROT_NONE, MAP_SHARED | MAP_FIXED, m->fd, (off_t)offset) ==
      MAP_FAILED)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  region_t *r = add_region(p, size, 1);
  r->mem = m;
  m->maps++;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemUnmap(cu_deviceptr_t ptr, size_t size) {
  ENTER("cuMemUnmap");
  char *p = (char *)(uintptr_t)ptr;
  region_t *r = find_region(p, 1, 1);
  if (!r || r->size != size)
    LEAVE(CU_ERR_INVALID_VALUE); /* only whole mappings, like the driver */
  unmap_to_reserved(p, size);
  mem_t *m = r->mem;
  drop_region(r);
  m->maps--;
  maybe_free(m);
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemSetAccess(cu_deviceptr_t ptr, size_t size,
                                    const cu_access_desc_t *d, size_t count) {
  ENTER("cuMemSetAccess");
  char *p = (char *)(uintptr_t)ptr;
  if (!d || count != 1 || d->location.type != CU_LOCATION_DEVICE ||
      d->flags != CU_MEM_ACCESS_READWRITE)
    LEAVE(CU_ERR_INVALID_VALUE);
  if (!all_mapped(p, size))
    LEAVE(CU_ERR_INVALID_VALUE);
  mprotect(p, size, PROT_READ | PROT_WRITE);
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemRetainAllocationHandle(cu_mem_handle_t *h,
                                                 void *addr) {
  ENTER("cuMemRetainAllocationHandle");
  region_t *r = find_region(addr, 1, 0);
  if (!r)
    LEAVE(CU_ERR_INVALID_VALUE);
  r->mem->refs++;
  *h = (cu_mem_handle_t)(uintptr_t)r->mem;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemGetAddressRange(cu_deviceptr_t *base, size_t *size,
                                          cu_deviceptr_t ptr) {
  ENTER("cuMemGetAddressRange");
  region_t *r = find_region((char *)(uintptr_t)ptr, 1, 0);
  if (!r)
    r = find_region((char *)(uintptr_t)ptr, 2, 0);
  if (!r)
    r = find_region((char *)(uintptr_t)ptr, 3, 0);
  if (!r)
    LEAVE(CU_ERR_INVALID_VALUE);
  if (base)
    *base = (cu_deviceptr_t)(uintptr_t)r->va;
  if (size)
    *size = r->size;
  LEAVE(CU_OK);
}

/* A dma-buf of mapped VMM memory: here, a duplicate of the memfd behind it.
 * Page-aligned ranges inside one mapping only, as the driver requires. */
static cu_result_t f_cuMemGetHandleForAddressRange(void *handle,
                                                   cu_deviceptr_t ptr,
                                                   size_t size, int type,
                                                   unsigned long long flags) {
  ENTER("cuMemGetHandleForAddressRange");
  char *p = (char *)(uintptr_t)ptr;
  region_t *r = find_region(p, 1, 0);
  if (!r || type != 1 || flags || size == 0 || ptr % 4096 || size % 4096 ||
      p + size > r->va + r->size)
    LEAVE(CU_ERR_INVALID_VALUE);
  int fd = fcntl(r->mem->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  *(int *)handle = fd;
  LEAVE(CU_OK);
}

/* Device memory is host memory here: any mapped or allocated byte. */
static cu_result_t f_cuMemcpyDtoH(void *dst, cu_deviceptr_t src, size_t n) {
  ENTER("cuMemcpyDtoH");
  char *p = (char *)(uintptr_t)src;
  if (!dst || !(find_region(p, 1, 0) || find_region(p, 2, 0)))
    LEAVE(CU_ERR_INVALID_VALUE);
  memcpy(dst, p, n);
  LEAVE(CU_OK);
}

/* Page-locked host memory mapped into the device: plain memory here, at
 * the same address for both (as with unified addressing), counted. */
static cu_result_t f_cuMemHostAlloc(void **p, size_t n, unsigned int flags) {
  ENTER("cuMemHostAlloc");
  NEED_CTX();
  if (!p || flags & ~3u)
    LEAVE(CU_ERR_INVALID_VALUE);
  region_t *r;
  char *m = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  r = add_region(m, n ? n : 1, 4);
  r->name[0] = '\0';
  *p = m;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemHostGetDevicePointer(cu_deviceptr_t *d, void *p,
                                               unsigned int flags) {
  ENTER("cuMemHostGetDevicePointer");
  NEED_CTX();
  if (!d || flags || !find_region((char *)p, 4, 0))
    LEAVE(CU_ERR_INVALID_VALUE);
  *d = (cu_deviceptr_t)(uintptr_t)p;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMemFreeHost(void *p) {
  ENTER("cuMemFreeHost");
  region_t *r = find_region((char *)p, 4, 1);
  if (!r)
    LEAVE(CU_ERR_INVALID_VALUE);
  munmap(r->va, r->size);
  drop_region(r);
  LEAVE(CU_OK);
}
/* Asynchronous in name only: done when it returns. */
static cu_result_t f_cuMemcpyDtoHAsync(void *dst, cu_deviceptr_t src, size_t n,
                                       cu_stream_t s) {
  ENTER("cuMemcpyDtoHAsync");
  char *p = (char *)(uintptr_t)src;
  if (!dst || !s || !(find_region(p, 1, 0) || find_region(p, 2, 0) ||
                      find_region(p, 4, 0)))
    LEAVE(CU_ERR_INVALID_VALUE);
  memcpy(dst, p, n);
  LEAVE(CU_OK);
}

/* Likewise: the staged landing's copy (host memory into device memory). */
static cu_result_t f_cuMemcpyHtoDAsync(cu_deviceptr_t dst, const void *src,
                                       size_t n, cu_stream_t s) {
  ENTER("cuMemcpyHtoDAsync");
  char *p = (char *)(uintptr_t)dst;
  if (!src || !s || !(find_region(p, 1, 0) || find_region(p, 2, 0) ||
                      find_region(p, 4, 0)))
    LEAVE(CU_ERR_INVALID_VALUE);
  memcpy(p, src, n);
  LEAVE(CU_OK);
}

/* Legacy memory and IPC. */
typedef struct {
  int32_t pid;
  uint32_t pad;
  uint64_t size;
  char name[48];
} ipc_desc_t;

EXPORT cu_result_t cuMemAlloc_v2(cu_deviceptr_t *ptr, size_t size) {
  ENTER("cuMemAlloc");
  NEED_CTX();
  char name[sizeof((region_t *)0)->name];
  snprintf(name, sizeof name, "/fakecuda-%d-%u", (int)getpid(), shm_seq++);
  char *p = shm_alloc(name, size);
  if (!p)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  region_t *r = add_region(p, size, 2);
  snprintf(r->name, sizeof r->name, "%s", name);
  *ptr = (cu_deviceptr_t)(uintptr_t)p;
  LEAVE(CU_OK);
}
EXPORT cu_result_t cuMemFree_v2(cu_deviceptr_t ptr) {
  ENTER("cuMemFree");
  region_t *r = find_region((char *)(uintptr_t)ptr, 2, 1);
  if (!r)
    LEAVE(CU_ERR_INVALID_VALUE);
  munmap(r->va, r->size);
  shm_unlink(r->name);
  drop_region(r);
  LEAVE(CU_OK);
}
/* Through cuGetProcAddress too, as the real driver resolves them. */
static cu_result_t f_cuMemAlloc(cu_deviceptr_t *ptr, size_t size) {
  return cuMemAlloc_v2(ptr, size);
}
static cu_result_t f_cuMemFree(cu_deviceptr_t ptr) { return cuMemFree_v2(ptr); }
static cu_result_t f_cuMemcpyHtoD(cu_deviceptr_t dst, const void *src,
                                  size_t n) {
  ENTER("cuMemcpyHtoD");
  char *p = (char *)(uintptr_t)dst;
  if (!src || !(find_region(p, 1, 0) || find_region(p, 2, 0)))
    LEAVE(CU_ERR_INVALID_VALUE);
  memcpy(p, src, n);
  LEAVE(CU_OK);
}
static cu_result_t f_cuStreamQuery(cu_stream_t st) {
  ENTER("cuStreamQuery");
  (void)st; /* work here is done when it is enqueued */
  LEAVE(CU_OK);
}
static cu_result_t f_cuIpcGetMemHandle(cu_ipc_mem_handle_t *h,
                                       cu_deviceptr_t ptr) {
  ENTER("cuIpcGetMemHandle");
  region_t *r = find_region((char *)(uintptr_t)ptr, 2, 1);
  if (!r)
    LEAVE(CU_ERR_INVALID_VALUE);
  ipc_desc_t d;
  memset(&d, 0, sizeof d);
  d.pid = (int32_t)getpid();
  d.size = r->size;
  snprintf(d.name, sizeof d.name, "%s", r->name);
  memset(h, 0, sizeof *h);
  memcpy(h->reserved, &d, sizeof d);
  LEAVE(CU_OK);
}
static cu_result_t f_cuIpcOpenMemHandle(cu_deviceptr_t *ptr,
                                        cu_ipc_mem_handle_t h,
                                        unsigned int flags) {
  ENTER("cuIpcOpenMemHandle");
  NEED_CTX();
  ipc_desc_t d;
  memcpy(&d, h.reserved, sizeof d);
  if (flags != CU_IPC_LAZY_ENABLE_PEER_ACCESS)
    LEAVE(CU_ERR_INVALID_VALUE);
  if (d.pid == (int32_t)getpid())
    LEAVE(CU_ERR_INVALID_CONTEXT); /* the driver refuses its own handles */
  int fd = shm_open(d.name, O_RDWR, 0);
  if (fd < 0)
    LEAVE(CU_ERR_INVALID_HANDLE);
  char *p = mmap(NULL, d.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  add_region(p, d.size, 3);
  *ptr = (cu_deviceptr_t)(uintptr_t)p;
  LEAVE(CU_OK);
}
static cu_result_t f_cuIpcCloseMemHandle(cu_deviceptr_t ptr) {
  ENTER("cuIpcCloseMemHandle");
  region_t *r = find_region((char *)(uintptr_t)ptr, 3, 1);
  if (!r)
    LEAVE(CU_ERR_INVALID_VALUE);
  munmap(r->va, r->size);
  drop_region(r);
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
/* Only mapped, accessible memory of this process (like a device's own). */
static cu_result_t f_cuMemsetD8Async(cu_deviceptr_t ptr, unsigned char v,
                                     size_t n, cu_stream_t st) {
  ENTER("cuMemsetD8Async");
  char *p = (char *)(uintptr_t)ptr;
  if (st != (cu_stream_t)(void *)&stream_token)
    LEAVE(CU_ERR_INVALID_HANDLE);
  if (!all_mapped(p, n))
    LEAVE(CU_ERR_INVALID_VALUE);
  memset(p, v, n);
  LEAVE(CU_OK);
}

/* Multicast. */
static cu_result_t f_cuMulticastGetGranularity(size_t *g, const cu_mc_prop_t *p,
                                               int opt) {
  ENTER("cuMulticastGetGranularity");
  if (!p || p->num_devices == 0 || opt < 0 || opt > 1)
    LEAVE(CU_ERR_INVALID_VALUE);
  *g = GRAN;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMulticastCreate(cu_mem_handle_t *mc,
                                       const cu_mc_prop_t *p) {
  ENTER("cuMulticastCreate");
  NEED_CTX();
  if (no_mc)
    LEAVE(CU_ERR_NOT_SUPPORTED);
  if (!p || p->num_devices == 0 || p->size == 0 || p->size % GRAN ||
      p->handle_types != CU_MEM_HANDLE_TYPE_POSIX_FD || p->flags)
    LEAVE(CU_ERR_INVALID_VALUE);
  mem_t *m = new_mem(p->size, cur_dev());
  if (!m)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  m->is_mc = 1;
  m->mc_ndev = p->num_devices;
  *mc = (cu_mem_handle_t)(uintptr_t)m;
  LEAVE(CU_OK);
}
/* Multicast state lives in the creator's record; an imported handle points
 * at it (found by inode at import).  So the fake supports multicast among
 * ranks of one process, which is how the tests use it. */
static mem_t *mc_object(mem_t *m) { return m->is_mc ? m : m->mc_of; }
static cu_result_t f_cuMulticastAddDevice(cu_mem_handle_t mc, cu_device_t d) {
  ENTER("cuMulticastAddDevice");
  mem_t *m = find_mem(mc), *o = m ? mc_object(m) : NULL;
  if (!o || d < 0 || d >= ndev)
    LEAVE(CU_ERR_INVALID_VALUE);
  if (o->mc_added >= o->mc_ndev)
    LEAVE(CU_ERR_INVALID_VALUE);
  o->mc_added++;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMulticastBindMem(cu_mem_handle_t mc, size_t mco,
                                        cu_mem_handle_t mem, size_t memo,
                                        size_t size, unsigned long long flags) {
  ENTER("cuMulticastBindMem");
  mem_t *m = find_mem(mc), *o = m ? mc_object(m) : NULL, *phys = find_mem(mem);
  if (!o || !phys || flags || size % GRAN || mco + size > o->size ||
      memo + size > phys->size)
    LEAVE(CU_ERR_INVALID_VALUE);
  if (o->mc_added < o->mc_ndev)
    LEAVE(CU_ERR_ILLEGAL_STATE); /* every device must be added first */
  o->mc_bound++;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMulticastUnbind(cu_mem_handle_t mc, cu_device_t d,
                                       size_t mco, size_t size) {
  ENTER("cuMulticastUnbind");
  mem_t *m = find_mem(mc), *o = m ? mc_object(m) : NULL;
  if (!o || d < 0 || d >= ndev || mco + size > o->size || o->mc_bound == 0)
    LEAVE(CU_ERR_INVALID_VALUE);
  o->mc_bound--;
  LEAVE(CU_OK);
}

/* --- cuGetProcAddress -------------------------------------------------- */
static const struct {
  const char *name;
  void *fn;
  int since;
} table[] = {
#define F(n, v) {#n, (void *)f_##n, v},
    F(cuInit, 2000) F(cuDriverGetVersion, 2020) F(cuGetErrorName, 6000) F(
        cuGetErrorString, 6000) F(cuDeviceGetCount, 2000) F(cuDeviceGet, 2000)
        F(cuDeviceGetAttribute, 2000) F(cuDeviceGetName, 2000) F(
            cuDeviceCanAccessPeer, 4000) F(cuCtxGetCurrent,
                                           4000) F(cuCtxSetCurrent, 4000)
            F(cuCtxGetDevice, 2000) F(cuCtxEnablePeerAccess, 4000) F(
                cuDevicePrimaryCtxRetain, 7000) F(cuDevicePrimaryCtxRelease,
                                                  11000)
                F(cuMemGetAllocationGranularity, 10020) F(cuMemCreate, 10020) F(
                    cuMemRelease, 10020) F(cuMemExportToShareableHandle, 10020)
                    F(cuMemImportFromShareableHandle, 10020) F(
                        cuMemAddressReserve, 10020) F(cuMemAddressFree,
                                                      10020) F(cuMemMap, 10020)
                        F(cuMemUnmap, 10020) F(cuMemSetAccess, 10020) F(
                            cuMemRetainAllocationHandle,
                            11000) F(cuMemGetAddressRange,
                                     3020) F(cuIpcGetMemHandle,
                                             4010) F(cuIpcOpenMemHandle, 11000)
                            F(cuIpcCloseMemHandle, 4010) F(
                                cuMulticastGetGranularity,
                                12010) F(cuMulticastCreate,
                                         12010) F(cuMulticastAddDevice, 12010)
                                F(cuMulticastBindMem,
                                  12010) F(cuMulticastUnbind,
                                           12010) F(cuStreamCreate, 2000)
                                    F(cuStreamSynchronize,
                                      2000) F(cuStreamDestroy, 4000)
                                        F(cuMemsetD8Async,
                                          3020) F(cuStreamIsCapturing, 10000)
                                            F(cuMemGetHandleForAddressRange,
                                              11070) F(cuMemcpyDtoH, 3020)
                                                F(cuMemcpyHtoD,
                                                  3020) F(cuMemAlloc, 3020)
                                                    F(cuMemFree, 3020)
                                                        F(cuStreamQuery, 2000)
    F(cuMemHostAlloc, 3020) F(cuMemHostGetDevicePointer, 3020)
    F(cuMemFreeHost, 2000) F(cuMemcpyDtoHAsync, 3020)
        F(cuMemcpyHtoDAsync, 3020)
#undef F
};

EXPORT cu_result_t cuGetProcAddress_v2(const char *symbol, void **pfn,
                                       int version, unsigned long long flags,
                                       int *status) {
  pthread_mutex_lock(&lock);
  setup_locked();
  int dv = driver_version;
  pthread_mutex_unlock(&lock);
  if (!symbol || !pfn || flags)
    return CU_ERR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].name, symbol) == 0) {
      if (table[i].since > version || table[i].since > dv) {
        if (status)
          *status = 2; /* CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT */
        *pfn = NULL;
        return CU_ERR_NOT_FOUND;
      }
      if (status)
        *status = 0;
      *pfn = table[i].fn;
      return CU_OK;
    }
  if (status)
    *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  *pfn = NULL;
  return CU_ERR_NOT_FOUND;
}

/* A fake HIP runtime (libamdhip64.so) for the hip adaptor's tests on
 * machines without AMD GPUs, in the style of the fake CUDA driver: memory is
 * a memfd, a "device" address is a CPU address, VMM calls keep the real
 * runtime's rules (granularity, mapped-before-access, whole-mapping unmap,
 * no address freed while mapped), hipMalloc memory is a named shared-memory
 * object so legacy IPC works across processes, and tests can fail the Nth
 * call of any function and count what is still alive.
 * FAKE_HIP_DEVICES sets the device count (default 2). */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../fake_memfd.h"

#include "../../adaptors/device/hip_api.h"
#include "fake_hip.h"

#define EXPORT __attribute__((visibility("default")))
#define GRAN ((size_t)1 << 16) /* 64 KiB: not the host's page */

typedef struct mem {
  struct mem *next;
  int fd;
  size_t size;
  int handles; /* live handles (create, import, retain) */
  int maps;
} mem_t;

/* The regions: reservations, mappings, hipMalloc blocks (kind 2) and
 * opened IPC memory. */
#include "../fake_va.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mem_t *mems;
static int streams;
static __thread int current;
static struct {
  char fn[64];
  int dev, nth, count;
} fault;

static int ndev(void) {
  const char *e = getenv("FAKE_HIP_DEVICES");
  return e ? atoi(e) : 2;
}

/* Every entry point: count for fault injection, under the lock. */
static hip_error_t enter(const char *fn) {
  pthread_mutex_lock(&lock);
  if (fault.nth && strcmp(fault.fn, fn) == 0 && fault.dev == current &&
      ++fault.count == fault.nth) {
    pthread_mutex_unlock(&lock);
    return HIP_ERR_OUT_OF_MEMORY;
  }
  return HIP_OK;
}
#define ENTER(fn)                                                              \
  do {                                                                         \
    hip_error_t e_ = enter(fn);                                                \
    if (e_ != HIP_OK)                                                          \
      return e_;                                                               \
  } while (0)
#define LEAVE(v)                                                               \
  do {                                                                         \
    hip_error_t v_ = (v);                                                      \
    pthread_mutex_unlock(&lock);                                               \
    return v_;                                                                 \
  } while (0)

EXPORT void fake_hip_set_fault(const char *fn, int dev, int nth) {
  pthread_mutex_lock(&lock);
  memset(&fault, 0, sizeof fault);
  if (fn) {
    snprintf(fault.fn, sizeof fault.fn, "%s", fn);
    fault.dev = dev;
    fault.nth = nth;
  }
  pthread_mutex_unlock(&lock);
}

EXPORT void fake_hip_live(fake_hip_live_t *out) {
  pthread_mutex_lock(&lock);
  memset(out, 0, sizeof *out);
  for (mem_t *m = mems; m; m = m->next)
    out->handles += m->handles;
  for (region_t *r = regions; r; r = r->next) {
    out->reservations += r->kind == 0;
    out->mappings += r->kind == 1;
    out->allocs += r->kind == 2;
    out->ipc_opened += r->kind == 3;
  }
  out->streams = streams;
  pthread_mutex_unlock(&lock);
}

static void maybe_free(mem_t *m) {
  if (m->handles || m->maps)
    return;
  for (mem_t **pp = &mems; *pp; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      break;
    }
  close(m->fd);
  free(m);
}
static mem_t *find_mem(hip_mem_handle_t h) {
  for (mem_t *m = mems; m; m = m->next)
    if ((void *)m == (void *)h)
      return m;
  return NULL;
}

EXPORT const char *hipGetErrorName(hip_error_t e) {
  return e == HIP_OK                  ? "hipSuccess"
         : e == HIP_ERR_OUT_OF_MEMORY ? "hipErrorOutOfMemory"
         : e == HIP_ERR_NOT_SUPPORTED ? "hipErrorNotSupported"
                                      : "hipErrorInvalidValue";
}
EXPORT hip_error_t hipGetDeviceCount(int *n) {
  ENTER("hipGetDeviceCount");
  *n = ndev();
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipSetDevice(int d) {
  ENTER("hipSetDevice");
  if (d < 0 || d >= ndev())
    LEAVE(HIP_ERR_INVALID_VALUE);
  current = d;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipGetDevice(int *d) {
  ENTER("hipGetDevice");
  *d = current;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipDeviceGetName(char *name, int len, int d) {
  ENTER("hipDeviceGetName");
  snprintf(name, (size_t)len, "Fake AMD GPU %d", d);
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipDeviceCanAccessPeer(int *can, int d, int p) {
  ENTER("hipDeviceCanAccessPeer");
  *can = d != p;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipDeviceEnablePeerAccess(int p, unsigned int flags) {
  ENTER("hipDeviceEnablePeerAccess");
  LEAVE(p == current || flags ? HIP_ERR_INVALID_VALUE : HIP_OK);
}
EXPORT hip_error_t hipMemGetAllocationGranularity(size_t *g,
                                                  const hip_mem_prop_t *p,
                                                  int option) {
  ENTER("hipMemGetAllocationGranularity");
  if (!p || p->type != HIP_ALLOC_PINNED ||
      p->location.type != HIP_LOCATION_DEVICE || option < 0 || option > 1)
    LEAVE(HIP_ERR_INVALID_VALUE);
  *g = option ? 2 * GRAN : GRAN;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemCreate(hip_mem_handle_t *h, size_t size,
                                const hip_mem_prop_t *p,
                                unsigned long long flags) {
  ENTER("hipMemCreate");
  if (!p || flags || size == 0 || size % GRAN ||
      p->requested_handle_type != HIP_HANDLE_POSIX_FD ||
      p->location.id != current)
    LEAVE(HIP_ERR_INVALID_VALUE);
  int fd = memfd_create("fake-hip", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
    if (fd >= 0)
      close(fd);
    LEAVE(HIP_ERR_OUT_OF_MEMORY);
  }
  mem_t *m = calloc(1, sizeof *m);
  m->fd = fd;
  m->size = size;
  m->handles = 1;
  m->next = mems;
  mems = m;
  *h = (hip_mem_handle_t)(void *)m;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemRelease(hip_mem_handle_t h) {
  ENTER("hipMemRelease");
  mem_t *m = find_mem(h);
  if (!m || m->handles == 0)
    LEAVE(HIP_ERR_INVALID_VALUE);
  m->handles--;
  maybe_free(m);
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemExportToShareableHandle(void *out, hip_mem_handle_t h,
                                                 int type,
                                                 unsigned long long flags) {
  ENTER("hipMemExportToShareableHandle");
  mem_t *m = find_mem(h);
  if (!m || type != HIP_HANDLE_POSIX_FD || flags)
    LEAVE(HIP_ERR_INVALID_VALUE);
  int fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    LEAVE(HIP_ERR_OUT_OF_MEMORY);
  *(int *)out = fd;
  LEAVE(HIP_OK);
}
/* Like the real runtime, the descriptor stays the caller's. */
EXPORT hip_error_t hipMemImportFromShareableHandle(hip_mem_handle_t *h,
                                                   void *os, int type) {
  ENTER("hipMemImportFromShareableHandle");
  int fd = (int)(intptr_t)os;
  if (type != HIP_HANDLE_POSIX_FD || fd < 0 || !own_memfd(fd, "fake-hip"))
    LEAVE(HIP_ERR_INVALID_VALUE);
  off_t size = lseek(fd, 0, SEEK_END);
  int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (size <= 0 || mine < 0) {
    if (mine >= 0)
      close(mine);
    LEAVE(HIP_ERR_INVALID_VALUE);
  }
  mem_t *m = calloc(1, sizeof *m);
  m->fd = mine;
  m->size = (size_t)size;
  m->handles = 1;
  m->next = mems;
  mems = m;
  *h = (hip_mem_handle_t)(void *)m;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemAddressReserve(void **ptr, size_t size, size_t align,
                                        void *addr, unsigned long long flags) {
  ENTER("hipMemAddressReserve");
  if (size == 0 || size % GRAN || addr || flags)
    LEAVE(HIP_ERR_INVALID_VALUE);
  char *start = reserve_aligned(size, align < GRAN ? GRAN : align);
  if (!start)
    LEAVE(HIP_ERR_OUT_OF_MEMORY);
  add_region(start, size, 0);
  *ptr = start;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemAddressFree(void *ptr, size_t size) {
  ENTER("hipMemAddressFree");
  region_t *r = find_region(ptr, 0, 1);
  if (!r || r->size != size)
    LEAVE(HIP_ERR_INVALID_VALUE);
  if (has_mapping_in(ptr, size))
    LEAVE(HIP_ERR_INVALID_VALUE); /* still mapped */
  munmap(ptr, size);
  drop_region(r);
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemMap(void *ptr, size_t size, size_t offset,
                             hip_mem_handle_t h, unsigned long long flags) {
  ENTER("hipMemMap");
  char *p = ptr;
  mem_t *m = find_mem(h);
  region_t *res = find_region(p, 0, 0);
  if (m && (offset != 0 || size != m->size)) /* whole allocations only */
    LEAVE(HIP_ERR_NOT_SUPPORTED);
  if (!m || flags || size == 0 || size % GRAN || offset % GRAN ||
      offset + size > m->size || !res || p + size > res->va + res->size)
    LEAVE(HIP_ERR_INVALID_VALUE);
  if (overlaps_mapping(p, size))
    LEAVE(HIP_ERR_INVALID_VALUE);
  if (mmap(p, size, PROT_NONE, MAP_SHARED | MAP_FIXED, m->fd, (off_t)offset) ==
      MAP_FAILED)
    LEAVE(HIP_ERR_OUT_OF_MEMORY);
  region_t *r = add_region(p, size, 1);
  r->mem = m;
  m->maps++;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemUnmap(void *ptr, size_t size) {
  ENTER("hipMemUnmap");
  region_t *r = find_region(ptr, 1, 1);
  if (!r || r->size != size)
    LEAVE(HIP_ERR_INVALID_VALUE);
  unmap_to_reserved(ptr, size);
  mem_t *m = r->mem;
  drop_region(r);
  m->maps--;
  maybe_free(m);
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemSetAccess(void *ptr, size_t size,
                                   const hip_access_desc_t *d, size_t count) {
  ENTER("hipMemSetAccess");
  if (!d || count != 1 || d->location.type != HIP_LOCATION_DEVICE ||
      d->flags != HIP_ACCESS_READWRITE)
    LEAVE(HIP_ERR_INVALID_VALUE);
  if (!all_mapped(ptr, size))
    LEAVE(HIP_ERR_INVALID_VALUE);
  mprotect(ptr, size, PROT_READ | PROT_WRITE);
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemRetainAllocationHandle(hip_mem_handle_t *h,
                                                void *addr) {
  ENTER("hipMemRetainAllocationHandle");
  region_t *r = find_region(addr, 1, 0);
  if (!r)
    LEAVE(HIP_ERR_INVALID_VALUE);
  r->mem->handles++;
  *h = (hip_mem_handle_t)(void *)r->mem;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemGetAddressRange(void **base, size_t *size,
                                         void *ptr) {
  ENTER("hipMemGetAddressRange");
  region_t *r = find_region(ptr, 1, 0);
  if (!r)
    r = find_region(ptr, 2, 0);
  if (!r)
    LEAVE(HIP_ERR_INVALID_VALUE);
  *base = r->va;
  *size = r->size;
  LEAVE(HIP_OK);
}
/* hipMalloc memory: a named shared-memory object, so IPC can open it. */
EXPORT hip_error_t hipMalloc(void **ptr, size_t size) {
  ENTER("hipMalloc");
  static unsigned long counter;
  char name[64];
  snprintf(name, sizeof name, "/fake-hip-%d-%lu", (int)getpid(), ++counter);
  char *p = shm_alloc(name, size);
  if (!p)
    LEAVE(HIP_ERR_OUT_OF_MEMORY);
  region_t *r = add_region(p, size, 2);
  snprintf(r->name, sizeof r->name, "%s", name);
  *ptr = p;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipFree(void *ptr) {
  ENTER("hipFree");
  region_t *r = find_region(ptr, 2, 1);
  if (!r)
    LEAVE(HIP_ERR_INVALID_VALUE);
  munmap(r->va, r->size);
  shm_unlink(r->name);
  drop_region(r);
  LEAVE(HIP_OK);
}
typedef struct {
  int32_t pid;
  uint32_t pad;
  uint64_t size;
  char name[40];
} ipc_desc_t;
_Static_assert(sizeof(ipc_desc_t) <= HIP_IPC_HANDLE_BYTES, "ipc desc");
EXPORT hip_error_t hipIpcGetMemHandle(hip_ipc_mem_handle_t *h, void *ptr) {
  ENTER("hipIpcGetMemHandle");
  region_t *r = find_region(ptr, 2, 1);
  if (!r)
    LEAVE(HIP_ERR_INVALID_VALUE);
  ipc_desc_t d;
  memset(&d, 0, sizeof d);
  d.pid = (int32_t)getpid();
  d.size = r->size;
  snprintf(d.name, sizeof d.name, "%s", r->name);
  memset(h, 0, sizeof *h);
  memcpy(h->reserved, &d, sizeof d);
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipIpcOpenMemHandle(void **ptr, hip_ipc_mem_handle_t h,
                                       unsigned int flags) {
  ENTER("hipIpcOpenMemHandle");
  ipc_desc_t d;
  memcpy(&d, h.reserved, sizeof d);
  if (flags != HIP_IPC_LAZY_ENABLE_PEER_ACCESS || d.pid == (int32_t)getpid())
    LEAVE(HIP_ERR_INVALID_VALUE); /* the runtime refuses its own handles */
  int fd = shm_open(d.name, O_RDWR, 0);
  if (fd < 0)
    LEAVE(HIP_ERR_INVALID_VALUE);
  char *p = mmap(NULL, d.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    LEAVE(HIP_ERR_OUT_OF_MEMORY);
  add_region(p, d.size, 3);
  *ptr = p;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipIpcCloseMemHandle(void *ptr) {
  ENTER("hipIpcCloseMemHandle");
  region_t *r = find_region(ptr, 3, 1);
  if (!r)
    LEAVE(HIP_ERR_INVALID_VALUE);
  munmap(r->va, r->size);
  drop_region(r);
  LEAVE(HIP_OK);
}
static char stream_token;
EXPORT hip_error_t hipStreamCreateWithFlags(hip_stream_t *s,
                                            unsigned int flags) {
  ENTER("hipStreamCreateWithFlags");
  if (flags > HIP_STREAM_NON_BLOCKING)
    LEAVE(HIP_ERR_INVALID_VALUE);
  streams++;
  *s = (hip_stream_t)(void *)&stream_token;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipStreamSynchronize(hip_stream_t s) {
  ENTER("hipStreamSynchronize");
  LEAVE(s == (hip_stream_t)(void *)&stream_token ? HIP_OK
                                                 : HIP_ERR_INVALID_VALUE);
}
EXPORT hip_error_t hipStreamDestroy(hip_stream_t s) {
  ENTER("hipStreamDestroy");
  if (s != (hip_stream_t)(void *)&stream_token || streams == 0)
    LEAVE(HIP_ERR_INVALID_VALUE);
  streams--;
  LEAVE(HIP_OK);
}
EXPORT hip_error_t hipMemsetAsync(void *ptr, int v, size_t n, hip_stream_t s) {
  ENTER("hipMemsetAsync");
  if (s != (hip_stream_t)(void *)&stream_token)
    LEAVE(HIP_ERR_INVALID_VALUE);
  if (!all_mapped(ptr, n))
    LEAVE(HIP_ERR_INVALID_VALUE);
  memset(ptr, v, n);
  LEAVE(HIP_OK);
}

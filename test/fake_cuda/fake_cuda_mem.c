/* The fake CUDA driver's memory (fake_cuda.c says what it fakes): VMM
 * memory as memfds mapped into PROT_NONE reservations, legacy allocations
 * and their IPC handles as POSIX shared memory, page-locked host memory,
 * and the copies and memset over them. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../fake_memfd.h"
#include "fake_cuda_impl.h"

/* The regions: reservations, mappings, cuMemAlloc blocks (kind 2), opened
 * IPC memory and cuMemHostAlloc memory (kind 4). */
#include "../fake_va.h"

static unsigned shm_seq;

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


const fake_cu_entry_t fake_cu_mem_entries[] = {
    {"cuMemGetAllocationGranularity", (void *)f_cuMemGetAllocationGranularity, 10020},
    {"cuMemCreate", (void *)f_cuMemCreate, 10020},
    {"cuMemRelease", (void *)f_cuMemRelease, 10020},
    {"cuMemExportToShareableHandle", (void *)f_cuMemExportToShareableHandle, 10020},
    {"cuMemImportFromShareableHandle", (void *)f_cuMemImportFromShareableHandle, 10020},
    {"cuMemAddressReserve", (void *)f_cuMemAddressReserve, 10020},
    {"cuMemAddressFree", (void *)f_cuMemAddressFree, 10020},
    {"cuMemMap", (void *)f_cuMemMap, 10020},
    {"cuMemUnmap", (void *)f_cuMemUnmap, 10020},
    {"cuMemSetAccess", (void *)f_cuMemSetAccess, 10020},
    {"cuMemRetainAllocationHandle", (void *)f_cuMemRetainAllocationHandle, 11000},
    {"cuMemGetAddressRange", (void *)f_cuMemGetAddressRange, 3020},
    {"cuIpcGetMemHandle", (void *)f_cuIpcGetMemHandle, 4010},
    {"cuIpcOpenMemHandle", (void *)f_cuIpcOpenMemHandle, 11000},
    {"cuIpcCloseMemHandle", (void *)f_cuIpcCloseMemHandle, 4010},
    {"cuMemsetD8Async", (void *)f_cuMemsetD8Async, 3020},
    {"cuMemGetHandleForAddressRange", (void *)f_cuMemGetHandleForAddressRange, 11070},
    {"cuMemcpyDtoH", (void *)f_cuMemcpyDtoH, 3020},
    {"cuMemcpyHtoD", (void *)f_cuMemcpyHtoD, 3020},
    {"cuMemAlloc", (void *)f_cuMemAlloc, 3020},
    {"cuMemFree", (void *)f_cuMemFree, 3020},
    {"cuStreamQuery", (void *)f_cuStreamQuery, 2000},
    {"cuMemHostAlloc", (void *)f_cuMemHostAlloc, 3020},
    {"cuMemHostGetDevicePointer", (void *)f_cuMemHostGetDevicePointer, 3020},
    {"cuMemFreeHost", (void *)f_cuMemFreeHost, 2000},
    {"cuMemcpyDtoHAsync", (void *)f_cuMemcpyDtoHAsync, 3020},
    {"cuMemcpyHtoDAsync", (void *)f_cuMemcpyHtoDAsync, 3020},
};
const size_t fake_cu_mem_entries_n = sizeof fake_cu_mem_entries / sizeof fake_cu_mem_entries[0];

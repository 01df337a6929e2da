/* A device adaptor written the way a vendor would, from the public headers
 * alone (symheap_adaptor.h, docs/writing-an-adaptor.md), and then broken on
 * purpose: built with -DBREAK=N it makes mistake N of the list below, and
 * symheap-conformance must FAIL it, naming the mistake
 * (test/conformance/run_broken.sh holds the word it must say).  BREAK=0 is
 * the correct adaptor, which must pass.
 *
 * The "device" is the CPU: memory is a memfd, shared as a descriptor;
 * reserved address space is an inaccessible anonymous mapping; map replaces
 * part of it with the memfd, inaccessible until set_access. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symheap_adaptor.h"

#ifndef BREAK
#define BREAK 0
#endif
/* The mistakes, one per BREAK value. */
#define OK_CORRECT 0
#define RELEASE_LEAKS_FD 1      /* mem_release does not close the memfd */
#define VA_FREE_LEAKS 2         /* va_free gives nothing back */
#define UNMAP_MUNMAPS 3         /* unmap gives the reservation back */
#define RESERVE_IGNORES_ALIGN 4 /* va_reserve ignores align */
#define IMPORT_ACCEPTS_ANY 5    /* mem_import takes any descriptor */
#define IMPORT_LEAKS_ON_FAIL 6  /* a refused import keeps in->fd open */
#define PARTIAL_REFUSED 7       /* claims MAP_PARTIAL, maps only wholes */
#define SET_ACCESS_NOOP 8       /* set_access does nothing */
#define ERROR_NO_TEXT 9         /* errors returned without svc->error */
#define MEM_CREATE_FAILS 10     /* mem_create always fails */
#define HANDLE_ZERO 11          /* the first handle is 0 */
#define BAD_GRANULARITY 12      /* granularity 3000 */
#define NAME_UNTERMINATED 13    /* caps.device_name has no NUL */
#define NAME_OVERLONG 14        /* the table's name is 40 characters */
#define MEM_ZERO_NOOP 15        /* mem_zero clears nothing */
#define MAP_IGNORES_OFFSET 16   /* map always maps from offset 0 */
#define EXPORT_NOT_OWNED 17     /* mem_export hands out its own memfd */
#define CAPS_IPC_NO_OPS 18      /* claims SYMHEAP_CAP_IPC, has no ipc_* */
#define UNMAP_NOOP 19           /* unmap leaves the memory accessible */
#define RESERVE_ACCESSIBLE 20   /* va_reserve returns readable memory */
#define EXPORT_CRASHES 21       /* mem_export dereferences NULL */
#define MEM_ZERO_HANGS 22       /* mem_zero never returns */
#define SET_ACCESS_ABORTS 23    /* set_access calls abort() */
#define FINI_LEAKS 24           /* init opens a descriptor fini keeps */
#define AVAILABLE_LIES 25       /* available says yes, init always fails */
#define UNAVAILABLE 26          /* correct, but cannot run here */
#define OK_NO_HOST_ACCESS 27    /* correct, without SYMHEAP_CAP_HOST_ACCESS */
#define WRITES_STDERR 28        /* prints to stderr instead of svc->log */
#define RETAIN_WRONG_BASE 29    /* mem_retain gives the pointer as the base */
#define RETAIN_NOT_UNSUPPORTED                                                 \
  30                      /* foreign memory: INVALID_ARG, not UNSUPPORTED */
#define DMABUF_LEAKS 31   /* dmabuf_export keeps a descriptor each time */
#define CAPTURE_ALWAYS 32 /* capture_check refuses with no capture */
#define RECOMMENDED_2G 33 /* recommended granularity 2 GiB (core: 1 GiB) */
#define IMPORT_ANY_FILE 34 /* mem_import takes any regular file */
#define IMPORT_ANY_MEMFD 35 /* mem_import takes anyone's sealed memfd */
#define MAP_ACCESSIBLE 36   /* map opens the range before set_access */

static const symheap_host_services_t *svc;

/* Report a failure the way the contract asks (svc->error), except where
 * the mistake is not to. */
#if BREAK == ERROR_NO_TEXT
#define FAILED(code, ...) ((void)snprintf(NULL, 0, __VA_ARGS__), (code))
#else
#define FAILED(code, ...) svc->error(code, __VA_ARGS__)
#endif

typedef struct {
  size_t page;
  int spare_fd; /* FINI_LEAKS: what fini forgets */
} ctx_t;

/* Handles index a table of memfds (slot i is handle i + 1: never 0). */
#define MAX_MEMS 4096
static struct {
  int fd; /* -1: free slot */
  size_t size;
} mems[MAX_MEMS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init_table(void) {
  for (int i = 0; i < MAX_MEMS; i++)
    mems[i].fd = -1;
}

static symheap_mem_handle_t put(int fd, size_t size) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_MEMS; i++)
    if (mems[i].fd < 0) {
      mems[i].fd = fd;
      mems[i].size = size;
      pthread_mutex_unlock(&lock);
      return (symheap_mem_handle_t)i + (BREAK == HANDLE_ZERO ? 0 : 1);
    }
  pthread_mutex_unlock(&lock);
  return (symheap_mem_handle_t)-1;
}
static int slot(symheap_mem_handle_t h) {
  return (int)h - (BREAK == HANDLE_ZERO ? 0 : 1);
}
static int valid(symheap_mem_handle_t h) {
  return h != (symheap_mem_handle_t)-1 && slot(h) >= 0 && slot(h) < MAX_MEMS &&
         mems[slot(h)].fd >= 0;
}

/* Mappings, for mem_retain and dmabuf_export: which memory backs an
 * address. */
#define MAX_MAPS 4096
static struct {
  char *va; /* NULL: free slot */
  size_t size, offset;
  int fd;
} maps[MAX_MAPS];

static void map_add(char *va, size_t size, int fd, size_t offset) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_MAPS; i++)
    if (!maps[i].va) {
      maps[i].va = va;
      maps[i].size = size;
      maps[i].fd = fd;
      maps[i].offset = offset;
      break;
    }
  pthread_mutex_unlock(&lock);
}
static void map_remove(char *va, size_t size) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_MAPS; i++)
    if (maps[i].va && maps[i].va >= va && maps[i].va < va + size)
      maps[i].va = NULL;
  pthread_mutex_unlock(&lock);
}
/* The mapping holding p, copied out under the lock; -1 if none.  The
 * descriptor is duplicated, since the memory may be released meanwhile. */
static int map_find(const char *p, char **va, size_t *size, size_t *offset) {
  int fd = -1;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_MAPS && fd < 0; i++)
    if (maps[i].va && p >= maps[i].va && p < maps[i].va + maps[i].size) {
      *va = maps[i].va;
      *size = maps[i].size;
      *offset = maps[i].offset;
      fd = fcntl(maps[i].fd, F_DUPFD_CLOEXEC, 0);
    }
  pthread_mutex_unlock(&lock);
  return fd;
}

static int b_available(const symheap_host_services_t *s, char *why,
                       size_t len) {
  (void)s;
  if (BREAK == UNAVAILABLE) {
    snprintf(why, len, "broken adaptor %d: no device here, on purpose", BREAK);
    return 0;
  }
  return 1;
}

static symheap_result_t b_init(const symheap_host_services_t *s,
                               const symheap_device_init_t *args, void **out) {
  (void)s;
  (void)args;
  pthread_once(&once, init_table);
  if (BREAK == AVAILABLE_LIES)
    return FAILED(SYMHEAP_ERR_UNSUPPORTED, "broken: no device after all");
  ctx_t *c = calloc(1, sizeof *c);
  if (!c)
    return FAILED(SYMHEAP_ERR_NO_MEMORY, "broken: out of memory");
  c->page = (size_t)sysconf(_SC_PAGESIZE);
  c->spare_fd =
      BREAK == FINI_LEAKS ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
  *out = c;
  return SYMHEAP_SUCCESS;
}

static void b_fini(void *ctx) { free(ctx); }

static symheap_result_t b_query(void *ctx, symheap_device_caps_t *caps) {
  ctx_t *c = ctx;
  caps->caps = SYMHEAP_CAP_VMM | SYMHEAP_CAP_MAP_PARTIAL;
  if (BREAK != OK_NO_HOST_ACCESS)
    caps->caps |= SYMHEAP_CAP_HOST_ACCESS;
  if (BREAK == CAPS_IPC_NO_OPS)
    caps->caps |= SYMHEAP_CAP_IPC;
  caps->handle_kinds = 1u << SYMHEAP_HANDLE_FD;
  caps->granularity = BREAK == BAD_GRANULARITY ? 3000 : c->page;
  caps->recommended_granularity =
      BREAK == RECOMMENDED_2G ? (size_t)2 << 30 : caps->granularity;
  caps->multicast_granularity = 0;
  if (BREAK == NAME_UNTERMINATED)
    memset(caps->device_name, 'x', sizeof caps->device_name);
  else
    snprintf(caps->device_name, sizeof caps->device_name,
             "cpu (memfd, broken adaptor %d)", BREAK);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t b_mem_create(void *ctx, size_t size,
                                     symheap_mem_handle_t *h) {
  (void)ctx;
  if (BREAK == MEM_CREATE_FAILS)
    return FAILED(SYMHEAP_ERR_NO_MEMORY, "broken: mem_create fails, always");
  if (BREAK == WRITES_STDERR)
    fprintf(stderr, "broken: mem_create(%zu)\n", size);
  int fd = memfd_create("broken", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return FAILED(SYMHEAP_ERR_DEVICE, "memfd_create: %s", strerror(errno));
  if (ftruncate(fd, (off_t)size) != 0) {
    int e = errno;
    close(fd);
    return FAILED(SYMHEAP_ERR_NO_MEMORY, "ftruncate: %s", strerror(e));
  }
  (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
  *h = put(fd, size);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t b_mem_release(void *ctx, symheap_mem_handle_t h) {
  (void)ctx;
  pthread_mutex_lock(&lock);
  if (!valid(h)) {
    pthread_mutex_unlock(&lock);
    return FAILED(SYMHEAP_ERR_INVALID_ARG, "broken: no handle %llu",
                  (unsigned long long)h);
  }
  if (BREAK != RELEASE_LEAKS_FD)
    close(mems[slot(h)].fd);
  mems[slot(h)].fd = -1;
  pthread_mutex_unlock(&lock);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t b_mem_export(void *ctx, symheap_mem_handle_t h,
                                     uint32_t kind, symheap_shareable_t *out) {
  (void)ctx;
  if (BREAK == EXPORT_CRASHES)
    *(volatile int *)(uintptr_t)(h >> 62) = 1; /* h is small: NULL */
  if (kind != SYMHEAP_HANDLE_FD)
    return FAILED(SYMHEAP_ERR_UNSUPPORTED, "broken: descriptors only");
  pthread_mutex_lock(&lock);
  int fd = valid(h) ? mems[slot(h)].fd : -1;
  pthread_mutex_unlock(&lock);
  if (fd < 0)
    return FAILED(SYMHEAP_ERR_INVALID_ARG, "broken: no such handle");
  if (BREAK != EXPORT_NOT_OWNED)
    fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    return FAILED(SYMHEAP_ERR_SYSTEM, "dup: %s", strerror(errno));
  memset(out, 0, sizeof *out);
  out->kind = SYMHEAP_HANDLE_FD;
  out->fd = fd;
  return SYMHEAP_SUCCESS;
}

/* Its own memory only: a memfd named "broken", its size sealed (as the
 * host adaptor does).  Mistakes 34 and 35 skip one part each. */
static int own_memfd(int fd) {
  char path[48], link[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, link, sizeof link - 1);
  int seals = fcntl(fd, F_GET_SEALS);
  if (n < 0)
    return 0;
  link[n] = '\0';
  int sealed = seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
                                 (F_SEAL_SHRINK | F_SEAL_GROW);
  int named = strncmp(link, "/memfd:broken ", 14) == 0;
  if (BREAK == IMPORT_ANY_FILE)
    return 1;
  if (BREAK == IMPORT_ANY_MEMFD)
    return sealed;
  return sealed && named;
}

static symheap_result_t b_mem_import(void *ctx, const symheap_shareable_t *in,
                                     symheap_mem_handle_t *h) {
  (void)ctx;
  struct stat st;
  if (BREAK == IMPORT_ACCEPTS_ANY) {
    *h = put(in->fd, 0);
    return SYMHEAP_SUCCESS;
  }
  if (in->kind != SYMHEAP_HANDLE_FD || in->fd < 0 || fstat(in->fd, &st) != 0 ||
      !S_ISREG(st.st_mode) || !own_memfd(in->fd)) {
    if (BREAK != IMPORT_LEAKS_ON_FAIL && in->kind == SYMHEAP_HANDLE_FD &&
        in->fd >= 0)
      close(in->fd);
    return FAILED(SYMHEAP_ERR_INVALID_ARG,
                  "broken: not a memfd (kind %u, descriptor %d)", in->kind,
                  in->fd);
  }
  *h = put(in->fd, (size_t)st.st_size);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t b_va_reserve(void *ctx, size_t size, size_t align,
                                     void **va) {
  ctx_t *c = ctx;
  int prot = BREAK == RESERVE_ACCESSIBLE ? PROT_READ | PROT_WRITE : PROT_NONE;
  if (align < c->page || BREAK == RESERVE_IGNORES_ALIGN)
    align = c->page;
  if (size > ((size_t)1 << 46))
    return FAILED(SYMHEAP_ERR_NO_MEMORY, "broken: %zu bytes is too much", size);
  size_t span = size + align - c->page;
  char *p = mmap(NULL, span, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED)
    return FAILED(SYMHEAP_ERR_NO_MEMORY, "mmap: %s", strerror(errno));
  uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
  size_t head = start - (uintptr_t)p, tail = span - head - size;
  if (head)
    munmap(p, head);
  if (tail)
    munmap((char *)start + size, tail);
  *va = (void *)start;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t b_va_free(void *ctx, void *va, size_t size) {
  (void)ctx;
  if (BREAK == VA_FREE_LEAKS)
    return SYMHEAP_SUCCESS;
  if (munmap(va, size) != 0)
    return FAILED(SYMHEAP_ERR_DEVICE, "munmap: %s", strerror(errno));
  return SYMHEAP_SUCCESS;
}

/* Mapped, inaccessible until set_access (as on a GPU). */
static symheap_result_t b_map(void *ctx, void *va, size_t size,
                              symheap_mem_handle_t h, size_t offset) {
  (void)ctx;
  pthread_mutex_lock(&lock);
  int fd = valid(h) ? mems[slot(h)].fd : -1;
  size_t whole = valid(h) ? mems[slot(h)].size : 0;
  pthread_mutex_unlock(&lock);
  if (fd < 0)
    return FAILED(SYMHEAP_ERR_INVALID_ARG, "broken: no such handle");
  if (BREAK == PARTIAL_REFUSED && (offset || (whole && size != whole)))
    return FAILED(SYMHEAP_ERR_UNSUPPORTED, "broken: whole allocations only");
  if (BREAK == MAP_IGNORES_OFFSET)
    offset = 0;
  int prot = BREAK == MAP_ACCESSIBLE ? PROT_READ | PROT_WRITE : PROT_NONE;
  if (mmap(va, size, prot, MAP_SHARED | MAP_FIXED, fd, (off_t)offset) ==
      MAP_FAILED)
    return FAILED(SYMHEAP_ERR_DEVICE, "mmap(memfd): %s", strerror(errno));
  map_add(va, size, fd, offset);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t b_unmap(void *ctx, void *va, size_t size) {
  (void)ctx;
  if (BREAK == UNMAP_NOOP)
    return SYMHEAP_SUCCESS;
  map_remove(va, size);
  if (BREAK == UNMAP_MUNMAPS)
    return munmap(va, size) == 0
               ? SYMHEAP_SUCCESS
               : FAILED(SYMHEAP_ERR_DEVICE, "munmap: %s", strerror(errno));
  if (mmap(va, size, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
           0) == MAP_FAILED)
    return FAILED(SYMHEAP_ERR_DEVICE, "mmap(PROT_NONE): %s", strerror(errno));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t b_set_access(void *ctx, void *va, size_t size) {
  (void)ctx;
  if (BREAK == SET_ACCESS_ABORTS)
    abort();
  if (BREAK == SET_ACCESS_NOOP)
    return SYMHEAP_SUCCESS;
  if (mprotect(va, size, PROT_READ | PROT_WRITE) != 0)
    return FAILED(SYMHEAP_ERR_DEVICE, "mprotect: %s", strerror(errno));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t b_mem_zero(void *ctx, void *va, size_t size) {
  (void)ctx;
  while (BREAK == MEM_ZERO_HANGS)
    pause();
  if (BREAK != MEM_ZERO_NOOP)
    memset(va, 0, size);
  return SYMHEAP_SUCCESS;
}

/* The allocation behind a pointer this adaptor mapped: a new handle (a
 * duplicate of the memfd) and the mapping's extent. */
static symheap_result_t b_mem_retain(void *ctx, void *ptr,
                                     symheap_mem_handle_t *h, void **base,
                                     size_t *size) {
  (void)ctx;
  char *va;
  size_t sz, off;
  int fd = map_find(ptr, &va, &sz, &off);
  if (fd < 0)
    return FAILED(BREAK == RETAIN_NOT_UNSUPPORTED ? SYMHEAP_ERR_INVALID_ARG
                                                  : SYMHEAP_ERR_UNSUPPORTED,
                  "broken: %p is not memory this adaptor mapped", ptr);
  *h = put(fd, sz);
  *base = BREAK == RETAIN_WRONG_BASE ? ptr : va;
  *size = sz;
  return SYMHEAP_SUCCESS;
}

/* A memfd is as good as a dma-buf for the kit: a descriptor of the memory,
 * the caller's, and where ptr lies in it. */
static symheap_result_t b_dmabuf_export(void *ctx, void *ptr, size_t size,
                                        int *fd, uint64_t *offset) {
  (void)ctx;
  (void)size;
  char *va;
  size_t sz, off;
  int d = map_find(ptr, &va, &sz, &off);
  if (d < 0)
    return FAILED(SYMHEAP_ERR_INVALID_ARG,
                  "broken: %p is not memory this adaptor mapped", ptr);
  if (BREAK == DMABUF_LEAKS)
    (void)fcntl(d, F_DUPFD_CLOEXEC, 0);
  *fd = d;
  *offset = off + (uint64_t)((char *)ptr - va);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t b_capture_check(void *ctx) {
  (void)ctx;
  if (BREAK == CAPTURE_ALWAYS)
    return FAILED(SYMHEAP_ERR_UNSUPPORTED, "broken: always capturing");
  return SYMHEAP_SUCCESS;
}

static const symheap_device_ops broken_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
#if BREAK == NAME_OVERLONG
    .name = "broken-with-a-name-far-too-long-for-it",
#else
    .name = "broken",
#endif
    .available = b_available,
    .init = b_init,
    .fini = b_fini,
    .query = b_query,
    .mem_create = b_mem_create,
    .mem_release = b_mem_release,
    .mem_export = b_mem_export,
    .mem_import = b_mem_import,
    .va_reserve = b_va_reserve,
    .va_free = b_va_free,
    .map = b_map,
    .unmap = b_unmap,
    .set_access = b_set_access,
    .mem_retain = b_mem_retain,
    .mem_zero = b_mem_zero,
    .capture_check = b_capture_check,
    .dmabuf_export = b_dmabuf_export,
};

SYMHEAP_PLUGIN_DEFINE(broken, svc, .device = &broken_ops);

/* The example vendor plugin: a complete device adaptor in one file, loaded
 * at run time (SYMHEAP_PLUGIN=example).  docs/writing-a-plugin.md walks
 * through it.
 *
 * Its "device" is the CPU, like the built-in host adaptor, but it shares
 * memory the way many vendors' drivers do: through a *name* (bytes), not a
 * file descriptor.  Memory is a POSIX shared-memory object; its shareable
 * handle is the object's name, which the core sends to the peers with the
 * ccl's allgather, and each peer opens the name itself.  That exercises the
 * core's byte-handle path end to end.
 *
 * A plugin talks to symheap only through what it is given: the services
 * table at init (logging, errors, environment), and the types of
 * symheap_adaptor.h.  It does not link libsymheap. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symheap_adaptor.h"


static const symheap_host_services_t *svc; /* from the plugin's init */

/* One piece of memory: its descriptor, its name, and whether this rank made
 * it (the maker removes the name when it lets go). */
typedef struct {
  int fd;
  int owner;
  char name[64];
} mem_t;

typedef struct {
  size_t page;
} ctx_t;

static symheap_mem_handle_t to_handle(mem_t *m) {
  return (symheap_mem_handle_t)(uintptr_t)m;
}
static mem_t *from_handle(symheap_mem_handle_t h) {
  return (mem_t *)(uintptr_t)h;
}

static int ex_available(const symheap_host_services_t *s, char *why,
                        size_t len) {
  (void)s;
  (void)why;
  (void)len;
  return 1; /* POSIX shared memory is always here */
}

static symheap_result_t ex_init(const symheap_host_services_t *s,
                                const symheap_device_init_t *args, void **ctx) {
  (void)args;
  ctx_t *c = calloc(1, sizeof *c);
  if (!c)
    return s->error(SYMHEAP_ERR_NO_MEMORY, "example: out of memory");
  long page = sysconf(_SC_PAGESIZE);
  c->page = page > 0 ? (size_t)page : 4096;
  *ctx = c;
  return SYMHEAP_SUCCESS;
}

static void ex_fini(void *ctx) { free(ctx); }

/* Capabilities, honestly: VMM-style mapping, CPU access, byte handles only,
 * no multicast, no IPC fallback. */
static symheap_result_t ex_query(void *ctx, symheap_device_caps_t *caps) {
  ctx_t *c = ctx;
  caps->caps =
      SYMHEAP_CAP_VMM | SYMHEAP_CAP_HOST_ACCESS | SYMHEAP_CAP_MAP_PARTIAL;
  caps->handle_kinds = 1u << SYMHEAP_HANDLE_BYTES;
  caps->granularity = c->page;
  caps->recommended_granularity = c->page;
  caps->multicast_granularity = 0;
  snprintf(caps->device_name, sizeof caps->device_name,
           "cpu (POSIX shared memory, example plugin)");
  return SYMHEAP_SUCCESS;
}

static symheap_result_t ex_mem_create(void *ctx, size_t size,
                                      symheap_mem_handle_t *out) {
  (void)ctx;
  static unsigned long counter;
  mem_t *m = calloc(1, sizeof *m);
  if (!m)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "example: out of memory");
  snprintf(m->name, sizeof m->name, "/symheap-example-%d-%lu", (int)getpid(),
           __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
  m->fd = shm_open(m->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (m->fd < 0) {
    int e = errno;
    symheap_result_t r = svc->error(
        SYMHEAP_ERR_DEVICE, "example: shm_open(%s): %s", m->name, strerror(e));
    free(m);
    return r;
  }
  if (ftruncate(m->fd, (off_t)size) != 0) {
    int e = errno;
    close(m->fd);
    shm_unlink(m->name);
    free(m);
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "example: ftruncate(%zu): %s",
                      size, strerror(e));
  }
  m->owner = 1;
  *out = to_handle(m);
  return SYMHEAP_SUCCESS;
}

/* Mapped memory lives on after this: only the handle goes. */
static symheap_result_t ex_mem_release(void *ctx, symheap_mem_handle_t h) {
  (void)ctx;
  mem_t *m = from_handle(h);
  if (m->owner)
    shm_unlink(m->name);
  close(m->fd);
  free(m);
  return SYMHEAP_SUCCESS;
}

/* The shareable handle is the name: bytes the core carries to the peers. */
static symheap_result_t ex_mem_export(void *ctx, symheap_mem_handle_t h,
                                      uint32_t kind, symheap_shareable_t *out) {
  (void)ctx;
  if (kind != SYMHEAP_HANDLE_BYTES)
    return svc->error(SYMHEAP_ERR_UNSUPPORTED,
                      "example: exports names (SYMHEAP_HANDLE_BYTES) only");
  mem_t *m = from_handle(h);
  memset(out, 0, sizeof *out);
  out->kind = SYMHEAP_HANDLE_BYTES;
  out->fd = -1;
  out->nbytes = (uint32_t)strlen(m->name) + 1;
  memcpy(out->bytes, m->name, out->nbytes);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t ex_mem_import(void *ctx, const symheap_shareable_t *in,
                                      symheap_mem_handle_t *h) {
  (void)ctx;
  if (in->kind != SYMHEAP_HANDLE_BYTES || in->nbytes < 2 ||
      in->nbytes > sizeof(((mem_t *)0)->name) ||
      in->bytes[in->nbytes - 1] != '\0' || in->bytes[0] != '/')
    return svc->error(SYMHEAP_ERR_INVALID_ARG,
                      "example: a handle that is not one of our names");
  mem_t *m = calloc(1, sizeof *m);
  if (!m)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "example: out of memory");
  memcpy(m->name, in->bytes, in->nbytes);
  m->fd = shm_open(m->name, O_RDWR | O_CLOEXEC, 0);
  if (m->fd < 0) {
    int e = errno;
    free(m);
    return svc->error(SYMHEAP_ERR_DEVICE, "example: shm_open(%s): %s",
                      (const char *)in->bytes, strerror(e));
  }
  *h = to_handle(m);
  return SYMHEAP_SUCCESS;
}

/* Inaccessible address space, aligned as asked. */
static symheap_result_t ex_va_reserve(void *ctx, size_t size, size_t align,
                                      void **va) {
  (void)ctx;
  size_t span = size + align;
  char *p = mmap(NULL, span, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "example: reserve %zu: %s", size,
                      strerror(errno));
  char *start = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
  if (start > p)
    munmap(p, (size_t)(start - p));
  munmap(start + size, (size_t)(p + span - (start + size)));
  *va = start;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t ex_va_free(void *ctx, void *va, size_t size) {
  (void)ctx;
  if (munmap(va, size) != 0)
    return svc->error(SYMHEAP_ERR_DEVICE, "example: munmap: %s",
                      strerror(errno));
  return SYMHEAP_SUCCESS;
}

/* Mapped, but inaccessible until set_access, as on a GPU. */
static symheap_result_t ex_map(void *ctx, void *va, size_t size,
                               symheap_mem_handle_t h, size_t offset) {
  (void)ctx;
  if (mmap(va, size, PROT_NONE, MAP_SHARED | MAP_FIXED, from_handle(h)->fd,
           (off_t)offset) == MAP_FAILED)
    return svc->error(SYMHEAP_ERR_DEVICE, "example: map at %p: %s", va,
                      strerror(errno));
  return SYMHEAP_SUCCESS;
}

/* Back to reserved (inaccessible, no memory behind it). */
static symheap_result_t ex_unmap(void *ctx, void *va, size_t size) {
  (void)ctx;
  if (mmap(va, size, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
           0) == MAP_FAILED)
    return svc->error(SYMHEAP_ERR_DEVICE, "example: unmap at %p: %s", va,
                      strerror(errno));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t ex_set_access(void *ctx, void *va, size_t size) {
  (void)ctx;
  if (mprotect(va, size, PROT_READ | PROT_WRITE) != 0)
    return svc->error(SYMHEAP_ERR_DEVICE, "example: access at %p: %s", va,
                      strerror(errno));
  return SYMHEAP_SUCCESS;
}

/* Lets the comm pad (device signals, collectives' state) be cleared. */
static symheap_result_t ex_mem_zero(void *ctx, void *va, size_t size) {
  (void)ctx;
  memset(va, 0, size);
  return SYMHEAP_SUCCESS;
}

static const symheap_device_ops example_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
    .name = "example",
    .available = ex_available,
    .init = ex_init,
    .fini = ex_fini,
    .query = ex_query,
    .mem_create = ex_mem_create,
    .mem_release = ex_mem_release,
    .mem_export = ex_mem_export,
    .mem_import = ex_mem_import,
    .va_reserve = ex_va_reserve,
    .va_free = ex_va_free,
    .map = ex_map,
    .unmap = ex_unmap,
    .set_access = ex_set_access,
    /* no mem_retain, multicast or IPC: the core answers UNSUPPORTED */
    .mem_zero = ex_mem_zero,
};

static symheap_result_t plugin_init(const symheap_host_services_t *s) {
  svc = s;
  return SYMHEAP_SUCCESS;
}
static void plugin_fini(void) {}

SYMHEAP_PLUGIN_EXPORT const symheap_plugin_t symheap_plugin_v1 = {
    .abi_major = SYMHEAP_PLUGIN_ABI_MAJOR,
    .abi_minor = SYMHEAP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(symheap_plugin_t),
    .name = "example",
    .init = plugin_init,
    .fini = plugin_fini,
    .device = &example_ops,
};

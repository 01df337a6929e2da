/* The example vendor plugin: a complete device adaptor in one file, loaded
 * at run time (SYMHEAP_PLUGIN=example).  docs/writing-a-plugin.md walks
 * through it.
 *
 * Its "device" is the CPU, like the built-in host adaptor, but it shares
 * memory the way many vendors' drivers do: through a *name* (bytes), not a
 * file descriptor.  Memory is an unnamed file in /dev/shm (O_TMPFILE), and
 * its shareable handle is a path that reaches it while its maker lives,
 * /proc/<pid>/fd/<fd>: bytes the core sends to the peers with the ccl's
 * allgather, which each peer opens itself.  Nothing is ever named in
 * /dev/shm, so nothing is left behind when a rank is killed (named shared
 * memory was, 3 MiB per comm).  That exercises the core's byte-handle path
 * end to end.  (Opening another process's /proc/<pid>/fd needs the same
 * rights as ptrace: same user, and no Yama restriction; a vendor's driver
 * would use its own names.)
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
#include <sys/stat.h>
#include <unistd.h>

#include "symheap_adaptor.h"

static const symheap_host_services_t *svc; /* from the plugin's init */

/* One piece of memory: its descriptor. */
typedef struct {
  int fd;
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
  ctx_t *c = calloc(1, sizeof *c);
  if (!c)
    return s->error(SYMHEAP_ERR_NO_MEMORY, "example: out of memory");
  (void)args;
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
  mem_t *m = calloc(1, sizeof *m);
  if (!m)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "example: out of memory");
  m->fd = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (m->fd < 0) {
    int e = errno;
    free(m);
    return svc->error(SYMHEAP_ERR_DEVICE,
                      "example: an unnamed file in /dev/shm: %s", strerror(e));
  }
  if (ftruncate(m->fd, (off_t)size) != 0) {
    int e = errno;
    close(m->fd);
    free(m);
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "example: ftruncate(%zu): %s",
                      size, strerror(e));
  }
  *out = to_handle(m);
  return SYMHEAP_SUCCESS;
}

/* Mapped memory lives on after this: only the handle goes. */
static symheap_result_t ex_mem_release(void *ctx, symheap_mem_handle_t h) {
  (void)ctx;
  mem_t *m = from_handle(h);
  close(m->fd);
  free(m);
  return SYMHEAP_SUCCESS;
}

/* The shareable handle is a path: bytes the core carries to the peers. */
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
  int n = snprintf((char *)out->bytes, sizeof out->bytes, "/proc/%d/fd/%d",
                   (int)getpid(), m->fd);
  out->nbytes = (uint32_t)n + 1;
  return SYMHEAP_SUCCESS;
}

/* A peer's bytes are input: a path of the form we make, to memory of the
 * kind we make (an unnamed regular file), or a refusal. */
static symheap_result_t ex_mem_import(void *ctx, const symheap_shareable_t *in,
                                      symheap_mem_handle_t *h) {
  (void)ctx;
  int pid = 0, fd = 0, used = 0;
  if (in->kind != SYMHEAP_HANDLE_BYTES || in->nbytes < 2 ||
      in->nbytes > sizeof in->bytes || in->bytes[in->nbytes - 1] != '\0' ||
      sscanf((const char *)in->bytes, "/proc/%d/fd/%d%n", &pid, &fd, &used) !=
          2 ||
      (size_t)used + 1 != in->nbytes || pid <= 0 || fd < 0)
    return svc->error(SYMHEAP_ERR_INVALID_ARG,
                      "example: a handle that is not one of our names");
  mem_t *m = calloc(1, sizeof *m);
  if (!m)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "example: out of memory");
  struct stat st;
  m->fd = open((const char *)in->bytes, O_RDWR | O_CLOEXEC);
  int e = errno;
  if (m->fd >= 0 && (fstat(m->fd, &st) != 0 || !S_ISREG(st.st_mode) ||
                     st.st_nlink != 0 || st.st_size == 0)) {
    close(m->fd);
    m->fd = -1;
    e = EINVAL;
  }
  if (m->fd < 0) {
    free(m);
    return svc->error(
        e == EINVAL ? SYMHEAP_ERR_INVALID_ARG : SYMHEAP_ERR_DEVICE,
        "example: %s: %s", (const char *)in->bytes,
        e == EINVAL   ? "not memory this plugin made"
        : e == ENOENT ? "no such memory (its maker exited or released it)"
                      : strerror(e));
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

SYMHEAP_PLUGIN_DEFINE(example, svc, .device = &example_ops);

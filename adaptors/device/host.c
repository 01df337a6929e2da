/* The host device adaptor: the CPU is the device.
 *
 * Physical memory is a memfd; its shareable handle is the file descriptor
 * itself, which the core passes to local peers with SCM_RIGHTS.  Reserved VA
 * is an inaccessible anonymous mapping; map replaces part of it with a
 * MAP_FIXED shared mapping of the memfd, still inaccessible, and set_access
 * opens it to loads and stores, so every peer's memory really is shared and
 * CPU loads and stores communicate through it.
 *
 * Written as a vendor would write an adaptor: the public headers and the
 * host services only.  Copied out of the tree it builds as a plugin:
 *   cc -shared -fPIC -fvisibility=hidden -DSYMHEAP_PLUGIN_BUILD \
 *      $(pkg-config --cflags symheap) host.c -o libmine.so */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create, MAP_* extensions */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symheap_adaptor.h"

typedef struct {
  const symheap_host_services_t *svc;
  size_t page;
} host_t;

/* Handles are fd + 1, so that 0 is never a valid handle. */
static int handle_fd(symheap_mem_handle_t h) { return (int)h - 1; }

/* An mmap that failed with ENOMEM is often the kernel's limit on mappings
 * per process (vm.max_map_count), not memory: say which, with the numbers,
 * since each window costs a mapping per node-local rank. */
static symheap_result_t mmap_failed(host_t *h, int err, const char *what) {
  long limit = 0, count = 0;
  FILE *f = err == ENOMEM ? fopen("/proc/sys/vm/max_map_count", "r") : NULL;
  if (f) {
    if (fscanf(f, "%ld", &limit) != 1)
      limit = 0;
    fclose(f);
  }
  f = limit > 0 ? fopen("/proc/self/maps", "r") : NULL;
  for (int ch; f && (ch = fgetc(f)) != EOF;)
    count += ch == '\n';
  if (f)
    fclose(f);
  if (limit > 0 && count >= limit - 16)
    return h->svc->error(
        SYMHEAP_ERR_NO_MEMORY,
        "%s: this process has %ld memory mappings and the kernel allows "
        "%ld (vm.max_map_count); every window maps each node-local rank's "
        "memory, one mapping each: raise the limit (sysctl -w "
        "vm.max_map_count=%ld) or keep fewer windows",
        what, count, limit, limit * 4);
  return h->svc->error(err == ENOMEM ? SYMHEAP_ERR_NO_MEMORY
                                     : SYMHEAP_ERR_DEVICE,
                       "%s: %s", what, strerror(err));
}

static int host_available(const symheap_host_services_t *svc, char *why,
                          size_t len) {
  (void)svc;
  (void)why;
  (void)len;
  return 1;
}

static symheap_result_t host_init(const symheap_host_services_t *svc,
                                  const symheap_device_init_t *args,
                                  void **ctx) {
  (void)args;
  host_t *h = calloc(1, sizeof *h);
  if (!h)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "host adaptor: out of memory");
  h->svc = svc;
  long page = sysconf(_SC_PAGESIZE);
  h->page = page > 0 ? (size_t)page : 4096;
  *ctx = h;
  return SYMHEAP_SUCCESS;
}

static void host_fini(void *ctx) { free(ctx); }

static symheap_result_t host_query(void *ctx, symheap_device_caps_t *caps) {
  host_t *h = ctx;
  caps->caps =
      SYMHEAP_CAP_VMM | SYMHEAP_CAP_HOST_ACCESS | SYMHEAP_CAP_MAP_PARTIAL;
  caps->handle_kinds = 1u << SYMHEAP_HANDLE_FD;
  caps->granularity = h->page;
  caps->recommended_granularity = h->page;
  caps->multicast_granularity = 0;
  snprintf(caps->device_name, sizeof caps->device_name, "cpu (memfd)");
  return SYMHEAP_SUCCESS;
}

/* This adaptor's memory: a memfd named "symheap", its size sealed.  Only
 * that is imported: a peer's descriptor of any other file (or of someone
 * else's memfd) is refused, and a sealed size cannot be truncated under
 * this rank's mappings (a load beyond the end would be SIGBUS). */
#define HOST_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)
static int host_own_memfd(int fd) {
  char path[48], link[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, link, sizeof link - 1);
  if (n < 0)
    return 0;
  link[n] = '\0';
  int seals = fcntl(fd, F_GET_SEALS);
  return strncmp(link, "/memfd:symheap ", 15) == 0 && seals >= 0 &&
         (seals & HOST_SEALS) == HOST_SEALS;
}

static symheap_result_t host_mem_create(void *ctx, size_t size,
                                        symheap_mem_handle_t *out) {
  host_t *h = ctx;
  int fd = memfd_create("symheap", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  struct rlimit rl;
  if (fd < 0 && errno == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
    return h->svc->error(
        SYMHEAP_ERR_SYSTEM,
        "memfd_create: out of file descriptors: this process may have %llu "
        "open (RLIMIT_NOFILE); each allocation holds one while it lives, and "
        "a registration one per node-local rank while it runs: raise the "
        "limit (ulimit -n)",
        (unsigned long long)rl.rlim_cur);
  if (fd < 0)
    return h->svc->error(errno == EMFILE || errno == ENFILE
                             ? SYMHEAP_ERR_SYSTEM
                             : SYMHEAP_ERR_DEVICE,
                         "memfd_create: %s", strerror(errno));
  if (ftruncate(fd, (off_t)size) != 0) {
    int e = errno;
    close(fd);
    return h->svc->error(e == ENOMEM || e == ENOSPC ? SYMHEAP_ERR_NO_MEMORY
                                                    : SYMHEAP_ERR_DEVICE,
                         "ftruncate(memfd, %zu): %s", size, strerror(e));
  }
  if (fcntl(fd, F_ADD_SEALS, HOST_SEALS) != 0) {
    int e = errno;
    close(fd);
    return h->svc->error(SYMHEAP_ERR_DEVICE, "sealing the memfd's size: %s",
                         strerror(e));
  }
  *out = (symheap_mem_handle_t)fd + 1;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t host_mem_release(void *ctx, symheap_mem_handle_t mh) {
  host_t *h = ctx;
  if (close(handle_fd(mh)) != 0)
    return h->svc->error(SYMHEAP_ERR_DEVICE, "close(memfd %d): %s",
                         handle_fd(mh), strerror(errno));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t host_mem_export(void *ctx, symheap_mem_handle_t mh,
                                        uint32_t kind,
                                        symheap_shareable_t *out) {
  host_t *h = ctx;
  if (kind != SYMHEAP_HANDLE_FD)
    return h->svc->error(SYMHEAP_ERR_UNSUPPORTED,
                         "host adaptor exports file descriptors only");
  int fd = fcntl(handle_fd(mh), F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    return h->svc->error(SYMHEAP_ERR_SYSTEM, "dup(memfd): %s", strerror(errno));
  memset(out, 0, sizeof *out);
  out->kind = SYMHEAP_HANDLE_FD;
  out->fd = fd;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t host_mem_import(void *ctx,
                                        const symheap_shareable_t *in,
                                        symheap_mem_handle_t *out) {
  host_t *h = ctx;
  if (in->kind != SYMHEAP_HANDLE_FD || in->fd < 0) {
    if (in->kind == SYMHEAP_HANDLE_FD && in->fd >= 0)
      close(in->fd);
    return h->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "host adaptor imports file descriptors only");
  }
  struct stat st;
  if (fstat(in->fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      !host_own_memfd(in->fd)) {
    close(in->fd);
    return h->svc->error(SYMHEAP_ERR_REMOTE,
                         "received descriptor is not the host adaptor's "
                         "shared memory (a memfd 'symheap' with its size "
                         "sealed)");
  }
  *out = (symheap_mem_handle_t)in->fd + 1;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t host_va_reserve(void *ctx, size_t size, size_t align,
                                        void **va) {
  host_t *h = ctx;
  if (align < h->page)
    align = h->page;
  size_t span = size + align - h->page;
  char *p = mmap(NULL, span, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    char what[96];
    snprintf(what, sizeof what, "cannot reserve %zu bytes of address space",
             size);
    return mmap_failed(h, errno, what);
  }
  /* Trim to the alignment: give back the head and the tail. */
  uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
  size_t head = start - (uintptr_t)p;
  if (head)
    munmap(p, head);
  size_t tail = span - head - size;
  if (tail)
    munmap((char *)start + size, tail);
  *va = (void *)start;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t host_va_free(void *ctx, void *va, size_t size) {
  host_t *h = ctx;
  if (munmap(va, size) != 0)
    return h->svc->error(SYMHEAP_ERR_DEVICE, "munmap(%p, %zu): %s", va, size,
                         strerror(errno));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t host_map(void *ctx, void *va, size_t size,
                                 symheap_mem_handle_t mh, size_t offset) {
  host_t *h = ctx;
  struct stat st;
  int fd = handle_fd(mh);
  if (fstat(fd, &st) != 0)
    return h->svc->error(SYMHEAP_ERR_DEVICE, "fstat(memfd %d): %s", fd,
                         strerror(errno));
  /* Mapping past the end of a memfd succeeds and then faults on use: refuse
   * it here instead. */
  if ((uint64_t)offset + size > (uint64_t)st.st_size)
    return h->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "map of [%zu, %zu) exceeds the memory's %lld bytes",
                         offset, offset + size, (long long)st.st_size);
  /* Inaccessible until set_access, as the ABI says. */
  void *p =
      mmap(va, size, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, (off_t)offset);
  if (p == MAP_FAILED) {
    char what[96];
    snprintf(what, sizeof what, "mmap(memfd at %p, %zu)", va, size);
    return mmap_failed(h, errno, what);
  }
  return SYMHEAP_SUCCESS;
}

static symheap_result_t host_unmap(void *ctx, void *va, size_t size) {
  host_t *h = ctx;
  /* Put the reservation back rather than munmap, so nothing else can be
   * placed in the hole before va_free. */
  void *p =
      mmap(va, size, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED)
    return h->svc->error(SYMHEAP_ERR_DEVICE, "unmap of %p (%zu bytes): %s", va,
                         size, strerror(errno));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t host_set_access(void *ctx, void *va, size_t size) {
  host_t *h = ctx;
  if (mprotect(va, size, PROT_READ | PROT_WRITE) != 0)
    return h->svc->error(SYMHEAP_ERR_DEVICE, "mprotect(%p, %zu): %s", va, size,
                         strerror(errno));
  return SYMHEAP_SUCCESS;
}

static symheap_result_t host_mem_zero(void *ctx, void *va, size_t size) {
  (void)ctx;
  memset(va, 0, size);
  return SYMHEAP_SUCCESS;
}

/* The device proxy's ring and staging: plain memory, which "the device"
 * (the CPU) reaches at the same address. */
static symheap_result_t host_host_alloc(void *ctx, size_t size, void **host,
                                        void **dev) {
  (void)ctx;
  void *p = calloc(1, size ? size : 1);
  if (!p)
    return SYMHEAP_ERR_NO_MEMORY;
  *host = *dev = p;
  return SYMHEAP_SUCCESS;
}
static symheap_result_t host_host_free(void *ctx, void *host) {
  (void)ctx;
  free(host);
  return SYMHEAP_SUCCESS;
}
static symheap_result_t host_copy_to_host(void *ctx, void *dst,
                                          const void *src, size_t size) {
  (void)ctx;
  memcpy(dst, src, size);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t host_copy_from_host(void *ctx, void *dst,
                                            const void *src, size_t size) {
  (void)ctx;
  memcpy(dst, src, size);
  return SYMHEAP_SUCCESS;
}

static const symheap_device_ops host_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
    .name = "host",
    .available = host_available,
    .init = host_init,
    .fini = host_fini,
    .query = host_query,
    .mem_create = host_mem_create,
    .mem_release = host_mem_release,
    .mem_export = host_mem_export,
    .mem_import = host_mem_import,
    .va_reserve = host_va_reserve,
    .va_free = host_va_free,
    .map = host_map,
    .unmap = host_unmap,
    .set_access = host_set_access,
    .mem_zero = host_mem_zero,
    .host_alloc = host_host_alloc,
    .host_free = host_host_free,
    .copy_to_host = host_copy_to_host,
    .copy_from_host = host_copy_from_host,
};

static symheap_result_t host_plugin_init(const symheap_host_services_t *svc) {
  (void)svc;
  return SYMHEAP_SUCCESS;
}

static void host_plugin_fini(void) {}

SYMHEAP_PLUGIN_ENTRY(host) = {
    .abi_major = SYMHEAP_PLUGIN_ABI_MAJOR,
    .abi_minor = SYMHEAP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(symheap_plugin_t),
    .name = "host",
    .init = host_plugin_init,
    .fini = host_plugin_fini,
    .device = &host_ops,
};

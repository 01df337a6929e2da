/* The verbs calls behind RDMA registration.  Only what registration needs is
 * declared here (the rdma-core ABI: opaque device, context and protection
 * domain; the memory region's public head), so symheap builds without the
 * rdma-core headers and runs without the library. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma_ibverbs.h"

/* struct ibv_mr's stable head (rdma-core verbs.h). */
typedef struct {
  void *context;
  void *pd;
  void *addr;
  size_t length;
  uint32_t handle;
  uint32_t lkey;
  uint32_t rkey;
} ibv_mr_t;

enum {
  IBV_ACCESS_LOCAL_WRITE = 1,
  IBV_ACCESS_REMOTE_WRITE = 2,
  IBV_ACCESS_REMOTE_READ = 4,
  IBV_ACCESS_REMOTE_ATOMIC = 8,
};
#define ACCESS                                                                 \
  (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
   IBV_ACCESS_REMOTE_ATOMIC)

typedef struct {
  void **(*get_device_list)(int *n);
  void (*free_device_list)(void **list);
  const char *(*get_device_name)(void *dev);
  void *(*open_device)(void *dev);
  int (*close_device)(void *ctx);
  void *(*alloc_pd)(void *ctx);
  int (*dealloc_pd)(void *pd);
  ibv_mr_t *(*reg_mr)(void *pd, void *addr, size_t len, int access);
  /* rdma-core 34 and later; NULL before */
  ibv_mr_t *(*reg_dmabuf_mr)(void *pd, uint64_t offset, size_t len,
                             uint64_t iova, int fd, int access);
  int (*dereg_mr)(ibv_mr_t *mr);
} verbs_t;

struct symheap__ibv {
  void *lib;
  verbs_t f;
  void *ctx, *pd;
  char name[64];
};

static symheap_result_t load(const char *library, symheap__ibv_t *v) {
  /* Each comm holds its own reference; dlclose at close drops it. */
  v->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!v->lib)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "no RDMA: cannot load %s (%s); install rdma-core's "
                          "libibverbs, or set SYMHEAP_NET=none",
                          library, dlerror());
  const char *missing = NULL;
#define SYM(field, name)                                                       \
  if (!missing && !(*(void **)&v->f.field = dlsym(v->lib, name)))              \
    missing = name;
  SYM(get_device_list, "ibv_get_device_list")
  SYM(free_device_list, "ibv_free_device_list")
  SYM(get_device_name, "ibv_get_device_name")
  SYM(open_device, "ibv_open_device")
  SYM(close_device, "ibv_close_device")
  SYM(alloc_pd, "ibv_alloc_pd")
  SYM(dealloc_pd, "ibv_dealloc_pd")
  SYM(reg_mr, "ibv_reg_mr")
  SYM(dereg_mr, "ibv_dereg_mr")
#undef SYM
  *(void **)&v->f.reg_dmabuf_mr = dlsym(v->lib, "ibv_reg_dmabuf_mr");
  if (missing)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "no RDMA: %s does not provide %s", library, missing);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t open_device(symheap__ibv_t *v, const char *want) {
  int n = 0;
  errno = 0;
  void **list = v->f.get_device_list(&n);
  if (!list)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "no RDMA device: ibv_get_device_list failed (%s)",
                          strerror(errno ? errno : ENODEV));
  int pick = -1;
  for (int i = 0; i < n && pick < 0; i++) {
    const char *name = v->f.get_device_name(list[i]);
    if (!want || (name && strcmp(name, want) == 0))
      pick = i;
  }
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (pick < 0) {
    r = n == 0 ? symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                                "no RDMA device: libibverbs lists none")
               : symheap__error(SYMHEAP_ERR_INVALID_ARG,
                                "SYMHEAP_IB_DEVICE=%s: no such RDMA device "
                                "(libibverbs lists %d, the first '%s')",
                                want, n, v->f.get_device_name(list[0]));
  } else {
    const char *name = v->f.get_device_name(list[pick]);
    snprintf(v->name, sizeof v->name, "%s", name ? name : "?");
    errno = 0;
    v->ctx = v->f.open_device(list[pick]);
    if (!v->ctx)
      r = symheap__error(SYMHEAP_ERR_DEVICE, "ibv_open_device(%s): %s", v->name,
                         strerror(errno ? errno : EIO));
  }
  v->f.free_device_list(list);
  if (r != SYMHEAP_SUCCESS)
    return r;
  errno = 0;
  v->pd = v->f.alloc_pd(v->ctx);
  if (!v->pd)
    return symheap__error(SYMHEAP_ERR_DEVICE, "ibv_alloc_pd(%s): %s", v->name,
                          strerror(errno ? errno : EIO));
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__ibv_open(const char *library, const char *device,
                                   symheap__ibv_t **out) {
  symheap__ibv_t *v = calloc(1, sizeof *v);
  if (!v)
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "RDMA: no memory");
  symheap_result_t r = load(library, v);
  if (r == SYMHEAP_SUCCESS)
    r = open_device(v, device);
  if (r != SYMHEAP_SUCCESS) {
    SYMHEAP__KEEP_ERROR(symheap__ibv_close(v));
    return r;
  }
  *out = v;
  return SYMHEAP_SUCCESS;
}

void symheap__ibv_close(symheap__ibv_t *v) {
  if (!v)
    return;
  if (v->pd && v->f.dealloc_pd(v->pd) != 0)
    SYMHEAP_WARN("ibv_dealloc_pd(%s) failed (memory regions still "
                 "registered?)",
                 v->name);
  if (v->ctx && v->f.close_device(v->ctx) != 0)
    SYMHEAP_WARN("ibv_close_device(%s) failed", v->name);
  if (v->lib)
    dlclose(v->lib);
  free(v);
}

const char *symheap__ibv_name(const symheap__ibv_t *v) { return v->name; }
void *symheap__ibv_context(const symheap__ibv_t *v) { return v->ctx; }
void *symheap__ibv_pd(const symheap__ibv_t *v) { return v->pd; }

symheap_result_t symheap__ibv_reg(symheap__ibv_t *v, void *addr, size_t len,
                                  int dmabuf_fd, uint64_t dmabuf_offset,
                                  void **mr, uint32_t *lkey, uint32_t *rkey) {
  ibv_mr_t *m;
  errno = 0;
  if (dmabuf_fd < 0) {
    m = v->f.reg_mr(v->pd, addr, len, ACCESS);
  } else if (!v->f.reg_dmabuf_mr) {
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "RDMA registration of device memory needs "
                          "ibv_reg_dmabuf_mr (rdma-core 34 or newer); this "
                          "libibverbs lacks it");
  } else {
    m = v->f.reg_dmabuf_mr(v->pd, dmabuf_offset, len, (uint64_t)(uintptr_t)addr,
                           dmabuf_fd, ACCESS);
  }
  if (!m)
    return symheap__error(SYMHEAP_ERR_DEVICE, "%s of %zu bytes at %p on %s: %s",
                          dmabuf_fd < 0 ? "ibv_reg_mr" : "ibv_reg_dmabuf_mr",
                          len, addr, v->name, strerror(errno ? errno : EIO));
  *mr = m;
  *lkey = m->lkey;
  *rkey = m->rkey;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__ibv_dereg(symheap__ibv_t *v, void *mr) {
  int e = v->f.dereg_mr(mr);
  if (e != 0)
    return symheap__error(SYMHEAP_ERR_DEVICE, "ibv_dereg_mr on %s: %s", v->name,
                          strerror(e > 0 ? e : EIO));
  return SYMHEAP_SUCCESS;
}

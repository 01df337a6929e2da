/* The ibverbs net adaptor: RDMA registration through libibverbs, loaded
 * with dlopen: one device context and protection domain per comm, one
 * memory region per window.  The core (core/win/rdma.c) decides when,
 * through symheap_netops.h; this file only speaks verbs.
 *
 * The verbs calls behind RDMA registration.  Only what registration needs is
 * declared here (the rdma-core ABI: opaque device, context and protection
 * domain; the memory region's public head), so symheap builds without the
 * rdma-core headers and runs without the library. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "symheap_netops.h"

static const symheap_host_services_t *svc;

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

typedef struct {
  void *lib;
  verbs_t f;
  void *ctx, *pd;
  char name[64];
} ibv_t;

static symheap_result_t load(const char *library, ibv_t *v) {
  /* Each comm holds its own reference; dlclose at close drops it. */
  char why[512];
  v->lib = symheap_dl_open(library, why, sizeof why);
  if (!v->lib)
    return svc->error(SYMHEAP_ERR_UNSUPPORTED,
                      "no RDMA: cannot load %s (%s); install rdma-core's "
                      "libibverbs (Debian: libibverbs1), or set "
                      "SYMHEAP_NET=none",
                      library, why);
  const symheap_dl_sym_t syms[] = {
      {(void **)&v->f.get_device_list, "ibv_get_device_list"},
      {(void **)&v->f.free_device_list, "ibv_free_device_list"},
      {(void **)&v->f.get_device_name, "ibv_get_device_name"},
      {(void **)&v->f.open_device, "ibv_open_device"},
      {(void **)&v->f.close_device, "ibv_close_device"},
      {(void **)&v->f.alloc_pd, "ibv_alloc_pd"},
      {(void **)&v->f.dealloc_pd, "ibv_dealloc_pd"},
      {(void **)&v->f.reg_mr, "ibv_reg_mr"},
      {(void **)&v->f.dereg_mr, "ibv_dereg_mr"},
  };
  const char *missing =
      symheap_dl_syms(v->lib, syms, sizeof syms / sizeof syms[0]);
  *(void **)&v->f.reg_dmabuf_mr = symheap_dl_sym(v->lib, "ibv_reg_dmabuf_mr");
  if (missing)
    return svc->error(SYMHEAP_ERR_UNSUPPORTED,
                      "no RDMA: %s does not provide %s", library, missing);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t open_device(ibv_t *v, const char *want) {
  int n = 0;
  errno = 0;
  void **list = v->f.get_device_list(&n);
  if (!list)
    return svc->error(SYMHEAP_ERR_UNSUPPORTED,
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
    r = n == 0 ? svc->error(SYMHEAP_ERR_UNSUPPORTED,
                                "no RDMA device: libibverbs lists none")
               : svc->error(SYMHEAP_ERR_INVALID_ARG,
                                "SYMHEAP_IB_DEVICE=%s: no such RDMA device "
                                "(libibverbs lists %d, the first '%s')",
                                want, n, v->f.get_device_name(list[0]));
  } else {
    const char *name = v->f.get_device_name(list[pick]);
    snprintf(v->name, sizeof v->name, "%s", name ? name : "?");
    errno = 0;
    v->ctx = v->f.open_device(list[pick]);
    if (!v->ctx)
      r = svc->error(SYMHEAP_ERR_DEVICE, "ibv_open_device(%s): %s", v->name,
                         strerror(errno ? errno : EIO));
  }
  v->f.free_device_list(list);
  if (r != SYMHEAP_SUCCESS)
    return r;
  errno = 0;
  v->pd = v->f.alloc_pd(v->ctx);
  if (!v->pd)
    return svc->error(SYMHEAP_ERR_DEVICE, "ibv_alloc_pd(%s): %s", v->name,
                          strerror(errno ? errno : EIO));
  return SYMHEAP_SUCCESS;
}

static void ibv_close(void *ctx) {
  ibv_t *v = ctx;
  if (!v)
    return;
  if (v->pd && v->f.dealloc_pd(v->pd) != 0)
    svc->log(SYMHEAP_LOG_WARN,
             "ibv_dealloc_pd(%s) failed (memory regions still registered?)",
             v->name);
  if (v->ctx && v->f.close_device(v->ctx) != 0)
    svc->log(SYMHEAP_LOG_WARN, "ibv_close_device(%s) failed", v->name);
  symheap_dl_close(v->lib);
  free(v);
}

/* The device SYMHEAP_IB_DEVICE names (unset: the first listed) of the
 * library SYMHEAP_IBVERBS_LIBRARY names, with a protection domain. */
static symheap_result_t ibv_open(void **out) {
  const char *library = NULL, *device = NULL;
  symheap_result_t r = svc->param_get_string("SYMHEAP_IBVERBS_LIBRARY", &library);
  if (r == SYMHEAP_SUCCESS)
    r = svc->param_get_string("SYMHEAP_IB_DEVICE", &device);
  if (r != SYMHEAP_SUCCESS)
    return r;
  ibv_t *v = calloc(1, sizeof *v);
  if (!v)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "RDMA: no memory");
  r = load(library, v);
  if (r == SYMHEAP_SUCCESS)
    r = open_device(v, device);
  if (r != SYMHEAP_SUCCESS) {
    SYMHEAP_KEEP_ERROR(svc, ibv_close(v));
    return r;
  }
  *out = v;
  return SYMHEAP_SUCCESS;
}

static const char *ibv_name(void *ctx) { return ((ibv_t *)ctx)->name; }
static void ibv_native(void *ctx, void **context, void **pd) {
  *context = ((ibv_t *)ctx)->ctx;
  *pd = ((ibv_t *)ctx)->pd;
}

static symheap_result_t ibv_reg(void *ctx, void *addr, size_t len,
                                int dmabuf_fd, uint64_t dmabuf_offset,
                                void **mr, uint32_t *lkey, uint32_t *rkey) {
  ibv_t *v = ctx;
  ibv_mr_t *m;
  errno = 0;
  if (dmabuf_fd < 0) {
    m = v->f.reg_mr(v->pd, addr, len, ACCESS);
  } else if (!v->f.reg_dmabuf_mr) {
    return svc->error(SYMHEAP_ERR_UNSUPPORTED,
                          "RDMA registration of device memory needs "
                          "ibv_reg_dmabuf_mr (rdma-core 34 or newer); this "
                          "libibverbs lacks it");
  } else {
    m = v->f.reg_dmabuf_mr(v->pd, dmabuf_offset, len, (uint64_t)(uintptr_t)addr,
                           dmabuf_fd, ACCESS);
  }
  if (!m)
    return svc->error(SYMHEAP_ERR_DEVICE, "%s of %zu bytes at %p on %s: %s",
                          dmabuf_fd < 0 ? "ibv_reg_mr" : "ibv_reg_dmabuf_mr",
                          len, addr, v->name, strerror(errno ? errno : EIO));
  *mr = m;
  *lkey = m->lkey;
  *rkey = m->rkey;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t ibv_dereg(void *ctx, void *mr) {
  ibv_t *v = ctx;
  int e = v->f.dereg_mr(mr);
  if (e != 0)
    return svc->error(SYMHEAP_ERR_DEVICE, "ibv_dereg_mr on %s: %s", v->name,
                          strerror(e > 0 ? e : EIO));
  return SYMHEAP_SUCCESS;
}

static const symheap_param_t ibv_params[] = {
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_IBVERBS_LIBRARY",
     "libibverbs.so.1", 0, 0, NULL,
     "the verbs library loaded with dlopen for RDMA registration (a name "
     "searched the usual way, or a path)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_IB_DEVICE", NULL,
     0, 0, NULL,
     "the RDMA device windows are registered with (e.g. mlx5_0); unset: the "
     "first one libibverbs lists"},
};

static symheap_result_t ibv_init(const symheap_host_services_t *s) {
  svc = s;
  return symheap_params_define(s, "ibverbs", ibv_params,
                               sizeof ibv_params / sizeof ibv_params[0]);
}

SYMHEAP_NET_ENTRY(ibverbs) = {
    .name = "ibverbs",
    .init = ibv_init,
    .open = ibv_open,
    .close = ibv_close,
    .device_name = ibv_name,
    .native = ibv_native,
    .reg_mr = ibv_reg,
    .dereg_mr = ibv_dereg,
};

/* The nccl ccl adaptor: NCCL's window path, one provider of
 * core/win/window_vendor.c.  NCCL maps a
 * symmetric window into its own flat range: rank i of the LSA team (the ranks
 * one NVLink domain reaches) at lsaFlatBase + i * stride4G * 4 GiB.  NCCL 2.28
 * answers that only in device code (ncclGetLsaPointer), from the window object
 * it keeps in device memory, so the host reads the object's public head
 * (nccl_device/impl/ core__types.h) once per registration.  The view that
 * results has the same shape as symheap's own, so kernels cannot tell the paths
 * apart.  Also here: the ccl over a caller's NCCL communicator, which
 * symheap_comm_init_nccl makes a comm of (the ccl table's wrap).
 *
 * An adaptor like the others: the public headers, the services the core
 * lends, and the agreement path_open is handed.  Its CUDA calls go through
 * the driver loader the cuda adaptor uses too (adaptors/common/). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "dl.h"
#include "symheap_adaptor.h"

static const symheap_host_services_t *svc;

#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_ID_BYTES 128
/* NCCL 2.28 introduced the window head read here. */
#define NCCL_MIN_VERSION 22800

typedef struct {
  char internal[NCCL_ID_BYTES];
} nccl_id_t;

/* struct ncclWindow_vidmem's head as of NCCL 2.28. */
typedef struct {
  void *win_host;
  char *lsa_flat_base;
  int lsa_rank;
  int world_rank;
  uint32_t stride4g;
} nccl_win_head_t;

typedef struct {
  int (*get_version)(int *v);
  int (*get_unique_id)(nccl_id_t *id);
  int (*comm_init_rank)(void **comm, int n, nccl_id_t id, int rank);
  int (*comm_destroy)(void *comm);
  int (*window_register)(void *comm, void *buf, size_t size, void **win,
                         int flags);
  int (*window_deregister)(void *comm, void *win);
  const char *(*get_error_string)(int r);
  /* for the ccl adaptor over a caller's communicator */
  int (*user_rank)(void *comm, int *rank);
  int (*count)(void *comm, int *n);
  int (*all_gather)(const void *in, void *out, size_t count, int type,
                    void *comm, void *stream);
  int (*get_async_error)(void *comm, int *err);
} nccl_lib_t;

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static nccl_lib_t lib;
static int lib_version;

static symheap_result_t nccl_fail(const char *fn, int e) {
  return svc->error(SYMHEAP_ERR_DEVICE, "%s failed: NCCL error %d (%s)", fn,
                        e,
                        lib.get_error_string ? lib.get_error_string(e) : "?");
}

/* Once per process, never unloaded (NCCL keeps threads of its own). */
static symheap_result_t load(void) {
  pthread_mutex_lock(&lib_lock);
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (!lib.window_register) {
    const char *path = NULL;
    char why[512];
    r = svc->param_get_string("SYMHEAP_NCCL_LIBRARY", &path);
    void *dl =
        r == SYMHEAP_SUCCESS ? symheap_dl_open(path, why, sizeof why) : NULL;
    if (r == SYMHEAP_SUCCESS && !dl)
      r = svc->error(SYMHEAP_ERR_UNSUPPORTED,
                     "NCCL: cannot load %s (%s; Debian: libnccl2)", path, why);
    nccl_lib_t l;
    memset(&l, 0, sizeof l);
    const symheap_dl_sym_t syms[] = {
        {(void **)&l.get_version, "ncclGetVersion"},
        {(void **)&l.get_unique_id, "ncclGetUniqueId"},
        {(void **)&l.comm_init_rank, "ncclCommInitRank"},
        {(void **)&l.comm_destroy, "ncclCommDestroy"},
        {(void **)&l.window_register, "ncclCommWindowRegister"},
        {(void **)&l.window_deregister, "ncclCommWindowDeregister"},
        {(void **)&l.get_error_string, "ncclGetErrorString"},
        {(void **)&l.user_rank, "ncclCommUserRank"},
        {(void **)&l.count, "ncclCommCount"},
        {(void **)&l.all_gather, "ncclAllGather"},
        {(void **)&l.get_async_error, "ncclCommGetAsyncError"},
    };
    const char *missing =
        dl ? symheap_dl_syms(dl, syms, sizeof syms / sizeof syms[0]) : NULL;
    int v = 0;
    if (dl && missing)
      r = svc->error(SYMHEAP_ERR_UNSUPPORTED,
                     "NCCL: %s has no %s (NCCL 2.28 or newer is needed)", path,
                     missing);
    else if (dl && (l.get_version(&v) != 0 || v < NCCL_MIN_VERSION))
      r = svc->error(SYMHEAP_ERR_UNSUPPORTED,
                     "NCCL: %s is version code %d; symheap needs %d "
                     "(2.28) or newer",
                     path, v, NCCL_MIN_VERSION);
    if (r == SYMHEAP_SUCCESS) {
      lib = l;
      lib_version = v;
    } else {
      symheap_dl_close(dl);
    }
  }
  pthread_mutex_unlock(&lib_lock);
  return r;
}

typedef struct {
  void *comm; /* ncclComm_t */
  int rank;
} nccl_ctx_t;

static void nccl_close(void *ctx) {
  nccl_ctx_t *n = ctx;
  if (n->comm) {
    int e = lib.comm_destroy(n->comm);
    if (e != 0)
      svc->log(SYMHEAP_LOG_WARN, "ncclCommDestroy: NCCL error %d (%s)", e,
               lib.get_error_string(e));
  }
  free(n);
}

/* NCCL's mapping as a flat range: where this window's rank-0 copy is, and
 * the distance between ranks.  The object is in device memory. */
static symheap_result_t read_head(const nccl_ctx_t *n, void *win,
                                  nccl_win_head_t *h) {
  CU_TRY(cuMemcpyDtoH(h, (cu_deviceptr_t)(uintptr_t)win, sizeof *h));
  if (!h->lsa_flat_base || h->stride4g == 0 || h->lsa_rank != n->rank ||
      h->world_rank != n->rank)
    return svc->error(SYMHEAP_ERR_UNSUPPORTED,
                          "NCCL window of rank %d: LSA rank %d, world rank "
                          "%d, flat base %p, stride %u x 4 GiB: not the "
                          "layout this symheap reads (NCCL version code %d)",
                          n->rank, h->lsa_rank, h->world_rank,
                          (void *)h->lsa_flat_base, h->stride4g, lib_version);
  return SYMHEAP_SUCCESS;
}

static symheap_result_t nccl_register(void *ctx, void *ptr, size_t size,
                                      symheap_vendor_window_t *out) {
  nccl_ctx_t *n = ctx;
  void *win = NULL;
  int e =
      lib.window_register(n->comm, ptr, size, &win, NCCL_WIN_COLL_SYMMETRIC);
  if (e != 0)
    return nccl_fail("ncclCommWindowRegister", e);
  nccl_win_head_t h;
  memset(&h, 0, sizeof h);
  symheap_result_t r =
      win ? read_head(n, win, &h)
          : svc->error(SYMHEAP_ERR_DEVICE,
                           "ncclCommWindowRegister returned no window");
  if (r != SYMHEAP_SUCCESS) {
    if (win)
      (void)lib.window_deregister(n->comm, win);
    return r;
  }
  out->handle = win;
  out->flat_base = h.lsa_flat_base;
  out->stride = (uint64_t)h.stride4g << 32;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t nccl_deregister(void *ctx, void *handle) {
  nccl_ctx_t *n = ctx;
  int e = lib.window_deregister(n->comm, handle);
  return e == 0 ? SYMHEAP_SUCCESS : nccl_fail("ncclCommWindowDeregister", e);
}

/* --- A ccl adaptor over the caller's NCCL communicator --------------------
 * symheap_comm_init_nccl: rank and size from NCCL; the setup bytes go
 * through ncclAllGather on a small device buffer and a private stream,
 * polled against the timeout; windows (SYMHEAP_WINDOW_PATH=nccl or ccl) are
 * that communicator's symmetric windows. */
#define NCCL_UINT8 1 /* ncclUint8 */

typedef struct {
  nccl_ctx_t win; /* the communicator (the caller's) and our rank */
  int n;
  cu_context_t cu; /* the context current when the comm was made */
  cu_stream_t stream;
  cu_deviceptr_t buf; /* (n + 1) * cap bytes: this rank's, then all */
  size_t cap;
} nccl_ccl_t;

static int ccl_rank(void *ctx) { return ((nccl_ccl_t *)ctx)->win.rank; }
static int ccl_size(void *ctx) { return ((nccl_ccl_t *)ctx)->n; }

static symheap_result_t ccl_grow(nccl_ccl_t *x, size_t bytes) {
  if (bytes <= x->cap)
    return SYMHEAP_SUCCESS;
  size_t cap = bytes < 4096 ? 4096 : bytes;
  cu_deviceptr_t b = 0;
  CU_TRY(cuMemAlloc(&b, cap * (size_t)(x->n + 1)));
  if (x->buf)
    (void)symheap_cu.cuMemFree(x->buf);
  x->buf = b;
  x->cap = cap;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t ccl_allgather(void *ctx, const void *in, void *out,
                                      size_t bytes, int timeout_ms) {
  nccl_ccl_t *x = ctx;
  cu_context_t prev = NULL;
  CU_TRY(cuCtxGetCurrent(&prev));
  CU_TRY(cuCtxSetCurrent(x->cu));
  symheap_result_t r = ccl_grow(x, bytes);
  cu_result_t e = CU_OK;
  if (r == SYMHEAP_SUCCESS &&
      (e = symheap_cu.cuMemcpyHtoD(x->buf, in, bytes)) != CU_OK)
    r = symheap_cu_fail("cuMemcpyHtoD", e);
  if (r == SYMHEAP_SUCCESS) {
    int ne = lib.all_gather((void *)(uintptr_t)x->buf,
                            (void *)(uintptr_t)(x->buf + x->cap), bytes,
                            NCCL_UINT8, x->win.comm, x->stream);
    if (ne != 0)
      r = nccl_fail("ncclAllGather", ne);
  }
  /* Poll: NCCL's own waits have no timeout. */
  uint64_t deadline = svc->now_ns() + (uint64_t)timeout_ms * 1000000u;
  while (r == SYMHEAP_SUCCESS &&
         (e = symheap_cu.cuStreamQuery(x->stream)) == CU_ERR_NOT_READY) {
    int async = 0;
    if (lib.get_async_error(x->win.comm, &async) == 0 && async != 0 &&
        async != 7 /* ncclInProgress */)
      r = nccl_fail("ncclAllGather (asynchronous)", async);
    else if (svc->now_ns() > deadline)
      r = svc->error(SYMHEAP_ERR_TIMEOUT,
                         "ncclAllGather did not complete within %d ms (a "
                         "rank did not arrive)",
                         timeout_ms);
  }
  if (r == SYMHEAP_SUCCESS && e != CU_OK)
    r = symheap_cu_fail("cuStreamQuery", e);
  /* Rank p's bytes sit at p * bytes of the gathered part. */
  if (r == SYMHEAP_SUCCESS &&
      (e = symheap_cu.cuMemcpyDtoH(out, x->buf + x->cap,
                                   bytes * (size_t)x->n)) != CU_OK)
    r = symheap_cu_fail("cuMemcpyDtoH", e);
  (void)symheap_cu.cuCtxSetCurrent(prev);
  return r;
}

static void ccl_fini(void *ctx) {
  nccl_ccl_t *x = ctx;
  cu_context_t prev = NULL;
  if (symheap_cu.cuCtxGetCurrent(&prev) == CU_OK &&
      symheap_cu.cuCtxSetCurrent(x->cu) == CU_OK) {
    if (x->buf)
      (void)symheap_cu.cuMemFree(x->buf);
    if (x->stream)
      (void)symheap_cu.cuStreamDestroy(x->stream);
    (void)symheap_cu.cuCtxSetCurrent(prev);
  }
  free(x);
}

static symheap_result_t ccl_window_register(void *ctx, void *ptr, size_t size,
                                            symheap_vendor_window_t *out) {
  return nccl_register(&((nccl_ccl_t *)ctx)->win, ptr, size, out);
}
static symheap_result_t ccl_window_deregister(void *ctx, void *handle) {
  return nccl_deregister(&((nccl_ccl_t *)ctx)->win, handle);
}

/* The ccl over a caller's communicator (symheap_comm_init_nccl): fini is
 * set, so the context is the comm's from here on, freed at destroy or
 * failure; the NCCL communicator stays the caller's. */
static symheap_result_t ccl_wrap(const symheap_host_services_t *s,
                                 void *nccl_comm, void **ctx) {
  (void)s;
  symheap_result_t r = load();
  if (r == SYMHEAP_SUCCESS)
    r = symheap_cu_load();
  if (r != SYMHEAP_SUCCESS)
    return r;
  nccl_ccl_t *x = calloc(1, sizeof *x);
  if (!x)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "no memory");
  x->win.comm = nccl_comm;
  int e = lib.user_rank(nccl_comm, &x->win.rank);
  if (e == 0)
    e = lib.count(nccl_comm, &x->n);
  cu_result_t ce = CU_OK;
  if (e != 0)
    r = nccl_fail("ncclCommUserRank/ncclCommCount", e);
  else if ((ce = symheap_cu.cuCtxGetCurrent(&x->cu)) != CU_OK || !x->cu)
    r = svc->error(SYMHEAP_ERR_INVALID_ARG,
                   "no CUDA context is current; make the NCCL "
                   "communicator's device current first");
  else if ((ce = symheap_cu.cuStreamCreate(
                &x->stream, CU_STREAM_FLAG_NON_BLOCKING)) != CU_OK)
    r = symheap_cu_fail("cuStreamCreate", ce);
  if (r != SYMHEAP_SUCCESS) {
    ccl_fini(x);
    return r;
  }
  *ctx = x;
  return SYMHEAP_SUCCESS;
}

/* Why this comm cannot have NCCL's windows, or SUCCESS. */
static symheap_result_t path_check(const symheap_path_env_t *env) {
  if (strcmp(env->device, "cuda") != 0)
    return svc->error(SYMHEAP_ERR_UNSUPPORTED,
                      "SYMHEAP_WINDOW_PATH=nccl needs the cuda device "
                      "adaptor; this comm uses '%s'",
                      env->device);
  if (env->local_nranks != env->nranks)
    return svc->error(SYMHEAP_ERR_UNSUPPORTED,
                      "SYMHEAP_WINDOW_PATH=nccl: the comm spans %d hosts; "
                      "NCCL's symmetric windows map one host's ranks here "
                      "(use a comm of symheap_comm_split_local)",
                      env->nhosts);
  return load();
}

static void path_close(void *ctx) { nccl_close(ctx); }

/* Collective: an NCCL communicator of the comm's ranks, rank 0's id handed
 * to every rank in the agreement's payload. */
static symheap_result_t path_open(const symheap_host_services_t *s,
                                  const symheap_path_env_t *env, void **ctx) {
  (void)s;
  symheap_result_t r = path_check(env);
  nccl_id_t id;
  memset(&id, 0, sizeof id);
  if (r == SYMHEAP_SUCCESS && env->rank == 0) {
    int e = lib.get_unique_id(&id);
    if (e != 0)
      r = nccl_fail("ncclGetUniqueId", e);
  }
  _Static_assert(sizeof(nccl_id_t) <= 256, "id fits an agreement");
  nccl_id_t *ids = malloc(sizeof *ids * (size_t)env->nranks);
  nccl_ctx_t *n = calloc(1, sizeof *n);
  if ((!ids || !n) && r == SYMHEAP_SUCCESS)
    r = svc->error(SYMHEAP_ERR_NO_MEMORY, "NCCL path: no memory");
  r = env->agree(env->arg, r, &id, sizeof id, ids);
  if (r == SYMHEAP_SUCCESS) {
    n->rank = env->rank;
    int e = lib.comm_init_rank(&n->comm, env->nranks, ids[0], env->rank);
    if (e != 0) {
      n->comm = NULL;
      r = nccl_fail("ncclCommInitRank", e);
    }
  }
  free(ids);
  r = env->agree(env->arg, r, NULL, 0, NULL);
  if (r != SYMHEAP_SUCCESS) {
    if (n)
      nccl_close(n);
    return svc->error_context(r, "SYMHEAP_WINDOW_PATH=nccl");
  }
  svc->log(SYMHEAP_LOG_INFO,
           "window path: NCCL %d.%d.%d symmetric windows "
           "(ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC)",
           lib_version / 10000, lib_version / 100 % 100, lib_version % 100);
  *ctx = n;
  return SYMHEAP_SUCCESS;
}

/* The path's registrations take its own context (path_open's), the ccl's
 * take the ccl's: both start with the communicator and the rank. */
static const symheap_ccl_ops nccl_ccl_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_ccl_ops),
    .name = "nccl",
    .rank = ccl_rank,
    .size = ccl_size,
    .allgather = ccl_allgather,
    .fini = ccl_fini,
    .window_register = ccl_window_register,
    .window_deregister = ccl_window_deregister,
    .path_open = path_open,
    .path_close = path_close,
    .wrap = ccl_wrap,
};

static const symheap_param_t nccl_params[] = {
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_NCCL_LIBRARY",
     "libnccl.so.2", 0, 0, NULL,
     "the NCCL library loaded with dlopen for SYMHEAP_WINDOW_PATH=nccl"},
};

static symheap_result_t nccl_plugin_init(const symheap_host_services_t *s) {
  svc = s;
  if (!symheap_cu_svc) /* the driver loader reports through the services */
    symheap_cu_svc = s;
  return symheap_params_define(s, "nccl", nccl_params,
                               sizeof nccl_params / sizeof nccl_params[0]);
}

static void nccl_plugin_fini(void) {}

SYMHEAP_PLUGIN_ENTRY(nccl) = {
    .abi_major = SYMHEAP_PLUGIN_ABI_MAJOR,
    .abi_minor = SYMHEAP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(symheap_plugin_t),
    .name = "nccl",
    .init = nccl_plugin_init,
    .fini = nccl_plugin_fini,
    .ccl = &nccl_ccl_ops,
};

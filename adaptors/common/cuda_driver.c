/* Loading the CUDA driver: dlopen, then every entry point through
 * cuGetProcAddress at the version CU_FUNCS pins, once per process. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_driver.h"
#include "dl.h"

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
cu_lib_t symheap_cu;
const symheap_host_services_t *symheap_cu_svc;
static void *lib_handle;
static char lib_path[256];
static char lib_error[512];

/* Load and resolve once per process.  A failed load is retried only for
 * another path (tests point SYMHEAP_CUDA_LIBRARY elsewhere). */
static symheap_result_t load_locked(const char *path) {
  if (lib_handle && strcmp(path, lib_path) == 0)
    return SYMHEAP_SUCCESS;
  if (lib_handle)
    return symheap_cu_svc->error(
        SYMHEAP_ERR_INVALID_ARG,
        "the CUDA driver %s is already loaded in this "
        "process; SYMHEAP_CUDA_LIBRARY=%s cannot replace it",
        lib_path, path);
  if (lib_error[0] && strcmp(path, lib_path) == 0)
    return symheap_cu_svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  snprintf(lib_path, sizeof lib_path, "%s", path);
  cu_lib_t l;
  memset(&l, 0, sizeof l);
  char why[384];
  void *h = symheap_dl_open(path, why, sizeof why);
  if (!h) {
    snprintf(lib_error, sizeof lib_error, "cannot load the CUDA driver %s: %s",
             path, why);
    return symheap_cu_svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  }
  cu_get_proc_address_t gpa =
      (cu_get_proc_address_t)symheap_dl_sym(h, "cuGetProcAddress_v2");
  if (!gpa) {
    snprintf(lib_error, sizeof lib_error,
             "the CUDA driver %s has no cuGetProcAddress_v2: it is older than "
             "CUDA 12.0, which symheap needs",
             path);
    symheap_dl_close(h);
    return symheap_cu_svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  }
  int status = 0;
  const char *missing = NULL;
#define X(name, ver, params)                                                   \
  if (!missing &&                                                              \
      (gpa(#name, (void **)&l.name, ver, 0, &status) != CU_OK || !l.name))     \
    missing = #name;
  CU_FUNCS(X)
#undef X
  if (!missing && l.cuDriverGetVersion(&l.driver_version) != CU_OK)
    missing = "cuDriverGetVersion";
  if (missing) {
    snprintf(lib_error, sizeof lib_error,
             "the CUDA driver %s does not provide %s", path, missing);
    symheap_dl_close(h);
    return symheap_cu_svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  }
  if (l.driver_version < 12000) {
    snprintf(lib_error, sizeof lib_error,
             "the CUDA driver %s is version %d.%d; symheap needs 12.0 or newer",
             path, l.driver_version / 1000, l.driver_version % 1000 / 10);
    symheap_dl_close(h);
    return symheap_cu_svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  }
  l.have_mc = l.driver_version >= 12010;
#define X(name, ver, params)                                                   \
  if (l.have_mc &&                                                             \
      (gpa(#name, (void **)&l.name, ver, 0, &status) != CU_OK || !l.name))     \
    l.have_mc = 0;
  CU_MC_FUNCS(X)
#undef X
  cu_result_t e = l.cuInit(0);
  if (e != CU_OK) {
    const char *name = "?";
    l.cuGetErrorName(e, &name);
    snprintf(lib_error, sizeof lib_error, "cuInit failed: %s (%d)", name, e);
    symheap_dl_close(h);
    return symheap_cu_svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", lib_error);
  }
  symheap_cu = l;
  lib_handle = h;
  lib_error[0] = '\0';
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap_cu_load(void) {
  const char *path;
  symheap_result_t r =
      symheap_cu_svc->param_get_string("SYMHEAP_CUDA_LIBRARY", &path);
  if (r != SYMHEAP_SUCCESS)
    return r;
  pthread_mutex_lock(&lib_lock);
  r = load_locked(path);
  pthread_mutex_unlock(&lib_lock);
  return r;
}

/* Turn a driver error into ours, with the driver's own words. */
symheap_result_t symheap_cu_fail(const char *fn, cu_result_t e) {
  const char *name = "?", *text = "?";
  if (symheap_cu.cuGetErrorName)
    symheap_cu.cuGetErrorName(e, &name);
  if (symheap_cu.cuGetErrorString)
    symheap_cu.cuGetErrorString(e, &text);
  symheap_result_t r = e == CU_ERR_OUT_OF_MEMORY   ? SYMHEAP_ERR_NO_MEMORY
                       : e == CU_ERR_NOT_SUPPORTED ? SYMHEAP_ERR_UNSUPPORTED
                                                   : SYMHEAP_ERR_DEVICE;
  return symheap_cu_svc->error(r, "%s failed: %s (%d): %s", fn, name, e, text);
}

/* The CUDA driver as the cuda adaptor sees it (cuda_driver.c). */
#ifndef SYMHEAP_CUDA_DRIVER_H
#define SYMHEAP_CUDA_DRIVER_H

#include "cuda_api.h"
#include "symheap_adaptor.h"

typedef struct {
#define X(name, ver, params) cu_result_t(*name) params;
  CU_FUNCS(X)
  CU_MC_FUNCS(X)
#undef X
  int driver_version;
  int have_mc; /* multicast entry points resolved (driver 12.1+) */
} cu_lib_t;

/* Valid once symheap_cu_load has succeeded. */
extern cu_lib_t symheap_cu;
/* The core's services, set by the plugin's init before anything else. */
extern const symheap_host_services_t *symheap_cu_svc;

/* Load SYMHEAP_CUDA_LIBRARY (default libcuda.so.1) and resolve everything;
 * UNSUPPORTED with the reason when there is no usable driver. */
symheap_result_t symheap_cu_load(void);

/* A driver error as ours, with the driver's own words. */
symheap_result_t symheap_cu_fail(const char *fn, cu_result_t e);

#define CU_TRY(call)                                                           \
  do {                                                                         \
    cu_result_t e_ = symheap_cu.call;                                          \
    if (e_ != CU_OK)                                                           \
      return symheap_cu_fail(#call, e_);                                       \
  } while (0)

#endif

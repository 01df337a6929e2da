/* Control interface of the fake CUDA driver (test/fake_cuda/fake_cuda.c),
 * reached by tests with dlsym on the loaded libcuda.so.1. */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <stddef.h>

typedef struct {
  int handles;      /* live allocation and multicast handles */
  int mappings;     /* live cuMemMap mappings */
  int reservations; /* live cuMemAddressReserve ranges */
  int mc_objects;   /* live multicast objects */
  int ipc_opened;   /* cuIpcOpenMemHandle mappings open */
  int allocs;       /* cuMemAlloc blocks */
  int streams;      /* cuStreamCreate streams not destroyed */
  int host_allocs;  /* cuMemHostAlloc blocks */
} fake_cuda_live_t;

/* Fail the nth (1-based) call of `fn` made while device `dev` is current
 * with CUDA error `err`; fn NULL clears it. */
typedef void (*fake_cuda_set_fault_t)(const char *fn, int dev, int nth,
                                      int err);
/* Pretend a graph capture is in progress on device `dev`: 0 none, 1 a
 * blocking stream, 2 the per-thread default stream. */
typedef void (*fake_cuda_set_capturing_t)(int dev, int mode);
/* Counts of live objects, so tests can prove nothing leaked. */
typedef void (*fake_cuda_live_fn_t)(fake_cuda_live_t *out);
/* The call log ("fn@dev,..."); reset clears it. */
typedef const char *(*fake_cuda_log_t)(void);
typedef void (*fake_cuda_log_reset_t)(void);

#endif

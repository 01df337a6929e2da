/* Control interface of the fake HIP runtime (fake_hip.c), reached by tests
 * with dlsym on the loaded libamdhip64.so. */
#ifndef FAKE_HIP_H
#define FAKE_HIP_H

typedef struct {
  int handles;      /* live memory handles */
  int mappings;     /* live hipMemMap mappings */
  int reservations; /* live hipMemAddressReserve ranges */
  int allocs;       /* hipMalloc blocks */
  int ipc_opened;   /* hipIpcOpenMemHandle mappings open */
  int streams;      /* streams not destroyed */
} fake_hip_live_t;

/* Fail the nth (1-based) call of fn made while device dev is current, with
 * hipErrorOutOfMemory; fn NULL clears it. */
typedef void (*fake_hip_set_fault_t)(const char *fn, int dev, int nth);
typedef void (*fake_hip_live_fn_t)(fake_hip_live_t *out);

#endif

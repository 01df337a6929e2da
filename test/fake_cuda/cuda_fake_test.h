/* What the files of test_cuda_fake share: the fake driver's control entry
 * points (resolved by main, test_cuda_fake.c) and the cases by file. */
#ifndef SYMHEAP_TEST_CUDA_FAKE_H
#define SYMHEAP_TEST_CUDA_FAKE_H

#include <stdio.h>

#include "../../adaptors/common/cuda_api.h"
#include "../harness.h"
#include "fake_cuda.h"

typedef struct {
  unsigned flags;
  int injected;
  int heap; /* sweep the heap's growth (trimmed between tries) */
} sweep_t;

extern fake_cuda_live_fn_t live;
extern cu_result_t (*mem_alloc)(cu_deviceptr_t *, size_t);
extern cu_result_t (*mem_free)(cu_deviceptr_t);
extern fake_cuda_log_reset_t log_reset;
extern fake_cuda_set_fault_t set_fault;
extern fake_cuda_set_capturing_t set_capturing;
extern fake_cuda_log_t call_log;
extern cu_get_proc_address_t gpa;
int count_calls(const char *log, const char *fn, int dev);
void trim(th_ctx_t *c, const sweep_t *sw);
void sweep(th_ctx_t *c, void *arg);
void mc_sequence(th_ctx_t *c, void *arg);
void mc_refused(th_ctx_t *c, void *arg);
void foreign_vmm(th_ctx_t *c, void *arg);
void asym_threads(th_ctx_t *c, void *arg);
void asym_processes(void);
void capture_refused(th_ctx_t *c, void *arg);
void capture_heap(th_ctx_t *c, void *arg);
void nccl_path_refusals(void);

#endif

/* What the fake CUDA driver's files share: fake_cuda.c (its state, the
 * call log and injected faults, devices and contexts, streams, the control
 * interface and cuGetProcAddress), fake_cuda_mem.c (memory: VMM, legacy
 * allocations and IPC, page-locked host memory, copies) and fake_cuda_mc.c
 * (multicast objects).  Every entry point runs under `lock`, between ENTER
 * and LEAVE. */
#ifndef SYMHEAP_TEST_FAKE_CUDA_IMPL_H
#define SYMHEAP_TEST_FAKE_CUDA_IMPL_H

#include <pthread.h>
#include <stddef.h>

#include "../../adaptors/common/cuda_api.h"
#include "fake_cuda.h"

#define EXPORT __attribute__((visibility("default")))
#define MAXDEV 16
#define GRAN (2u << 20)

extern pthread_mutex_t lock;
extern int ndev, driver_version, no_mc;
extern int inited;
struct cu_ctx_st {
  int dev;
  int refs;
};
extern struct cu_ctx_st ctxs[MAXDEV];
extern _Thread_local cu_context_t current;

typedef struct mem {
  struct mem *next;
  int fd;
  size_t size;
  int refs; /* handle references */
  int maps;
  int dev;
  int is_mc;
  unsigned mc_ndev, mc_added, mc_bound;
  struct mem *mc_of; /* an imported multicast handle: the object */
} mem_t;
extern mem_t *mems;

/* Streams: work runs at once, so a stream is only a token to check. */
extern int streams_live;
extern char stream_token;
extern int capturing[64]; /* per device: fake_cuda_set_capturing */

int cur_dev(void);
/* Log the call and decide whether it fails.  Caller holds the lock. */
cu_result_t enter(const char *fn);

#define ENTER(fn)                                                              \
  pthread_mutex_lock(&lock);                                                   \
  cu_result_t e_ = enter(fn);                                                  \
  if (e_ != CU_OK) {                                                           \
    pthread_mutex_unlock(&lock);                                               \
    return e_;                                                                 \
  }
#define LEAVE(v)                                                               \
  do {                                                                         \
    cu_result_t v_ = (v);                                                      \
    pthread_mutex_unlock(&lock);                                               \
    return v_;                                                                 \
  } while (0)
#define NEED_INIT()                                                            \
  if (!inited)                                                                 \
  LEAVE(CU_ERR_NOT_INITIALIZED)
#define NEED_CTX()                                                             \
  if (!current)                                                                \
  LEAVE(CU_ERR_INVALID_CONTEXT)

/* Physical allocations (mems), under the lock. */
mem_t *find_mem(cu_mem_handle_t h);
void maybe_free(mem_t *m);
mem_t *new_mem(size_t size, int dev);

/* A file's entry points for cuGetProcAddress: the name, the function, and
 * the CUDA version that added it. */
typedef struct {
  const char *name;
  void *fn;
  int since;
} fake_cu_entry_t;
extern const fake_cu_entry_t fake_cu_mem_entries[];
extern const size_t fake_cu_mem_entries_n;
extern const fake_cu_entry_t fake_cu_mc_entries[];
extern const size_t fake_cu_mc_entries_n;

#endif

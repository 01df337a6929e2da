/* What the fake libibverbs records, for tests to check (look the functions
 * up with dlsym in the copy symheap loaded). */
#ifndef FAKE_IBVERBS_H
#define FAKE_IBVERBS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  int contexts, pds, mrs; /* live now */
  int regs, deregs;       /* ever */
  int dmabuf_regs;        /* ever, through ibv_reg_dmabuf_mr */
} fake_ibv_counts_t;

typedef void (*fake_ibv_counts_fn)(fake_ibv_counts_t *out);
/* The live region with this rkey: 1 and its extent, or 0. */
typedef int (*fake_ibv_find_fn)(uint32_t rkey, uint64_t *addr, size_t *len,
                                uint32_t *lkey, int *dmabuf);

/* Environment: FAKE_IBV_DEVICES=n devices (default 1; names fake_0 ...);
 * FAKE_IBV_FAIL_REG=k fails the k-th registration (1-based) of the process
 * with ENOMEM. */

#endif

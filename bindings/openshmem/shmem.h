/* symheap-shmem: OpenSHMEM 1.5 over symheap (C bindings; usable from C++).
 *
 * Installed as <symheap-shmem/shmem.h> so that it never shadows another
 * implementation's <shmem.h>; symheap-oshcc and `pkg-config --cflags
 * symheap-shmem` put that directory on the include path, so programs write
 * #include <shmem.h> as usual.  docs/openshmem.md says what is implemented.
 *
 * Every typed routine is declared from the type tables in shmem_types.h. */
#ifndef SYMHEAP_SHMEM_H
#define SYMHEAP_SHMEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "shmem_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Library identity. */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "symheap-shmem"
#define SHMEM_VENDOR_MAJOR_VERSION 0
#define SHMEM_VENDOR_MINOR_VERSION 1
#define SHMEM_VENDOR_PATCH_VERSION 0
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

/* Thread levels. */
#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

/* Comparison operators of the point-to-point synchronisation routines. */
#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

/* Signal operators. */
#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* Context options. */
#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

/* Team configuration. */
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* Memory hints. */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* Work and synchronisation arrays of the deprecated active-set routines. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 8
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* Teams and contexts are handles to library objects. */
typedef struct symheap_shmem_team *shmem_team_t;
typedef struct symheap_shmem_ctx *shmem_ctx_t;
typedef struct {
  int num_contexts;
} shmem_team_config_t;

extern struct symheap_shmem_team symheap_shmem_team_world;
extern struct symheap_shmem_team symheap_shmem_team_shared;
extern struct symheap_shmem_ctx symheap_shmem_ctx_default;
#define SHMEM_TEAM_WORLD (&symheap_shmem_team_world)
#define SHMEM_TEAM_SHARED (&symheap_shmem_team_shared)
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_CTX_DEFAULT (&symheap_shmem_ctx_default)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

/* 16 bytes, for shmem_put128 and friends. */
typedef struct {
  uint64_t w[2];
} symheap_shmem_u128_t;

/* Setup, exit and query. */
void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int _my_pe(void);
int _num_pes(void);
void start_pes(int npes);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);

/* Memory management. */
void *shmem_malloc(size_t size);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);
void *shmem_malloc_with_hints(size_t size, long hints);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shmemalign(size_t alignment, size_t size);
void *shrealloc(void *ptr, size_t size);

/* Teams. */
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask,
                          shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
                            shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride,
                             int size, const shmem_team_config_t *config,
                             long config_mask, shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team,
                        const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);

/* Contexts. */
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* Inline fast paths of the plain small RMA and AMO forms (shmem_fast.h). */
#include "shmem_fast.h"

/* RMA, typed, sized and bytewise, each with its context form; the plain
 * put/get/p/g come from SYMHEAP_SHMEM_PLAIN_RMA (shmem_fast.h). */
#define SYMHEAP_SHMEM_DECL_RMA(T, N)                                           \
  void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source,          \
                           size_t nelems, int pe);                             \
  void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source,          \
                           size_t nelems, int pe);                             \
  void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source,      \
                               size_t nelems, int pe);                         \
  void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source,      \
                               size_t nelems, int pe);                         \
  void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst,               \
                        ptrdiff_t sst, size_t nelems, int pe);                 \
  void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source,         \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems,       \
                            int pe);                                           \
  void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst,               \
                        ptrdiff_t sst, size_t nelems, int pe);                 \
  void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source,         \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems,       \
                            int pe);                                           \
  void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);           \
  T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);               \
  void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems,         \
                              uint64_t *sig_addr, uint64_t signal, int sig_op, \
                              int pe);                                         \
  void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source,   \
                                  size_t nelems, uint64_t *sig_addr,           \
                                  uint64_t signal, int sig_op, int pe);        \
  void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems,     \
                                  uint64_t *sig_addr, uint64_t signal,         \
                                  int sig_op, int pe);                         \
  void shmem_ctx_##N##_put_signal_nbi(                                         \
      shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,                \
      uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SYMHEAP_SHMEM_RMA_TYPES(SYMHEAP_SHMEM_DECL_RMA)
SYMHEAP_SHMEM_RMA_TYPES(SYMHEAP_SHMEM_PLAIN_RMA)

#define SYMHEAP_SHMEM_DECL_SIZED(B, NAME)                                      \
  void shmem_##NAME(void *dest, const void *source, size_t nelems, int pe);    \
  void shmem_ctx_##NAME(shmem_ctx_t ctx, void *dest, const void *source,       \
                        size_t nelems, int pe);
#define SYMHEAP_SHMEM_DECL_ISIZED(NAME)                                        \
  void shmem_##NAME(void *dest, const void *source, ptrdiff_t dst,             \
                    ptrdiff_t sst, size_t nelems, int pe);                     \
  void shmem_ctx_##NAME(shmem_ctx_t ctx, void *dest, const void *source,       \
                        ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);
#define SYMHEAP_SHMEM_DECL_SIGSIZED(NAME)                                      \
  void shmem_##NAME(void *dest, const void *source, size_t nelems,             \
                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);  \
  void shmem_ctx_##NAME(shmem_ctx_t ctx, void *dest, const void *source,       \
                        size_t nelems, uint64_t *sig_addr, uint64_t signal,    \
                        int sig_op, int pe);
#define SYMHEAP_SHMEM_DECL_SIZE(BITS, T)                                       \
  SYMHEAP_SHMEM_DECL_SIZED(BITS, put##BITS)                                    \
  SYMHEAP_SHMEM_DECL_SIZED(BITS, get##BITS)                                    \
  SYMHEAP_SHMEM_DECL_SIZED(BITS, put##BITS##_nbi)                              \
  SYMHEAP_SHMEM_DECL_SIZED(BITS, get##BITS##_nbi)                              \
  SYMHEAP_SHMEM_DECL_ISIZED(iput##BITS)                                        \
  SYMHEAP_SHMEM_DECL_ISIZED(iget##BITS)                                        \
  SYMHEAP_SHMEM_DECL_SIGSIZED(put##BITS##_signal)                              \
  SYMHEAP_SHMEM_DECL_SIGSIZED(put##BITS##_signal_nbi)
SYMHEAP_SHMEM_SIZES(SYMHEAP_SHMEM_DECL_SIZE)
#define SYMHEAP_SHMEM_DECL_CTX_MEM(NAME)                                       \
  void shmem_ctx_##NAME(shmem_ctx_t ctx, void *dest, const void *source,       \
                        size_t nelems, int pe);
/* shmem_ctx_putmem and _getmem: shmem_fast.h declares them (its inline
 * paths call them); again here, -Wredundant-decls failed programs' builds. */
SYMHEAP_SHMEM_DECL_CTX_MEM(putmem_nbi)
SYMHEAP_SHMEM_DECL_CTX_MEM(getmem_nbi)
SYMHEAP_SHMEM_PLAIN_MEM(putmem, symheap_shmem_fast_put)
SYMHEAP_SHMEM_PLAIN_MEM(getmem, symheap_shmem_fast_get)
SYMHEAP_SHMEM_PLAIN_MEM(putmem_nbi, symheap_shmem_fast_put)
SYMHEAP_SHMEM_PLAIN_MEM(getmem_nbi, symheap_shmem_fast_get)
SYMHEAP_SHMEM_DECL_SIGSIZED(putmem_signal)
SYMHEAP_SHMEM_DECL_SIGSIZED(putmem_signal_nbi)

/* Signals. */
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp,
                                 uint64_t cmp_value);
void shmem_signal_add(uint64_t *sig_addr, uint64_t signal, int pe);
void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal,
                          int pe);
void shmem_signal_set(uint64_t *sig_addr, uint64_t signal, int pe);
void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal,
                          int pe);

/* AMOs.  The non-blocking ones, declared with and without a context. */
#define SYMHEAP_SHMEM_DECL_AMO2(RET, N, OP, ...)                               \
  RET shmem_##N##_atomic_##OP(__VA_ARGS__);                                    \
  RET shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, __VA_ARGS__);
#define SYMHEAP_SHMEM_DECL_AMO_EXT(T, N)                                       \
  SYMHEAP_SHMEM_DECL_AMO2(void, N, fetch_nbi, T *fetch, const T *source,       \
                          int pe)                                              \
  SYMHEAP_SHMEM_DECL_AMO2(void, N, swap_nbi, T *fetch, T *dest, T value, int pe)
#define SYMHEAP_SHMEM_DECL_AMO_STD(T, N)                                       \
  SYMHEAP_SHMEM_DECL_AMO2(void, N, compare_swap_nbi, T *fetch, T *dest,        \
                          T cond, T value, int pe)                             \
  SYMHEAP_SHMEM_DECL_AMO2(void, N, fetch_inc_nbi, T *fetch, T *dest, int pe)   \
  SYMHEAP_SHMEM_DECL_AMO2(void, N, fetch_add_nbi, T *fetch, T *dest, T value,  \
                          int pe)
#define SYMHEAP_SHMEM_DECL_AMO_BIT(T, N)                                       \
  SYMHEAP_SHMEM_DECL_AMO2(void, N, fetch_and_nbi, T *fetch, T *dest, T value,  \
                          int pe)                                              \
  SYMHEAP_SHMEM_DECL_AMO2(void, N, fetch_or_nbi, T *fetch, T *dest, T value,   \
                          int pe)                                              \
  SYMHEAP_SHMEM_DECL_AMO2(void, N, fetch_xor_nbi, T *fetch, T *dest, T value,  \
                          int pe)
SYMHEAP_SHMEM_AMO_EXT_TYPES(SYMHEAP_SHMEM_DECL_AMO_EXT)
SYMHEAP_SHMEM_AMO_STD_TYPES(SYMHEAP_SHMEM_DECL_AMO_STD)
SYMHEAP_SHMEM_AMO_BIT_TYPES(SYMHEAP_SHMEM_DECL_AMO_BIT)
/* The blocking forms, with their inline fast paths (shmem_fast.h). */
SYMHEAP_SHMEM_AMO_EXT_TYPES(SYMHEAP_SHMEM_FAST_AMO_EXT)
SYMHEAP_SHMEM_AMO_STD_TYPES(SYMHEAP_SHMEM_FAST_AMO_STD)
SYMHEAP_SHMEM_AMO_BIT_TYPES(SYMHEAP_SHMEM_FAST_AMO_BIT)

/* Deprecated AMO names (OpenSHMEM 1.3), kept for older programs. */
#define SYMHEAP_SHMEM_DECL_OLD_AMO_EXT(T, N)                                   \
  T shmem_##N##_swap(T *target, T value, int pe);                              \
  T shmem_##N##_fetch(const T *target, int pe);                                \
  void shmem_##N##_set(T *target, T value, int pe);
#define SYMHEAP_SHMEM_DECL_OLD_AMO(T, N)                                       \
  T shmem_##N##_cswap(T *target, T cond, T value, int pe);                     \
  T shmem_##N##_fadd(T *target, T value, int pe);                              \
  T shmem_##N##_finc(T *target, int pe);                                       \
  void shmem_##N##_add(T *target, T value, int pe);                            \
  void shmem_##N##_inc(T *target, int pe);
SYMHEAP_SHMEM_OLD_AMO_EXT_TYPES(SYMHEAP_SHMEM_DECL_OLD_AMO_EXT)
SYMHEAP_SHMEM_OLD_AMO_TYPES(SYMHEAP_SHMEM_DECL_OLD_AMO)

/* Collectives on teams. */
void shmem_barrier_all(void);
void shmem_sync_all(void);
int shmem_team_sync(shmem_team_t team);
#define SYMHEAP_SHMEM_DECL_COLL(T, N)                                          \
  int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source,       \
                            size_t nelems, int PE_root);                       \
  int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source,         \
                          size_t nelems);                                      \
  int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source,        \
                           size_t nelems);                                     \
  int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source,        \
                           size_t nelems);                                     \
  int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source,       \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems);
SYMHEAP_SHMEM_RMA_TYPES(SYMHEAP_SHMEM_DECL_COLL)
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source,
                       size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source,
                     size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source,
                      size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source,
                      size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source,
                       ptrdiff_t dst, ptrdiff_t sst, size_t nelems);

#define SYMHEAP_SHMEM_DECL_REDUCE_OP(T, N, OP)                                 \
  int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source,   \
                                size_t nreduce);
#define SYMHEAP_SHMEM_DECL_REDUCE_BIT(T, N)                                    \
  SYMHEAP_SHMEM_DECL_REDUCE_OP(T, N, and)                                      \
  SYMHEAP_SHMEM_DECL_REDUCE_OP(T, N, or)                                       \
  SYMHEAP_SHMEM_DECL_REDUCE_OP(T, N, xor)
#define SYMHEAP_SHMEM_DECL_REDUCE_CMP(T, N)                                    \
  SYMHEAP_SHMEM_DECL_REDUCE_OP(T, N, max)                                      \
  SYMHEAP_SHMEM_DECL_REDUCE_OP(T, N, min)
#define SYMHEAP_SHMEM_DECL_REDUCE_ARITH(T, N)                                  \
  SYMHEAP_SHMEM_DECL_REDUCE_OP(T, N, sum)                                      \
  SYMHEAP_SHMEM_DECL_REDUCE_OP(T, N, prod)
SYMHEAP_SHMEM_REDUCE_BIT_TYPES(SYMHEAP_SHMEM_DECL_REDUCE_BIT)
SYMHEAP_SHMEM_REDUCE_CMP_TYPES(SYMHEAP_SHMEM_DECL_REDUCE_CMP)
SYMHEAP_SHMEM_REDUCE_ARITH_TYPES(SYMHEAP_SHMEM_DECL_REDUCE_ARITH)

/* Deprecated active-set collectives (PE_start, logPE_stride, PE_size, pSync).
 */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void symheap_shmem_sync_active(int PE_start, int logPE_stride, int PE_size,
                               long *pSync);
#define SYMHEAP_SHMEM_DECL_ACTIVE(B)                                           \
  void shmem_broadcast##B(void *dest, const void *source, size_t nelems,       \
                          int PE_root, int PE_start, int logPE_stride,         \
                          int PE_size, long *pSync);                           \
  void shmem_collect##B(void *dest, const void *source, size_t nelems,         \
                        int PE_start, int logPE_stride, int PE_size,           \
                        long *pSync);                                          \
  void shmem_fcollect##B(void *dest, const void *source, size_t nelems,        \
                         int PE_start, int logPE_stride, int PE_size,          \
                         long *pSync);                                         \
  void shmem_alltoall##B(void *dest, const void *source, size_t nelems,        \
                         int PE_start, int logPE_stride, int PE_size,          \
                         long *pSync);                                         \
  void shmem_alltoalls##B(void *dest, const void *source, ptrdiff_t dst,       \
                          ptrdiff_t sst, size_t nelems, int PE_start,          \
                          int logPE_stride, int PE_size, long *pSync);
SYMHEAP_SHMEM_DECL_ACTIVE(32)
SYMHEAP_SHMEM_DECL_ACTIVE(64)
#define SYMHEAP_SHMEM_DECL_TOALL_OP(T, N, OP)                                  \
  void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce,        \
                                 int PE_start, int logPE_stride, int PE_size,  \
                                 T *pWrk, long *pSync);
#define SYMHEAP_SHMEM_DECL_TOALL_BIT(T, N)                                     \
  SYMHEAP_SHMEM_DECL_TOALL_OP(T, N, and)                                       \
  SYMHEAP_SHMEM_DECL_TOALL_OP(T, N, or)                                        \
  SYMHEAP_SHMEM_DECL_TOALL_OP(T, N, xor)
#define SYMHEAP_SHMEM_DECL_TOALL_CMP(T, N)                                     \
  SYMHEAP_SHMEM_DECL_TOALL_OP(T, N, max)                                       \
  SYMHEAP_SHMEM_DECL_TOALL_OP(T, N, min)
#define SYMHEAP_SHMEM_DECL_TOALL_ARITH(T, N)                                   \
  SYMHEAP_SHMEM_DECL_TOALL_OP(T, N, sum)                                       \
  SYMHEAP_SHMEM_DECL_TOALL_OP(T, N, prod)
SYMHEAP_SHMEM_TOALL_BIT_TYPES(SYMHEAP_SHMEM_DECL_TOALL_BIT)
SYMHEAP_SHMEM_TOALL_CMP_TYPES(SYMHEAP_SHMEM_DECL_TOALL_CMP)
SYMHEAP_SHMEM_TOALL_ARITH_TYPES(SYMHEAP_SHMEM_DECL_TOALL_ARITH)

/* shmem_sync(team) (1.5) and shmem_sync(PE_start, logPE_stride, PE_size,
 * pSync) (deprecated), told apart by their number of arguments. */
#define SYMHEAP_SHMEM_PICK4(_1, _2, _3, _4, NAME, ...) NAME
#define shmem_sync(...)                                                        \
  SYMHEAP_SHMEM_PICK4(__VA_ARGS__, symheap_shmem_sync_active, _3, _2,          \
                      shmem_team_sync, _0)                                     \
  (__VA_ARGS__)

/* Point-to-point synchronisation. */
#define SYMHEAP_SHMEM_DECL_P2P(T, N)                                           \
  void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                  \
  void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status,  \
                                  int cmp, T cmp_value);                       \
  size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems,                   \
                                    const int *status, int cmp, T cmp_value);  \
  size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices, \
                                     const int *status, int cmp, T cmp_value); \
  void shmem_##N##_wait_until_all_vector(                                      \
      T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values);     \
  size_t shmem_##N##_wait_until_any_vector(                                    \
      T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values);     \
  size_t shmem_##N##_wait_until_some_vector(                                   \
      T *ivars, size_t nelems, size_t *indices, const int *status, int cmp,    \
      T *cmp_values);                                                          \
  int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                         \
  int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status,         \
                           int cmp, T cmp_value);                              \
  size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status,      \
                              int cmp, T cmp_value);                           \
  size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices,       \
                               const int *status, int cmp, T cmp_value);       \
  int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status,  \
                                  int cmp, T *cmp_values);                     \
  size_t shmem_##N##_test_any_vector(                                          \
      T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values);     \
  size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems,                 \
                                      size_t *indices, const int *status,      \
                                      int cmp, T *cmp_values);                 \
  void shmem_##N##_wait(T *ivar, T cmp_value);
SYMHEAP_SHMEM_P2P_TYPES(SYMHEAP_SHMEM_DECL_P2P)

/* Ordering and locks. */
void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* Deprecated cache management: no-ops (the caches are coherent). */
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
/* C++ has no C11 generics: overloads of the generic point-to-point waits
 * the specification keeps for C++ programs (shmem_wait is deprecated, still
 * required), one per distinct C type (int32_t and friends are among them). */
#define SYMHEAP_SHMEM_CXX_P2P(T, N)                                            \
  static inline void shmem_wait_until(T *ivar, int cmp, T cmp_value) {         \
    shmem_##N##_wait_until(ivar, cmp, cmp_value);                              \
  }                                                                            \
  static inline void shmem_wait(T *ivar, T cmp_value) {                        \
    shmem_##N##_wait(ivar, cmp_value);                                         \
  }                                                                            \
  static inline int shmem_test(T *ivar, int cmp, T cmp_value) {                \
    return shmem_##N##_test(ivar, cmp, cmp_value);                             \
  }
SYMHEAP_SHMEM_CXX_P2P(short, short)
SYMHEAP_SHMEM_CXX_P2P(int, int)
SYMHEAP_SHMEM_CXX_P2P(long, long)
SYMHEAP_SHMEM_CXX_P2P(long long, longlong)
SYMHEAP_SHMEM_CXX_P2P(unsigned short, ushort)
SYMHEAP_SHMEM_CXX_P2P(unsigned int, uint)
SYMHEAP_SHMEM_CXX_P2P(unsigned long, ulong)
SYMHEAP_SHMEM_CXX_P2P(unsigned long long, ulonglong)
#endif

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L &&                \
    !defined(__cplusplus)
#include "shmem_generic.h"
#endif

#endif /* SYMHEAP_SHMEM_H */

/* Every name OpenSHMEM 1.5 defines for C and C++, deprecated ones included
 * (the 1.5 deprecation table still requires them): the routines of every
 * type of the specification's tables, the constants, the handle types and,
 * in C11, the type-generic interfaces (with and without a context where
 * the specification gives one).  The lists here are written from the
 * specification, not from shmem_types.h, so that a name the header's
 * X-macros leave out is missed here.  test/shmem/run_shmem.sh builds this
 * with symheap-oshcc and symheap-oshc++ (-DSYMHEAP_SHMEM_NO_INLINE: every
 * routine linked from the library, so each must be exported) and runs it
 * at 2 PEs and alone: a missing name fails the build (or the link), naming
 * it, which is the check of the routines (a linked function's address is
 * never NULL: the count printed is a tally); the run checks the constants'
 * values, shmem_sync's forms and, in C11, the generics. */
#include <mpp/shmem.h>
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* run_shmem.sh builds the C99 form with -Wdeclaration-after-statement for
 * the headers' inline code above; this file's own code mixes them. */
#ifndef __cplusplus
#pragma GCC diagnostic ignored "-Wdeclaration-after-statement"
#endif

typedef void (*nm_fn)(void);
#define NM(f) (nm_fn)(f),

/* Table "Standard RMA Types and Names". */
#define NM_RMA(X)                                                              \
  X(float) X(double) X(longdouble) X(char) X(schar) X(short) X(int) X(long)    \
  X(longlong) X(uchar) X(ushort) X(uint) X(ulong) X(ulonglong) X(int8)         \
  X(int16) X(int32) X(int64) X(uint8) X(uint16) X(uint32) X(uint64) X(size)    \
  X(ptrdiff)
/* "Standard AMO Types", "Extended AMO Types", "Bitwise AMO Types". */
#define NM_AMO_STD(X)                                                          \
  X(int) X(long) X(longlong) X(uint) X(ulong) X(ulonglong) X(int32) X(int64)   \
  X(uint32) X(uint64) X(size) X(ptrdiff)
#define NM_AMO_EXT(X) NM_AMO_STD(X) X(float) X(double)
#define NM_AMO_BIT(X)                                                          \
  X(uint) X(ulong) X(ulonglong) X(int32) X(int64) X(uint32) X(uint64)
/* "Point-to-Point Synchronization Types". */
#define NM_P2P(X)                                                              \
  X(short) X(int) X(long) X(longlong) X(ushort) X(uint) X(ulong) X(ulonglong)  \
  X(int32) X(int64) X(uint32) X(uint64) X(size) X(ptrdiff)
/* "Reduction Types, Names, and Supporting Operations". */
#define NM_RED_BIT(X)                                                          \
  X(uchar) X(ushort) X(uint) X(ulong) X(ulonglong) X(int8) X(int16) X(int32)   \
  X(int64) X(uint8) X(uint16) X(uint32) X(uint64) X(size)
#define NM_RED_CMP(X)                                                          \
  X(char) X(schar) X(short) X(int) X(long) X(longlong) X(ptrdiff) X(uchar)     \
  X(ushort) X(uint) X(ulong) X(ulonglong) X(int8) X(int16) X(int32) X(int64)   \
  X(uint8) X(uint16) X(uint32) X(uint64) X(size) X(float) X(double)           \
  X(longdouble)
#ifdef __cplusplus /* C++ has no spelling of the complex types */
#define NM_COMPLEX(X)
#else
#define NM_COMPLEX(X) X(complexd) X(complexf)
#endif
/* The deprecated active-set reductions (shmem_TYPENAME_OP_to_all). */
#define NM_TOALL_BIT(X) X(short) X(int) X(long) X(longlong)
#define NM_TOALL_CMP(X) NM_TOALL_BIT(X) X(float) X(double) X(longdouble)
/* The deprecated AMO names of 1.3. */
#define NM_OLD(X) X(int) X(long) X(longlong)
#define NM_OLD_EXT(X) NM_OLD(X) X(float) X(double)
#define NM_SIZES(X) X(8) X(16) X(32) X(64) X(128)

#define NM_RMA_ROUTINES(T)                                                     \
  NM(shmem_##T##_put) NM(shmem_ctx_##T##_put) NM(shmem_##T##_p)                \
  NM(shmem_ctx_##T##_p) NM(shmem_##T##_iput) NM(shmem_ctx_##T##_iput)          \
  NM(shmem_##T##_get) NM(shmem_ctx_##T##_get) NM(shmem_##T##_g)                \
  NM(shmem_ctx_##T##_g) NM(shmem_##T##_iget) NM(shmem_ctx_##T##_iget)          \
  NM(shmem_##T##_put_nbi) NM(shmem_ctx_##T##_put_nbi)                          \
  NM(shmem_##T##_get_nbi) NM(shmem_ctx_##T##_get_nbi)                          \
  NM(shmem_##T##_put_signal) NM(shmem_ctx_##T##_put_signal)                    \
  NM(shmem_##T##_put_signal_nbi) NM(shmem_ctx_##T##_put_signal_nbi)            \
  NM(shmem_##T##_broadcast) NM(shmem_##T##_collect) NM(shmem_##T##_fcollect)   \
  NM(shmem_##T##_alltoall) NM(shmem_##T##_alltoalls)
#define NM_SIZED_ROUTINES(B)                                                   \
  NM(shmem_put##B) NM(shmem_ctx_put##B) NM(shmem_get##B) NM(shmem_ctx_get##B)  \
  NM(shmem_iput##B) NM(shmem_ctx_iput##B) NM(shmem_iget##B)                    \
  NM(shmem_ctx_iget##B) NM(shmem_put##B##_nbi) NM(shmem_ctx_put##B##_nbi)      \
  NM(shmem_get##B##_nbi) NM(shmem_ctx_get##B##_nbi) NM(shmem_put##B##_signal)  \
  NM(shmem_ctx_put##B##_signal) NM(shmem_put##B##_signal_nbi)                  \
  NM(shmem_ctx_put##B##_signal_nbi)
/* A routine and its context form: shmem_T_X and shmem_ctx_T_X. */
#define NM_CTX(T, X) NM(shmem_##T##_##X) NM(shmem_ctx_##T##_##X)
#define NM_AMO_STD_ROUTINES(T)                                                 \
  NM_CTX(T, atomic_fetch_inc) NM_CTX(T, atomic_inc)                            \
  NM_CTX(T, atomic_fetch_add) NM_CTX(T, atomic_add)                            \
  NM_CTX(T, atomic_compare_swap) NM_CTX(T, atomic_fetch_inc_nbi)               \
  NM_CTX(T, atomic_fetch_add_nbi) NM_CTX(T, atomic_compare_swap_nbi)
#define NM_AMO_EXT_ROUTINES(T)                                                 \
  NM_CTX(T, atomic_fetch) NM_CTX(T, atomic_set) NM_CTX(T, atomic_swap)         \
  NM_CTX(T, atomic_fetch_nbi) NM_CTX(T, atomic_swap_nbi)
#define NM_AMO_BIT1(T, OP)                                                     \
  NM_CTX(T, atomic_##OP) NM_CTX(T, atomic_fetch_##OP)                          \
  NM_CTX(T, atomic_fetch_##OP##_nbi)
#define NM_AMO_BIT_ROUTINES(T)                                                 \
  NM_AMO_BIT1(T, and) NM_AMO_BIT1(T, or) NM_AMO_BIT1(T, xor)
#define NM_P2P_ROUTINES(T)                                                     \
  NM(shmem_##T##_wait_until) NM(shmem_##T##_wait_until_all)                    \
  NM(shmem_##T##_wait_until_any) NM(shmem_##T##_wait_until_some)               \
  NM(shmem_##T##_wait_until_all_vector)                                        \
  NM(shmem_##T##_wait_until_any_vector)                                        \
  NM(shmem_##T##_wait_until_some_vector) NM(shmem_##T##_test)                  \
  NM(shmem_##T##_test_all) NM(shmem_##T##_test_any) NM(shmem_##T##_test_some)  \
  NM(shmem_##T##_test_all_vector) NM(shmem_##T##_test_any_vector)              \
  NM(shmem_##T##_test_some_vector) NM(shmem_##T##_wait)
#define NM_RED_BIT_ROUTINES(T)                                                 \
  NM(shmem_##T##_and_reduce) NM(shmem_##T##_or_reduce)                         \
  NM(shmem_##T##_xor_reduce)
#define NM_RED_CMP_ROUTINES(T) NM(shmem_##T##_max_reduce) NM(shmem_##T##_min_reduce)
#define NM_RED_ARITH_ROUTINES(T)                                               \
  NM(shmem_##T##_sum_reduce) NM(shmem_##T##_prod_reduce)
#define NM_TOALL_BIT_ROUTINES(T)                                               \
  NM(shmem_##T##_and_to_all) NM(shmem_##T##_or_to_all) NM(shmem_##T##_xor_to_all)
#define NM_TOALL_CMP_ROUTINES(T) NM(shmem_##T##_max_to_all) NM(shmem_##T##_min_to_all)
#define NM_TOALL_ARITH_ROUTINES(T)                                             \
  NM(shmem_##T##_sum_to_all) NM(shmem_##T##_prod_to_all)
#define NM_OLD_ROUTINES(T)                                                     \
  NM(shmem_##T##_finc) NM(shmem_##T##_inc) NM(shmem_##T##_fadd)                \
  NM(shmem_##T##_add) NM(shmem_##T##_cswap)
#define NM_OLD_EXT_ROUTINES(T)                                                 \
  NM(shmem_##T##_swap) NM(shmem_##T##_fetch) NM(shmem_##T##_set)

static const nm_fn routines[] = {
    /* Library setup, exit and query; the deprecated 1.2 names. */
    NM(shmem_init) NM(shmem_init_thread) NM(shmem_query_thread)
    NM(shmem_finalize) NM(shmem_global_exit) NM(shmem_my_pe) NM(shmem_n_pes)
    NM(shmem_pe_accessible) NM(shmem_addr_accessible) NM(shmem_ptr)
    NM(shmem_team_ptr) NM(shmem_info_get_version) NM(shmem_info_get_name)
    NM(start_pes) NM(_my_pe) NM(_num_pes)
    /* Memory management, and the deprecated names. */
    NM(shmem_malloc) NM(shmem_free) NM(shmem_realloc) NM(shmem_align)
    NM(shmem_malloc_with_hints) NM(shmem_calloc) NM(shmalloc) NM(shfree)
    NM(shrealloc) NM(shmemalign)
    /* Teams and contexts. */
    NM(shmem_team_my_pe) NM(shmem_team_n_pes) NM(shmem_team_get_config)
    NM(shmem_team_translate_pe) NM(shmem_team_split_strided)
    NM(shmem_team_split_2d) NM(shmem_team_destroy) NM(shmem_ctx_create)
    NM(shmem_team_create_ctx) NM(shmem_ctx_destroy) NM(shmem_ctx_get_team)
    /* RMA without a type; signals. */
    NM(shmem_putmem) NM(shmem_ctx_putmem) NM(shmem_getmem) NM(shmem_ctx_getmem)
    NM(shmem_putmem_nbi) NM(shmem_ctx_putmem_nbi) NM(shmem_getmem_nbi)
    NM(shmem_ctx_getmem_nbi) NM(shmem_putmem_signal) NM(shmem_ctx_putmem_signal)
    NM(shmem_putmem_signal_nbi) NM(shmem_ctx_putmem_signal_nbi)
    NM(shmem_signal_fetch) NM(shmem_signal_wait_until)
    NM_SIZES(NM_SIZED_ROUTINES) NM_RMA(NM_RMA_ROUTINES)
    /* AMOs, and the 1.3 names. */
    NM_AMO_STD(NM_AMO_STD_ROUTINES) NM_AMO_EXT(NM_AMO_EXT_ROUTINES)
    NM_AMO_BIT(NM_AMO_BIT_ROUTINES) NM_OLD(NM_OLD_ROUTINES)
    NM_OLD_EXT(NM_OLD_EXT_ROUTINES)
    /* Collectives on teams, and the deprecated active-set forms. */
    NM(shmem_barrier_all) NM(shmem_sync_all) NM(shmem_team_sync)
    NM(shmem_broadcastmem) NM(shmem_collectmem) NM(shmem_fcollectmem)
    NM(shmem_alltoallmem) NM(shmem_alltoallsmem)
    NM_RED_BIT(NM_RED_BIT_ROUTINES) NM_RED_CMP(NM_RED_CMP_ROUTINES)
    NM_RED_CMP(NM_RED_ARITH_ROUTINES) NM_COMPLEX(NM_RED_ARITH_ROUTINES)
    NM(shmem_barrier) NM(shmem_broadcast32) NM(shmem_broadcast64)
    NM(shmem_collect32) NM(shmem_collect64) NM(shmem_fcollect32)
    NM(shmem_fcollect64) NM(shmem_alltoall32) NM(shmem_alltoall64)
    NM(shmem_alltoalls32) NM(shmem_alltoalls64)
    NM_TOALL_BIT(NM_TOALL_BIT_ROUTINES) NM_TOALL_CMP(NM_TOALL_CMP_ROUTINES)
    NM_TOALL_CMP(NM_TOALL_ARITH_ROUTINES) NM_COMPLEX(NM_TOALL_ARITH_ROUTINES)
    /* Point-to-point synchronisation, ordering, locks, the cache routines. */
    NM_P2P(NM_P2P_ROUTINES)
    NM(shmem_fence) NM(shmem_ctx_fence) NM(shmem_quiet) NM(shmem_ctx_quiet)
    NM(shmem_set_lock) NM(shmem_test_lock) NM(shmem_clear_lock)
    NM(shmem_clear_cache_inv) NM(shmem_set_cache_inv)
    NM(shmem_clear_cache_line_inv) NM(shmem_set_cache_line_inv)
    NM(shmem_udcflush) NM(shmem_udcflush_line)};

/* The constants (integer constant expressions where the specification says
 * so: case labels), and the deprecated _SHMEM_ names equal to the new. */
static int constants_ok(void) {
  static const int levels[] = {SHMEM_THREAD_SINGLE, SHMEM_THREAD_FUNNELED,
                               SHMEM_THREAD_SERIALIZED, SHMEM_THREAD_MULTIPLE};
  static const long opts[] = {SHMEM_CTX_SERIALIZED, SHMEM_CTX_PRIVATE,
                              SHMEM_CTX_NOSTORE,
                              SHMEM_MALLOC_ATOMICS_REMOTE,
                              SHMEM_MALLOC_SIGNAL_REMOTE};
  int ok = levels[0] < levels[1] && levels[1] < levels[2] &&
           levels[2] < levels[3] && opts[0] != opts[1];
  switch (ok) {
  case SHMEM_CMP_EQ: case SHMEM_CMP_NE: case SHMEM_CMP_GT: case SHMEM_CMP_GE:
  case SHMEM_CMP_LT: case SHMEM_CMP_LE: break;
  default: break;
  }
  switch (ok) {
  case SHMEM_SIGNAL_SET: case SHMEM_SIGNAL_ADD: break;
  default: break;
  }
  long sizes[] = {SHMEM_SYNC_SIZE,           SHMEM_BCAST_SYNC_SIZE,
                  SHMEM_REDUCE_SYNC_SIZE,    SHMEM_BARRIER_SYNC_SIZE,
                  SHMEM_COLLECT_SYNC_SIZE,   SHMEM_ALLTOALL_SYNC_SIZE,
                  SHMEM_ALLTOALLS_SYNC_SIZE, SHMEM_REDUCE_MIN_WRKDATA_SIZE};
  for (size_t i = 1; i < 7; i++)
    ok &= sizes[i] >= 1 && sizes[0] >= sizes[i];
  ok &= sizes[7] >= 1;
  ok &= _SHMEM_SYNC_VALUE == SHMEM_SYNC_VALUE &&
        _SHMEM_BARRIER_SYNC_SIZE == SHMEM_BARRIER_SYNC_SIZE &&
        _SHMEM_BCAST_SYNC_SIZE == SHMEM_BCAST_SYNC_SIZE &&
        _SHMEM_COLLECT_SYNC_SIZE == SHMEM_COLLECT_SYNC_SIZE &&
        _SHMEM_REDUCE_SYNC_SIZE == SHMEM_REDUCE_SYNC_SIZE &&
        _SHMEM_REDUCE_MIN_WRKDATA_SIZE == SHMEM_REDUCE_MIN_WRKDATA_SIZE &&
        _SHMEM_MAJOR_VERSION == SHMEM_MAJOR_VERSION &&
        _SHMEM_MINOR_VERSION == SHMEM_MINOR_VERSION &&
        _SHMEM_MAX_NAME_LEN == SHMEM_MAX_NAME_LEN &&
        strcmp(_SHMEM_VENDOR_STRING, SHMEM_VENDOR_STRING) == 0 &&
        _SHMEM_CMP_EQ == SHMEM_CMP_EQ && _SHMEM_CMP_NE == SHMEM_CMP_NE &&
        _SHMEM_CMP_GT == SHMEM_CMP_GT && _SHMEM_CMP_GE == SHMEM_CMP_GE &&
        _SHMEM_CMP_LT == SHMEM_CMP_LT && _SHMEM_CMP_LE == SHMEM_CMP_LE;
  ok &= SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION == 5 &&
        strlen(SHMEM_VENDOR_STRING) < SHMEM_MAX_NAME_LEN;
  /* The handles and their constants. */
  shmem_team_t teams[] = {SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED,
                          SHMEM_TEAM_INVALID};
  shmem_ctx_t ctxs[] = {SHMEM_CTX_DEFAULT, SHMEM_CTX_INVALID};
  shmem_team_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.num_contexts = 1;
  long mask = SHMEM_TEAM_NUM_CONTEXTS;
  ok &= teams[0] != teams[2] && ctxs[0] != ctxs[1] && mask != 0 &&
        cfg.num_contexts == 1;
  return ok;
}

/* shmem_sync: a macro here (the team and the deprecated active-set form,
 * told apart by their arguments), so called rather than taken. */
static int sync_forms_ok(void) {
  static long psync[SHMEM_BARRIER_SYNC_SIZE];
  for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
    psync[i] = SHMEM_SYNC_VALUE;
  int rc = shmem_sync(SHMEM_TEAM_WORLD);
  shmem_sync(0, 0, shmem_n_pes(), psync);
  shmem_barrier(0, 0, shmem_n_pes(), psync);
  return rc == 0;
}

#if !defined(__cplusplus) && defined(__STDC_VERSION__) &&                      \
    __STDC_VERSION__ >= 201112L
#define NM_C11 1
#else
#define NM_C11 0
#endif
#if NM_C11
/* Every C11 generic, with a context wherever the specification gives the
 * routine one (RMA, signals, AMOs), and without; on this PE's own copy. */
static int generics_ok(void) {
  static long d[4], s[4] = {1, 2, 3, 4}, v;
  static unsigned int u;
  static uint64_t sig;
  static size_t idx[1];
  static long psrc[2], pdst[8];
  shmem_ctx_t c = SHMEM_CTX_DEFAULT;
  const shmem_ctx_t cc = SHMEM_CTX_DEFAULT; /* const: the form is still picked */
  int me = shmem_my_pe(), ok = 1;
  shmem_put(d, s, 4, me);
  shmem_put(c, d, s, 4, me);
  shmem_get(d, s, 4, me);
  shmem_get(cc, d, s, 4, me);
  shmem_put_nbi(d, s, 4, me);
  shmem_put_nbi(c, d, s, 4, me);
  shmem_get_nbi(d, s, 4, me);
  shmem_get_nbi(c, d, s, 4, me);
  shmem_iput(d, s, 2, 1, 2, me);
  shmem_iput(c, d, s, 2, 1, 2, me);
  shmem_iget(d, s, 1, 2, 2, me);
  shmem_iget(c, d, s, 1, 2, 2, me);
  shmem_p(&v, 5L, me);
  shmem_p(c, &v, 6L, me);
  ok &= shmem_g(&v, me) == 6 && shmem_g(c, &v, me) == 6;
  shmem_put_signal(d, s, 4, &sig, 1, SHMEM_SIGNAL_ADD, me);
  shmem_put_signal(c, d, s, 4, &sig, 1, SHMEM_SIGNAL_ADD, me);
  shmem_put_signal_nbi(d, s, 4, &sig, 1, SHMEM_SIGNAL_ADD, me);
  shmem_put_signal_nbi(c, d, s, 4, &sig, 1, SHMEM_SIGNAL_ADD, me);
  shmem_quiet();
  ok &= shmem_signal_fetch(&sig) == 4 && d[3] == 4;
  /* AMOs: extended, standard, bitwise, and the fetching _nbi forms. */
  long f = 0;
  shmem_atomic_set(&v, 1L, me);
  shmem_atomic_set(c, &v, 2L, me);
  ok &= shmem_atomic_fetch(&v, me) == 2 && shmem_atomic_fetch(c, &v, me) == 2;
  ok &= shmem_atomic_swap(&v, 3L, me) == 2 && shmem_atomic_swap(c, &v, 4L, me) == 3;
  ok &= shmem_atomic_compare_swap(&v, 4L, 5L, me) == 4 &&
        shmem_atomic_compare_swap(c, &v, 5L, 6L, me) == 5;
  ok &= shmem_atomic_fetch_inc(&v, me) == 6 && shmem_atomic_fetch_inc(c, &v, me) == 7;
  shmem_atomic_inc(&v, me);
  shmem_atomic_inc(c, &v, me);
  ok &= shmem_atomic_fetch_add(&v, 10L, me) == 10 &&
        shmem_atomic_fetch_add(c, &v, 10L, me) == 20;
  shmem_atomic_add(&v, 1L, me);
  shmem_atomic_add(c, &v, 1L, me);
  shmem_atomic_fetch_nbi(&f, &v, me);
  shmem_atomic_fetch_nbi(c, &f, &v, me);
  shmem_atomic_swap_nbi(&f, &v, 40L, me);
  shmem_atomic_swap_nbi(c, &f, &v, 41L, me);
  shmem_atomic_compare_swap_nbi(&f, &v, 41L, 42L, me);
  shmem_atomic_compare_swap_nbi(c, &f, &v, 42L, 43L, me);
  shmem_atomic_fetch_inc_nbi(&f, &v, me);
  shmem_atomic_fetch_inc_nbi(c, &f, &v, me);
  shmem_atomic_fetch_add_nbi(&f, &v, 5L, me);
  shmem_atomic_fetch_add_nbi(c, &f, &v, 5L, me);
  shmem_quiet();
  ok &= v == 55 && f == 50;
  unsigned int uf = 0;
  u = 0;
  shmem_atomic_or(&u, 1u, me);
  shmem_atomic_or(c, &u, 2u, me);
  shmem_atomic_xor(&u, 4u, me);
  shmem_atomic_xor(c, &u, 8u, me);
  shmem_atomic_and(&u, 0xeu, me);
  shmem_atomic_and(c, &u, 0xfu, me);
  ok &= shmem_atomic_fetch_or(&u, 1u, me) == 0xe &&
        shmem_atomic_fetch_or(c, &u, 0u, me) == 0xf &&
        shmem_atomic_fetch_xor(&u, 0u, me) == 0xf &&
        shmem_atomic_fetch_xor(c, &u, 0u, me) == 0xf &&
        shmem_atomic_fetch_and(&u, 0xfu, me) == 0xf &&
        shmem_atomic_fetch_and(c, &u, 0xfu, me) == 0xf;
  shmem_atomic_fetch_and_nbi(&uf, &u, 0xfu, me);
  shmem_atomic_fetch_and_nbi(c, &uf, &u, 0xfu, me);
  shmem_atomic_fetch_or_nbi(&uf, &u, 0u, me);
  shmem_atomic_fetch_or_nbi(c, &uf, &u, 0u, me);
  shmem_atomic_fetch_xor_nbi(&uf, &u, 0u, me);
  shmem_atomic_fetch_xor_nbi(c, &uf, &u, 0u, me);
  shmem_quiet();
  ok &= uf == 0xf;
  /* Collectives and reductions take a team, no context. */
  psrc[0] = psrc[1] = 1;
  ok &= shmem_broadcast(SHMEM_TEAM_WORLD, pdst, psrc, 2, 0) == 0 &&
        shmem_collect(SHMEM_TEAM_WORLD, pdst, psrc, 1) == 0 &&
        shmem_fcollect(SHMEM_TEAM_WORLD, pdst, psrc, 1) == 0 &&
        shmem_alltoall(SHMEM_TEAM_WORLD, pdst, psrc, 1) == 0 &&
        shmem_alltoalls(SHMEM_TEAM_WORLD, pdst, psrc, 1, 1, 1) == 0 &&
        shmem_and_reduce(SHMEM_TEAM_WORLD, pdst, psrc, 1) == 0 &&
        shmem_or_reduce(SHMEM_TEAM_WORLD, pdst, psrc, 1) == 0 &&
        shmem_xor_reduce(SHMEM_TEAM_WORLD, pdst, psrc, 1) == 0 &&
        shmem_max_reduce(SHMEM_TEAM_WORLD, pdst, psrc, 1) == 0 &&
        shmem_min_reduce(SHMEM_TEAM_WORLD, pdst, psrc, 1) == 0 &&
        shmem_prod_reduce(SHMEM_TEAM_WORLD, pdst, psrc, 1) == 0 &&
        shmem_sum_reduce(SHMEM_TEAM_WORLD, pdst, psrc, 2) == 0 &&
        pdst[0] == shmem_n_pes();
  /* Point-to-point, no context; and the deprecated generics. */
  v = 1;
  long cmps[1] = {1};
  shmem_wait_until(&v, SHMEM_CMP_EQ, 1L);
  shmem_wait(&v, 0L);
  shmem_wait_until_all(&v, 1, NULL, SHMEM_CMP_EQ, 1L);
  ok &= shmem_wait_until_any(&v, 1, NULL, SHMEM_CMP_EQ, 1L) == 0 &&
        shmem_wait_until_some(&v, 1, idx, NULL, SHMEM_CMP_EQ, 1L) == 1;
  shmem_wait_until_all_vector(&v, 1, NULL, SHMEM_CMP_EQ, cmps);
  ok &= shmem_wait_until_any_vector(&v, 1, NULL, SHMEM_CMP_EQ, cmps) == 0 &&
        shmem_wait_until_some_vector(&v, 1, idx, NULL, SHMEM_CMP_EQ, cmps) == 1 &&
        shmem_test(&v, SHMEM_CMP_EQ, 1L) && shmem_test_all(&v, 1, NULL, SHMEM_CMP_EQ, 1L) &&
        shmem_test_any(&v, 1, NULL, SHMEM_CMP_EQ, 1L) == 0 &&
        shmem_test_some(&v, 1, idx, NULL, SHMEM_CMP_EQ, 1L) == 1 &&
        shmem_test_all_vector(&v, 1, NULL, SHMEM_CMP_EQ, cmps) &&
        shmem_test_any_vector(&v, 1, NULL, SHMEM_CMP_EQ, cmps) == 0 &&
        shmem_test_some_vector(&v, 1, idx, NULL, SHMEM_CMP_EQ, cmps) == 1;
  shmem_set(&v, 1L, me);
  shmem_inc(&v, me);
  shmem_add(&v, 2L, me);
  ok &= shmem_fetch(&v, me) == 4 && shmem_finc(&v, me) == 4 &&
        shmem_fadd(&v, 1L, me) == 5 && shmem_swap(&v, 7L, me) == 6 &&
        shmem_cswap(&v, 7L, 8L, me) == 7 && v == 8;
  return ok;
}
#endif

int main(void) {
  shmem_init();
  size_t n = sizeof routines / sizeof routines[0], null = 0;
  for (size_t i = 0; i < n; i++)
    null += routines[i] == NULL;
  printf("%s shmem_names_routines (%zu names, %zu NULL)\n",
         null ? "FAIL" : "PASS", n, null);
  int ok = constants_ok();
  printf("%s shmem_names_constants\n", ok ? "PASS" : "FAIL");
  int sy = sync_forms_ok();
  printf("%s shmem_names_sync_forms\n", sy ? "PASS" : "FAIL");
  int gen = 1;
#if NM_C11
  gen = generics_ok();
  printf("%s shmem_names_c11_generics_with_and_without_ctx\n",
         gen ? "PASS" : "FAIL");
#endif
  shmem_finalize();
  return !null && ok && sy && gen ? 0 : 1;
}

/* The typed collectives on teams, the reductions, and the deprecated
 * active-set forms (with pSync), all over coll.c's group routines. */
#include "shmem_internal.h"

/* A team collective: the team's group, or -1 for SHMEM_TEAM_INVALID or a
 * PE outside the team. */
#define SHM_TEAM_GROUP(team, g, fn)                                            \
  struct shm_group g;                                                          \
  shm__require_init(fn);                                                       \
  if (team == SHMEM_TEAM_INVALID)                                              \
    return -1;                                                                 \
  shm__team_group(team, &g);                                                   \
  if (g.me < 0)                                                                \
    return -1;

#define SHM_DEF_COLL(T, N)                                                     \
  int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source,       \
                            size_t nelems, int PE_root) {                      \
    SHM_TEAM_GROUP(team, g, "shmem_broadcast")                                 \
    shm__broadcast(&g, dest, source, symheap_shmem_bytes(nelems, sizeof(T)),   \
                   PE_root, 1);                                                \
    return 0;                                                                  \
  }                                                                            \
  int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source,         \
                          size_t nelems) {                                     \
    SHM_TEAM_GROUP(team, g, "shmem_collect")                                   \
    shm__collect(&g, dest, source, symheap_shmem_bytes(nelems, sizeof(T)), 0); \
    return 0;                                                                  \
  }                                                                            \
  int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source,        \
                           size_t nelems) {                                    \
    SHM_TEAM_GROUP(team, g, "shmem_fcollect")                                  \
    shm__collect(&g, dest, source, symheap_shmem_bytes(nelems, sizeof(T)), 1); \
    return 0;                                                                  \
  }                                                                            \
  int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source,        \
                           size_t nelems) {                                    \
    SHM_TEAM_GROUP(team, g, "shmem_alltoall")                                  \
    shm__alltoalls(&g, dest, source, 1, 1, nelems, sizeof(T));                 \
    return 0;                                                                  \
  }                                                                            \
  int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source,       \
                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {     \
    SHM_TEAM_GROUP(team, g, "shmem_alltoalls")                                 \
    shm__alltoalls(&g, dest, source, dst, sst, nelems, sizeof(T));             \
    return 0;                                                                  \
  }
SYMHEAP_SHMEM_RMA_TYPES(SHM_DEF_COLL)

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source,
                       size_t nelems, int PE_root) {
  return shmem_uchar_broadcast(team, dest, source, nelems, PE_root);
}
int shmem_collectmem(shmem_team_t team, void *dest, const void *source,
                     size_t nelems) {
  return shmem_uchar_collect(team, dest, source, nelems);
}
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source,
                      size_t nelems) {
  return shmem_uchar_fcollect(team, dest, source, nelems);
}
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source,
                      size_t nelems) {
  return shmem_uchar_alltoall(team, dest, source, nelems);
}
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source,
                       ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {
  return shmem_uchar_alltoalls(team, dest, source, dst, sst, nelems);
}

/* Reductions: one combine function per type and operation. */
#define SHM_OP_and(a, b) ((a) & (b))
#define SHM_OP_or(a, b) ((a) | (b))
#define SHM_OP_xor(a, b) ((a) ^ (b))
#define SHM_OP_max(a, b) ((a) > (b) ? (a) : (b))
#define SHM_OP_min(a, b) ((a) < (b) ? (a) : (b))
#define SHM_OP_sum(a, b) ((a) + (b))
#define SHM_OP_prod(a, b) ((a) * (b))
#define SHM_DEF_COMBINE(PFX, T, N, OP)                                         \
  static void PFX##_##N##_##OP(void *acc, const void *in, size_t n) {          \
    T *a = acc;                                                                \
    const T *b = in;                                                           \
    for (size_t i = 0; i < n; i++)                                             \
      a[i] = (T)SHM_OP_##OP(a[i], b[i]);                                       \
  }

#define SHM_DEF_REDUCE(T, N, OP)                                               \
  SHM_DEF_COMBINE(combine, T, N, OP)                                           \
  int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source,   \
                                size_t nreduce) {                              \
    SHM_TEAM_GROUP(team, g, "shmem_" #OP "_reduce")                            \
    shm__reduce(&g, dest, source, nreduce, sizeof(T), combine_##N##_##OP);     \
    return 0;                                                                  \
  }
#define SHM_DEF_REDUCE_BIT(T, N)                                               \
  SHM_DEF_REDUCE(T, N, and) SHM_DEF_REDUCE(T, N, or) SHM_DEF_REDUCE(T, N, xor)
#define SHM_DEF_REDUCE_CMP(T, N)                                               \
  SHM_DEF_REDUCE(T, N, max) SHM_DEF_REDUCE(T, N, min)
#define SHM_DEF_REDUCE_ARITH(T, N)                                             \
  SHM_DEF_REDUCE(T, N, sum) SHM_DEF_REDUCE(T, N, prod)
SYMHEAP_SHMEM_REDUCE_BIT_TYPES(SHM_DEF_REDUCE_BIT)
SYMHEAP_SHMEM_REDUCE_CMP_TYPES(SHM_DEF_REDUCE_CMP)
SYMHEAP_SHMEM_REDUCE_ARITH_TYPES(SHM_DEF_REDUCE_ARITH)

/* Deprecated active-set reductions; pWrk is not needed. */
#define SHM_DEF_TOALL(T, N, OP)                                                \
  SHM_DEF_COMBINE(combine_toall, T, N, OP)                                     \
  void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce,        \
                                 int PE_start, int logPE_stride, int PE_size,  \
                                 T *pWrk, long *pSync) {                       \
    struct shm_group g;                                                        \
    (void)pWrk;                                                                \
    shm__require_init("shmem_" #OP "_to_all");                                 \
    shm__active_group(PE_start, logPE_stride, PE_size, pSync, &g);             \
    shm__reduce(&g, dest, source, nreduce < 0 ? 0 : (size_t)nreduce,           \
                sizeof(T), combine_toall_##N##_##OP);                          \
  }
#define SHM_DEF_TOALL_BIT(T, N)                                                \
  SHM_DEF_TOALL(T, N, and) SHM_DEF_TOALL(T, N, or) SHM_DEF_TOALL(T, N, xor)
#define SHM_DEF_TOALL_CMP(T, N)                                                \
  SHM_DEF_TOALL(T, N, max) SHM_DEF_TOALL(T, N, min)
#define SHM_DEF_TOALL_ARITH(T, N)                                              \
  SHM_DEF_TOALL(T, N, sum) SHM_DEF_TOALL(T, N, prod)
SYMHEAP_SHMEM_TOALL_BIT_TYPES(SHM_DEF_TOALL_BIT)
SYMHEAP_SHMEM_TOALL_CMP_TYPES(SHM_DEF_TOALL_CMP)
SYMHEAP_SHMEM_TOALL_ARITH_TYPES(SHM_DEF_TOALL_ARITH)

/* Deprecated active-set data movement: PE_root is relative to the active
 * set, and the root's dest is left alone. */
#define SHM_ACTIVE(g, fn)                                                      \
  struct shm_group g;                                                          \
  shm__require_init(fn);                                                       \
  shm__active_group(PE_start, logPE_stride, PE_size, pSync, &g);
#define SHM_DEF_ACTIVE(B)                                                      \
  void shmem_broadcast##B(void *dest, const void *source, size_t nelems,       \
                          int PE_root, int PE_start, int logPE_stride,         \
                          int PE_size, long *pSync) {                          \
    SHM_ACTIVE(g, "shmem_broadcast" #B)                                        \
    shm__broadcast(&g, dest, source, symheap_shmem_bytes(nelems, B / 8),       \
                   PE_root, 0);                                                \
  }                                                                            \
  void shmem_collect##B(void *dest, const void *source, size_t nelems,         \
                        int PE_start, int logPE_stride, int PE_size,           \
                        long *pSync) {                                         \
    SHM_ACTIVE(g, "shmem_collect" #B)                                          \
    shm__collect(&g, dest, source, symheap_shmem_bytes(nelems, B / 8), 0);     \
  }                                                                            \
  void shmem_fcollect##B(void *dest, const void *source, size_t nelems,        \
                         int PE_start, int logPE_stride, int PE_size,          \
                         long *pSync) {                                        \
    SHM_ACTIVE(g, "shmem_fcollect" #B)                                         \
    shm__collect(&g, dest, source, symheap_shmem_bytes(nelems, B / 8), 1);     \
  }                                                                            \
  void shmem_alltoall##B(void *dest, const void *source, size_t nelems,        \
                         int PE_start, int logPE_stride, int PE_size,          \
                         long *pSync) {                                        \
    SHM_ACTIVE(g, "shmem_alltoall" #B)                                         \
    shm__alltoalls(&g, dest, source, 1, 1, nelems, B / 8);                     \
  }                                                                            \
  void shmem_alltoalls##B(void *dest, const void *source, ptrdiff_t dst,       \
                          ptrdiff_t sst, size_t nelems, int PE_start,          \
                          int logPE_stride, int PE_size, long *pSync) {        \
    SHM_ACTIVE(g, "shmem_alltoalls" #B)                                        \
    shm__alltoalls(&g, dest, source, dst, sst, nelems, B / 8);                 \
  }
SHM_DEF_ACTIVE(32)
SHM_DEF_ACTIVE(64)

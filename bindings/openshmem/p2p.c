/* Point-to-point synchronisation: wait_until and test, in all their forms.
 * The variables are this PE's own symmetric memory, written by peers through
 * their mappings; each is read with an acquire load, and waits spin then
 * yield through shm__spin (bounded: a vanished PE or a global exit ends
 * them). */
#include <stdint.h>

#include "shmem_peer.h"

#define SHM_IGNORED(status, i) ((status) && (status)[i])

/* Where test_any and wait_until_any start looking, moved on at each call so
 * that every satisfied element gets its turn (a caller that loops on
 * test_any without a status array still sees them all). */
static _Thread_local size_t any_start;

/* A test that fails is a turn of the caller's own wait loop: count it like
 * one, so that loops on test yield and stay bounded too.  Across hosts
 * the turn's sleep is the shortest (the core's naps grow with the time
 * since its wait began: a test is a new wait each time, or a program that
 * tests between stretches of work would sleep longer and longer in it). */
static _Thread_local struct shm_spin test_spin;
static inline int test_result(int hit) {
  if (hit) {
    test_spin.n = 0;
    test_spin.net = (symheap_wait_state_t){0};
  } else {
    test_spin.net.since_ns = 0;
    test_spin.polls = 1;
    shm__spin(&test_spin);
  }
  return hit;
}

static int all_ignored(size_t n, const int *status) {
  for (size_t i = 0; i < n; i++)
    if (!SHM_IGNORED(status, i))
      return 0;
  return 1;
}

#define SHM_CMP_BODY(cmp, x, v)                                                \
  switch (cmp) {                                                               \
  case SHMEM_CMP_EQ:                                                           \
    return (x) == (v);                                                         \
  case SHMEM_CMP_NE:                                                           \
    return (x) != (v);                                                         \
  case SHMEM_CMP_GT:                                                           \
    return (x) > (v);                                                          \
  case SHMEM_CMP_GE:                                                           \
    return (x) >= (v);                                                         \
  case SHMEM_CMP_LT:                                                           \
    return (x) < (v);                                                          \
  case SHMEM_CMP_LE:                                                           \
    return (x) <= (v);                                                         \
  default:                                                                     \
    shm__fatal("unknown comparison operator %d", cmp);                         \
  }

/* The n words a wait or test looks at are this PE's symmetric ones (the
 * specification's "remotely accessible"), or the job ends, saying so;
 * before, NULL crashed the PE.  None for n = 0 (Annex C). */
static inline void check_words(const void *iv, size_t n, size_t elem) {
  size_t bytes;
  if (n && !__builtin_mul_overflow(n, elem, &bytes))
    (void)shm__peer_n(iv, bytes, shm__s.me);
  else if (n)
    shm__range_fatal(iv, SIZE_MAX);
}

#define SHM_DEF_P2P(T, N)                                                      \
  static int sat_##N(T *iv, size_t i, int cmp, const T *vals, T val) {         \
    T x = __atomic_load_n(&iv[i], __ATOMIC_ACQUIRE);                           \
    T v = vals ? vals[i] : val;                                                \
    SHM_CMP_BODY(cmp, x, v)                                                    \
  }                                                                            \
  static int all_##N(T *iv, size_t n, const int *st, int cmp, const T *vals,   \
                     T val) {                                                  \
    check_words(iv, n, sizeof(T));                                             \
    for (size_t i = 0; i < n; i++)                                             \
      if (!SHM_IGNORED(st, i) && !sat_##N(iv, i, cmp, vals, val))              \
        return 0;                                                              \
    return 1;                                                                  \
  }                                                                            \
  static size_t any_##N(T *iv, size_t n, const int *st, int cmp,               \
                        const T *vals, T val) {                                \
    size_t s0 = n ? any_start++ % n : 0;                                       \
    check_words(iv, n, sizeof(T));                                             \
    for (size_t k = 0; k < n; k++) {                                           \
      size_t i = (s0 + k) % n;                                                 \
      if (!SHM_IGNORED(st, i) && sat_##N(iv, i, cmp, vals, val))               \
        return i;                                                              \
    }                                                                          \
    return SIZE_MAX;                                                           \
  }                                                                            \
  static size_t some_##N(T *iv, size_t n, size_t *idx, const int *st, int cmp, \
                         const T *vals, T val) {                               \
    size_t c = 0;                                                              \
    check_words(iv, n, sizeof(T));                                             \
    for (size_t i = 0; i < n; i++)                                             \
      if (!SHM_IGNORED(st, i) && sat_##N(iv, i, cmp, vals, val))               \
        idx[c++] = i;                                                          \
    return c;                                                                  \
  }                                                                            \
  static void wait_all_##N(T *iv, size_t n, const int *st, int cmp,            \
                           const T *vals, T val) {                             \
    struct shm_spin spin = SHM_SPIN_INIT;                                      \
    while (!all_##N(iv, n, st, cmp, vals, val))                                \
      shm__spin(&spin);                                                        \
  }                                                                            \
  static size_t wait_any_##N(T *iv, size_t n, const int *st, int cmp,          \
                             const T *vals, T val) {                           \
    struct shm_spin spin = SHM_SPIN_INIT;                                      \
    size_t r;                                                                  \
    if (all_ignored(n, st))                                                    \
      return SIZE_MAX;                                                         \
    while ((r = any_##N(iv, n, st, cmp, vals, val)) == SIZE_MAX)               \
      shm__spin(&spin);                                                        \
    return r;                                                                  \
  }                                                                            \
  static size_t wait_some_##N(T *iv, size_t n, size_t *idx, const int *st,     \
                              int cmp, const T *vals, T val) {                 \
    struct shm_spin spin = SHM_SPIN_INIT;                                      \
    size_t r;                                                                  \
    if (all_ignored(n, st))                                                    \
      return 0;                                                                \
    while ((r = some_##N(iv, n, idx, st, cmp, vals, val)) == 0)                \
      shm__spin(&spin);                                                        \
    return r;                                                                  \
  }                                                                            \
  void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value) {                 \
    wait_all_##N(ivar, 1, NULL, cmp, NULL, cmp_value);                         \
  }                                                                            \
  void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status,  \
                                  int cmp, T cmp_value) {                      \
    wait_all_##N(ivars, nelems, status, cmp, NULL, cmp_value);                 \
  }                                                                            \
  size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems,                   \
                                    const int *status, int cmp, T cmp_value) { \
    return wait_any_##N(ivars, nelems, status, cmp, NULL, cmp_value);          \
  }                                                                            \
  size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices, \
                                     const int *status, int cmp,               \
                                     T cmp_value) {                            \
    return wait_some_##N(ivars, nelems, indices, status, cmp, NULL,            \
                         cmp_value);                                           \
  }                                                                            \
  void shmem_##N##_wait_until_all_vector(                                      \
      T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values) {    \
    wait_all_##N(ivars, nelems, status, cmp, cmp_values, (T)0);                \
  }                                                                            \
  size_t shmem_##N##_wait_until_any_vector(                                    \
      T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values) {    \
    return wait_any_##N(ivars, nelems, status, cmp, cmp_values, (T)0);         \
  }                                                                            \
  size_t shmem_##N##_wait_until_some_vector(                                   \
      T *ivars, size_t nelems, size_t *indices, const int *status, int cmp,    \
      T *cmp_values) {                                                         \
    return wait_some_##N(ivars, nelems, indices, status, cmp, cmp_values,      \
                         (T)0);                                                \
  }                                                                            \
  int shmem_##N##_test(T *ivar, int cmp, T cmp_value) {                        \
    check_words(ivar, 1, sizeof(T));                                           \
    return test_result(sat_##N(ivar, 0, cmp, NULL, cmp_value));                \
  }                                                                            \
  int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status,         \
                           int cmp, T cmp_value) {                             \
    return test_result(all_##N(ivars, nelems, status, cmp, NULL, cmp_value));  \
  }                                                                            \
  size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status,      \
                              int cmp, T cmp_value) {                          \
    size_t r = any_##N(ivars, nelems, status, cmp, NULL, cmp_value);           \
    test_result(r != SIZE_MAX);                                                \
    return r;                                                                  \
  }                                                                            \
  size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices,       \
                               const int *status, int cmp, T cmp_value) {      \
    size_t r = some_##N(ivars, nelems, indices, status, cmp, NULL, cmp_value); \
    test_result(r != 0);                                                       \
    return r;                                                                  \
  }                                                                            \
  int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status,  \
                                  int cmp, T *cmp_values) {                    \
    return test_result(all_##N(ivars, nelems, status, cmp, cmp_values, (T)0)); \
  }                                                                            \
  size_t shmem_##N##_test_any_vector(                                          \
      T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values) {    \
    size_t r = any_##N(ivars, nelems, status, cmp, cmp_values, (T)0);          \
    test_result(r != SIZE_MAX);                                                \
    return r;                                                                  \
  }                                                                            \
  size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems,                 \
                                      size_t *indices, const int *status,      \
                                      int cmp, T *cmp_values) {                \
    size_t r =                                                                 \
        some_##N(ivars, nelems, indices, status, cmp, cmp_values, (T)0);       \
    test_result(r != 0);                                                       \
    return r;                                                                  \
  }                                                                            \
  void shmem_##N##_wait(T *ivar, T cmp_value) {                                \
    wait_all_##N(ivar, 1, NULL, SHMEM_CMP_NE, NULL, cmp_value);                \
  }
SYMHEAP_SHMEM_P2P_TYPES(SHM_DEF_P2P)

/* Signals are written by the library (shm_signal), which wakes a PE asleep
 * on one: this wait sleeps in a futex on the signal word. */
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp,
                                 uint64_t cmp_value) {
  struct shm_spin spin = SHM_SPIN_INIT;
  uint64_t v;
  check_words(sig_addr, 1, 8);
  if (shm__s.net) { /* written through the network engine: it progresses */
    if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE)
      shm__fatal("unknown comparison operator %d", cmp);
    return shm__net_wait_word(sig_addr, cmp, cmp_value);
  }
  while (v = __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE),
         !sat_uint64(&v, 0, cmp, NULL, cmp_value))
    shm__spin_on(&spin, sig_addr, (int)(uint32_t)v);
  return v;
}

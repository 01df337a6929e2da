/* symheap-shmem: the C11 type-generic interfaces of OpenSHMEM 1.5.
 *
 * Included by shmem.h in C11 (not C++).  A routine with a context form takes
 * an optional shmem_ctx_t first: shmem_put(dest, src, n, pe) or
 * shmem_put(ctx, dest, src, n, pe); the first argument's type picks the form
 * and the pointer's type picks the typed routine.  A type the specification
 * does not list selects symheap_shmem_generic_bad, which takes no arguments,
 * so the mistake is a compile-time error. */
#ifndef SYMHEAP_SHMEM_GENERIC_H
#define SYMHEAP_SHMEM_GENERIC_H

void symheap_shmem_generic_bad(void);

/* The C types of each table, once each (int32_t is int, and so on). */
#define SYMHEAP_SHG_RMA(X, P, S)                                               \
  X(float, float, P, S)                                                        \
  X(double, double, P, S)                                                      \
  X(long double, longdouble, P, S)                                             \
  X(char, char, P, S)                                                          \
  X(signed char, schar, P, S)                                                  \
  X(short, short, P, S)                                                        \
  X(int, int, P, S)                                                            \
  X(long, long, P, S)                                                          \
  X(long long, longlong, P, S)                                                 \
  X(unsigned char, uchar, P, S)                                                \
  X(unsigned short, ushort, P, S)                                              \
  X(unsigned int, uint, P, S)                                                  \
  X(unsigned long, ulong, P, S)                                                \
  X(unsigned long long, ulonglong, P, S)
#define SYMHEAP_SHG_AMO_UNSIGNED(X, P, S)                                      \
  X(unsigned int, uint, P, S)                                                  \
  X(unsigned long, ulong, P, S)                                                \
  X(unsigned long long, ulonglong, P, S)
/* The bitwise AMOs also take int32_t and int64_t (int and long here). */
#define SYMHEAP_SHG_AMO_BIT(X, P, S)                                           \
  SYMHEAP_SHG_AMO_UNSIGNED(X, P, S)                                            \
  X(int32_t, int32, P, S)                                                      \
  X(int64_t, int64, P, S)
#define SYMHEAP_SHG_AMO_STD(X, P, S)                                           \
  SYMHEAP_SHG_AMO_UNSIGNED(X, P, S)                                            \
  X(int, int, P, S)                                                            \
  X(long, long, P, S)                                                          \
  X(long long, longlong, P, S)
#define SYMHEAP_SHG_AMO_EXT(X, P, S)                                           \
  SYMHEAP_SHG_AMO_STD(X, P, S)                                                 \
  X(float, float, P, S)                                                        \
  X(double, double, P, S)
#define SYMHEAP_SHG_P2P(X, P, S)                                               \
  SYMHEAP_SHG_AMO_STD(X, P, S)                                                 \
  X(short, short, P, S)                                                        \
  X(unsigned short, ushort, P, S)
/* Bitwise reductions: the unsigned types and int8_t ... int64_t. */
#define SYMHEAP_SHG_RED_UNSIGNED(X, P, S)                                      \
  SYMHEAP_SHG_AMO_UNSIGNED(X, P, S)                                            \
  X(unsigned char, uchar, P, S)                                                \
  X(unsigned short, ushort, P, S)
#define SYMHEAP_SHG_RED_BIT(X, P, S)                                           \
  SYMHEAP_SHG_RED_UNSIGNED(X, P, S)                                            \
  X(int8_t, int8, P, S)                                                        \
  X(int16_t, int16, P, S)                                                      \
  X(int32_t, int32, P, S)                                                      \
  X(int64_t, int64, P, S)
#define SYMHEAP_SHG_RED_CMP(X, P, S)                                           \
  SYMHEAP_SHG_RED_UNSIGNED(X, P, S)                                            \
  X(char, char, P, S)                                                          \
  X(signed char, schar, P, S)                                                  \
  X(short, short, P, S)                                                        \
  X(int, int, P, S)                                                            \
  X(long, long, P, S)                                                          \
  X(long long, longlong, P, S)                                                 \
  X(float, float, P, S)                                                        \
  X(double, double, P, S)                                                      \
  X(long double, longdouble, P, S)
#define SYMHEAP_SHG_RED_ARITH(X, P, S)                                         \
  SYMHEAP_SHG_RED_CMP(X, P, S)                                                 \
  X(double _Complex, complexd, P, S)                                           \
  X(float _Complex, complexf, P, S)

#define SYMHEAP_SHG_ASSOC(T, N, P, S) T * : P##N##S, const T * : P##N##S,
#define SYMHEAP_SHG_SEL(LIST, P, S, x)                                         \
  _Generic((x), LIST(SYMHEAP_SHG_ASSOC, P, S) default                          \
           : symheap_shmem_generic_bad)
#define SYMHEAP_SHG_ARG1(a, ...) a
#define SYMHEAP_SHG_ARG2(a, b, ...) b
/* An optional context first: pick the ctx_ or plain routine. */
#define SYMHEAP_SHG_CTXOPT(LIST, S, ...)                                       \
  _Generic(SYMHEAP_SHG_ARG1(__VA_ARGS__, 0), shmem_ctx_t                       \
           : SYMHEAP_SHG_SEL(LIST, shmem_ctx_, S,                              \
                             SYMHEAP_SHG_ARG2(__VA_ARGS__, 0, 0)),             \
             default                                                           \
           : SYMHEAP_SHG_SEL(LIST, shmem_, S,                                  \
                             SYMHEAP_SHG_ARG1(__VA_ARGS__, 0)))(__VA_ARGS__)
/* No context; the argument at position 1 (the team comes first) picks. */
#define SYMHEAP_SHG_TEAM(LIST, S, team, dest, ...)                             \
  SYMHEAP_SHG_SEL(LIST, shmem_, S, dest)(team, dest, __VA_ARGS__)
#define SYMHEAP_SHG_FIRST(LIST, S, x, ...)                                     \
  SYMHEAP_SHG_SEL(LIST, shmem_, S, x)(x, __VA_ARGS__)

/* RMA. */
#define shmem_put(...) SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_RMA, _put, __VA_ARGS__)
#define shmem_get(...) SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_RMA, _get, __VA_ARGS__)
#define shmem_put_nbi(...)                                                     \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_RMA, _put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...)                                                     \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_RMA, _get_nbi, __VA_ARGS__)
#define shmem_iput(...) SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_RMA, _iput, __VA_ARGS__)
#define shmem_iget(...) SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_RMA, _iget, __VA_ARGS__)
#define shmem_p(...) SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_RMA, _p, __VA_ARGS__)
#define shmem_g(...) SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_RMA, _g, __VA_ARGS__)
#define shmem_put_signal(...)                                                  \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_RMA, _put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...)                                              \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_RMA, _put_signal_nbi, __VA_ARGS__)

/* AMOs. */
#define shmem_atomic_fetch(...)                                                \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_EXT, _atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...)                                                  \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_EXT, _atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...)                                                 \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_EXT, _atomic_swap, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...)                                            \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_EXT, _atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...)                                             \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_EXT, _atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap(...)                                         \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_STD, _atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...)                                            \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_STD, _atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...)                                                  \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_STD, _atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...)                                            \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_STD, _atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...)                                                  \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_STD, _atomic_add, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...)                                     \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_STD, _atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...)                                        \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_STD, _atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...)                                        \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_STD, _atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and(...)                                            \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_BIT, _atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...)                                             \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_BIT, _atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...)                                            \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_BIT, _atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_and(...)                                                  \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_BIT, _atomic_and, __VA_ARGS__)
#define shmem_atomic_or(...)                                                   \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_BIT, _atomic_or, __VA_ARGS__)
#define shmem_atomic_xor(...)                                                  \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_BIT, _atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...)                                        \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_BIT, _atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...)                                         \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_BIT, _atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...)                                        \
  SYMHEAP_SHG_CTXOPT(SYMHEAP_SHG_AMO_BIT, _atomic_fetch_xor_nbi, __VA_ARGS__)

/* Collectives. */
#define shmem_broadcast(...)                                                   \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RMA, _broadcast, __VA_ARGS__)
#define shmem_collect(...)                                                     \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RMA, _collect, __VA_ARGS__)
#define shmem_fcollect(...)                                                    \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RMA, _fcollect, __VA_ARGS__)
#define shmem_alltoall(...)                                                    \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RMA, _alltoall, __VA_ARGS__)
#define shmem_alltoalls(...)                                                   \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RMA, _alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...)                                                  \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RED_BIT, _and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...)                                                   \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RED_BIT, _or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...)                                                  \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RED_BIT, _xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...)                                                  \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RED_CMP, _max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...)                                                  \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RED_CMP, _min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...)                                                  \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RED_ARITH, _sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...)                                                 \
  SYMHEAP_SHG_TEAM(SYMHEAP_SHG_RED_ARITH, _prod_reduce, __VA_ARGS__)

/* Point-to-point synchronisation. */
#define shmem_wait_until(...)                                                  \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _wait_until, __VA_ARGS__)
#define shmem_wait_until_all(...)                                              \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...)                                              \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...)                                             \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...)                                       \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...)                                       \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...)                                      \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _wait_until_some_vector, __VA_ARGS__)
#define shmem_test(...) SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _test, __VA_ARGS__)
#define shmem_test_all(...)                                                    \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _test_all, __VA_ARGS__)
#define shmem_test_any(...)                                                    \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _test_any, __VA_ARGS__)
#define shmem_test_some(...)                                                   \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _test_some, __VA_ARGS__)
#define shmem_test_all_vector(...)                                             \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...)                                             \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...)                                            \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _test_some_vector, __VA_ARGS__)
#define shmem_wait(...) SYMHEAP_SHG_FIRST(SYMHEAP_SHG_P2P, _wait, __VA_ARGS__)

/* The deprecated generics (OpenSHMEM 1.3's AMO names; 1.5 still requires
 * them): no context form, and only the types those names had. */
#define SYMHEAP_SHG_OLD(X, P, S)                                               \
  X(int, int, P, S)                                                            \
  X(long, long, P, S)                                                          \
  X(long long, longlong, P, S)
#define SYMHEAP_SHG_OLD_EXT(X, P, S)                                           \
  SYMHEAP_SHG_OLD(X, P, S)                                                     \
  X(float, float, P, S)                                                        \
  X(double, double, P, S)
#define shmem_finc(...) SYMHEAP_SHG_FIRST(SYMHEAP_SHG_OLD, _finc, __VA_ARGS__)
#define shmem_fadd(...) SYMHEAP_SHG_FIRST(SYMHEAP_SHG_OLD, _fadd, __VA_ARGS__)
#define shmem_cswap(...) SYMHEAP_SHG_FIRST(SYMHEAP_SHG_OLD, _cswap, __VA_ARGS__)
#define shmem_inc(...) SYMHEAP_SHG_FIRST(SYMHEAP_SHG_OLD, _inc, __VA_ARGS__)
#define shmem_add(...) SYMHEAP_SHG_FIRST(SYMHEAP_SHG_OLD, _add, __VA_ARGS__)
#define shmem_swap(...)                                                        \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_OLD_EXT, _swap, __VA_ARGS__)
#define shmem_fetch(...)                                                       \
  SYMHEAP_SHG_FIRST(SYMHEAP_SHG_OLD_EXT, _fetch, __VA_ARGS__)
#define shmem_set(...) SYMHEAP_SHG_FIRST(SYMHEAP_SHG_OLD_EXT, _set, __VA_ARGS__)

#endif /* SYMHEAP_SHMEM_GENERIC_H */

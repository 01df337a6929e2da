/* symheap-shmem: the type tables of OpenSHMEM 1.5, as X-macros.
 *
 * Each list calls X(TYPE, TYPENAME) once per type of one of the
 * specification's tables; shmem.h declares every typed routine from them and
 * the library defines them from the same lists, so the two cannot drift.
 * Installed as symheap-shmem/shmem_types.h; included by shmem.h. */
#ifndef SYMHEAP_SHMEM_TYPES_H
#define SYMHEAP_SHMEM_TYPES_H

/* Table "Standard RMA Types and Names": RMA, broadcast, collect, alltoall. */
#define SYMHEAP_SHMEM_RMA_TYPES(X)                                             \
  X(float, float)                                                              \
  X(double, double)                                                            \
  X(long double, longdouble)                                                   \
  X(char, char)                                                                \
  X(signed char, schar)                                                        \
  X(short, short)                                                              \
  X(int, int)                                                                  \
  X(long, long)                                                                \
  X(long long, longlong)                                                       \
  X(unsigned char, uchar)                                                      \
  X(unsigned short, ushort)                                                    \
  X(unsigned int, uint)                                                        \
  X(unsigned long, ulong)                                                      \
  X(unsigned long long, ulonglong)                                             \
  X(int8_t, int8)                                                              \
  X(int16_t, int16)                                                            \
  X(int32_t, int32)                                                            \
  X(int64_t, int64)                                                            \
  X(uint8_t, uint8)                                                            \
  X(uint16_t, uint16)                                                          \
  X(uint32_t, uint32)                                                          \
  X(uint64_t, uint64)                                                          \
  X(size_t, size)                                                              \
  X(ptrdiff_t, ptrdiff)

/* Table "Standard AMO Types": inc, add, compare_swap and their fetch forms. */
#define SYMHEAP_SHMEM_AMO_STD_TYPES(X)                                         \
  X(int, int)                                                                  \
  X(long, long)                                                                \
  X(long long, longlong)                                                       \
  X(unsigned int, uint)                                                        \
  X(unsigned long, ulong)                                                      \
  X(unsigned long long, ulonglong)                                             \
  X(int32_t, int32)                                                            \
  X(int64_t, int64)                                                            \
  X(uint32_t, uint32)                                                          \
  X(uint64_t, uint64)                                                          \
  X(size_t, size)                                                              \
  X(ptrdiff_t, ptrdiff)

/* Table "Extended AMO Types": fetch, set, swap (the standard ones too). */
#define SYMHEAP_SHMEM_AMO_EXT_TYPES(X)                                         \
  SYMHEAP_SHMEM_AMO_STD_TYPES(X)                                               \
  X(float, float)                                                              \
  X(double, double)

/* Table "Bitwise AMO Types": and, or, xor and their fetch forms. */
#define SYMHEAP_SHMEM_AMO_BIT_TYPES(X)                                         \
  X(unsigned int, uint)                                                        \
  X(unsigned long, ulong)                                                      \
  X(unsigned long long, ulonglong)                                             \
  X(int32_t, int32)                                                            \
  X(int64_t, int64)                                                            \
  X(uint32_t, uint32)                                                          \
  X(uint64_t, uint64)

/* Table "Point-to-Point Synchronization Types": wait_until, test. */
#define SYMHEAP_SHMEM_P2P_TYPES(X)                                             \
  X(short, short)                                                              \
  X(int, int)                                                                  \
  X(long, long)                                                                \
  X(long long, longlong)                                                       \
  X(unsigned short, ushort)                                                    \
  X(unsigned int, uint)                                                        \
  X(unsigned long, ulong)                                                      \
  X(unsigned long long, ulonglong)                                             \
  X(int32_t, int32)                                                            \
  X(int64_t, int64)                                                            \
  X(uint32_t, uint32)                                                          \
  X(uint64_t, uint64)                                                          \
  X(size_t, size)                                                              \
  X(ptrdiff_t, ptrdiff)

/* Reduction types: and/or/xor. */
#define SYMHEAP_SHMEM_REDUCE_BIT_TYPES(X)                                      \
  X(unsigned char, uchar)                                                      \
  X(unsigned short, ushort)                                                    \
  X(unsigned int, uint)                                                        \
  X(unsigned long, ulong)                                                      \
  X(unsigned long long, ulonglong)                                             \
  X(int8_t, int8)                                                              \
  X(int16_t, int16)                                                            \
  X(int32_t, int32)                                                            \
  X(int64_t, int64)                                                            \
  X(uint8_t, uint8)                                                            \
  X(uint16_t, uint16)                                                          \
  X(uint32_t, uint32)                                                          \
  X(uint64_t, uint64)                                                          \
  X(size_t, size)

/* Reduction types: max/min (and, with the complex types, sum/prod). */
#define SYMHEAP_SHMEM_REDUCE_CMP_TYPES(X)                                      \
  X(char, char)                                                                \
  X(signed char, schar)                                                        \
  X(short, short)                                                              \
  X(int, int)                                                                  \
  X(long, long)                                                                \
  X(long long, longlong)                                                       \
  X(ptrdiff_t, ptrdiff)                                                        \
  X(unsigned char, uchar)                                                      \
  X(unsigned short, ushort)                                                    \
  X(unsigned int, uint)                                                        \
  X(unsigned long, ulong)                                                      \
  X(unsigned long long, ulonglong)                                             \
  X(int8_t, int8)                                                              \
  X(int16_t, int16)                                                            \
  X(int32_t, int32)                                                            \
  X(int64_t, int64)                                                            \
  X(uint8_t, uint8)                                                            \
  X(uint16_t, uint16)                                                          \
  X(uint32_t, uint32)                                                          \
  X(uint64_t, uint64)                                                          \
  X(size_t, size)                                                              \
  X(float, float)                                                              \
  X(double, double)                                                            \
  X(long double, longdouble)

/* sum/prod add the complex types, which C++ has no spelling for. */
#ifndef __cplusplus
#define SYMHEAP_SHMEM_COMPLEX_TYPES(X)                                         \
  X(double _Complex, complexd)                                                 \
  X(float _Complex, complexf)
#else
#define SYMHEAP_SHMEM_COMPLEX_TYPES(X)
#endif
#define SYMHEAP_SHMEM_REDUCE_ARITH_TYPES(X)                                    \
  SYMHEAP_SHMEM_REDUCE_CMP_TYPES(X)                                            \
  SYMHEAP_SHMEM_COMPLEX_TYPES(X)

/* The deprecated active-set reductions (shmem_TYPENAME_OP_to_all). */
#define SYMHEAP_SHMEM_TOALL_BIT_TYPES(X)                                       \
  X(short, short)                                                              \
  X(int, int)                                                                  \
  X(long, long)                                                                \
  X(long long, longlong)
#define SYMHEAP_SHMEM_TOALL_CMP_TYPES(X)                                       \
  SYMHEAP_SHMEM_TOALL_BIT_TYPES(X)                                             \
  X(float, float)                                                              \
  X(double, double)                                                            \
  X(long double, longdouble)
#define SYMHEAP_SHMEM_TOALL_ARITH_TYPES(X)                                     \
  SYMHEAP_SHMEM_TOALL_CMP_TYPES(X)                                             \
  SYMHEAP_SHMEM_COMPLEX_TYPES(X)

/* The deprecated AMO names (shmem_int_fadd, ...) of OpenSHMEM 1.3: these
 * types, and float/double for swap, fetch and set. */
#define SYMHEAP_SHMEM_OLD_AMO_TYPES(X)                                         \
  X(int, int)                                                                  \
  X(long, long)                                                                \
  X(long long, longlong)
#define SYMHEAP_SHMEM_OLD_AMO_EXT_TYPES(X)                                     \
  SYMHEAP_SHMEM_OLD_AMO_TYPES(X)                                               \
  X(float, float)                                                              \
  X(double, double)

/* Sized RMA: X(BITS, a C type of that size). */
#define SYMHEAP_SHMEM_SIZES(X)                                                 \
  X(8, uint8_t)                                                                \
  X(16, uint16_t)                                                              \
  X(32, uint32_t)                                                              \
  X(64, uint64_t)                                                              \
  X(128, symheap_shmem_u128_t)

/* The operations of each reduction family: X(OPNAME). */
#define SYMHEAP_SHMEM_BIT_OPS(X) X(and) X(or) X(xor)
#define SYMHEAP_SHMEM_CMP_OPS(X) X(max) X(min)
#define SYMHEAP_SHMEM_ARITH_OPS(X) X(sum) X(prod)

#endif /* SYMHEAP_SHMEM_TYPES_H */

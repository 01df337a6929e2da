/* SHMEM_SYMMETRIC_SIZE's syntax, as OpenSHMEM 1.5 words it: "a non-negative
 * integer or floating point value with an optional character suffix K, k, M,
 * m, G, g, T, or t".  So 3.1M, .5m, 0 and 2T are sizes; what follows a
 * suffix is ignored (20kk is 20 KiB, 1GB is 1 GiB), as other implementations
 * do.  Refused: anything else before or instead of the number (" 1G", "-1",
 * "+1"), junk after a number with no suffix ("12x"), and a value that does
 * not fit in size_t (17179869185G).  Fractions round up to a whole byte.
 * Depends on nothing but the C library, so the tests build it on its own
 * (test/shmem/test_shmem_env.c). */
#include <stddef.h>
#include <stdint.h>

#include "shmem_env.h"

static int shm_mult(char c, unsigned *shift) {
  switch (c) {
  case 'k':
  case 'K':
    *shift = 10;
    return 1;
  case 'm':
  case 'M':
    *shift = 20;
    return 1;
  case 'g':
  case 'G':
    *shift = 30;
    return 1;
  case 't':
  case 'T':
    *shift = 40;
    return 1;
  default:
    return 0;
  }
}

int shm__parse_size(const char *s, size_t *out) {
  unsigned long long whole = 0, frac = 0, scale = 1;
  int digits = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++, digits++)
    if (__builtin_mul_overflow(whole, 10ULL, &whole) ||
        __builtin_add_overflow(whole, (unsigned long long)(*p - '0'), &whole))
      return -1;
  if (*p == '.')
    for (p++; *p >= '0' && *p <= '9'; p++, digits++)
      if (scale < 1000000000000000000ULL) { /* 18 digits are plenty */
        frac = frac * 10 + (unsigned long long)(*p - '0');
        scale *= 10;
      }
  if (digits == 0)
    return -1;
  unsigned shift = 0;
  if (!shm_mult(*p, &shift) && *p && !((*p == 'b' || *p == 'B') && !p[1]))
    return -1; /* junk after a plain number (a trailing B is bytes) */
  /* whole * unit + frac / scale of a unit (rounded up), in 128 bits:
   * whole < 2^64 and unit <= 2^40, so nothing here wraps. */
  unsigned __int128 unit = (unsigned __int128)1 << shift;
  unsigned __int128 v = (unsigned __int128)whole * unit +
                        ((unsigned __int128)frac * unit + scale - 1) / scale;
  if (v > SIZE_MAX)
    return -1;
  *out = (size_t)v;
  return 0;
}

/* Sizes as people write them: digits and an optional K, M, G or T
 * (powers of 1024), the one parser of them. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "size.h"

/* "64G" -> 64 << 30; *ok 0 for anything else than digits and a suffix. */
uint64_t symheap__parse_size(const char *s, int *ok) {
  char *end;
  *ok = 0;
  if (!s || s[0] < '0' || s[0] > '9')
    return 0;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno)
    return 0;
  unsigned shift = 0;
  switch (*end) {
  case 'K':
  case 'k':
    shift = 10;
    end++;
    break;
  case 'M':
  case 'm':
    shift = 20;
    end++;
    break;
  case 'G':
  case 'g':
    shift = 30;
    end++;
    break;
  case 'T':
  case 't':
    shift = 40;
    end++;
    break;
  default:
    break;
  }
  if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
    return 0;
  *ok = 1;
  return (uint64_t)v << shift;
}


uint64_t symheap__phys_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

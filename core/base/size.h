/* Parsing sizes (size.c). */
#ifndef SYMHEAP_SIZE_H
#define SYMHEAP_SIZE_H

#include <stdint.h>

/* "64G" -> 64 << 30; *ok 0 for anything else than digits and a suffix. */
uint64_t symheap__parse_size(const char *s, int *ok);
/* The machine's physical memory in bytes (0 when it cannot be read). */
uint64_t symheap__phys_bytes(void);

#endif

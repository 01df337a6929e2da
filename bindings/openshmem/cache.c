/* The deprecated cache-management routines (OpenSHMEM 1.5 section 9.18,
 * still required): for machines whose caches were not coherent.  Every CPU
 * this library runs on keeps its caches coherent, so each is a no-op, as
 * the specification allows. */
#include "shmem_internal.h"

void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void *dest) { (void)dest; }
void shmem_set_cache_line_inv(void *dest) { (void)dest; }
void shmem_udcflush(void) {}
void shmem_udcflush_line(void *dest) { (void)dest; }

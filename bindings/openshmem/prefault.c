/* Page tables made at allocation, not at the first put or get.
 *
 * A page of the heap is in this process's page tables only once it was
 * touched through that mapping, and every PE maps every other PE's heap (on
 * its host) at an address of its own: the first put or get to a new object
 * took a page fault for each of its pages (reads of pages their owner had
 * touched map up to 16 at once).  On the 2-CPU virtual machine the first
 * put of 512 KiB into a peer's new object took 110 us, 64 faults, against
 * 28 with the tables made at allocation, and 10 us once warm; OSU's latency
 * benchmarks time that first put of their 100 from 16 KiB on
 * (docs/perf/openshmem.md, round 16).  Open MPI's oshmem takes the same
 * faults (one a page, for gets too).
 *
 * So an object of a page up to prefault_max bytes gets this PE's pages
 * before its allocation's barrier (made here: on this PE's NUMA node, not
 * on whichever peer touched them first), and this PE's page tables for
 * every peer's copy on its host after the barrier, when every copy's pages
 * exist.  prefault_max is SYMHEAP_SHMEM_PREFAULT (default
 * SHM_PREFAULT_DEFAULT) over the PEs of the host: the bytes each PE maps
 * for one allocation, and the host commits for it, stay under the
 * variable however many PEs share the host (each makes tables for all of
 * them).  The data segment is one such object, at shmem_init.  Larger
 * objects are left to fault as before: a buffer sized for the largest case
 * would commit all of its memory, on every PE, at once.
 *
 * MADV_POPULATE_WRITE (Linux 5.14).  Where the kernel or the memory lacks
 * it (EINVAL at shmem_init's probe), nothing is prefaulted, and SHMEM_INFO
 * says so.  A hint either way: any other failure leaves that object's pages
 * to fault as before, with the same bytes. */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shmem_internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* linux/mman.h, 5.14: older headers lack it */
#endif

static size_t page_size;
/* SHMEM_INFO's line on what shm__prefault_setup chose. */
static char info[160];

/* [p, p + bytes) widened to whole pages, populated in this process. */
static void populate(const void *p, size_t bytes) {
  uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(page_size - 1);
  uintptr_t hi =
      ((uintptr_t)p + bytes + page_size - 1) & ~(uintptr_t)(page_size - 1);
  (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
}

/* The PEs whose heap this PE maps, itself included: this host's. */
static int local_pes(void) {
  int n = 0;
  for (int q = 0; q < shm__s.npes; q++)
    n += !(shm__s.remote && shm__s.remote[q]) && shm__s.heap_peer[q];
  return n ? n : 1;
}

void shm__prefault_setup(size_t limit) {
  page_size = (size_t)sysconf(_SC_PAGESIZE);
  shm__s.prefault_max = 0;
  int local = local_pes();
  if (!limit) {
    snprintf(info, sizeof info,
             "objects' page tables: made at first use "
             "(SYMHEAP_SHMEM_PREFAULT=0)");
    return;
  }
  /* The control page: in the heap, and already written by every PE. */
  if (madvise(shm__s.ctrl, page_size, MADV_POPULATE_WRITE) != 0 &&
      errno == EINVAL) {
    snprintf(info, sizeof info,
             "objects' page tables: made at first use (this kernel or "
             "memory has no MADV_POPULATE_WRITE, Linux 5.14)");
    return;
  }
  shm__s.prefault_max = limit / (size_t)local;
  snprintf(info, sizeof info,
           "objects of %zu to %zu bytes (%zu over this host's %d PEs): "
           "pages and page tables made at allocation",
           page_size, shm__s.prefault_max, limit, local);
}

const char *shm__prefault_info(void) { return info; }

/* Smaller objects share a page with others, which are (or will be)
 * touched anyway: one fault at most. */
static int prefaulted(size_t bytes) {
  return bytes >= page_size && bytes <= shm__s.prefault_max;
}

void shm__prefault_own(const void *p, size_t bytes) {
  if (p && prefaulted(bytes))
    populate(p, bytes);
}

void shm__prefault_peers(char *const *peer, const char *base, const void *p,
                         size_t bytes) {
  if (!p || !prefaulted(bytes))
    return;
  size_t off = (size_t)((const char *)p - base);
  for (int q = 0; q < shm__s.npes; q++) {
    if (q == shm__s.me || (shm__s.remote && shm__s.remote[q]) || !peer[q])
      continue; /* another host's: no mapping here */
    populate(peer[q] + off, bytes);
  }
}

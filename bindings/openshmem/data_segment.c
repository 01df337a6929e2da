/* Symmetric static and global variables.
 *
 * OpenSHMEM makes the program's global and static variables symmetric.  At
 * shmem_init each PE finds its executable's writable segments (data and bss,
 * from the program headers), takes symheap memory of that size
 * (symheap_mem_alloc), copies the segment's current contents into it, and
 * maps that same memory over the segment (mremap with old size 0 makes a
 * second mapping of shared pages, at MAP_FIXED's place).  From then on the
 * variables live in memory symheap can share: a window over it
 * (symheap_window_register) gives every peer's copy, so &global on this PE
 * translates to peer p's copy by its offset from the segment's start.
 *
 * Limits (docs/openshmem.md): the executable's segments only (not a shared
 * library's); the read-only-after-relocation part at the segment's start
 * becomes writable again; every PE must run the same executable; the
 * backend's memory must be a shared mapping (the host backend's memfd is).
 * SYMHEAP_SHMEM_DATA_SEGMENT=0 leaves the segment alone (statics are then
 * not symmetric). */
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shmem_env.h"
#include "shmem_internal.h"

struct seg_range {
  uintptr_t lo, hi;
};

/* The first object dl_iterate_phdr reports is the executable. */
static int find_exe_rw(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct seg_range *r = arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
      continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    uintptr_t hi = lo + ph->p_memsz;
    if (!r->lo || lo < r->lo)
      r->lo = lo;
    if (hi > r->hi)
      r->hi = hi;
  }
  return 1;
}

/* Copies the segment word by word, as raw memory: it spans every global and
 * the gaps between them (AddressSanitizer's redzones, which memcpy would
 * report as overflows).  Volatile keeps the compiler from calling memcpy. */
__attribute__((no_sanitize("address"))) static void
raw_copy(void *dst, const void *src, size_t len) {
  volatile uint64_t *d = dst;
  const volatile uint64_t *s = src;
  for (size_t i = 0; i < len / sizeof(uint64_t); i++)
    d[i] = s[i];
}

static int data_fail(const char *what) {
  fprintf(stderr,
          "symheap-shmem: shmem_init: cannot make the data segment symmetric: "
          "%s (SYMHEAP_SHMEM_DATA_SEGMENT=0 runs without symmetric "
          "statics)\n",
          what);
  return -1;
}

int shm__data_segment_init(void) {
  /* shmem_init checked the variable (0 or 1) before; one reader of it. */
  if (shm__env_data_segment() == 0)
    return 0;
  struct seg_range r = {0, 0};
  dl_iterate_phdr(find_exe_rw, &r);
  if (!r.lo)
    return 0; /* no writable segment: nothing to share */
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = r.lo & ~(page - 1);
  size_t len = ((r.hi + page - 1) & ~(page - 1)) - lo;
  void *mem = NULL;
  symheap_result_t res = symheap_mem_alloc(shm__s.comm, len, &mem);
  if (res != SYMHEAP_SUCCESS)
    return data_fail(symheap_last_error());
  if ((uintptr_t)mem % page) {
    symheap_mem_free(shm__s.comm, mem);
    return data_fail("symheap_mem_alloc gave memory that is not page-aligned");
  }
  /* Nothing may write the segment between the copy and the remap.  The
   * system call itself, not mremap: a library that interposes mremap may
   * drop the new address, and UCX's memory hooks (SYMHEAP_NET=ucx) did,
   * so the pages went elsewhere and the statics stayed private: every put
   * to one was lost, with no error.  Where it landed is checked as well. */
  raw_copy(mem, (void *)lo, len);
  void *at = (void *)syscall(SYS_mremap, mem, (size_t)0, len,
                             (unsigned long)(MREMAP_MAYMOVE | MREMAP_FIXED),
                             (void *)lo);
  if (at != MAP_FAILED && at != (void *)lo) {
    munmap(at, len);
    symheap_mem_free(shm__s.comm, mem);
    return data_fail("mremap put the backend's memory at another address "
                     "than the data segment's");
  }
  if (at == MAP_FAILED) {
    char why[256];
    snprintf(why, sizeof why,
             "mremap of the backend's memory over the data segment: %s (it "
             "must be a shared mapping; valgrind does not support this "
             "mremap)",
             strerror(errno));
    symheap_mem_free(shm__s.comm, mem);
    return data_fail(why);
  }
  res = symheap_window_register(shm__s.comm, mem, len, 0, &shm__s.data_win);
  if (res != SYMHEAP_SUCCESS) {
    fprintf(stderr, "symheap-shmem: shmem_init: data segment window: %s\n",
            symheap_last_error());
    return -1; /* the segment stays on the shared pages: harmless */
  }
  shm__s.data_mem = mem;
  shm__s.data_peer = calloc((size_t)shm__s.npes, sizeof(char *));
  if (!shm__s.data_peer)
    return data_fail("out of memory");
  for (int p = 0; p < shm__s.npes; p++) {
    void *q = NULL;
    if (shm__s.remote && shm__s.remote[p])
      continue; /* another host: reached by the one-sided API, no address */
    if (symheap_window_peer_ptr(shm__s.data_win, p, &q) != SYMHEAP_SUCCESS)
      return data_fail(symheap_last_error());
    shm__s.data_peer[p] = q;
  }
  shm__s.data_base = (char *)lo;
  shm__s.data_size = len;
  /* The mapping over the segment is new (so are the peers'), but every
   * PE's pages exist: each copied its segment in before the window's
   * registration, which every PE joins. */
  shm__prefault_own((void *)lo, len);
  shm__prefault_peers(shm__s.data_peer, shm__s.data_base, (void *)lo, len);
  return 0;
}

/* The window goes, but the segment stays on its shared pages (the mapping
 * over it keeps them), so the program's variables outlive shmem_finalize. */
void shm__data_segment_fini(void) {
  if (shm__s.data_win)
    symheap_window_deregister(shm__s.comm, shm__s.data_win);
  if (shm__s.data_mem)
    symheap_mem_free(shm__s.comm, shm__s.data_mem);
  free(shm__s.data_peer);
  shm__s.data_win = NULL;
  shm__s.data_mem = NULL;
  shm__s.data_peer = NULL;
  shm__s.data_size = 0;
}

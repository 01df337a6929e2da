/* Page tables made at allocation (bindings/openshmem/prefault.c): a put or
 * get into a new object under the limit (SYMHEAP_SHMEM_PREFAULT over the
 * PEs of the host) takes no page fault, on this PE's copy or a peer's; an
 * object over it takes them as before.  Counted with getrusage's minor
 * faults, not timed.  The test sets SYMHEAP_SHMEM_PREFAULT=8M itself (an
 * object of 2 MiB at 4 PEs), or 0 with --off, where the small object must
 * fault like the large one.
 *
 * Each case compares two fresh ranges of the same size, one in a
 * prefaulted object and one in an object over the limit: "fewer faults"
 * holds under sanitizers too (their shadow pages fault in both).  Where
 * the kernel maps shared memory in huge pages, one fault maps several
 * ranges: that is skipped, saying so. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "shmem_check.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define CHUNK ((size_t)256 << 10)
#define SMALL ((size_t)512 << 10) /* under 8 MiB over up to 8 PEs */
#define LARGE ((size_t)16 << 20)  /* over it at 1 PE */

static int me, npes, off;
static char *src, *sink;    /* CHUNK bytes each of this PE's, written */
static char statics[CHUNK]; /* in the data segment: prefaulted at init */

static long minor_faults(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}

/* Faults taken by one put (or get) of CHUNK bytes at dst on PE pe. */
static long put_faults(char *dst, int pe, int get) {
  long before = minor_faults();
  if (get)
    shmem_getmem(sink, dst, CHUNK, pe);
  else
    shmem_putmem(dst, src, CHUNK, pe);
  return minor_faults() - before;
}

/* s faults into the object under the limit, l into the one over it. */
static void check_faults(long s, long l, const char *what) {
  if (off)
    SHC_CHECK(s > 0,
              "SYMHEAP_SHMEM_PREFAULT=0, yet a %zu-byte %s into a "
              "new object took no fault (the larger one: %ld)",
              CHUNK, what, l);
  else
    SHC_CHECK(s < l,
              "%s of %zu bytes: %ld faults into a prefaulted object, "
              "%ld into one over the limit",
              what, CHUNK, s, l);
  printf("# %s %s: %ld faults (%s), %ld over the limit\n", shc_case, what, s,
         off ? "prefault off" : "prefaulted", l);
}

/* A put (get) into `small` against one into `large` + at, both fresh. */
static void compare(const char *name, char *small, char *large, size_t at,
                    int get) {
  int peer = (me + 1) % npes;
  shc_begin(name);
  shmem_barrier_all();
  long s = put_faults(small, peer, get);
  long l = put_faults(large + at, peer, get);
  check_faults(s, l, get ? "get" : "put");
  shmem_barrier_all();
  shc_end();
}

/* This PE's own writes into its copy of a new object (its own page
 * tables: a peer's prefault allocates the pages, not this mapping). */
static void own_writes(char *small, char *large, size_t at) {
  shc_begin("prefault_heap_own_write");
  long before = minor_faults();
  memset(small, 7, CHUNK);
  long s = minor_faults() - before;
  before = minor_faults();
  memset(large + at, 7, CHUNK);
  check_faults(s, minor_faults() - before, "own write");
  shmem_barrier_all();
  shc_end();
}

/* Whether the kernel maps shared memory (memfd, SysV) in huge pages. */
static int shmem_huge_pages(void) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");
  char line[256] = "";
  if (f) {
    if (!fgets(line, sizeof line, f))
      line[0] = 0;
    fclose(f);
  }
  return strstr(line, "[always]") || strstr(line, "[within_size]") ||
         strstr(line, "[force]");
}

/* Whether this test can count: the kernel has MADV_POPULATE_WRITE (Linux
 * 5.14; without it nothing is prefaulted and SHMEM_INFO says so) and maps
 * shared memory a page at a time. */
static int can_count(void) {
  char *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  int ok = probe != MAP_FAILED &&
           (madvise(probe, 4096, MADV_POPULATE_WRITE) == 0 || errno != EINVAL);
  if (probe != MAP_FAILED)
    munmap(probe, 4096);
  int huge = ok && shmem_huge_pages();
  if (!ok)
    printf("SKIP prefault: this kernel has no MADV_POPULATE_WRITE\n");
  else if (huge)
    printf("SKIP prefault: shared memory is mapped in huge pages here "
           "(/sys/kernel/mm/transparent_hugepage/shmem_enabled)\n");
  return ok && !huge;
}

int main(int argc, char **argv) {
  off = argc > 1 && strcmp(argv[1], "--off") == 0;
  setenv("SYMHEAP_SHMEM_PREFAULT", off ? "0" : "8M", 1);
  if (!can_count())
    return 0;
  shc_init(&me, &npes);
  src = malloc(CHUNK);
  sink = malloc(CHUNK);
  char *warm = shmem_malloc(CHUNK);
  char *small = shmem_malloc(SMALL), *large = shmem_malloc(LARGE);
  if (!src || !sink || !warm || !small || !large) {
    printf("FAIL prefault_alloc PE %d: out of memory\n", me);
    return 1;
  }
  memset(src, me + 1, CHUNK);
  memset(sink, 0, CHUNK);
  memset(warm, 0, CHUNK);
  /* The put and get paths' own first calls (their code, the copy's
   * history) fault too: run them once on pages already touched. */
  shmem_putmem(warm, src, 64, me);
  shmem_getmem(sink, warm, 64, me);
  shmem_putmem(warm, src, CHUNK, me);
  shmem_getmem(sink, warm, CHUNK, me);
  own_writes(small, large, 0);
  compare("prefault_heap_put_peer", small, large, CHUNK, 0);
  compare("prefault_heap_get_peer", small + CHUNK, large, 2 * CHUNK, 1);
  compare("prefault_statics_put_peer", statics, large, 3 * CHUNK, 0);
  /* Grown past its block (large sits right after it): a new block, its
   * tables made again. */
  char *grown = shmem_realloc(small, 2 * SMALL - 64);
  if (!grown) {
    printf("FAIL prefault_realloc PE %d: shmem_realloc gave NULL\n", me);
    return 1;
  }
  small = grown;
  compare("prefault_realloc_put_peer", small + SMALL, large, 4 * CHUNK, 0);
  /* The bytes arrived: the last put wrote PE me's src to the next PE. */
  shc_begin("prefault_bytes");
  shmem_barrier_all();
  int from = (me + npes - 1) % npes;
  SHC_CHECK(small[SMALL] == from + 1 && small[SMALL + CHUNK - 1] == from + 1,
            "the put's bytes: %d %d, not %d", small[SMALL],
            small[SMALL + CHUNK - 1], from + 1);
  shc_end();
  shmem_free(large);
  shmem_free(small);
  shmem_free(warm);
  free(sink);
  free(src);
  shmem_finalize();
  return shc_status();
}

/* Page tables made at allocation (bindings/openshmem/prefault.c): a put or
 * get into a new object of up to SYMHEAP_SHMEM_PREFAULT bytes takes no page
 * fault, on this PE's copy or a peer's; a larger object takes them as
 * before.  Counted with getrusage's minor faults, not timed: run_shmem.sh
 * sets SYMHEAP_SHMEM_PREFAULT=1M (the default here too), and runs it again
 * with 0 and --off, where the small object must fault like the large one.
 *
 * Each case compares two fresh ranges of the same size, one in a
 * prefaulted object and one in an object over the limit: "fewer faults"
 * holds wherever the kernel maps shmem pages one at a time or in huge
 * pages, and under sanitizers (whose shadow pages fault in both). */
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
#define SMALL ((size_t)512 << 10) /* under the 1 MiB limit */
#define LARGE ((size_t)4 << 20)   /* over it: four fresh chunks */

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

/* A put (get) into `small` against one into `large` + at, both fresh. */
static void compare(const char *name, char *small, char *large, size_t at,
                    int get) {
  int peer = (me + 1) % npes;
  shc_begin(name);
  shmem_barrier_all();
  long s = put_faults(small, peer, get);
  long l = put_faults(large + at, peer, get);
  if (off)
    SHC_CHECK(s > 0,
              "SYMHEAP_SHMEM_PREFAULT=0, yet a %zu-byte %s into a "
              "new object took no fault (the larger one: %ld)",
              CHUNK, get ? "get" : "put", l);
  else
    SHC_CHECK(s < l,
              "%s of %zu bytes: %ld faults into a prefaulted object, "
              "%ld into one over the limit",
              get ? "get" : "put", CHUNK, s, l);
  printf("# %s: %ld faults (%s), %ld over the limit\n", name, s,
         off ? "prefault off" : "prefaulted", l);
  shmem_barrier_all();
  shc_end();
}

int main(int argc, char **argv) {
  off = argc > 1 && strcmp(argv[1], "--off") == 0;
  setenv("SYMHEAP_SHMEM_PREFAULT", off ? "0" : "1M", 0);
  /* A kernel without MADV_POPULATE_WRITE (Linux 5.14) prefaults nothing
   * (SHMEM_INFO says so): nothing to check here. */
  char *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (probe != MAP_FAILED && madvise(probe, 4096, MADV_POPULATE_WRITE) != 0 &&
      errno == EINVAL) {
    printf("SKIP prefault: this kernel has no MADV_POPULATE_WRITE\n");
    return 0;
  }
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
  compare("prefault_heap_put_peer", small, large, 0, 0);
  compare("prefault_heap_get_peer", small + CHUNK, large, CHUNK, 1);
  compare("prefault_statics_put_peer", statics, large, 2 * CHUNK, 0);
  /* Grown past its block (large sits right after it): a new block, its
   * tables made again. */
  small = shmem_realloc(small, 2 * SMALL - 64);
  compare("prefault_realloc_put_peer", small + SMALL, large, 3 * CHUNK, 0);
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

/* The symmetric heap: one symheap_malloc window per PE (SHMEM_SYMMETRIC_SIZE
 * bytes, default 1 GiB; the memory is committed as it is touched, or as an
 * object of up to SYMHEAP_SHMEM_PREFAULT bytes is allocated), carved
 * by a first-fit allocator.  Every PE makes the same calls in the same order
 * (the routines are collective), and the allocator is deterministic, so an
 * object has the same offset on every PE: that offset is its symmetric
 * address.  The first bytes hold the PE's control block (struct shm_ctrl). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_env.h"
#include "shmem_internal.h"

/* Large enough for programs sized for other implementations' defaults
 * (OSU's message-rate benchmarks allocate about 200 MiB); it costs address
 * space, not memory: the window's pages are committed as they are touched. */
#define SHM_HEAP_DEFAULT ((size_t)1 << 30)
#define SHM_MIN_ALIGN 64
/* Every PE's heap starts at this alignment in its window (heap_shifts):
 * shmem_align up to it has one offset on every PE. */
#define SHM_HEAP_ALIGN ((size_t)2 << 20)

/* A block of the heap, in offset order; free or used. */
struct shm_block {
  size_t off, size;
  int used;
  struct shm_block *next;
};
static struct shm_block *blocks;
/* Set when the heap is a window over symheap_mem_alloc memory instead of a
 * symheap_malloc allocation (the fallback in shm__heap_init). */
static void *heap_mem;
/* SHMEM_DEBUG: say why an allocation fails. */
static int debug;
/* The largest alignment (a power of two, 1 GiB at most) at which every
 * PE's heap starts at the same remainder: an object aligned to it here is
 * aligned, at the same offset, on every PE (heap_agree_align). */
static size_t common_align;

/* Each PE's copy of the heap: mapped here (this host), or reached through
 * the network (another host: no address, shm__s.remote set).  A PE that is
 * neither (a job across hosts without SYMHEAP_NET) fails the init, saying
 * why. */
static int heap_peers(void) {
  if (shm__s.net &&
      !(shm__s.remote = calloc((size_t)shm__s.npes, sizeof *shm__s.remote)))
    return -1;
  for (int i = 0; i < shm__s.npes; i++) {
    int reach = 0;
    void *p = NULL;
    symheap_result_t r = symheap_window_peer_reach(shm__s.heap_win, i, &reach);
    if (r == SYMHEAP_SUCCESS && reach == SYMHEAP_REACH_NET) {
      shm__s.remote[i] = 1; /* net is set: nhosts > 1 */
      continue;
    }
    if (r == SYMHEAP_SUCCESS)
      r = symheap_window_peer_ptr(shm__s.heap_win, i, &p);
    if (r != SYMHEAP_SUCCESS || !p) {
      fprintf(stderr, "symheap-shmem: shmem_init: PE %d is not reachable: %s\n",
              i, symheap_last_error());
      return -1;
    }
    shm__s.heap_peer[i] = (char *)p + shm__s.heap_shift[i];
  }
  return 0;
}

/* This PE's heap starts at the first 2 MiB boundary of its window (which
 * is that much larger), and the PEs learn each other's start (one
 * allgather): a window offset on PE p is its shift plus the heap offset.
 * Before, the heap began at the window's start, aligned to a page and
 * often no more, differently on each PE, so shmem_align(8192) could not
 * be at one offset on every PE (heap_agree_align then refused it). */
static int heap_shifts(void *window) {
  uint64_t mine =
      (SHM_HEAP_ALIGN - (uintptr_t)window % SHM_HEAP_ALIGN) % SHM_HEAP_ALIGN;
  uint64_t *all = calloc((size_t)shm__s.npes, sizeof *all);
  shm__s.heap_shift = calloc((size_t)shm__s.npes, sizeof(size_t));
  if (!all || !shm__s.heap_shift) {
    free(all);
    return -1;
  }
  symheap_result_t r =
      symheap_comm_allgather(shm__s.comm, &mine, all, sizeof mine);
  for (int p = 0; p < shm__s.npes; p++)
    shm__s.heap_shift[p] = (size_t)all[p];
  free(all);
  if (r != SYMHEAP_SUCCESS) {
    fprintf(stderr, "symheap-shmem: shmem_init: heap starts: %s\n",
            symheap_last_error());
    return -1;
  }
  shm__s.heap_base = (char *)window + mine;
  return 0;
}

/* Each PE's heap starts where its process mapped it, aligned to a page and
 * maybe no more; an alignment the starts do not share cannot be given at
 * one offset on every PE (before: shmem_align(8192) padded by this PE's
 * address, so the offsets differed between PEs in one run in three, and a
 * put through one PE's pointer landed elsewhere in another's heap). */
static int heap_agree_align(void) {
  uint64_t mine = (uint64_t)(uintptr_t)shm__s.heap_base, diff = 0;
  uint64_t *all = calloc((size_t)shm__s.npes, sizeof *all);
  if (!all)
    return -1;
  symheap_result_t r =
      symheap_comm_allgather(shm__s.comm, &mine, all, sizeof mine);
  for (int p = 0; p < shm__s.npes && r == SYMHEAP_SUCCESS; p++)
    diff |= all[p] - all[0];
  free(all);
  if (r != SYMHEAP_SUCCESS) {
    fprintf(stderr, "symheap-shmem: shmem_init: heap addresses: %s\n",
            symheap_last_error());
    return -1;
  }
  diff |= (uint64_t)1 << 30;
  common_align = (size_t)(diff & -diff); /* its lowest set bit */
  return 0;
}

int shm__heap_init(void) {
  size_t size = SHM_HEAP_DEFAULT;
  if (shm__env_heap_size(&size) != 0)
    return -1;
  debug = shm__env_debug();
  size_t ctrl = (sizeof(struct shm_ctrl) + 4095) & ~(size_t)4095;
  /* Whole pages, and room for the control block, without wrapping. */
  if (size > SIZE_MAX / 2) {
    fprintf(stderr,
            "symheap-shmem: shmem_init: a symmetric heap of %zu bytes is more "
            "than the address space can hold\n",
            size);
    return -1;
  }
  size = ((size + 4095) & ~(size_t)4095) + ctrl;
  size_t window = size + SHM_HEAP_ALIGN; /* room to start aligned */
  symheap_result_t r = symheap_malloc(shm__s.comm, window, 0, &shm__s.heap_win);
  if (r != SYMHEAP_SUCCESS) {
    /* symheap_malloc agrees on failure, so every PE comes here: try a
     * window over memory of our own (symheap's heap may be smaller than
     * SHMEM_SYMMETRIC_SIZE). */
    void *mem = NULL;
    r = symheap_mem_alloc(shm__s.comm, window, &mem);
    if (r == SYMHEAP_SUCCESS) {
      r = symheap_window_register(shm__s.comm, mem, window, 0,
                                  &shm__s.heap_win);
      if (r != SYMHEAP_SUCCESS)
        symheap_mem_free(shm__s.comm, mem);
      else
        heap_mem = mem;
    }
  }
  if (r != SYMHEAP_SUCCESS) {
    fprintf(stderr,
            "symheap-shmem: shmem_init: symmetric heap of %zu bytes: %s (%s)\n",
            size, symheap_strerror(r), symheap_last_error());
    return -1;
  }
  shm__s.heap_peer = calloc((size_t)shm__s.npes, sizeof(char *));
  void *p = NULL;
  symheap_window_local_ptr(shm__s.heap_win, &p);
  shm__s.heap_size = size;
  if (!shm__s.heap_peer || heap_shifts(p) != 0 || heap_peers() != 0)
    return -1;
  shm__s.ctrl = (struct shm_ctrl *)shm__s.heap_base;
  memset(shm__s.ctrl, 0, sizeof *shm__s.ctrl);
  blocks = calloc(1, sizeof *blocks);
  if (!shm__s.heap_peer || !blocks)
    return -1;
  blocks->off = ctrl;
  blocks->size = size - ctrl;
  return heap_agree_align();
}

/* The heap's window and block list go (shmem_finalize; collective). */
void shm__heap_fini(void) {
  if (shm__s.heap_win && heap_mem) {
    symheap_window_deregister(shm__s.comm, shm__s.heap_win);
    symheap_mem_free(shm__s.comm, heap_mem);
  } else if (shm__s.heap_win) {
    symheap_free(shm__s.comm, shm__s.heap_win);
  }
  shm__s.heap_win = NULL;
  heap_mem = NULL;
  while (blocks) {
    struct shm_block *n = blocks->next;
    free(blocks);
    blocks = n;
  }
}

/* size rounded up to SHM_MIN_ALIGN, or 0 when that does not fit (the
 * rounding would wrap: shmem_malloc(SIZE_MAX) must fail, not get 64 bytes). */
static size_t heap_round(size_t size) {
  if (size > SIZE_MAX - (SHM_MIN_ALIGN - 1))
    return 0;
  size = (size + SHM_MIN_ALIGN - 1) & ~(size_t)(SHM_MIN_ALIGN - 1);
  return size ? size : SHM_MIN_ALIGN;
}

/* First fit, aligned: splits the free block it takes into up to three.
 * NULL when nothing fits (or size is too large to round). */
static void *heap_alloc(size_t size, size_t align) {
  if (align < SHM_MIN_ALIGN)
    align = SHM_MIN_ALIGN;
  if (align > common_align)
    return NULL; /* the same on every PE: common_align is agreed */
  size = heap_round(size);
  if (size == 0 || size > shm__s.heap_size)
    return NULL;
  for (struct shm_block *b = blocks; b; b = b->next) {
    if (b->used)
      continue;
    uintptr_t addr = (uintptr_t)shm__s.heap_base + b->off;
    size_t pad = (align - addr % align) % align;
    if (pad >= b->size || size > b->size - pad) /* no sum that can wrap */
      continue;
    if (pad) { /* the front stays free */
      struct shm_block *n = malloc(sizeof *n);
      if (!n)
        return NULL;
      *n = (struct shm_block){b->off + pad, b->size - pad, 0, b->next};
      b->size = pad;
      b->next = n;
      b = n;
    }
    if (b->size > size) { /* the tail stays free */
      struct shm_block *n = malloc(sizeof *n);
      if (!n)
        return NULL;
      *n = (struct shm_block){b->off + size, b->size - size, 0, b->next};
      b->size = size;
      b->next = n;
    }
    b->used = 1;
    return shm__s.heap_base + b->off;
  }
  return NULL;
}

static struct shm_block *find_block(void *ptr, struct shm_block **prev) {
  size_t off = (size_t)((char *)ptr - shm__s.heap_base);
  struct shm_block *p = NULL;
  for (struct shm_block *b = blocks; b; p = b, b = b->next)
    if (b->used && b->off == off) {
      if (prev)
        *prev = p;
      return b;
    }
  return NULL;
}

static void heap_release(void *ptr) {
  struct shm_block *prev = NULL, *b = find_block(ptr, &prev);
  if (!b)
    shm__fatal("shmem_free: %p is not a live symmetric allocation", ptr);
  b->used = 0;
  struct shm_block *n = b->next;
  if (n && !n->used) { /* merge with the next */
    b->size += n->size;
    b->next = n->next;
    free(n);
  }
  if (prev && !prev->used) { /* and with the previous */
    prev->size += b->size;
    prev->next = b->next;
    free(b);
  }
}

/* SHMEM_DEBUG (or SMA_DEBUG) set: why an allocation of size bytes fails. */
static void say_no_block(const char *fn, size_t size, size_t align) {
  if (align > common_align && (debug || shm__s.me == 0))
    fprintf(stderr,
            "symheap-shmem: PE %d: %s: an alignment of %zu bytes cannot be "
            "given at one offset on every PE: their symmetric heaps start at "
            "addresses that agree only to %zu bytes\n",
            shm__s.me, fn, align, common_align);
  else if (debug)
    fprintf(stderr,
            "symheap-shmem: PE %d: %s: no free block of %zu bytes (aligned "
            "to %zu) in the symmetric heap of %zu bytes (SHMEM_SYMMETRIC_SIZE "
            "sets it)\n",
            shm__s.me, fn, size, align ? align : (size_t)SHM_MIN_ALIGN,
            shm__s.heap_size);
}

/* Whether every PE of the world gave the same v (one reduction over the
 * allocations' scratch words); every PE's min and max of each into all. */
static int world_same(const long v[3], long all[6]) {
  struct shm_group g;
  shm__team_group(SHMEM_TEAM_WORLD, &g);
  return shm__same3(&g, shm__s.ctrl->alloc_args, v, all);
}

/* Whether every PE asked for this size and alignment (a collective; PE 0
 * says so when not).  Before, a PE that asked for another size carved its
 * heap differently from then on: objects lost their one offset, and puts
 * landed elsewhere, silently. */
static int same_request(const char *fn, size_t size, size_t align) {
  long v[3] = {(long)size, (long)align, 0}, all[6];
  if (world_same(v, all))
    return 1;
  if (shm__s.me == 0)
    fprintf(stderr,
            "symheap-shmem: PE 0: %s: the PEs asked for different sizes "
            "(%ld..%ld bytes) or alignments (%ld..%ld): NULL on every PE\n",
            fn, all[0], all[3], all[1], all[4]);
  return 0;
}

/* An allocation's closing barrier (no PE uses the object before every PE
 * has it), with the object's page tables made around it (prefault.c): this
 * PE's pages before, so that they are made here, its mappings of the
 * peers' copies after, when every copy's pages exist.  p may be NULL. */
static void barrier_prefaulted(void *p, size_t size) {
  shm__prefault_own(p, size);
  shmem_barrier_all();
  shm__prefault_peers(shm__s.heap_peer, shm__s.heap_base, p, size);
}

/* Collective allocation: the PEs agree on what they ask for, allocate (the
 * same offset everywhere), then a barrier so that no PE writes to the
 * object before every PE has it; zero the bytes first when asked
 * (shmem_calloc). */
static void *alloc_collective(const char *fn, size_t size, size_t align,
                              int zero) {
  shm__require_init(fn);
  if (!same_request(fn, size, align)) {
    shmem_barrier_all();
    return NULL;
  }
  pthread_mutex_lock(&shm__s.lock);
  void *p = size ? heap_alloc(size, align) : NULL;
  pthread_mutex_unlock(&shm__s.lock);
  if (p && zero)
    memset(p, 0, size);
  if (!p && size)
    say_no_block(fn, size, align);
  barrier_prefaulted(p, size);
  return p;
}

void *shmem_malloc(size_t size) {
  return alloc_collective("shmem_malloc", size, 0, 0);
}

void *shmem_malloc_with_hints(size_t size, long hints) {
  (void)hints; /* every object already takes remote atomics and signals */
  return alloc_collective("shmem_malloc_with_hints", size, 0, 0);
}

void *shmem_calloc(size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    if (debug) /* SHMEM_DEBUG: it said nothing here before */
      fprintf(stderr,
              "symheap-shmem: PE %d: shmem_calloc: %zu elements of %zu bytes "
              "are more than a size_t can count\n",
              shm__s.me, count, size);
    return alloc_collective("shmem_calloc", 0, 0, 0); /* NULL, collectively */
  }
  return alloc_collective("shmem_calloc", bytes, 0, 1);
}

void *shmem_align(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)))
    return alloc_collective("shmem_align", 0, 0, 0);
  return alloc_collective("shmem_align", size, alignment, 0);
}

/* Whether every PE frees the same object (its heap offset, or -1 for
 * NULL): one reduction, as same_request.  Before, a PE that freed another
 * object than its peers carved its heap differently from then on, and
 * later objects lost their one offset, silently.  shmem_free returns
 * nothing, so a mismatch ends the job, said by every PE alike. */
/* What every PE calls the object at ptr: its heap offset; -1 for NULL;
 * -3 - its offset in the data segment (a global: not an allocation, which
 * shmem_free and shmem_realloc then say alike on every PE); -2 for an
 * address that is symmetric nowhere (its value differs by PE). */
static long sym_key(const void *ptr) {
  uintptr_t a = (uintptr_t)ptr, off;
  if (!ptr)
    return -1;
  if ((off = a - (uintptr_t)shm__s.heap_base) < shm__s.heap_size)
    return (long)off;
  if ((off = a - (uintptr_t)shm__s.data_base) < shm__s.data_size)
    return -3 - (long)off;
  return -2;
}

static void same_free(const void *ptr) {
  long v[3] = {sym_key(ptr), 0, 0}, all[6];
  if (!world_same(v, all))
    shm__fatal("shmem_free: the PEs freed different objects (heap offsets "
               "%ld..%ld; -1 is NULL, -2 not symmetric, below: globals)",
               all[0], all[3]);
}

void shmem_free(void *ptr) {
  shm__require_init("shmem_free");
  same_free(ptr);
  shmem_barrier_all(); /* nobody still uses it */
  if (!ptr)
    return;
  pthread_mutex_lock(&shm__s.lock);
  heap_release(ptr);
  pthread_mutex_unlock(&shm__s.lock);
}

/* b grown in place to `want` bytes when the block after it is free and big
 * enough (the rest of that block stays free); 0 if it is not. */
static int heap_grow_in_place(struct shm_block *b, size_t want) {
  struct shm_block *n = b->next;
  if (!n || n->used || n->off != b->off + b->size || want - b->size > n->size)
    return 0;
  size_t extra = want - b->size;
  if (extra == n->size) { /* takes all of it */
    b->next = n->next;
    free(n);
  } else {
    n->off += extra;
    n->size -= extra;
  }
  b->size = want;
  return 1;
}

/* The new place of ptr's block for `size` bytes (under the lock): the same
 * block when it fits or grows in place, else a new one with the contents
 * copied and the old released; NULL when neither (ptr still valid). */
static void *heap_resize(void *ptr, struct shm_block *b, size_t size) {
  size_t want = heap_round(size);
  if (want == 0 || want > shm__s.heap_size)
    return NULL;
  if (want <= b->size || heap_grow_in_place(b, want))
    return ptr;
  void *out = heap_alloc(size, 0);
  if (out) {
    memcpy(out, ptr, b->size);
    heap_release(ptr);
  }
  return out;
}

/* What other implementations do with a pointer that is not a live
 * allocation (the specification leaves it undefined): say so, give NULL. */
static void realloc_not_live(void *ptr) {
  fprintf(stderr,
          "symheap-shmem: PE %d: shmem_realloc: %p is not a live symmetric "
          "allocation; returning NULL\n",
          shm__s.me, ptr);
}

/* shmem_realloc(ptr, 0): a free, but a pointer that is not live gets the
 * message and NULL a realloc gives it, not shmem_free's end of the job;
 * one barrier, as shmem_free. */
static void realloc_to_zero(void *ptr) {
  shmem_barrier_all(); /* nobody still uses it */
  pthread_mutex_lock(&shm__s.lock);
  int live = find_block(ptr, NULL) != NULL;
  if (live)
    heap_release(ptr);
  pthread_mutex_unlock(&shm__s.lock);
  if (!live)
    realloc_not_live(ptr);
}

/* Grows in place when the next block is free and big enough; otherwise a
 * new block, a copy and a release.  Deterministic like the rest.  A pointer
 * that is not a live allocation gets NULL and a message (the specification
 * leaves it undefined; other implementations return NULL), size 0 as
 * well. */
/* Whether every PE reallocates the same object (its heap offset, -1 for
 * NULL) to the same size: one reduction, as same_request; PE 0 says so
 * when not.  Before, a PE that gave another object or size carved its heap
 * differently from then on, and one that gave NULL beside others' objects
 * ran shmem_malloc's collectives against their realloc's. */
static int same_realloc(const void *ptr, size_t size) {
  long v[3] = {sym_key(ptr), (long)size, 0}, all[6];
  if (world_same(v, all))
    return 1;
  if (shm__s.me == 0)
    fprintf(stderr,
            "symheap-shmem: PE 0: shmem_realloc: the PEs gave different "
            "objects (heap offsets %ld..%ld; -1 is NULL, -2 not symmetric, "
            "below: globals) or sizes (%ld..%ld): NULL on every PE, every "
            "object as it was\n",
            all[0], all[3], all[1], all[4]);
  return 0;
}

void *shmem_realloc(void *ptr, size_t size) {
  shm__require_init("shmem_realloc");
  if (!same_realloc(ptr, size)) {
    shmem_barrier_all();
    return NULL;
  }
  if (!ptr)
    return shmem_malloc(size);
  if (!size) {
    realloc_to_zero(ptr);
    return NULL;
  }
  shmem_barrier_all(); /* nobody still reads the old contents */
  pthread_mutex_lock(&shm__s.lock);
  struct shm_block *b = find_block(ptr, NULL);
  void *out = b ? heap_resize(ptr, b, size) : NULL;
  pthread_mutex_unlock(&shm__s.lock);
  if (!b)
    realloc_not_live(ptr);
  else if (!out)
    say_no_block("shmem_realloc", size, 0);
  barrier_prefaulted(out, size);
  return out;
}

void *shmalloc(size_t size) { return shmem_malloc(size); }
void shfree(void *ptr) { shmem_free(ptr); }
/* The other deprecated names (OpenSHMEM 1.2's; still required by 1.5). */
void *shmemalign(size_t alignment, size_t size) {
  return shmem_align(alignment, size);
}
void *shrealloc(void *ptr, size_t size) { return shmem_realloc(ptr, size); }

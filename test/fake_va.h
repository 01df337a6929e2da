/* What the fake drivers (fake_cuda, fake_hip) keep of the address space, and
 * the rules of the real drivers' VMM calls that both enforce alike: one list
 * of the regions a fake made, and the steps its reserve, map, unmap and
 * access calls take over it.  The including file defines `struct mem` (its
 * physical allocations) before including this, and calls all of it with its
 * own lock held. */
#ifndef SYMHEAP_TEST_FAKE_VA_H
#define SYMHEAP_TEST_FAKE_VA_H

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A region's kind: 0 reservation, 1 mapping, 2 legacy allocation (a named
 * shared-memory object), 3 opened IPC memory, 4 page-locked host memory. */
typedef struct region {
  struct region *next;
  char *va;
  size_t size;
  struct mem *mem; /* mappings */
  int kind;
  char name[64]; /* kind 2: the shared-memory object's name */
} region_t;
static region_t *regions;

/* The region of `kind` that starts at p (exact) or holds p. */
static region_t *find_region(const char *p, int kind, int exact) {
  for (region_t *r = regions; r; r = r->next)
    if (r->kind == kind &&
        (exact ? r->va == p : (p >= r->va && p < r->va + r->size)))
      return r;
  return NULL;
}

static region_t *add_region(char *va, size_t size, int kind) {
  region_t *r = calloc(1, sizeof *r);
  r->va = va;
  r->size = size;
  r->kind = kind;
  r->next = regions;
  regions = r;
  return r;
}

static void drop_region(region_t *r) {
  for (region_t **pp = &regions; *pp; pp = &(*pp)->next)
    if (*pp == r) {
      *pp = r->next;
      break;
    }
  free(r);
}

/* Inaccessible address space of `size` bytes aligned to `align` (a power
 * of two), or NULL: a larger reservation trimmed at both ends. */
static char *reserve_aligned(size_t size, size_t align) {
  size_t span = size + align;
  char *p = mmap(NULL, span, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  char *start = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
  if (start > p)
    munmap(p, (size_t)(start - p));
  munmap(start + size, (size_t)(p + span - (start + size)));
  return start;
}

/* Whether a mapping starts inside [p, p+size): such a reservation may not
 * be freed. */
static int has_mapping_in(const char *p, size_t size) {
  for (region_t *m = regions; m; m = m->next)
    if (m->kind == 1 && m->va >= p && m->va < p + size)
      return 1;
  return 0;
}

/* Whether [p, p+size) overlaps a mapping: nothing maps over one. */
static int overlaps_mapping(const char *p, size_t size) {
  for (region_t *r = regions; r; r = r->next)
    if (r->kind == 1 && r->va < p + size && p < r->va + r->size)
      return 1;
  return 0;
}

/* Whether every byte of [p, p+size) is mapped (set access, device
 * memsets). */
static int all_mapped(char *p, size_t size) {
  for (char *q = p; q < p + size;) {
    region_t *r = find_region(q, 1, 0);
    if (!r)
      return 0;
    q = r->va + r->size;
  }
  return 1;
}

/* Unmapped memory goes back to reserved, inaccessible address space, never
 * to the free address space. */
static void unmap_to_reserved(char *p, size_t size) {
  mmap(p, size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

/* Legacy device memory: a new shared-memory object `name` of `size` bytes,
 * mapped, so that another process can open it by its name (IPC); NULL (and
 * nothing left behind) when it cannot be made. */
static char *shm_alloc(const char *name, size_t size) {
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    return NULL;
  if (ftruncate(fd, (off_t)size) != 0) {
    close(fd);
    shm_unlink(name);
    return NULL;
  }
  char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name);
    return NULL;
  }
  return p;
}

#endif

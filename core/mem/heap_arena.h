/* The heap's allocator (heap_arena.c): offsets in one rank's part of the
 * heap, with no device call and nothing collective.  Every rank runs the
 * same calls on the same state, so every rank computes the same offsets;
 * heap.c agrees on them before anything changes. */
#ifndef SYMHEAP_HEAP_ARENA_H
#define SYMHEAP_HEAP_ARENA_H

#include <stddef.h>
#include <stdint.h>

/* Every heap allocation starts on this boundary and takes a multiple of it:
 * what cudaMalloc guarantees, so vector loads and device atomics on a heap
 * window behave as on any device buffer. */
#define SYMHEAP__HEAP_ALIGN 256u

typedef struct {
  uint64_t off, len;
} symheap__extent_t;

typedef struct {
  uint64_t size;            /* per-rank reservation, a multiple of chunk */
  uint64_t chunk;           /* bytes per chunk */
  uint32_t nchunks;         /* size / chunk */
  unsigned char *committed; /* per chunk: memory is mapped there */
  uint32_t ncommitted;
  /* Free committed memory, sorted by offset, never adjacent (coalesced). */
  symheap__extent_t *free;
  size_t nfree, cap;
  uint64_t used;        /* bytes in live allocations (rounded) */
  uint64_t allocations; /* live */
} symheap__arena_t;

/* 0, or -1 when out of memory. */
int symheap__arena_init(symheap__arena_t *a, uint64_t size, uint64_t chunk);
void symheap__arena_fini(symheap__arena_t *a);
/* The size an allocation of `size` bytes takes (0 on overflow). */
uint64_t symheap__arena_round(uint64_t size);
/* Where a `len`-byte block (rounded) fits in committed memory: first fit, so
 * the same state gives the same answer on every rank.  0 and *off, or -1. */
int symheap__arena_fit(const symheap__arena_t *a, uint64_t len, uint64_t *off);
/* Where it would fit if uncommitted chunks were committed: the lowest such
 * offset, and [*first, *first + *count) the chunks to commit (count may be
 * 0).  -1 when even the whole reservation cannot hold it. */
int symheap__arena_plan(const symheap__arena_t *a, uint64_t len, uint64_t *off,
                        uint32_t *first, uint32_t *count);
/* Take [off, off + len) out of free committed memory (it must be free:
 * arena_fit's or arena_plan's answer after its chunks were committed). */
int symheap__arena_take(symheap__arena_t *a, uint64_t off, uint64_t len);
/* Give a taken block back. 0, or -1 when out of memory (then nothing
 * changed). */
int symheap__arena_give(symheap__arena_t *a, uint64_t off, uint64_t len);
/* Chunk i is committed now: its memory joins the free memory. */
int symheap__arena_commit(symheap__arena_t *a, uint32_t i);
/* Whether committed chunk i holds no allocation (trim may release it). */
int symheap__arena_chunk_idle(const symheap__arena_t *a, uint32_t i);
/* Chunk i (idle) is released: its memory leaves the free memory. */
int symheap__arena_uncommit(symheap__arena_t *a, uint32_t i);
/* Make room for `extra` more free extents, so that the next calls need no
 * memory.  0, or -1 when out of memory. */
int symheap__arena_room(symheap__arena_t *a, size_t extra);
/* The largest block that fits without committing anything. */
uint64_t symheap__arena_largest(const symheap__arena_t *a);

#endif

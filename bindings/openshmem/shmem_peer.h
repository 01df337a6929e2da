/* symheap-shmem internals: where a symmetric address lives on a PE, inline
 * (every put, get and atomic goes through it).  Apart from
 * shmem_internal.h so that base.c, which defines the state these read and
 * the way out they take, does not include what calls it back. */
#ifndef SYMHEAP_SHMEM_PEER_H
#define SYMHEAP_SHMEM_PEER_H

#include "shmem_internal.h"

/* Whether world PE pe is reached through the network (remote.c); one
 * predictable branch on a job of one host. */
static inline int shm__remote(int pe) {
  return __builtin_expect(shm__s.net, 0) &&
         (unsigned)pe < (unsigned)shm__s.npes && shm__s.remote[pe];
}
/* Where the bytes [addr, addr + bytes) (symmetric, in this PE's view)
 * live on world PE pe: all of them in one region, the heap or the data
 * segment, on this PE as on the others.  Before, only addr was looked at,
 * and on this PE nothing: a put that ran past the heap's end wrote over
 * what lay beyond (a peer's control page), and a put to this PE through
 * NULL crashed.  shm__range_fatal (base.c) says which it was. */
static inline char *shm__peer_n(const void *addr, size_t bytes, int pe) {
  uintptr_t a = (uintptr_t)addr, off;
  if ((unsigned)pe >= (unsigned)shm__s.npes) {
    if (!shm__s.initialized)
      shm__fatal("an OpenSHMEM routine was called before shmem_init or "
                 "after shmem_finalize");
    shm__fatal("PE %d is out of range (0..%d)", pe, shm__s.npes - 1);
  }
  char *base;
  if ((off = a - (uintptr_t)shm__s.heap_base) < shm__s.heap_size &&
      bytes <= shm__s.heap_size - off)
    base = pe == shm__s.me ? (char *)addr : shm__s.heap_peer[pe] + off;
  else if ((off = a - (uintptr_t)shm__s.data_base) < shm__s.data_size &&
           bytes <= shm__s.data_size - off)
    base = pe == shm__s.me ? (char *)addr : shm__s.data_peer[pe] + off;
  else
    shm__range_fatal(addr, bytes);
  if (__builtin_expect(pe != shm__s.me && shm__remote(pe), 0))
    shm__fatal("internal: PE %d is on another host and has no address here",
               pe); /* a path that forgot remote.c */
  return base;
}
/* Where `addr` lives on world PE `pe` (its first byte). */
static inline char *shm__peer(const void *addr, int pe) {
  return shm__peer_n(addr, 1, pe);
}
/* A context's PE number, in the world. */
static inline int shm__ctx_pe(shmem_ctx_t ctx, int pe) {
  if (ctx == SHMEM_CTX_DEFAULT)
    return pe;
  if (ctx == SHMEM_CTX_INVALID)
    shm__fatal("operation on SHMEM_CTX_INVALID");
  if (ctx->team == SHMEM_TEAM_WORLD)
    return pe;
  if (!ctx->team) /* team.c keeps destroyed contexts, so marked */
    shm__fatal("operation on a context after shmem_ctx_destroy");
  if (ctx->team->slot < 0) /* and destroyed teams (slot -1, size 0) */
    shm__fatal("operation on a context whose team was destroyed");
  if ((unsigned)pe >= (unsigned)ctx->team->size)
    shm__fatal("PE %d is out of range of the context's team (0..%d)", pe,
               ctx->team->size - 1);
  return ctx->team->world[pe];
}

#endif /* SYMHEAP_SHMEM_PEER_H */

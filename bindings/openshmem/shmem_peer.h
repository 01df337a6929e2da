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
/* Where `addr` (symmetric, in this PE's view) lives on world PE `pe`. */
static inline char *shm__peer(const void *addr, int pe) {
  uintptr_t a = (uintptr_t)addr;
  if ((unsigned)pe >= (unsigned)shm__s.npes) {
    if (!shm__s.initialized)
      shm__fatal("an OpenSHMEM routine was called before shmem_init or "
                 "after shmem_finalize");
    shm__fatal("PE %d is out of range (0..%d)", pe, shm__s.npes - 1);
  }
  if (pe == shm__s.me)
    return (char *)addr;
  char *base = NULL;
  if (a - (uintptr_t)shm__s.heap_base < shm__s.heap_size)
    base = shm__s.heap_peer[pe] + (a - (uintptr_t)shm__s.heap_base);
  else if (a - (uintptr_t)shm__s.data_base < shm__s.data_size)
    base = shm__s.data_peer[pe] + (a - (uintptr_t)shm__s.data_base);
  else
    shm__fatal("address %p is not symmetric (neither in the symmetric heap "
               "nor in the program's data or bss)",
               addr);
  if (__builtin_expect(shm__remote(pe), 0)) /* a path that forgot remote.c */
    shm__fatal("internal: PE %d is on another host and has no address here",
               pe);
  return base;
}
/* A context's PE number, in the world. */
static inline int shm__ctx_pe(shmem_ctx_t ctx, int pe) {
  if (ctx == SHMEM_CTX_DEFAULT)
    return pe;
  if (ctx == SHMEM_CTX_INVALID)
    shm__fatal("operation on SHMEM_CTX_INVALID");
  if (ctx->team == SHMEM_TEAM_WORLD)
    return pe;
  if ((unsigned)pe >= (unsigned)ctx->team->size)
    shm__fatal("PE %d is out of range of the context's team (0..%d)", pe,
               ctx->team->size - 1);
  return ctx->team->world[pe];
}

#endif /* SYMHEAP_SHMEM_PEER_H */

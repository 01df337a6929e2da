/* The descriptor exchange (fdx.c): a mesh of Unix stream sockets among the
 * ranks of one host, over which file-descriptor handles travel.  The comm
 * builds it (comm/mesh.c) and holds it; it knows nothing of the comm. */
#ifndef SYMHEAP_FDX_H
#define SYMHEAP_FDX_H

#include <stdint.h>

#include "sock.h"

typedef struct symheap__fdx {
  int *peer_fd; /* nranks, -1 for self and the unreached; NULL: no mesh */
  int rank, nranks;
  const unsigned char *reach; /* nranks: 1 for the ranks of this host */
  unsigned char token[16];    /* the job's: every hello proves it */
  int sock_abstract;
  char sock_dir[64];
  /* Given at creation: a peer's notice that its allocation `id` is gone
   * (the owner of the kept mappings drops those of it). */
  void (*on_freed)(void *arg, int peer, uint64_t id);
  void *arg;
} symheap__fdx_t;

/* Local: the mesh's table, and this rank's listening socket (lfd -1 when
 * no peer shares the host). */
symheap_result_t symheap__fdx_listen(symheap__fdx_t *x, int local_nranks,
                                     int *lfd);
/* Once every rank listens: connect to the lower ranks, accept the higher. */
symheap_result_t symheap__fdx_connect(symheap__fdx_t *x, int lfd,
                                      int64_t deadline);
/* The listening socket goes (lfd -1: nothing). */
void symheap__fdx_unlisten(symheap__fdx_t *x, int lfd);
void symheap__fdx_close(symheap__fdx_t *x);
/* Send my_fd (or nothing, when -1) to every peer; fds[p] receives peer p's
 * descriptor or -1.  fds[rank] is left -1.  Never keeps my_fd.  Returns
 * SYMHEAP_ERR_SYSTEM with the streams in step when this process ran out of
 * descriptors; any other failure leaves the streams unusable (the caller
 * agrees with the others first, then breaks the comm). */
symheap_result_t symheap__fdx_allgather(symheap__fdx_t *x, int my_fd, int *fds,
                                        int64_t deadline);
/* Tell every peer that allocation `id` of this rank is gone, so they drop
 * mappings of it they keep (best effort, never blocks). */
void symheap__fdx_send_freed(symheap__fdx_t *x, uint64_t id);
/* Read the peers' notices that have arrived, without blocking. */
void symheap__fdx_drain(symheap__fdx_t *x);

#endif

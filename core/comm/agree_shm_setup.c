/* Setting up the agreements' shared memory (agree_shm.c is the channel):
 * collective, at comm init after the descriptor mesh, over the ccl's
 * agreements; shared memory where every rank is on this host and the mesh
 * exists, off on every rank if any rank cannot have it (not a failure). */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agree.h"

symheap_result_t symheap__agree_shm_setup(symheap_comm_t c) {
  c->agree_shm = NULL;
  c->agree_shm_seq = 0;
  /* The same answer on every rank: both are facts of the whole comm. */
  if (c->local_nranks != c->nranks || !c->fdx.peer_fd || c->nranks < 2)
    return SYMHEAP_SUCCESS;
  char **area = calloc((size_t)c->nranks, sizeof *area);
  int fd = area ? memfd_create("symheap-agree", MFD_CLOEXEC) : -1;
  int ok = fd >= 0 && ftruncate(fd, SYMHEAP__AGREE_SHM_BYTES) == 0 &&
           (area[c->rank] = symheap__agree_shm_map(fd)) != NULL;
  int *fds = c->scratch_fds;
  symheap_result_t r = symheap__fdx_allgather(&c->fdx, ok ? fd : -1, fds,
                                              symheap__call_deadline(c));
  if (fd >= 0)
    close(fd);
  if (r != SYMHEAP_SUCCESS && r != SYMHEAP_ERR_SYSTEM) {
    /* The mesh failed: as any exchange, agree first, then the comm is
     * broken (the caller fails the init). */
    symheap__agree_shm_unmap(c, area);
    symheap_result_t a = symheap__agree(c, r, 1, NULL, 0, NULL);
    return a != SYMHEAP_SUCCESS ? a : r;
  }
  if (r != SYMHEAP_SUCCESS) /* out of descriptors: no channel, in step */
    ok = 0;
  for (int p = 0; p < c->nranks; p++) {
    if (p == c->rank)
      continue;
    if (r == SYMHEAP_SUCCESS && fds[p] >= 0 && area)
      area[p] = symheap__agree_shm_map(fds[p]);
    if (fds[p] >= 0)
      close(fds[p]);
    ok = ok && area && area[p];
  }
  int32_t mine = ok;
  /* Every rank's answer: the channel is used only if all have it. */
  int32_t *every = (int32_t *)(void *)c->scratch_sh;
  r = symheap__agree(c, SYMHEAP_SUCCESS, 0, &mine, sizeof mine, every);
  for (int p = 0; p < c->nranks && r == SYMHEAP_SUCCESS; p++)
    ok = ok && every[p];
  if (r != SYMHEAP_SUCCESS || !ok) {
    symheap__agree_shm_unmap(c, area);
    if (r == SYMHEAP_SUCCESS)
      SYMHEAP_INFO("agreements of the heap go over the ccl: shared memory "
                   "for them could not be had on every rank");
    return r;
  }
  c->agree_shm = area; /* fresh memfds: every slot reads agreement 0 */
  return SYMHEAP_SUCCESS;
}

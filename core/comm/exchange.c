/* Exchange of shareable handles among the node-local team (descriptors
 * only reach it; byte handles reach every rank and the others ignore
 * them), whichever way they travel: descriptors over
 * the core's Unix-socket mesh, bytes over the ccl.  Ends in an agreement, so
 * a rank whose export failed fails the call on every rank. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exchange.h"

static void close_all(symheap_comm_t c, symheap_shareable_t *all) {
  for (int p = 0; p < c->nranks; p++)
    if (p != c->rank && all[p].kind == SYMHEAP_HANDLE_FD && all[p].fd >= 0) {
      close(all[p].fd);
      all[p].fd = -1;
    }
}

symheap_result_t symheap__exchange_handles(symheap_comm_t c,
                                           symheap_result_t local,
                                           symheap_shareable_t *mine,
                                           uint32_t kind, int root_only,
                                           symheap_shareable_t *all) {
  int contributes = !root_only || c->rank == 0;
  memset(all, 0, sizeof *all * (size_t)c->nranks);
  for (int p = 0; p < c->nranks; p++)
    all[p].fd = -1;
  if (kind == SYMHEAP_HANDLE_BYTES) {
    symheap_shareable_t out;
    memset(&out, 0, sizeof out);
    out.fd = -1;
    if (local == SYMHEAP_SUCCESS && contributes)
      out = *mine;
    symheap_result_t r = symheap__agree(c, local, 0, &out, sizeof out, all);
    for (int p = 0; p < c->nranks && r == SYMHEAP_SUCCESS; p++) {
      all[p].fd = -1;
      if ((!root_only || p == 0) &&
          (all[p].kind != SYMHEAP_HANDLE_BYTES ||
           all[p].nbytes > SYMHEAP_SHAREABLE_MAX_BYTES))
        r = symheap__error(SYMHEAP_ERR_REMOTE,
                           "rank %d sent a malformed handle", p);
    }
    return r;
  }
  int my_fd = (local == SYMHEAP_SUCCESS && contributes) ? mine->fd : -1;
  int *fds = c->scratch_fds;
  symheap_result_t r = symheap__fdx_allgather(&c->fdx, my_fd, fds,
                                              symheap__call_deadline(c));
  if (my_fd >= 0)
    close(my_fd); /* the peers hold their own copies now */
  if (r != SYMHEAP_SUCCESS) {
    /* Out of descriptors here: the streams are in step, fail like any local
     * failure.  Anything else: a mesh peer that hung up may only have given
     * up because a third rank died, so the agreement names the rank that
     * failed first; then the mesh is unusable and the comm broken. */
    int stream_ok = r == SYMHEAP_ERR_SYSTEM;
    symheap_result_t a = symheap__agree(c, r, !stream_ok, NULL, 0, NULL);
    if (!stream_ok && c->broken == SYMHEAP_SUCCESS)
      symheap__comm_break(c, a != SYMHEAP_SUCCESS ? a : r);
    return a != SYMHEAP_SUCCESS ? a : r;
  }
  int caused_by_peer = 0;
  for (int p = 0; p < c->nranks; p++) {
    if (p == c->rank)
      continue;
    all[p].kind = SYMHEAP_HANDLE_FD;
    all[p].fd = fds[p];
    if (fds[p] < 0 && c->reach[p] && (!root_only || p == 0) &&
        local == SYMHEAP_SUCCESS) {
      local = symheap__error(SYMHEAP_ERR_REMOTE, "rank %d sent no handle", p);
      caused_by_peer = 1;
    }
  }
  r = symheap__agree(c, local, caused_by_peer, NULL, 0, NULL);
  if (r != SYMHEAP_SUCCESS)
    close_all(c, all);
  return r;
}

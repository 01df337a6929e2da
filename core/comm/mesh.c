/* The descriptor mesh of a comm (boot/fdx.c does the sockets): every rank
 * listens before any connects, and the comm agrees on each step. */
#include <unistd.h>

#include "agree.h"
#include "comm.h"

symheap_result_t symheap__mesh_setup(symheap_comm_t c,
                                     void (*on_freed)(void *arg, int peer,
                                                      uint64_t id),
                                     void *arg) {
  c->fdx.on_freed = on_freed;
  c->fdx.arg = arg;
  int lfd = -1;
  symheap_result_t r = symheap__fdx_listen(&c->fdx, c->local_nranks, &lfd);
  /* Everyone listens before anyone connects. */
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  if (r == SYMHEAP_SUCCESS && c->local_nranks > 1)
    r = symheap__fdx_connect(&c->fdx, lfd, symheap__call_deadline(c));
  symheap__fdx_unlisten(&c->fdx, lfd);
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  if (r != SYMHEAP_SUCCESS)
    symheap__fdx_close(&c->fdx);
  return r;
}

void symheap__mesh_close(symheap_comm_t c) { symheap__fdx_close(&c->fdx); }

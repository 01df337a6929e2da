/* The descriptor exchange: a mesh of Unix stream sockets among the ranks of
 * the node-local team, built once per comm, over which file-descriptor handles
 * travel with SCM_RIGHTS.  The core owns it so that fd-based adaptors stay
 * small and any ccl (which only moves bytes) can carry a comm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/internal.h"
#include "fdx.h"

#define FDX_MAGIC 0x53484658u /* "SHFX" */

typedef struct {
  uint32_t magic;
  int32_t rank;
  unsigned char token[16];
} fdx_hello_t;

/* Every record on the mesh.  FD records are the descriptor exchange (a
 * descriptor rides on the first byte when value is 1); FREED records tell
 * a peer that one of this rank's allocations is gone (value: its id). */
enum { FDX_FD = 1, FDX_FREED = 2 };
typedef struct {
  uint32_t magic;
  uint32_t type;
  uint64_t value;
} fdx_rec_t;

static void fdx_name(symheap__fdx_t *c, int rank, symheap__sockname_t *n) {
  char hex[33];
  symheap__hex(c->token, sizeof c->token, hex);
  n->abstract = c->sock_abstract;
  if (n->abstract) {
    snprintf(n->name, sizeof n->name, "symheap-%s-r%d", hex, rank);
  } else {
    hex[16] = '\0';
    snprintf(n->name, sizeof n->name, "%s/symheap-%s-r%d.sock", c->sock_dir,
             hex, rank);
  }
}

void symheap__fdx_close(symheap__fdx_t *c) {
  if (!c->peer_fd)
    return;
  for (int p = 0; p < c->nranks; p++)
    if (c->peer_fd[p] >= 0)
      close(c->peer_fd[p]);
  free(c->peer_fd);
  c->peer_fd = NULL;
}

static symheap_result_t connect_lower(symheap__fdx_t *c, int64_t deadline) {
  for (int p = 0; p < c->rank; p++) {
    if (!c->reach[p])
      continue;
    symheap__sockname_t n;
    fdx_name(c, p, &n);
    symheap_result_t r = symheap__sock_connect(&n, deadline, p, &c->peer_fd[p]);
    if (r != SYMHEAP_SUCCESS)
      return r;
    fdx_hello_t h = {FDX_MAGIC, c->rank, {0}};
    memcpy(h.token, c->token, sizeof h.token);
    r = symheap__sock_send(c->peer_fd[p], &h, sizeof h, -1, deadline, p);
    if (r != SYMHEAP_SUCCESS)
      return r;
  }
  return SYMHEAP_SUCCESS;
}

static symheap_result_t accept_higher(symheap__fdx_t *c, int lfd,
                                      int64_t deadline) {
  int expected = 0;
  for (int p = c->rank + 1; p < c->nranks; p++)
    expected += c->reach[p];
  while (expected > 0) {
    int fd;
    symheap_result_t r = symheap__sock_accept(lfd, deadline, &fd);
    if (r != SYMHEAP_SUCCESS)
      return symheap__error_context(r, "building the descriptor exchange");
    /* A short while to say hello, so a silent stray cannot hold us up. */
    int64_t hello_deadline = symheap__now_ms() + 1000;
    fdx_hello_t h;
    r = symheap__sock_recv(
        fd, &h, sizeof h, NULL,
        hello_deadline < deadline ? hello_deadline : deadline, -1);
    if (r != SYMHEAP_SUCCESS || h.magic != FDX_MAGIC ||
        memcmp(h.token, c->token, sizeof h.token) != 0 || h.rank <= c->rank ||
        h.rank >= c->nranks || !c->reach[h.rank] || c->peer_fd[h.rank] >= 0) {
      /* Not one of ours: a stray or stale process.  Drop it and go on. */
      SYMHEAP_WARN("descriptor exchange: dropped a connection that did not "
                   "identify as a rank of this comm");
      close(fd);
      continue;
    }
    c->peer_fd[h.rank] = fd;
    expected--;
  }
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__fdx_listen(symheap__fdx_t *c, int local_nranks,
                                     int *lfd) {
  *lfd = -1;
  c->peer_fd = malloc(sizeof(int) * (size_t)c->nranks);
  if (!c->peer_fd)
    return symheap__error(SYMHEAP_ERR_NO_MEMORY,
                          "descriptor exchange: no memory");
  for (int p = 0; p < c->nranks; p++)
    c->peer_fd[p] = -1;
  if (local_nranks < 2)
    return SYMHEAP_SUCCESS;
  symheap__sockname_t me;
  fdx_name(c, c->rank, &me);
  return symheap__sock_listen(&me, lfd);
}

symheap_result_t symheap__fdx_connect(symheap__fdx_t *c, int lfd,
                                      int64_t deadline) {
  /* Connecting to a listening Unix socket completes without the peer's
   * accept (the backlog holds it), so connecting down, then accepting up,
   * cannot deadlock. */
  symheap_result_t r = connect_lower(c, deadline);
  return r == SYMHEAP_SUCCESS ? accept_higher(c, lfd, deadline) : r;
}

void symheap__fdx_unlisten(symheap__fdx_t *c, int lfd) {
  if (lfd < 0)
    return;
  symheap__sockname_t me;
  fdx_name(c, c->rank, &me);
  close(lfd);
  symheap__sock_unlink(&me);
}

symheap_result_t symheap__fdx_allgather(symheap__fdx_t *c, int my_fd, int *fds,
                                        int64_t deadline) {
  symheap_result_t r = SYMHEAP_SUCCESS, dropped = SYMHEAP_SUCCESS;
  for (int p = 0; p < c->nranks; p++)
    fds[p] = -1;
  fdx_rec_t out = {FDX_MAGIC, FDX_FD, my_fd >= 0};
  for (int p = 0; p < c->nranks && r == SYMHEAP_SUCCESS; p++)
    if (p != c->rank && c->reach[p])
      r = symheap__sock_send(c->peer_fd[p], &out, sizeof out, my_fd, deadline,
                             p);
  for (int p = 0; p < c->nranks && r == SYMHEAP_SUCCESS; p++) {
    if (p == c->rank || !c->reach[p])
      continue;
    fdx_rec_t in;
    do {
      r = symheap__sock_recv(c->peer_fd[p], &in, sizeof in, &fds[p], deadline,
                             p);
      if (r == SYMHEAP_SUCCESS && in.magic == FDX_MAGIC && in.type == FDX_FREED)
        c->on_freed(c->arg, p, in.value);
    } while (r == SYMHEAP_SUCCESS && in.magic == FDX_MAGIC &&
             in.type == FDX_FREED && fds[p] == -1);
    if (r == SYMHEAP_SUCCESS && fds[p] == -2) {
      /* Out of descriptors here: a local failure, the streams in step. */
      fds[p] = -1;
      if (dropped == SYMHEAP_SUCCESS)
        dropped = symheap__error(SYMHEAP_ERR_SYSTEM,
                                 "rank %d's descriptor could not be received: "
                                 "this process is out of file descriptors "
                                 "(Too many open files; see ulimit -n)",
                                 p);
      continue;
    }
    if (r == SYMHEAP_SUCCESS && (in.magic != FDX_MAGIC || in.type != FDX_FD ||
                                 (in.value != 0) != (fds[p] >= 0)))
      r = symheap__error(SYMHEAP_ERR_REMOTE,
                         "descriptor exchange: malformed record from rank %d",
                         p);
  }
  if (r != SYMHEAP_SUCCESS || dropped != SYMHEAP_SUCCESS) {
    for (int p = 0; p < c->nranks; p++)
      if (fds[p] >= 0) {
        close(fds[p]);
        fds[p] = -1;
      }
  }
  return r != SYMHEAP_SUCCESS ? r : dropped;
}

void symheap__fdx_send_freed(symheap__fdx_t *c, uint64_t id) {
  if (!c->peer_fd)
    return;
  fdx_rec_t rec = {FDX_MAGIC, FDX_FREED, id};
  /* A notice that cannot go now is only a delay: the peer drops the
   * mapping when its cache evicts it or the comm is destroyed. */
  for (int p = 0; p < c->nranks; p++)
    if (p != c->rank && c->peer_fd[p] >= 0 &&
        send(c->peer_fd[p], &rec, sizeof rec, MSG_DONTWAIT | MSG_NOSIGNAL) !=
            (ssize_t)sizeof rec)
      SYMHEAP_INFO("could not tell rank %d that allocation %llu is freed", p,
                   (unsigned long long)id);
}

void symheap__fdx_drain(symheap__fdx_t *c) {
  if (!c->peer_fd)
    return;
  for (int p = 0; p < c->nranks; p++) {
    if (p == c->rank || c->peer_fd[p] < 0)
      continue;
    for (;;) {
      /* Peek: a descriptor-exchange record that a faster peer already sent
       * belongs to the exchange, not to us. */
      fdx_rec_t rec;
      ssize_t n =
          recv(c->peer_fd[p], &rec, sizeof rec, MSG_PEEK | MSG_DONTWAIT);
      if (n != (ssize_t)sizeof rec || rec.magic != FDX_MAGIC ||
          rec.type != FDX_FREED)
        break;
      if (recv(c->peer_fd[p], &rec, sizeof rec, MSG_DONTWAIT) !=
          (ssize_t)sizeof rec)
        break;
      c->on_freed(c->arg, p, rec.value);
    }
  }
}

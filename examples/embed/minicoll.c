/* minicoll (minicoll.h): a collective library with its own bootstrap,
 * embedding symheap through symheap_comm_init_ccl. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "minicoll.h"
#include "symheap.h"
#include "symheap_adaptor.h"

struct minicoll {
  int rank, n;
  int *fd; /* rank 0: one per rank; others: fd[0] to rank 0 */
  symheap_comm_t comm;
  symheap_window_t win;
  size_t cap;        /* bytes of the window */
  int made_by_split; /* symheap owns it: the ccl's fini releases it */
};

static char err[512];
const char *minicoll_error(void) { return err; }

static void close_all(minicoll_t *mc) {
  for (int r = 0; mc->fd && r < mc->n; r++)
    if (mc->fd[r] >= 0)
      close(mc->fd[r]);
  free(mc->fd);
  free(mc);
}

static minicoll_t *alloc_mc(int rank, int n) {
  minicoll_t *mc = calloc(1, sizeof *mc);
  if (!mc || !(mc->fd = calloc((size_t)n, sizeof(int)))) {
    free(mc);
    snprintf(err, sizeof err, "minicoll: out of memory");
    return NULL;
  }
  mc->rank = rank;
  mc->n = n;
  for (int r = 0; r < n; r++)
    mc->fd[r] = -1;
  return mc;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* All of buf, or -1 with errno ETIMEDOUT (the deadline passed: the whole
 * call's, not each system call's) or another errno (the peer is gone). */
static int io_all(int fd, void *buf, size_t len, int sending,
                  int64_t deadline) {
  char *p = buf;
  while (len) {
    int64_t left = deadline - now_ms();
    struct pollfd pf = {fd, sending ? POLLOUT : POLLIN, 0};
    int w = left > 0 ? poll(&pf, 1, (int)left) : 0;
    if (w < 0 && errno == EINTR)
      continue;
    if (w == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    ssize_t k = w < 0     ? -1
                : sending ? send(fd, p, len, MSG_NOSIGNAL)
                          : recv(fd, p, len, 0);
    if (k <= 0) {
      if (k < 0 && errno == EINTR)
        continue;
      if (k == 0)
        errno = ECONNRESET;
      return -1;
    }
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

/* A failed exchange with rank r as symheap's error: the timeout is
 * SYMHEAP_ERR_TIMEOUT, as the ccl contract says; a lost peer REMOTE. */
static symheap_result_t peer_failed(int r, int timeout_ms) {
  const symheap_host_services_t *svc = symheap_host_services();
  if (errno == ETIMEDOUT)
    return svc->error(SYMHEAP_ERR_TIMEOUT,
                      "minicoll: rank %d did not answer within %d ms", r,
                      timeout_ms);
  return svc->error(SYMHEAP_ERR_REMOTE, "minicoll: lost rank %d (%s)", r,
                    strerror(errno));
}

/* --- the ccl that symheap rides on ------------------------------------- */
static int mc_rank(void *ctx) { return ((minicoll_t *)ctx)->rank; }
static int mc_size(void *ctx) { return ((minicoll_t *)ctx)->n; }

/* Star: everyone sends to rank 0, rank 0 sends everything back.  On a
 * failure, report it through symheap's error (it names what it can). */
static symheap_result_t mc_allgather(void *ctx, const void *in, void *out,
                                     size_t bytes, int timeout_ms) {
  minicoll_t *mc = ctx;
  char *o = out;
  int64_t deadline = now_ms() + timeout_ms; /* one for the whole call */
  if (mc->rank == 0) {
    memcpy(o, in, bytes);
    for (int r = 1; r < mc->n; r++)
      if (io_all(mc->fd[r], o + (size_t)r * bytes, bytes, 0, deadline))
        return peer_failed(r, timeout_ms);
    for (int r = 1; r < mc->n; r++)
      if (io_all(mc->fd[r], o, bytes * (size_t)mc->n, 1, deadline))
        return peer_failed(r, timeout_ms);
    return SYMHEAP_SUCCESS;
  }
  if (io_all(mc->fd[0], (void *)in, bytes, 1, deadline) ||
      io_all(mc->fd[0], o, bytes * (size_t)mc->n, 0, deadline))
    return peer_failed(0, timeout_ms);
  return SYMHEAP_SUCCESS;
}

/* --- its own bootstrap ---------------------------------------------------- */
/* Rank 0's side: listen on loopback `port` (0: any free one, *port says
 * which). */
static int listen_on(int *port, int *out) {
  struct sockaddr_in a;
  socklen_t alen = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)*port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1, l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l >= 0)
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 64) ||
      getsockname(l, (struct sockaddr *)&a, &alen)) {
    snprintf(err, sizeof err, "minicoll: listen on port %d: %s", *port,
             strerror(errno));
    if (l >= 0)
      close(l);
    return -1;
  }
  *port = ntohs(a.sin_port);
  *out = l;
  return 0;
}

/* Rank 0 takes in the other n - 1 ranks (each says who it is), within 10 s
 * each (SO_RCVTIMEO bounds accept). */
static int accept_all(minicoll_t *mc, int l) {
  int one = 1;
  struct timeval tv = {10, 0};
  setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (int k = 1; k < mc->n; k++) {
    int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    int32_t who = -1;
    if (s < 0) {
      snprintf(err, sizeof err, "minicoll: accept: %s", strerror(errno));
      return -1;
    }
    if (io_all(s, &who, sizeof who, 0, now_ms() + 10000) || who <= 0 ||
        who >= mc->n || mc->fd[who] >= 0) {
      close(s);
      k--; /* not one of ours */
      continue;
    }
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    mc->fd[who] = s;
  }
  return 0;
}

static int connect_to(minicoll_t *mc, int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  for (int tries = 0; tries < 1000; tries++) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
      int32_t me = mc->rank;
      setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      mc->fd[0] = s;
      return io_all(s, &me, sizeof me, 1, now_ms() + 10000);
    }
    if (s >= 0)
      close(s);
    usleep(10000);
  }
  snprintf(err, sizeof err, "minicoll: rank 0 never listened on port %d", port);
  return -1;
}

static int bootstrap(minicoll_t *mc, int port) {
  if (mc->rank != 0)
    return connect_to(mc, port);
  int l, rc = listen_on(&port, &l);
  if (rc == 0) {
    rc = accept_all(mc, l);
    close(l);
  }
  return rc;
}

/* --- splitting: symheap_comm_split of a comm on minicoll rides on it ------ */
typedef struct {
  int32_t color, key, port;
} split_rec_t;

/* The new context of this rank's color, bootstrapped over the parent: the
 * members are ordered by (key, rank); the first listens on a free port and
 * the parent's allgather tells the others which. */
static symheap_result_t mc_split(void *ctx, int color, int key, int timeout_ms,
                                 void **child) {
  minicoll_t *mc = ctx;
  const symheap_host_services_t *svc = symheap_host_services();
  split_rec_t me = {color, key, 0}, *all = calloc((size_t)mc->n, sizeof *all);
  minicoll_t *c = NULL;
  int l = -1, rank = 0, n = 0;
  *child = NULL;
  if (!all)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "minicoll: out of memory");
  symheap_result_t r = mc_allgather(mc, &me, all, sizeof me, timeout_ms);
  for (int p = 0; r == SYMHEAP_SUCCESS && color >= 0 && p < mc->n; p++)
    if (all[p].color == color) {
      n++;
      if (all[p].key < key || (all[p].key == key && p < mc->rank))
        rank++;
    }
  if (r == SYMHEAP_SUCCESS && color >= 0 && rank == 0 &&
      listen_on(&me.port, &l) != 0)
    me.port = -1; /* the others hear it and give up too */
  if (r == SYMHEAP_SUCCESS)
    r = mc_allgather(mc, &me, all, sizeof me, timeout_ms);
  int port = 0;
  for (int p = 0; r == SYMHEAP_SUCCESS && color >= 0 && p < mc->n; p++)
    if (all[p].color == color && all[p].port)
      port = all[p].port;
  if (r == SYMHEAP_SUCCESS && color >= 0) {
    c = port > 0 ? alloc_mc(rank, n) : NULL;
    if (!c || (rank == 0 ? accept_all(c, l) : connect_to(c, port)) != 0)
      r = svc->error(SYMHEAP_ERR_REMOTE, "minicoll: split: %s", err);
  }
  if (l >= 0)
    close(l);
  free(all);
  if (r != SYMHEAP_SUCCESS) {
    if (c)
      close_all(c);
    return r;
  }
  if (c)
    c->made_by_split = 1;
  *child = c;
  return SYMHEAP_SUCCESS;
}

/* Releases what symheap owns: the contexts split made.  The one the
 * program passed to symheap_comm_init_ccl stays its own (minicoll_finalize). */
static void mc_fini(void *ctx) {
  minicoll_t *mc = ctx;
  if (mc->made_by_split)
    close_all(mc);
}

static const symheap_ccl_ops minicoll_ccl = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_ccl_ops),
    .name = "minicoll",
    .rank = mc_rank,
    .size = mc_size,
    .allgather = mc_allgather,
    .barrier = NULL, /* symheap barriers with an empty allgather */
    .fini = mc_fini, /* split contexts only: minicoll owns its own */
    .split = mc_split,
};

symheap_comm_t minicoll_symheap_comm(minicoll_t *mc) { return mc->comm; }

int minicoll_init(minicoll_t **out, int rank, int n, int port) {
  minicoll_t *mc = alloc_mc(rank, n);
  if (!mc)
    return -1;
  if (bootstrap(mc, port) != 0) {
    minicoll_finalize(mc);
    return -1;
  }
  /* symheap over our own runtime: no second bootstrap, no unique id. */
  if (symheap_comm_init_ccl(&mc->comm, &minicoll_ccl, mc) != SYMHEAP_SUCCESS) {
    snprintf(err, sizeof err, "minicoll: symheap: %s", symheap_last_error());
    minicoll_finalize(mc);
    return -1;
  }
  *out = mc;
  return 0;
}

/* The window grows to the largest call so far (every rank calls with the
 * same count, so every rank grows it together). */
int minicoll_allreduce_f32(minicoll_t *mc, float *data, size_t count) {
  size_t bytes = count * sizeof *data;
  if (bytes > mc->cap) {
    if (mc->win && symheap_free(mc->comm, mc->win) != SYMHEAP_SUCCESS)
      goto fail;
    mc->win = NULL;
    mc->cap = 0;
    if (symheap_malloc(mc->comm, bytes, 0, &mc->win) != SYMHEAP_SUCCESS)
      goto fail;
    mc->cap = bytes;
  }
  char *base;
  size_t stride;
  if (symheap_window_flat_base(mc->win, (void **)&base, &stride) !=
      SYMHEAP_SUCCESS)
    goto fail;
  memcpy(base + (size_t)mc->rank * stride, data, bytes);
  if (symheap_comm_barrier(mc->comm) != SYMHEAP_SUCCESS)
    goto fail;
  for (size_t i = 0; i < count; i++) {
    float acc = 0;
    for (int r = 0; r < mc->n; r++)
      acc += ((const float *)(base + (size_t)r * stride))[i];
    data[i] = acc;
  }
  /* nobody overwrites its input while a peer still reads it */
  if (symheap_comm_barrier(mc->comm) != SYMHEAP_SUCCESS)
    goto fail;
  return 0;
fail:
  snprintf(err, sizeof err, "minicoll: allreduce: %s", symheap_last_error());
  return -1;
}

void minicoll_finalize(minicoll_t *mc) {
  if (!mc)
    return;
  if (mc->win)
    symheap_free(mc->comm, mc->win);
  if (mc->comm)
    symheap_comm_destroy(mc->comm);
  close_all(mc);
}

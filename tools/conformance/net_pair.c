/* Two processes over a net adaptor, for the kit's net checks: the check's
 * process (rank 0) forks rank 1; they talk over a socket pair (addresses,
 * keys, "done" words) and move bytes only through the adaptor. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int send_all(int fd, const void *p, size_t len) {
  const char *c = p;
  while (len) {
    ssize_t w = send(fd, c, len, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return 0;
    c += w, len -= (size_t)w;
  }
  return 1;
}

/* Receive len bytes, progressing the adaptor between polls of the socket. */
static int recv_all(kit_net_t *n, void *p, size_t len) {
  char *c = p;
  double end = now() + K.timeout_s;
  while (len) {
    struct pollfd pf = {n->fd, POLLIN, 0};
    int k = poll(&pf, 1, 0);
    if (k > 0) {
      ssize_t r = recv(n->fd, c, len, 0);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return 0;
      c += r, len -= (size_t)r;
      continue;
    }
    if (n->ctx)
      (void)n->T->ops.progress(n->ctx);
    if (now() > end)
      return 0;
  }
  return 1;
}

int kit_net_send(kit_net_t *n, uint64_t v) {
  if (send_all(n->fd, &v, sizeof v))
    return 1;
  kit_fail("rank %d: the other process is gone (socket closed)", n->rank);
  return 0;
}

int kit_net_recv(kit_net_t *n, uint64_t *v) {
  if (recv_all(n, v, sizeof *v))
    return 1;
  kit_fail("rank %d: no word from the other process within %d s (it died, "
           "or waits on something that never completes)",
           n->rank, K.timeout_s);
  return 0;
}

int kit_net_sync(kit_net_t *n) {
  uint64_t v;
  return kit_net_send(n, 1) && kit_net_recv(n, &v);
}

int kit_net_quiet(kit_net_t *n, const char *after) {
  kit_stage("rank %d: quiet after %s", n->rank, after);
  kit_clear_error();
  symheap_result_t r = n->T->ops.quiet(n->ctx, K.timeout_s * 1000 / 2);
  if (r == SYMHEAP_SUCCESS)
    return 1;
  kit_fail("rank %d: quiet after %s %s", n->rank, after, kit_said(r));
  return 0;
}

/* Exchange a blob of at most max bytes (length first). */
static int swap_blob(kit_net_t *n, const void *mine, size_t len, void *theirs,
                     size_t max, size_t *their_len) {
  uint64_t l = len, tl = 0;
  if (!send_all(n->fd, &l, sizeof l) || !send_all(n->fd, mine, len) ||
      !recv_all(n, &tl, sizeof tl) || tl > max || !recv_all(n, theirs, tl))
    return 0;
  *their_len = (size_t)tl;
  return 1;
}

static int fail_step(kit_net_t *n, const char *step, symheap_result_t r) {
  kit_fail("rank %d: %s %s", n->rank, step, kit_said(r));
  return 0;
}

/* Everything after the fork, in both processes. */
static int setup(kit_net_t *n, size_t size) {
  symheap_net_init_t a = {sizeof a, n->rank, 2, K.provider};
  unsigned char addr[SYMHEAP_NET_ADDR_MAX], addrs[2][SYMHEAP_NET_ADDR_MAX];
  size_t alen = 0, tlen = 0;
  kit_stage("rank %d: open", n->rank);
  kit_clear_error();
  symheap_result_t r =
      n->T->ops.open(&symheap__host_services, &a, &n->ctx, addr, &alen);
  if (r != SYMHEAP_SUCCESS)
    return fail_step(n, "open", r);
  memset(&n->caps, 0, sizeof n->caps);
  n->caps.struct_size = sizeof n->caps;
  if ((r = n->T->ops.query(n->ctx, &n->caps)) != SYMHEAP_SUCCESS)
    return fail_step(n, "query", r);
  memset(addrs, 0, sizeof addrs);
  if (!swap_blob(n, addr, alen, addrs[1 - n->rank], sizeof addrs[0], &tlen)) {
    kit_fail("rank %d: exchanging addresses failed", n->rank);
    return 0;
  }
  memcpy(addrs[n->rank], addr, alen);
  kit_stage("rank %d: connect", n->rank);
  if ((r = n->T->ops.connect(n->ctx, 2, addrs, sizeof addrs[0])))
    return fail_step(n, "connect", r);
  /* The region, with an inaccessible page on each side: an adaptor that
   * writes past it faults here. */
  long pg = sysconf(_SC_PAGESIZE);
  size_t span = (size + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
  char *m = mmap(NULL, span + 2 * (size_t)pg, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED || mprotect(m + pg, span, PROT_READ | PROT_WRITE)) {
    kit_fail("rank %d: mmap of %zu bytes failed", n->rank, span);
    return 0;
  }
  n->mem = m + pg;
  n->size = size;
  unsigned char key[SYMHEAP_NET_KEY_MAX], tkey[SYMHEAP_NET_KEY_MAX];
  size_t klen = 0;
  kit_stage("rank %d: mem_register", n->rank);
  if ((r = n->T->ops.mem_register(n->ctx, n->mem, size, 0, &n->mr, key, &klen)))
    return fail_step(n, "mem_register", r);
  if (klen == 0 || klen > SYMHEAP_NET_KEY_MAX) {
    kit_fail("rank %d: mem_register wrote a key of %zu bytes (1..%d allowed)",
             n->rank, klen, SYMHEAP_NET_KEY_MAX);
    return 0;
  }
  if (!swap_blob(n, key, klen, tkey, sizeof tkey, &tlen)) {
    kit_fail("rank %d: exchanging keys failed", n->rank);
    return 0;
  }
  if ((r = n->T->ops.rkey_import(n->ctx, 1 - n->rank, tkey, tlen, &n->rkey)))
    return fail_step(n, "rkey_import of the other's key", r);
  if ((r = n->T->ops.rkey_import(n->ctx, n->rank, key, klen, &n->self_rkey)))
    return fail_step(n, "rkey_import of its own key", r);
  return kit_net_sync(n);
}

int kit_net_start(kit_net_t *n, size_t size) {
  memset(n, 0, sizeof *n);
  n->T = &K.N;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
    kit_fail("socketpair failed: %s", strerror(errno));
    return 0;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    kit_fail("fork failed: %s", strerror(errno));
    return 0;
  }
  n->rank = pid == 0;
  n->fd = sv[n->rank];
  close(sv[1 - n->rank]);
  n->other = (int)pid;
  if (setup(n, size))
    return 1;
  if (n->rank == 1)
    _exit(1);
  kit_net_finish(n);
  return 0;
}

void kit_net_finish(kit_net_t *n) {
  kit_stage("rank %d: closing", n->rank);
  if (n->ctx) {
    if (n->rkey)
      n->T->ops.rkey_release(n->ctx, n->rkey);
    if (n->self_rkey)
      n->T->ops.rkey_release(n->ctx, n->self_rkey);
    if (n->mr)
      (void)n->T->ops.mem_deregister(n->ctx, n->mr);
    n->T->ops.close(n->ctx);
    n->ctx = NULL;
  }
  close(n->fd);
  if (n->rank == 1)
    _exit(kit_failed() ? 1 : 0);
  int st = 0;
  double end = now() + K.timeout_s;
  while (waitpid(n->other, &st, WNOHANG) == 0) {
    if (now() > end) {
      kill(n->other, SIGKILL);
      waitpid(n->other, &st, 0);
      kit_fail("rank 1 did not exit within %d s after closing", K.timeout_s);
      return;
    }
    struct timespec ms = {0, 2 * 1000 * 1000};
    nanosleep(&ms, NULL);
  }
  if (WIFSIGNALED(st))
    kit_fail("rank 1 was killed by signal %d (%s) in its part of the check",
             WTERMSIG(st), strsignal(WTERMSIG(st)));
}

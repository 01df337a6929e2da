#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sock.h"

void symheap__hex(const unsigned char *in, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * n] = '\0';
}

static socklen_t make_addr(const symheap__sockname_t *n,
                           struct sockaddr_un *a) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  size_t len = strnlen(n->name, sizeof n->name);
  if (n->abstract) {
    /* Leading NUL: the abstract namespace; the length bounds the name. */
    memcpy(a->sun_path + 1, n->name, len);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
  }
  memcpy(a->sun_path, n->name, len);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

static const char *peer_str(int peer, char *buf, size_t len) {
  if (peer >= 0)
    snprintf(buf, len, "rank %d", peer);
  else
    snprintf(buf, len, "the peer");
  return buf;
}

symheap_result_t symheap__sock_listen(const symheap__sockname_t *n, int *fd) {
  struct sockaddr_un a;
  socklen_t alen = make_addr(n, &a);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return symheap__error(SYMHEAP_ERR_SYSTEM, "socket(AF_UNIX): %s",
                          strerror(errno));
  if (bind(s, (struct sockaddr *)&a, alen) != 0 || listen(s, 256) != 0) {
    int e = errno;
    close(s);
    return symheap__error(SYMHEAP_ERR_SYSTEM, "cannot listen on %s%s: %s",
                          n->abstract ? "@" : "", n->name, strerror(e));
  }
  *fd = s;
  return SYMHEAP_SUCCESS;
}

void symheap__sock_unlink(const symheap__sockname_t *n) {
  if (!n->abstract && n->name[0])
    unlink(n->name);
}

symheap_result_t symheap__sock_connect(const symheap__sockname_t *n,
                                       int64_t deadline_ms, int peer, int *fd) {
  struct sockaddr_un a;
  socklen_t alen = make_addr(n, &a);
  char who[32];
  int delay = 1;
  for (;;) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
      return symheap__error(SYMHEAP_ERR_SYSTEM, "socket(AF_UNIX): %s",
                            strerror(errno));
    if (connect(s, (struct sockaddr *)&a, alen) == 0) {
      *fd = s;
      return SYMHEAP_SUCCESS;
    }
    int e = errno;
    close(s);
    /* The listener may simply not be up yet: retry until the deadline. */
    if (e != ECONNREFUSED && e != ENOENT && e != EAGAIN && e != EINTR)
      return symheap__error(SYMHEAP_ERR_SYSTEM,
                            "cannot connect to %s at %s%s: %s",
                            peer_str(peer, who, sizeof who),
                            n->abstract ? "@" : "", n->name, strerror(e));
    if (symheap__now_ms() >= deadline_ms)
      return symheap__error(SYMHEAP_ERR_TIMEOUT,
                            "timed out connecting to %s at %s%s (is it "
                            "running with the same unique id?)",
                            peer_str(peer, who, sizeof who),
                            n->abstract ? "@" : "", n->name);
    symheap__idle_pause(delay);
    if (delay < 20)
      delay *= 2;
  }
}

#define SPIN_YIELD 64u /* about every 100 us */
int symheap__sock_wait(int fd, short events, int64_t deadline_ms) {
  symheap__idle_t io = {0, 0, {0}, 0, 0};
  uint64_t t0 = symheap__now_ns();
  for (unsigned turns = 0;;) {
    int64_t left = deadline_ms - symheap__now_ms();
    if (left < 0)
      left = 0;
    struct pollfd p[1 + SYMHEAP__IDLE_FDS];
    p[0] = (struct pollfd){fd, events, 0};
    /* While a net adaptor with manual progress is open, a rank waiting
     * here may be the target of a peer's put, get or emulated atomic,
     * which completes only when this rank progresses: the idle hook
     * progresses, and asks to be called again at once while the engine
     * is busy (spinning, as MPI's and OpenSHMEM's waits do, yielding the
     * CPU every SPIN_YIELD turns: ranks may outnumber cores), or hands
     * out the engine's wait descriptors to sleep on beside the socket
     * (comm/net_comm.c).  Where it spins only because an engine has no
     * descriptors to sleep on, the spin turns into short naps after a
     * while (boot/idle.h), not a CPU for the whole wait. */
    int spin = symheap__idle_turn(&io);
    uint64_t nap =
        spin && io.nap_ok ? symheap__idle_nap_ns(symheap__now_ns() - t0) : 0;
    int n = io.nfds;
    for (int i = 0; i < n; i++)
      p[1 + i] = (struct pollfd){io.fds[i], POLLIN, 0};
    int64_t tmo = spin ? 0 : left > 1000000 ? 1000000 : left;
    if (n && tmo > SYMHEAP__IDLE_SLEEP_MS)
      tmo = SYMHEAP__IDLE_SLEEP_MS;
    struct timespec ts = {(time_t)(tmo / 1000), (long)(tmo % 1000) * 1000000};
    if (nap && left > 0)
      ts = (struct timespec){0, (long)nap};
    io.woke = 0;
    int r = ppoll(p, (nfds_t)(1 + n), &ts, NULL);
    if (r > 0 && p[0].revents)
      return 1;
    if (r > 0) { /* the engine has work: the hook takes it at once */
      io.woke = 1;
      continue;
    }
    if (r == 0 && spin && left > 0) {
      if (!nap && ++turns % SPIN_YIELD == 0)
        sched_yield();
      continue;
    }
    if (r == 0 && left == 0)
      return 0;
    if (r < 0 && errno != EINTR)
      return -1;
  }
}

/* Only processes of this user may talk to a job: on an abstract socket
 * anyone in the network namespace can connect, so the kernel's word on the
 * peer's uid decides before a byte is read.  Another user's connection is
 * dropped (with a warning) and the wait goes on. */
symheap_result_t symheap__fd_limit_error(const char *call) {
  int e = errno;
  struct rlimit rl;
  if (e == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
    return symheap__error(
        SYMHEAP_ERR_SYSTEM,
        "%s: out of file descriptors: this process may have %llu open "
        "(RLIMIT_NOFILE); rank 0 holds one per rank while the job joins, "
        "every rank one per node-local peer, and registrations a few more "
        "while they run: raise the limit (ulimit -n)",
        call, (unsigned long long)rl.rlim_cur);
  return symheap__error(SYMHEAP_ERR_SYSTEM,
                        "%s: %s (the system-wide file table is full)", call,
                        strerror(e));
}

symheap_result_t symheap__sock_accept(int lfd, int64_t deadline_ms, int *fd) {
  for (;;) {
    int w = symheap__sock_wait(lfd, POLLIN, deadline_ms);
    if (w == 0)
      return symheap__error(SYMHEAP_ERR_TIMEOUT,
                            "timed out waiting for ranks to connect");
    if (w < 0)
      return symheap__error(SYMHEAP_ERR_SYSTEM, "poll: %s", strerror(errno));
    int s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (s < 0 && (errno == EMFILE || errno == ENFILE))
      return symheap__fd_limit_error("accept");
    if (s < 0)
      return symheap__error(SYMHEAP_ERR_SYSTEM, "accept: %s", strerror(errno));
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      int e = errno;
      close(s);
      return symheap__error(SYMHEAP_ERR_SYSTEM, "SO_PEERCRED: %s", strerror(e));
    }
    if (cred.uid != geteuid()) {
      SYMHEAP_WARN("dropped a connection from pid %d of uid %u: only uid %u "
                   "may join this job",
                   (int)cred.pid, (unsigned)cred.uid, (unsigned)geteuid());
      close(s);
      continue;
    }
    *fd = s;
    return SYMHEAP_SUCCESS;
  }
}

symheap_result_t symheap__sock_send(int fd, const void *buf, size_t len,
                                    int send_fd, int64_t deadline_ms,
                                    int peer) {
  const char *p = buf;
  char who[32];
  while (len > 0) {
    struct iovec iov = {(void *)p, len};
    struct msghdr m = {0};
    char ctl[CMSG_SPACE(sizeof(int))];
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (send_fd >= 0) {
      memset(ctl, 0, sizeof ctl);
      m.msg_control = ctl;
      m.msg_controllen = sizeof ctl;
      struct cmsghdr *c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(c), &send_fd, sizeof(int));
    }
    ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      send_fd = -1; /* the descriptor went with the first byte */
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int w = symheap__sock_wait(fd, POLLOUT, deadline_ms);
      if (w == 0)
        return symheap__error(SYMHEAP_ERR_TIMEOUT, "timed out sending to %s",
                              peer_str(peer, who, sizeof who));
      if (w < 0)
        return symheap__error(SYMHEAP_ERR_SYSTEM, "poll: %s", strerror(errno));
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
      return symheap__error(SYMHEAP_ERR_REMOTE,
                            "lost connection to %s (it exited or closed its "
                            "comm)",
                            peer_str(peer, who, sizeof who));
    return symheap__error(SYMHEAP_ERR_SYSTEM, "sending to %s: %s",
                          peer_str(peer, who, sizeof who), strerror(errno));
  }
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__sock_recv(int fd, void *buf, size_t len, int *recv_fd,
                                    int64_t deadline_ms, int peer) {
  char *p = buf;
  char who[32];
  if (recv_fd)
    *recv_fd = -1;
  while (len > 0) {
    struct iovec iov = {p, len};
    struct msghdr m = {0};
    char ctl[CMSG_SPACE(sizeof(int) * 4)];
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    ssize_t n = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n > 0) {
      for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
          continue;
        size_t cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < cnt; i++) {
          int got;
          memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
          /* Keep the first descriptor where one is expected; anything else
           * is unsolicited and closed so it cannot leak. */
          if (recv_fd && *recv_fd == -1)
            *recv_fd = got;
          else
            close(got);
        }
      }
      if (m.msg_flags & MSG_CTRUNC) {
        if (!recv_fd)
          return symheap__error(SYMHEAP_ERR_REMOTE,
                                "%s sent descriptors where none belong",
                                peer_str(peer, who, sizeof who));
        /* The kernel dropped a descriptor meant for us (this process is at
         * its RLIMIT_NOFILE): say so with -2 and read on, so the stream
         * stays in step and the caller can fail cleanly. */
        if (*recv_fd >= 0)
          close(*recv_fd);
        *recv_fd = -2;
      }
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n == 0)
      goto lost;
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int w = symheap__sock_wait(fd, POLLIN, deadline_ms);
      if (w == 0) {
        if (recv_fd && *recv_fd >= 0) {
          close(*recv_fd);
          *recv_fd = -1;
        }
        return symheap__error(SYMHEAP_ERR_TIMEOUT, "timed out waiting for %s",
                              peer_str(peer, who, sizeof who));
      }
      if (w < 0)
        return symheap__error(SYMHEAP_ERR_SYSTEM, "poll: %s", strerror(errno));
      continue;
    }
    if (errno == ECONNRESET)
      goto lost;
    return symheap__error(SYMHEAP_ERR_SYSTEM, "receiving from %s: %s",
                          peer_str(peer, who, sizeof who), strerror(errno));
  }
  return SYMHEAP_SUCCESS;
lost:
  if (recv_fd && *recv_fd >= 0) {
    close(*recv_fd);
    *recv_fd = -1;
  }
  return symheap__error(SYMHEAP_ERR_REMOTE,
                        "lost connection to %s (it exited or closed its comm)",
                        peer_str(peer, who, sizeof who));
}

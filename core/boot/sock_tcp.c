/* TCP sockets for the bootstrap between hosts (sock_tcp.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sock.h"
#include "sock_tcp.h"

int symheap__tcp_parse(const char *addr, char *ip, size_t len, int *port) {
  const char *colon;
  size_t n;
  if (addr[0] == '[') {
    const char *end = strchr(addr, ']');
    if (!end || end[1] != ':')
      return -1;
    n = (size_t)(end - addr - 1);
    addr++;
    colon = end + 1;
  } else {
    colon = strrchr(addr, ':');
    if (!colon)
      return -1;
    n = (size_t)(colon - addr);
  }
  if (n == 0 || n >= len)
    return -1;
  memcpy(ip, addr, n);
  ip[n] = '\0';
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (*end || p < 0 || p > 65535 || colon[1] == '\0')
    return -1;
  *port = (int)p;
  return 0;
}

/* ip and port as a socket address; 0 when ip is an address. */
static int make_addr(const char *ip, int port, struct sockaddr_storage *a,
                     socklen_t *alen) {
  memset(a, 0, sizeof *a);
  struct sockaddr_in *v4 = (struct sockaddr_in *)a;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)a;
  if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    *alen = sizeof *v4;
    return 0;
  }
  if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    *alen = sizeof *v6;
    return 0;
  }
  return -1;
}

/* "ip:port" of a socket address. */
static void addr_text(const struct sockaddr_storage *a, char *out, size_t len) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (a->ss_family == AF_INET) {
    const struct sockaddr_in *v4 = (const struct sockaddr_in *)a;
    inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof ip);
    port = ntohs(v4->sin_port);
    snprintf(out, len, "%s:%d", ip, port);
  } else if (a->ss_family == AF_INET6) {
    const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)a;
    inet_ntop(AF_INET6, &v6->sin6_addr, ip, sizeof ip);
    port = ntohs(v6->sin6_port);
    snprintf(out, len, "[%s]:%d", ip, port);
  } else {
    snprintf(out, len, "an unknown address");
  }
}

symheap_result_t symheap__tcp_listen(const char *ip, int port, int *fd,
                                     char *addr, size_t len) {
  struct sockaddr_storage a;
  socklen_t alen;
  if (make_addr(ip, port, &a, &alen) != 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "bootstrap: '%s' is not an IP address", ip);
  int s = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return symheap__error(SYMHEAP_ERR_SYSTEM, "socket(TCP): %s",
                          strerror(errno));
  /* A later comm of the same job listens on the same port again, while the
   * last one's connections may linger in TIME_WAIT. */
  int one = 1;
  (void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(s, (struct sockaddr *)&a, alen) != 0 || listen(s, 256) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &alen) != 0) {
    int e = errno;
    close(s);
    return symheap__error(SYMHEAP_ERR_SYSTEM,
                          "bootstrap: cannot listen on %s port %d: %s", ip,
                          port, strerror(e));
  }
  addr_text(&a, addr, len);
  *fd = s;
  return SYMHEAP_SUCCESS;
}

static void nodelay(int s) {
  int one = 1;
  (void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* One non-blocking connect, finished before the deadline: 0, or errno. */
static int connect_once(int s, const struct sockaddr_storage *a, socklen_t alen,
                        int64_t deadline_ms) {
  if (connect(s, (const struct sockaddr *)a, alen) == 0)
    return 0;
  if (errno != EINPROGRESS)
    return errno;
  /* A host that does not answer at all: try again within a second. */
  int64_t soon = symheap__now_ms() + 1000;
  int w = symheap__sock_wait(s, POLLOUT,
                             deadline_ms < soon ? deadline_ms : soon);
  if (w <= 0)
    return w == 0 ? ETIMEDOUT : errno;
  int err = 0;
  socklen_t el = sizeof err;
  getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el);
  return err;
}

symheap_result_t symheap__tcp_connect(const char *addr, int64_t deadline_ms,
                                      int peer, int *fd) {
  char ip[SYMHEAP__TCP_ADDR_MAX];
  int port;
  struct sockaddr_storage a;
  socklen_t alen;
  if (symheap__tcp_parse(addr, ip, sizeof ip, &port) != 0 || port == 0 ||
      make_addr(ip, port, &a, &alen) != 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "unique id is corrupt (bad TCP address '%s')", addr);
  int delay = 1, e;
  for (;;) {
    int s = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
      return symheap__error(SYMHEAP_ERR_SYSTEM, "socket(TCP): %s",
                            strerror(errno));
    e = connect_once(s, &a, alen, deadline_ms);
    if (e == 0) {
      nodelay(s);
      *fd = s;
      return SYMHEAP_SUCCESS;
    }
    close(s);
    /* Rank 0 may not listen yet, or the network may not be up yet. */
    if (e != ECONNREFUSED && e != ETIMEDOUT && e != EINTR && e != EAGAIN &&
        e != ENETUNREACH && e != EHOSTUNREACH && e != ECONNRESET)
      break;
    if (symheap__now_ms() >= deadline_ms)
      return symheap__error(SYMHEAP_ERR_TIMEOUT,
                            "timed out connecting to rank %d at %s (%s; is it "
                            "running with the same unique id, and does a "
                            "route reach it?)",
                            peer, addr, strerror(e));
    symheap__idle_pause(delay);
    if (delay < 50)
      delay *= 2;
  }
  return symheap__error(SYMHEAP_ERR_SYSTEM,
                        "cannot connect to rank %d at %s: %s", peer, addr,
                        strerror(e));
}

symheap_result_t symheap__tcp_accept(int lfd, int64_t deadline_ms, int *fd,
                                     char *from, size_t len) {
  for (;;) {
    int w = symheap__sock_wait(lfd, POLLIN, deadline_ms);
    if (w < 0)
      return symheap__error(SYMHEAP_ERR_SYSTEM, "poll: %s", strerror(errno));
    if (w == 0)
      return symheap__error(SYMHEAP_ERR_TIMEOUT,
                            "timed out waiting for ranks to connect");
    struct sockaddr_storage a;
    socklen_t alen = sizeof a;
    int s = accept4(lfd, (struct sockaddr *)&a, &alen, SOCK_CLOEXEC);
    if (s < 0 && (errno == EMFILE || errno == ENFILE))
      return symheap__fd_limit_error("accept");
    if (s < 0 && (errno == ECONNABORTED || errno == EINTR))
      continue;
    if (s < 0)
      return symheap__error(SYMHEAP_ERR_SYSTEM, "accept: %s", strerror(errno));
    nodelay(s);
    addr_text(&a, from, len);
    *fd = s;
    return SYMHEAP_SUCCESS;
  }
}

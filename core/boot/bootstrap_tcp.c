/* The bootstrap over TCP (bootstrap_tcp.h).  The secret in the id is what
 * admits a connection (bootstrap.c checks the HELLO, in constant time):
 * between hosts there is no SO_PEERCRED to ask. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap_tcp.h"
#include "base/config.h"
#include "sock.h"

/* The address rank 0 reported for a launcher's id: the other ranks hold
 * it, so a later comm of the same job (symheap_comm_init_env again, after
 * a destroy) listens there again instead of reporting a new one. */
static pthread_mutex_t reported_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char reported_token[16];
static char reported_addr[SYMHEAP__TCP_ADDR_MAX];

static int reported_before(const symheap__uid_t *uid, char *addr, size_t len) {
  pthread_mutex_lock(&reported_lock);
  int same = reported_addr[0] &&
             memcmp(reported_token, uid->token, sizeof reported_token) == 0;
  if (same)
    snprintf(addr, len, "%s", reported_addr);
  pthread_mutex_unlock(&reported_lock);
  return same;
}

static void remember(const symheap__uid_t *uid, const char *addr) {
  pthread_mutex_lock(&reported_lock);
  memcpy(reported_token, uid->token, sizeof reported_token);
  snprintf(reported_addr, sizeof reported_addr, "%s", addr);
  pthread_mutex_unlock(&reported_lock);
}

/* Rank 0 of a launcher's job: listen here, and tell the launcher where. */
static symheap_result_t listen_and_report(const symheap__uid_t *uid,
                                          symheap__boot_where_t *w, int *lfd) {
  char again[SYMHEAP__TCP_ADDR_MAX], mine[SYMHEAP__TCP_ADDR_MAX];
  int port;
  if (reported_before(uid, again, sizeof again) &&
      symheap__tcp_parse(again, w->ip, sizeof w->ip, &port) == 0)
    return symheap__tcp_listen(w->ip, port, lfd, mine, sizeof mine);
  int report = 0;
  symheap_result_t r = symheap__cfg_bool("SYMHEAP_RUN_ROOT_REPORT", &report);
  if (r == SYMHEAP_SUCCESS && !report)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                       "the unique id has no TCP address yet: it is a "
                       "launcher's (SYMHEAP_RUN_ROOT_REPORT), and only its "
                       "rank 0 may use it before it reports one");
  char ifname[16] = "", addr[SYMHEAP__TCP_ADDR_MAX];
  if (r == SYMHEAP_SUCCESS)
    r = symheap__tcp_pick_addr(w->ip, sizeof w->ip, ifname);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__tcp_listen(w->ip, 0, lfd, addr, sizeof addr);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* The whole id, the address in it: symheap-run hands it to the other
   * ranks through their remote-start command's stdin, never a command
   * line, where the secret would show in ps. */
  symheap__uid_t full = *uid;
  symheap_unique_id_t id;
  memset(&id, 0, sizeof id);
  snprintf(full.name, sizeof full.name, "%s", addr);
  memcpy(id.bytes, &full, sizeof full);
  char hex[2 * sizeof id.bytes + 1], line[sizeof hex + 32];
  symheap__uid_to_hex(&id, hex);
  int n = snprintf(line, sizeof line, "%s%s\n", SYMHEAP__ROOT_REPORT, hex);
  /* One write, so the line cannot interleave with the program's output. */
  if (write(STDOUT_FILENO, line, (size_t)n) != n) {
    close(*lfd);
    return symheap__error(SYMHEAP_ERR_SYSTEM,
                          "rank 0 cannot report its bootstrap address to "
                          "symheap-run on stdout");
  }
  remember(uid, addr);
  SYMHEAP_INFO("bootstrap: listening on %s (%s)", addr, ifname);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__boot_tcp_listen(const symheap__uid_t *uid,
                                          symheap__boot_where_t *w, int *lfd) {
  int port;
  if (strcmp(uid->name, SYMHEAP__UID_DEFERRED) == 0)
    return listen_and_report(uid, w, lfd);
  if (symheap__tcp_parse(uid->name, w->ip, sizeof w->ip, &port) != 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "unique id is corrupt (bad TCP address '%s')",
                          uid->name);
  *lfd = symheap__uid_take_listener(uid->token);
  if (*lfd >= 0)
    return SYMHEAP_SUCCESS;
  /* The id came from another process (which no longer listens). */
  char addr[SYMHEAP__TCP_ADDR_MAX];
  return symheap__tcp_listen(w->ip, port, lfd, addr, sizeof addr);
}

/* The address of this end of the connection: the interface that reaches
 * rank 0, where a sub-comm's rank 0 on this host will listen. */
static void local_ip(int fd, symheap__boot_where_t *w) {
  struct sockaddr_storage a;
  socklen_t alen = sizeof a;
  w->ip[0] = '\0';
  if (getsockname(fd, (struct sockaddr *)&a, &alen) != 0)
    return;
  if (a.ss_family == AF_INET)
    inet_ntop(AF_INET, &((struct sockaddr_in *)&a)->sin_addr, w->ip,
              sizeof w->ip);
  else if (a.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&a)->sin6_addr, w->ip,
              sizeof w->ip);
}

symheap_result_t symheap__boot_tcp_connect(const symheap__uid_t *uid,
                                           symheap__boot_where_t *w,
                                           int64_t deadline_ms, int *fd) {
  if (strcmp(uid->name, SYMHEAP__UID_DEFERRED) == 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "the unique id has no TCP address: a launcher's id "
                          "reaches ranks other than 0 only with the address "
                          "rank 0 reported (start the job with symheap-run)");
  symheap_result_t r = symheap__tcp_connect(uid->name, deadline_ms, 0, fd);
  if (r == SYMHEAP_SUCCESS)
    local_ip(*fd, w);
  return r;
}

symheap_result_t symheap__boot_accept(const symheap__boot_where_t *w, int lfd,
                                      int64_t deadline_ms, int *fd, char *from,
                                      size_t len) {
  if (w->tcp)
    return symheap__tcp_accept(lfd, deadline_ms, fd, from, len);
  snprintf(from, len, "a local process");
  return symheap__sock_accept(lfd, deadline_ms, fd);
}

/* Rank 0's waiting connections (hellos.h). */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hellos.h"

void symheap__hellos_init(symheap__hellos_t *h, const symheap__boot_where_t *w,
                          int lfd) {
  h->where = w;
  h->lfd = lfd;
  h->n = 0;
}

void symheap__hellos_refused(const char *from) {
  SYMHEAP_WARN("bootstrap: refused a connection from %s: it did not prove "
               "the job's secret",
               from);
}

/* Connection i leaves the set (the last takes its place). */
static void drop(symheap__hellos_t *h, int i, int refused) {
  if (refused)
    symheap__hellos_refused(h->c[i].from);
  if (refused || h->c[i].fd >= 0)
    close(h->c[i].fd);
  h->c[i] = h->c[--h->n];
}

/* One connection off the listener, if one is there now.  The set full:
 * the oldest is refused for it (strangers that keep connecting cannot
 * keep a rank's connection out; it says hello at once). */
static symheap_result_t take_one(symheap__hellos_t *h) {
  if (h->n == SYMHEAP__HELLOS_MAX) {
    int old = 0;
    for (int i = 1; i < h->n; i++)
      if (h->c[i].until < h->c[old].until)
        old = i;
    drop(h, old, 1);
  }
  symheap__hello_conn_t *c = &h->c[h->n];
  int fd = -1;
  char keep[SYMHEAP_ERROR_MAX];
  snprintf(keep, sizeof keep, "%s", symheap__error_peek());
  symheap_result_t r = symheap__boot_accept(h->where, h->lfd, symheap__now_ms(),
                                            &fd, c->from, sizeof c->from);
  if (r == SYMHEAP_ERR_TIMEOUT) { /* gone already, or another user's */
    (void)symheap__error(SYMHEAP_SUCCESS, "%s", keep);
    return SYMHEAP_SUCCESS;
  }
  if (r != SYMHEAP_SUCCESS) /* out of descriptors, say */
    return r;
  c->fd = fd;
  c->got = 0;
  c->until = symheap__now_ms() + HELLO_MS;
  h->n++;
  return SYMHEAP_SUCCESS;
}

/* What c sent: 1 its hello is whole, 0 not yet, -1 refused (another
 * message, a header that is not a hello's, closed). */
static int take_bytes(symheap__hello_conn_t *c) {
  ssize_t n = recv(c->fd, c->buf + c->got, sizeof c->buf - c->got,
                   MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return 0;
  if (n <= 0)
    return -1;
  c->got += (size_t)n;
  if (c->got >= sizeof(msg_hdr_t)) {
    msg_hdr_t hd;
    symheap_result_t r;
    SYMHEAP__KEEP_ERROR(r = symheap__msg_parse_hdr(c->buf, sizeof hd,
                                                   MSG_MAX_LEN, -1, &hd));
    if (r != SYMHEAP_SUCCESS || hd.type != MSG_HELLO ||
        hd.len != sizeof(hello_t))
      return -1;
  }
  return c->got == sizeof c->buf;
}

/* Poll the set and the listener until `wake`; < 0 on a poll failure. */
static int wait_some(symheap__hellos_t *h, struct pollfd *p, int64_t wake) {
  for (int i = 0; i < h->n; i++)
    p[i] = (struct pollfd){h->c[i].fd, POLLIN, 0};
  p[h->n] = (struct pollfd){h->lfd, POLLIN, 0};
  int64_t left = wake - symheap__now_ms();
  int w = poll(p, (nfds_t)h->n + 1,
               (int)(left < 0 ? 0 : left > 1000000 ? 1000000 : left));
  return w < 0 && errno == EINTR ? 0 : w;
}

symheap_result_t symheap__hellos_next(symheap__hellos_t *h, int64_t deadline,
                                      int *fd,
                                      unsigned char body[sizeof(hello_t)],
                                      char *from, size_t len) {
  struct pollfd p[SYMHEAP__HELLOS_MAX + 1];
  for (;;) {
    int64_t now = symheap__now_ms(), wake = deadline;
    for (int i = h->n - 1; i >= 0; i--)
      if (now >= h->c[i].until)
        drop(h, i, 1); /* silent, or too slow */
    if (now >= deadline)
      return symheap__error(SYMHEAP_ERR_TIMEOUT,
                            "timed out waiting for ranks to connect");
    for (int i = 0; i < h->n; i++)
      if (h->c[i].until < wake)
        wake = h->c[i].until;
    int n = h->n;
    if (wait_some(h, p, wake) < 0)
      return symheap__error(SYMHEAP_ERR_SYSTEM, "poll: %s", strerror(errno));
    /* Backwards: a dropped one's place takes one already looked at. */
    for (int i = n - 1; i >= 0; i--) {
      if (!p[i].revents)
        continue;
      int v = take_bytes(&h->c[i]);
      if (v < 0) {
        drop(h, i, 1);
      } else if (v > 0) {
        *fd = h->c[i].fd;
        memcpy(body, h->c[i].buf + sizeof(msg_hdr_t), sizeof(hello_t));
        snprintf(from, len, "%s", h->c[i].from);
        h->c[i].fd = -1;
        drop(h, i, 0);
        return SYMHEAP_SUCCESS;
      }
    }
    if (p[n].revents) {
      symheap_result_t r = take_one(h);
      if (r != SYMHEAP_SUCCESS)
        return r;
    }
  }
}

void symheap__hellos_close(symheap__hellos_t *h) {
  while (h->n > 0) /* strangers still silent when the join ends */
    drop(h, h->n - 1, 1);
}

/* Local bootstrap: a star of Unix stream sockets around rank 0.
 *
 * Every message starts with a header (magic, version, type, sequence number,
 * length) and is refused if any of them is wrong.  Rank 0 gathers, then
 * answers every rank; when it loses or waits too long for one, it tells the
 * others which rank and why (an ABORT message), so every survivor names the
 * same culprit instead of timing out on rank 0. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap.h"
#include "bootstrap_msg.h"
#include "bootstrap_tcp.h"
#include "hellos.h"

/* Non-roots wait this much longer than rank 0, so that rank 0's verdict on a
 * silent rank arrives before their own timeout on rank 0. */
#define GRACE_MS 500
/* How long rank 0 stays to tell ranks that join after it gave up why. */
#define LATE_MS 1000
/* join_hello's verdict beyond the decoder's: a rank that joined already. */
#define MSG_HELLO_DUPLICATE (-1)

typedef struct {
  int rank, nranks;
  int *fds; /* root: per-rank sockets (fds[0] unused); others: fds[0] */
  uint32_t seq;
  unsigned char token[16];
  symheap__boot_where_t where; /* Unix or TCP, and this rank's address */
} local_t;

static symheap_result_t send_msg(int fd, uint16_t type, uint32_t seq,
                                 const void *data, uint32_t len,
                                 int64_t deadline, int peer) {
  msg_hdr_t h = {MSG_MAGIC, MSG_VERSION, type, seq, len};
  symheap_result_t r = symheap__sock_send(fd, &h, sizeof h, -1, deadline, peer);
  if (r == SYMHEAP_SUCCESS && len)
    r = symheap__sock_send(fd, data, len, -1, deadline, peer);
  return r;
}

static symheap_result_t recv_hdr(int fd, msg_hdr_t *h, int64_t deadline,
                                 int peer) {
  unsigned char raw[sizeof *h];
  symheap_result_t r =
      symheap__sock_recv(fd, raw, sizeof raw, NULL, deadline, peer);
  return r == SYMHEAP_SUCCESS
             ? symheap__msg_parse_hdr(raw, sizeof raw, MSG_MAX_LEN, peer, h)
             : r;
}

/* Read an ABORT body and turn it into this rank's error. */
static symheap_result_t take_abort(local_t *l, const msg_hdr_t *h,
                                   int64_t deadline) {
  unsigned char raw[sizeof(abort_t)];
  if (h->len != sizeof raw)
    return symheap__error(SYMHEAP_ERR_REMOTE, "malformed abort from rank 0");
  symheap_result_t r =
      symheap__sock_recv(l->fds[0], raw, sizeof raw, NULL, deadline, 0);
  if (r != SYMHEAP_SUCCESS)
    return r;
  abort_t a;
  memcpy(&a, raw, sizeof a);
  a.msg[sizeof a.msg - 1] = '\0';
  /* Blamed itself: this rank was the late one (stopped, or too slow). */
  if (a.rank == l->rank && l->rank != 0)
    return symheap__error(SYMHEAP_ERR_REMOTE,
                          "rank 0 gave up on collective #%u waiting for this "
                          "rank (rank %d), which arrived late or was stopped: "
                          "%s",
                          h->seq, l->rank, a.msg);
  return symheap__msg_take_abort(raw, sizeof raw);
}

/* An abort rank 0 sent while this rank was away, if one is waiting. */
static symheap_result_t pending_abort(local_t *l, int64_t deadline) {
  struct pollfd pf = {l->fds[0], POLLIN, 0};
  msg_hdr_t h;
  if (poll(&pf, 1, 0) <= 0 || !(pf.revents & POLLIN))
    return SYMHEAP_SUCCESS;
  symheap_result_t r;
  SYMHEAP__KEEP_ERROR(r = recv_hdr(l->fds[0], &h, deadline, 0));
  if (r != SYMHEAP_SUCCESS || h.type != MSG_ABORT)
    return SYMHEAP_SUCCESS; /* a closed socket says nothing more */
  return take_abort(l, &h, deadline);
}

/* An abort naming `rank` as the one that failed, with the thread's current
 * message as its reason. */
static abort_t abort_of(int rank, symheap_result_t code) {
  abort_t a;
  memset(&a, 0, sizeof a);
  a.rank = rank;
  a.code = code;
  snprintf(a.msg, sizeof a.msg, "%s", symheap__error_peek());
  return a;
}

/* The rank-0 socket's name, from the unique id. */
static void uid_sockname(const symheap__uid_t *uid, symheap__sockname_t *name) {
  name->abstract = (int)uid->abstract;
  snprintf(name->name, sizeof name->name, "%s", uid->name);
}

/* To every rank, the one that failed too: it may only be late (stopped,
 * say), and must not go on to complete a collective the others gave up on. */
static void send_abort(local_t *l, const abort_t *a) {
  /* Best effort with a short deadline: the others may be gone too. */
  int64_t deadline = symheap__now_ms() + 100;
  for (int r = 1; r < l->nranks; r++)
    if (l->fds[r] >= 0)
      (void)send_msg(l->fds[r], MSG_ABORT, l->seq, a, sizeof *a, deadline, r);
}

static void root_abort_all(local_t *l, int failed, symheap_result_t code) {
  abort_t a = abort_of(failed, code);
  SYMHEAP__KEEP_ERROR(send_abort(l, &a));
}

static void local_free(local_t *l) {
  if (!l)
    return;
  for (int r = 0; r < l->nranks; r++)
    if (l->fds[r] >= 0)
      close(l->fds[r]);
  free(l->fds);
  free(l);
}

/* A hello's body from a connection that has `until` to send it (a header
 * of type HELLO and the right length, then the body). */
static symheap_result_t read_hello(int fd, unsigned char *body, int64_t until) {
  msg_hdr_t h;
  symheap_result_t r = recv_hdr(fd, &h, until, -1);
  if (r == SYMHEAP_SUCCESS && (h.type != MSG_HELLO || h.len != sizeof(hello_t)))
    r = SYMHEAP_ERR_REMOTE;
  if (r == SYMHEAP_SUCCESS)
    r = symheap__sock_recv(fd, body, sizeof(hello_t), NULL, until, -1);
  return r;
}

/* A late joiner's hello, answered with the abort. */
static void answer_with_abort(int fd, const abort_t *a, int64_t until) {
  unsigned char body[sizeof(hello_t)];
  if (read_hello(fd, body, until) == SYMHEAP_SUCCESS)
    (void)send_msg(fd, MSG_ABORT, 0, a, sizeof *a, until, -1);
}

/* Rank 0 gave up on the join for a reason every rank should hear: ranks
 * that have not connected yet get a short while to, and are told too
 * (rather than "lost connection to rank 0"). */
static void tell_late_joiners(local_t *l, int lfd, int missing) {
  abort_t a = abort_of(0, SYMHEAP_ERR_MISMATCH);
  int64_t until = symheap__now_ms() + LATE_MS;
  char saved[SYMHEAP_ERROR_MAX];
  snprintf(saved, sizeof saved, "%s", symheap__error_peek());
  char from[SYMHEAP__TCP_ADDR_MAX];
  for (int fd;
       missing > 0 && symheap__boot_accept(&l->where, lfd, until, &fd, from,
                                           sizeof from) == SYMHEAP_SUCCESS;
       missing--) {
    answer_with_abort(fd, &a, until);
    close(fd);
  }
  symheap__error(SYMHEAP_SUCCESS, "%s", saved);
}

/* accept failed: a timeout is the missing ranks'; anything else is rank
 * 0's own failure (out of descriptors, say), and says so. */
static void join_accept_failed(local_t *l, symheap_result_t r, int joined) {
  char missing[256] = "";
  size_t o = 0;
  for (int i = 1; i < l->nranks && o < sizeof missing - 16; i++)
    if (l->fds[i] < 0)
      o += (size_t)snprintf(missing + o, sizeof missing - o, "%srank %d",
                            o ? ", " : "", i);
  if (r == SYMHEAP_ERR_TIMEOUT)
    symheap__error(r, "%d of %d ranks joined before the timeout; missing: %s",
                   joined, l->nranks, missing);
  else
    symheap__error_context(r,
                           "rank 0 could not take in the ranks (%d of %d "
                           "joined)",
                           joined, l->nranks);
  int first = 1;
  while (first < l->nranks && l->fds[first] >= 0)
    first++;
  root_abort_all(l, r == SYMHEAP_ERR_TIMEOUT ? first : 0, r);
}

/* A connection's hello (its body, whole), judged. */
static int join_hello(local_t *l, const unsigned char *body, hello_t *hello) {
  int claimed = -1;
  int verdict = symheap__msg_check_hello(body, sizeof(hello_t), l->token,
                                         l->nranks, hello, &claimed);
  /* A second claim of a rank that joined is a wrong claim too. */
  if (verdict == MSG_HELLO_OK && l->fds[claimed] >= 0)
    return MSG_HELLO_DUPLICATE;
  return verdict;
}

/* A hello with the job's token but a rank the job does not have: one of
 * ours, launched wrong.  Every rank hears why now, rather than "missing"
 * after a timeout. */
static symheap_result_t join_misclaim(local_t *l, int fd, int lfd,
                                      const hello_t *hello, int verdict,
                                      int joined) {
  symheap_result_t r = symheap__error(
      SYMHEAP_ERR_MISMATCH,
      "a process of this job claims rank %d of %d, but the job has %d "
      "ranks%s: check how the ranks were launched (rank and size)",
      hello->rank, hello->nranks, l->nranks,
      verdict == MSG_HELLO_DUPLICATE ? " and that rank has joined already"
                                     : "");
  abort_t a = abort_of(0, SYMHEAP_ERR_MISMATCH);
  (void)send_msg(fd, MSG_ABORT, 0, &a, sizeof a, symheap__now_ms() + 100,
                 hello->rank);
  close(fd);
  root_abort_all(l, 0, r);
  tell_late_joiners(l, lfd, l->nranks - joined);
  return r;
}

static symheap_result_t root_join(local_t *l, const symheap__uid_t *uid,
                                  int64_t deadline) {
  symheap__sockname_t name;
  uid_sockname(uid, &name);
  int lfd;
  symheap_result_t r = l->where.tcp
                           ? symheap__boot_tcp_listen(uid, &l->where, &lfd)
                           : symheap__sock_listen(&name, &lfd);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "rank 0 cannot open the bootstrap socket");
  char from[SYMHEAP__TCP_ADDR_MAX];
  /* Connections say hello side by side (hellos.h): strangers that say
   * nothing cannot hold up the ranks that connect behind them. */
  symheap__hellos_t *hs = malloc(sizeof *hs);
  if (!hs) {
    close(lfd);
    if (!l->where.tcp)
      symheap__sock_unlink(&name);
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "bootstrap: no memory");
  }
  symheap__hellos_init(hs, &l->where, lfd);
  for (int joined = 1; joined < l->nranks && r == SYMHEAP_SUCCESS;) {
    int fd;
    hello_t hello;
    unsigned char body[sizeof(hello_t)];
    r = symheap__hellos_next(hs, deadline, &fd, body, from, sizeof from);
    if (r != SYMHEAP_SUCCESS) {
      join_accept_failed(l, r, joined);
      break;
    }
    int verdict = join_hello(l, body, &hello);
    if (verdict == MSG_HELLO_BAD) {
      /* A stranger, or a process of another job: refused, and the join
       * goes on without it. */
      symheap__hellos_refused(from);
      close(fd);
    } else if (verdict != MSG_HELLO_OK) {
      symheap__hellos_close(hs); /* their ranks hear of it as lost */
      r = join_misclaim(l, fd, lfd, &hello, verdict, joined);
    } else {
      l->fds[hello.rank] = fd;
      joined++;
    }
  }
  symheap__hellos_close(hs);
  free(hs);
  for (int i = 1; i < l->nranks && r == SYMHEAP_SUCCESS; i++) {
    r = send_msg(l->fds[i], MSG_WELCOME, 0, NULL, 0, deadline, i);
    if (r != SYMHEAP_SUCCESS)
      root_abort_all(l, i, r);
  }
  close(lfd);
  if (!l->where.tcp)
    symheap__sock_unlink(&name);
  return r;
}

static symheap_result_t peer_join(local_t *l, const symheap__uid_t *uid,
                                  int64_t deadline) {
  symheap__sockname_t name;
  uid_sockname(uid, &name);
  symheap_result_t r =
      l->where.tcp
          ? symheap__boot_tcp_connect(uid, &l->where, deadline, &l->fds[0])
          : symheap__sock_connect(&name, deadline, 0, &l->fds[0]);
  if (r != SYMHEAP_SUCCESS)
    return r;
  hello_t hello;
  memcpy(hello.token, l->token, sizeof hello.token);
  hello.rank = l->rank;
  hello.nranks = l->nranks;
  r = send_msg(l->fds[0], MSG_HELLO, 0, &hello, sizeof hello, deadline, 0);
  if (r != SYMHEAP_SUCCESS)
    return r;
  msg_hdr_t h;
  r = recv_hdr(l->fds[0], &h, deadline + GRACE_MS, 0);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "waiting for every rank to join");
  if (h.type == MSG_ABORT)
    return take_abort(l, &h, deadline + GRACE_MS);
  if (h.type != MSG_WELCOME || h.len != 0)
    return symheap__error(SYMHEAP_ERR_REMOTE,
                          "unexpected bootstrap message %u from rank 0",
                          h.type);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__local_ccl_create(const symheap__uid_t *uid,
                                           int nranks, int rank, int timeout_ms,
                                           void **ctx) {
  local_t *l = calloc(1, sizeof *l);
  int *fds = calloc((size_t)nranks, sizeof(int));
  if (!l || !fds) {
    free(l);
    free(fds);
    return symheap__error(SYMHEAP_ERR_NO_MEMORY, "bootstrap: out of memory");
  }
  l->rank = rank;
  l->nranks = nranks;
  l->fds = fds;
  for (int i = 0; i < nranks; i++)
    l->fds[i] = -1;
  memcpy(l->token, uid->token, sizeof l->token);
  l->where.tcp = uid->abstract == SYMHEAP__UID_TCP;
  int64_t deadline = symheap__now_ms() + timeout_ms;
  symheap_result_t r = SYMHEAP_SUCCESS;
  /* Alone, this rank needs no listener: drop one its id came with. */
  int unused =
      nranks == 1 && l->where.tcp ? symheap__uid_take_listener(uid->token) : -1;
  if (unused >= 0)
    close(unused);
  if (nranks > 1)
    r = rank == 0 ? root_join(l, uid, deadline) : peer_join(l, uid, deadline);
  if (r != SYMHEAP_SUCCESS) {
    local_free(l);
    return r;
  }
  *ctx = l;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__local_ccl_new_uid(void *ctx,
                                            symheap_unique_id_t *id) {
  local_t *l = ctx;
  if (l->where.tcp)
    return symheap__uid_make_tcp(l->where.ip[0] ? l->where.ip : NULL, 0, id);
  return symheap__uid_make_unix(id);
}

static int local_rank(void *ctx) { return ((local_t *)ctx)->rank; }
static int local_size(void *ctx) { return ((local_t *)ctx)->nranks; }

/* A peer that gave up on a collective (timed out, lost rank 0) tells rank 0
 * before it goes: rank 0, if it was the late one, must fail that
 * collective too, not complete it. */
static void peer_give_up(local_t *l) {
  abort_t a = abort_of(l->rank, SYMHEAP_ERR_REMOTE);
  SYMHEAP__KEEP_ERROR((void)send_msg(l->fds[0], MSG_ABORT, l->seq, &a, sizeof a,
                                     symheap__now_ms() + 100, 0));
}

/* Rank 0 read an ABORT where a peer's message should be: that peer gave up
 * on collective h->seq. */
static symheap_result_t peer_gave_up(local_t *l, int r, const msg_hdr_t *h,
                                     int64_t deadline) {
  abort_t a;
  memset(&a, 0, sizeof a);
  if (h->len != sizeof a || symheap__sock_recv(l->fds[r], &a, sizeof a, NULL,
                                               deadline, r) != SYMHEAP_SUCCESS)
    return symheap__error(SYMHEAP_ERR_REMOTE,
                          "rank %d gave up on collective "
                          "#%u and said nothing more",
                          r, h->seq);
  a.msg[sizeof a.msg - 1] = '\0';
  return symheap__error(SYMHEAP_ERR_REMOTE,
                        "rank %d gave up on collective #%u%s (this rank "
                        "arrived late, or was stopped): %s",
                        r, h->seq, h->seq == l->seq ? ", this one" : "", a.msg);
}

/* After every peer's part arrived and before the result goes out: a peer
 * that has since given up has said so (its only possible message now). */
static symheap_result_t root_check_give_ups(local_t *l, int64_t deadline) {
  for (int r = 1; r < l->nranks; r++) {
    struct pollfd pf = {l->fds[r], POLLIN, 0};
    if (poll(&pf, 1, 0) <= 0)
      continue;
    msg_hdr_t h;
    symheap_result_t res = recv_hdr(l->fds[r], &h, deadline, r);
    if (res == SYMHEAP_SUCCESS)
      res = h.type == MSG_ABORT
                ? peer_gave_up(l, r, &h, deadline)
                : symheap__error(SYMHEAP_ERR_REMOTE,
                                 "rank %d is out of step: sent message %u seq "
                                 "%u before collective #%u was done",
                                 r, h.type, h.seq, l->seq);
    root_abort_all(l, r, res);
    return res;
  }
  return SYMHEAP_SUCCESS;
}

static symheap_result_t root_allgather(local_t *l, const void *in, char *out,
                                       size_t bytes, int64_t deadline) {
  for (int r = 1; r < l->nranks; r++) {
    msg_hdr_t h;
    symheap_result_t res = recv_hdr(l->fds[r], &h, deadline, r);
    if (res == SYMHEAP_SUCCESS && h.type == MSG_ABORT)
      res = peer_gave_up(l, r, &h, deadline);
    else if (res == SYMHEAP_SUCCESS &&
             (h.type != MSG_GATHER || h.seq != l->seq || h.len != bytes))
      res = symheap__error(SYMHEAP_ERR_REMOTE,
                           "rank %d is out of step: sent message %u seq %u "
                           "len %u, expected gather seq %u len %zu",
                           r, h.type, h.seq, h.len, l->seq, bytes);
    if (res == SYMHEAP_SUCCESS && bytes)
      res = symheap__sock_recv(l->fds[r], out + (size_t)r * bytes, bytes, NULL,
                               deadline, r);
    if (res != SYMHEAP_SUCCESS) {
      root_abort_all(l, r, res);
      return res;
    }
  }
  symheap_result_t given_up = root_check_give_ups(l, deadline);
  if (given_up != SYMHEAP_SUCCESS)
    return given_up;
  memcpy(out, in, bytes);
  size_t total = bytes * (size_t)l->nranks;
  for (int r = 1; r < l->nranks; r++) {
    symheap_result_t res = send_msg(l->fds[r], MSG_RESULT, l->seq, out,
                                    (uint32_t)total, deadline, r);
    if (res != SYMHEAP_SUCCESS) {
      root_abort_all(l, r, res);
      return res;
    }
  }
  return SYMHEAP_SUCCESS;
}

static symheap_result_t peer_allgather(local_t *l, const void *in, char *out,
                                       size_t bytes, int64_t deadline) {
  /* Rank 0 may have given up on this collective while this rank was away:
   * its abort is waiting, and says why (before a send to a closed socket
   * could only say "lost connection"). */
  symheap_result_t r = pending_abort(l, deadline);
  if (r == SYMHEAP_SUCCESS)
    r = send_msg(l->fds[0], MSG_GATHER, l->seq, in, (uint32_t)bytes, deadline,
                 0);
  if (r != SYMHEAP_SUCCESS)
    return r;
  msg_hdr_t h;
  r = recv_hdr(l->fds[0], &h, deadline + GRACE_MS, 0);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (h.type == MSG_ABORT)
    return take_abort(l, &h, deadline + GRACE_MS);
  size_t total = bytes * (size_t)l->nranks;
  if (h.type != MSG_RESULT || h.seq != l->seq || h.len != total)
    return symheap__error(SYMHEAP_ERR_REMOTE,
                          "rank 0 is out of step: sent message %u seq %u len "
                          "%u, expected result seq %u len %zu",
                          h.type, h.seq, h.len, l->seq, total);
  return symheap__sock_recv(l->fds[0], out, total, NULL, deadline + GRACE_MS,
                            0);
}

static symheap_result_t local_allgather(void *ctx, const void *in, void *out,
                                        size_t bytes, int timeout_ms) {
  local_t *l = ctx;
  if (bytes > MSG_MAX_LEN / (size_t)l->nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "bootstrap allgather of %zu bytes per rank is too "
                          "large",
                          bytes);
  l->seq++;
  int64_t deadline = symheap__now_ms() + timeout_ms;
  if (l->nranks == 1) {
    memcpy(out, in, bytes);
    return SYMHEAP_SUCCESS;
  }
  if (l->rank == 0)
    return root_allgather(l, in, out, bytes, deadline);
  symheap_result_t r = peer_allgather(l, in, out, bytes, deadline);
  if (r != SYMHEAP_SUCCESS)
    peer_give_up(l);
  return r;
}

static void local_fini(void *ctx) { local_free(ctx); }

const symheap_ccl_ops symheap__local_ccl_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_ccl_ops),
    .name = "local",
    .rank = local_rank,
    .size = local_size,
    .allgather = local_allgather,
    .barrier = NULL,
    .fini = local_fini,
};

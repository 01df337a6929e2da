/* Agreement: after every fallible step, every rank learns every rank's
 * status, so no rank can go on in a state its peers gave up on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"

_Static_assert(sizeof(symheap_shareable_t) >= sizeof(uint64_t),
               "agree_equal keeps its values in the handle scratch");

/* Every record names the call it belongs to (op: a hash of the public
 * function's name, which fn spells out for the message; len: the payload's
 * length; seq: which call of this rank; digest: arguments the call wants
 * equal everywhere), so two different calls never pair, whatever the
 * channel: shared memory would otherwise read a record another call wrote,
 * and the ccl would carry it if the lengths happened to match. */
typedef struct {
  uint32_t op, len;
  uint64_t seq, digest;
  char fn[40];
} call_id_t;
typedef struct {
  int32_t code;
  int32_t caused_by_peer;
  call_id_t id;
  char msg[248];
} status_rec_t;
_Static_assert(sizeof(status_rec_t) + SYMHEAP__AGREE_MAX == SYMHEAP__AGREE_REC,
               "agreement record size");

static symheap_result_t agree_via(symheap_comm_t c, int shm,
                                  symheap_result_t local, int caused_by_peer,
                                  const void *payload, size_t len, void *all);

symheap_result_t symheap__agree(symheap_comm_t c, symheap_result_t local,
                                int caused_by_peer, const void *payload,
                                size_t len, void *all) {
  return agree_via(c, 0, local, caused_by_peer, payload, len, all);
}

symheap_result_t symheap__agree_fast(symheap_comm_t c, symheap_result_t local,
                                     const void *payload, size_t len,
                                     void *all) {
  return agree_via(c, c->agree_shm != NULL, local, 0, payload, len, all);
}

static uint32_t op_of(const char *fn) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *fn; fn++)
    h = (h ^ (unsigned char)*fn) * 16777619u;
  return h;
}

/* This rank's record of the call in progress (comm init when none). */
static void call_id(symheap_comm_t c, size_t len, call_id_t *id) {
  const char *fn = c->call_fn ? c->call_fn : "symheap_comm_init";
  if (!c->call_counted) {
    c->call_counted = 1;
    c->call_seq++;
  }
  id->op = op_of(fn);
  id->len = (uint32_t)len;
  id->seq = c->call_seq;
  id->digest = c->call_digest;
  snprintf(id->fn, sizeof id->fn, "%s", fn);
}

static int same_call(const call_id_t *a, const call_id_t *b) {
  return a->op == b->op && a->len == b->len && a->seq == b->seq &&
         a->digest == b->digest;
}

static void describe(char *out, size_t n, const call_id_t *id) {
  char fn[sizeof id->fn];
  memcpy(fn, id->fn, sizeof fn);
  fn[sizeof fn - 1] = '\0';
  snprintf(out, n, "%s (call #%llu)", fn, (unsigned long long)id->seq);
}

/* After the exchange, before anything in it is believed: the first rank
 * whose record is of another call than rank 0's.  Every rank names the
 * same one, and the comm is broken on every rank (their calls no longer
 * pair), so no later call pairs with the wrong one either. */
static symheap_result_t out_of_step(symheap_comm_t c, const char *buf,
                                    size_t rec) {
  status_rec_t s0, sd, me;
  memcpy(&s0, buf, sizeof s0);
  memcpy(&me, buf + rec * (size_t)c->rank, sizeof me);
  int d = 1;
  for (; d < c->nranks; d++) {
    memcpy(&sd, buf + rec * (size_t)d, sizeof sd);
    if (!same_call(&s0.id, &sd.id))
      break;
  }
  if (d == c->nranks)
    return SYMHEAP_SUCCESS;
  char x[80], y[80];
  describe(x, sizeof x, &sd.id);
  symheap_result_t r;
  if (same_call(&me.id, &s0.id)) {
    describe(y, sizeof y, &me.id);
    r = symheap__error(SYMHEAP_ERR_MISMATCH,
                       "rank %d is out of step: it called %s while this rank "
                       "called %s%s",
                       d, x, y,
                       sd.id.op == s0.id.op ? " (with other arguments)" : "");
  } else {
    describe(y, sizeof y, &s0.id);
    r = symheap__error(SYMHEAP_ERR_MISMATCH,
                       "rank %d%s is out of step: it called %s while rank 0 "
                       "called %s%s",
                       d, d == c->rank ? " (this rank)" : "", x, y,
                       sd.id.op == s0.id.op ? " (with other arguments)" : "");
  }
  return symheap__comm_break(c, r);
}

static symheap_result_t agree_via(symheap_comm_t c, int shm,
                                  symheap_result_t local, int caused_by_peer,
                                  const void *payload, size_t len, void *all) {
  /* Over the ccl every record is as long, so records of different calls
   * still meet and are told apart (out_of_step), never refused by length
   * with another message on each channel. */
  size_t rec = shm ? sizeof(status_rec_t) + len : SYMHEAP__AGREE_REC;
  if (len > SYMHEAP__AGREE_MAX)
    return symheap__error(SYMHEAP_ERR_INTERNAL,
                          "agreement payload of %zu bytes (at most %d)", len,
                          SYMHEAP__AGREE_MAX);
  /* The comm's own buffer: an agreement never needs memory, so a rank that
   * ran out still takes its part and fails in step with the others. */
  char *buf = c->agree_buf;
  char *mine = buf + rec * (size_t)c->nranks;
  status_rec_t st;
  memset(&st, 0, sizeof st);
  call_id(c, len, &st.id);
  st.code = (int32_t)local;
  st.caused_by_peer = caused_by_peer;
  if (local != SYMHEAP_SUCCESS)
    snprintf(st.msg, sizeof st.msg, "%s", symheap__error_peek());
  memcpy(mine, &st, sizeof st);
  if (payload && len)
    memcpy(mine + sizeof st, payload, len);
  memset(mine + sizeof st + (payload ? len : 0), 0,
         rec - sizeof st - (payload ? len : 0));
  symheap_result_t r = shm ? symheap__agree_shm_allgather(c, mine, buf, rec)
                           : symheap__comm_allgather(c, mine, buf, rec);
  if (r != SYMHEAP_SUCCESS && local != SYMHEAP_SUCCESS) {
    /* This rank had failed already, and the call's one deadline has often
     * passed by then: a peer still inside its own failing step (started a
     * little later, so its deadline is a little later) is not the cause, so
     * the agreement's complaint comes after this rank's own, not instead. */
    char then[sizeof st.msg];
    snprintf(then, sizeof then, "%s", symheap__error_peek());
    return symheap__error(local, "%s; then, agreeing on it: %s", st.msg, then);
  }
  if (r != SYMHEAP_SUCCESS)
    return r;
  r = out_of_step(c, buf, rec);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* The culprit: the lowest rank whose failure was its own; failing that, the
   * lowest failing rank. */
  int culprit = -1;
  for (int pass = 0; pass < 2 && culprit < 0; pass++)
    for (int p = 0; p < c->nranks && culprit < 0; p++) {
      status_rec_t s;
      memcpy(&s, buf + rec * (size_t)p, sizeof s);
      if (s.code != SYMHEAP_SUCCESS && (pass == 1 || !s.caused_by_peer))
        culprit = p;
    }
  if (culprit < 0) {
    if (len && all)
      for (int p = 0; p < c->nranks; p++)
        memcpy((char *)all + len * (size_t)p,
               buf + rec * (size_t)p + sizeof(status_rec_t), len);
    return SYMHEAP_SUCCESS;
  }
  status_rec_t s;
  memcpy(&s, buf + rec * (size_t)culprit, sizeof s);
  s.msg[sizeof s.msg - 1] = '\0';
  symheap_result_t code = (s.code > 0 && s.code < SYMHEAP_RESULT_COUNT_)
                              ? (symheap_result_t)s.code
                              : SYMHEAP_ERR_REMOTE;
  if (culprit == c->rank)
    return local; /* our own, full message is still the thread's error */
  char self[24];
  snprintf(self, sizeof self, "rank %d ", culprit);
  if (strncmp(s.msg, self, strlen(self)) == 0) /* it names itself */
    return symheap__error(code, "%s", s.msg);
  return symheap__error(code, "rank %d: %s", culprit, s.msg);
}

static symheap_result_t agree_equal(symheap_comm_t c, int fast,
                                    symheap_result_t local, uint64_t value,
                                    int *differ, uint64_t *v0, uint64_t *vp);

symheap_result_t symheap__agree_equal(symheap_comm_t c, symheap_result_t local,
                                      uint64_t value, int *differ, uint64_t *v0,
                                      uint64_t *vp) {
  return agree_equal(c, 0, local, value, differ, v0, vp);
}

symheap_result_t symheap__agree_equal_fast(symheap_comm_t c,
                                           symheap_result_t local,
                                           uint64_t value, int *differ,
                                           uint64_t *v0, uint64_t *vp) {
  return agree_equal(c, 1, local, value, differ, v0, vp);
}

static symheap_result_t agree_equal(symheap_comm_t c, int fast,
                                    symheap_result_t local, uint64_t value,
                                    int *differ, uint64_t *v0, uint64_t *vp) {
  /* Every rank's value, in the comm's scratch (nranks descriptors' room). */
  uint64_t *all = (uint64_t *)(void *)c->scratch_sh;
  symheap_result_t r =
      fast ? symheap__agree_fast(c, local, &value, sizeof value, all)
           : symheap__agree(c, local, 0, &value, sizeof value, all);
  *differ = -1;
  for (int p = 1; p < c->nranks && r == SYMHEAP_SUCCESS && *differ < 0; p++)
    if (all[p] != all[0]) {
      *differ = p;
      *v0 = all[0];
      *vp = all[p];
    }
  return r;
}

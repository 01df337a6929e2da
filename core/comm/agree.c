/* Agreement: after every fallible step, every rank learns every rank's
 * status, so no rank can go on in a state its peers gave up on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"

_Static_assert(sizeof(symheap_shareable_t) >= sizeof(uint64_t),
               "agree_equal keeps its values in the handle scratch");

typedef struct {
  int32_t code;
  int32_t caused_by_peer;
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

static symheap_result_t agree_via(symheap_comm_t c, int shm,
                                  symheap_result_t local, int caused_by_peer,
                                  const void *payload, size_t len, void *all) {
  size_t rec = sizeof(status_rec_t) + len;
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
  st.code = (int32_t)local;
  st.caused_by_peer = caused_by_peer;
  if (local != SYMHEAP_SUCCESS)
    snprintf(st.msg, sizeof st.msg, "%s", symheap__error_peek());
  memcpy(mine, &st, sizeof st);
  if (len) {
    if (payload)
      memcpy(mine + sizeof st, payload, len);
    else
      memset(mine + sizeof st, 0, len);
  }
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

/* Decoders of the local bootstrap's messages (bootstrap_msg.h). */
#include <string.h>

#include "bootstrap_msg.h"

symheap_result_t symheap__msg_parse_hdr(const void *buf, size_t n,
                                        uint32_t max_len, int peer,
                                        msg_hdr_t *out) {
  if (n < sizeof *out)
    return symheap__error(SYMHEAP_ERR_REMOTE,
                          "bootstrap message from rank %d is %zu bytes, "
                          "shorter than a header",
                          peer, n);
  memcpy(out, buf, sizeof *out);
  if (out->magic != MSG_MAGIC || out->version != MSG_VERSION)
    return symheap__error(SYMHEAP_ERR_REMOTE,
                          "bootstrap message from rank %d has a bad magic or "
                          "version (0x%x v%u)",
                          peer, out->magic, out->version);
  if (out->type < MSG_HELLO || out->type > MSG_ABORT)
    return symheap__error(SYMHEAP_ERR_REMOTE,
                          "bootstrap message from rank %d has unknown type %u",
                          peer, out->type);
  if (out->len > max_len)
    return symheap__error(SYMHEAP_ERR_REMOTE,
                          "bootstrap message from rank %d claims %u bytes, "
                          "more than the %u any message may carry",
                          peer, out->len, max_len);
  return SYMHEAP_SUCCESS;
}

int symheap__msg_check_hello(const void *buf, size_t n,
                             const unsigned char token[16], int nranks,
                             hello_t *out, int *rank) {
  memset(out, 0, sizeof *out);
  if (n != sizeof *out)
    return MSG_HELLO_BAD;
  memcpy(out, buf, sizeof *out);
  /* In constant time: between hosts anyone may connect and time the
   * answer, and the token is the job's only secret. */
  unsigned char diff = 0;
  for (size_t i = 0; i < sizeof out->token; i++)
    diff |= (unsigned char)(out->token[i] ^ token[i]);
  if (diff != 0)
    return MSG_HELLO_BAD;
  if (out->nranks != nranks || out->rank <= 0 || out->rank >= nranks)
    return MSG_HELLO_WRONG_RANK;
  *rank = out->rank;
  return MSG_HELLO_OK;
}

symheap_result_t symheap__msg_take_abort(const void *buf, size_t n) {
  abort_t a;
  if (n != sizeof a)
    return symheap__error(SYMHEAP_ERR_REMOTE, "malformed abort from rank 0");
  memcpy(&a, buf, sizeof a);
  a.msg[sizeof a.msg - 1] = '\0';
  symheap_result_t code = (a.code == SYMHEAP_ERR_TIMEOUT) ? SYMHEAP_ERR_TIMEOUT
                                                          : SYMHEAP_ERR_REMOTE;
  return symheap__error(code, "rank %d failed (reported by rank 0): %s", a.rank,
                        a.msg);
}

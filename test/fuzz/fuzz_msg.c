/* libFuzzer target: the bootstrap's message decoders, fed what a stray or a
 * broken peer could send: a header, then a HELLO or ABORT body.  A header
 * that passes must have a known type and a bounded length; nothing may read
 * past the input. */
#include <stdlib.h>
#include <string.h>

#include "boot/bootstrap_msg.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  /* Copies of exactly the claimed size, so ASan sees any overread. */
  size_t hn = size < sizeof(msg_hdr_t) ? size : sizeof(msg_hdr_t);
  unsigned char *hb = malloc(hn ? hn : 1);
  if (!hb)
    return 0;
  memcpy(hb, data, hn);
  msg_hdr_t h;
  symheap_result_t r = symheap__msg_parse_hdr(hb, hn, MSG_MAX_LEN, 1, &h);
  free(hb);
  if (r != SYMHEAP_SUCCESS)
    return 0;
  if (h.type < MSG_HELLO || h.type > MSG_ABORT || h.len > MSG_MAX_LEN)
    abort();
  size_t bn = size - hn;
  unsigned char *body = malloc(bn ? bn : 1);
  if (!body)
    return 0;
  memcpy(body, data + hn, bn);
  static const unsigned char token[16] = "0123456789abcde";
  hello_t hello;
  int rank = -1;
  if (h.type == MSG_HELLO &&
      symheap__msg_check_hello(body, bn, token, 4, &hello, &rank) ==
          MSG_HELLO_OK &&
      (rank <= 0 || rank >= 4 || memcmp(hello.token, token, 16) != 0))
    abort();
  if (h.type == MSG_ABORT) {
    symheap_result_t a = symheap__msg_take_abort(body, bn);
    if (a != SYMHEAP_ERR_REMOTE && a != SYMHEAP_ERR_TIMEOUT)
      abort();
  }
  free(body);
  return 0;
}

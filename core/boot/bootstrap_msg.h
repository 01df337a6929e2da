/* The local bootstrap's wire format, and its decoders.  The decoders are
 * pure (bytes in, verdict out) so that the fuzzer (test/fuzz/) drives the
 * same code that reads the socket. */
#ifndef SYMHEAP_CCL_LOCAL_MSG_H
#define SYMHEAP_CCL_LOCAL_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "base/internal.h"

#define MSG_MAGIC 0x53484d42u /* "SHMB" */
#define MSG_VERSION 1
/* No message is longer: a result carries nranks * bytes <= 16 MiB. */
#define MSG_MAX_LEN (1u << 24)
/* How long a new connection has to say hello before it is dropped. */
#define HELLO_MS 1000
enum { MSG_HELLO = 1, MSG_WELCOME, MSG_GATHER, MSG_RESULT, MSG_ABORT };

typedef struct {
  uint32_t magic;
  uint16_t version;
  uint16_t type;
  uint32_t seq;
  uint32_t len;
} msg_hdr_t;

typedef struct {
  unsigned char token[16];
  int32_t rank;
  int32_t nranks;
} hello_t;

typedef struct {
  int32_t rank; /* the rank that failed */
  int32_t code;
  char msg[240];
} abort_t;

/* A header off the wire: magic, version, a known type and a length of at
 * most max_len, or SYMHEAP_ERR_REMOTE naming `peer` (a rank, or -1). */
symheap_result_t symheap__msg_parse_hdr(const void *buf, size_t n,
                                        uint32_t max_len, int peer,
                                        msg_hdr_t *out);

/* A HELLO body against this job's token and size. */
enum { MSG_HELLO_OK = 0, MSG_HELLO_BAD = 1, MSG_HELLO_WRONG_RANK = 2 };
int symheap__msg_check_hello(const void *buf, size_t n,
                             const unsigned char token[16], int nranks,
                             hello_t *out, int *rank);

/* An ABORT body as this rank's error (REMOTE or TIMEOUT, naming the rank). */
symheap_result_t symheap__msg_take_abort(const void *buf, size_t n);

#endif

/* Rank 0's join, the connections that have not said hello yet
 * (bootstrap.c): they wait side by side, each with its own HELLO_MS, and
 * the first whose hello is whole is handed out.  So strangers that connect
 * and say nothing (or a byte now and then) cost the join their descriptors,
 * not their seconds: served one after the other, each held the join up to
 * HELLO_MS, and 30 silent ones made it miss SYMHEAP_TIMEOUT_MS. */
#ifndef SYMHEAP_BOOT_HELLOS_H
#define SYMHEAP_BOOT_HELLOS_H

#include "bootstrap_msg.h"
#include "bootstrap_tcp.h"

/* Connections waiting at once; a new one beyond them refuses the oldest. */
#define SYMHEAP__HELLOS_MAX 64

typedef struct {
  int fd;
  int64_t until; /* refused at this time unless its hello is whole */
  size_t got;
  unsigned char buf[sizeof(msg_hdr_t) + sizeof(hello_t)];
  char from[SYMHEAP__TCP_ADDR_MAX];
} symheap__hello_conn_t;

typedef struct {
  const symheap__boot_where_t *where;
  int lfd, n;
  symheap__hello_conn_t c[SYMHEAP__HELLOS_MAX];
} symheap__hellos_t;

void symheap__hellos_init(symheap__hellos_t *h, const symheap__boot_where_t *w,
                          int lfd);
/* The next connection whose hello (a HELLO header and its body) arrived
 * whole: its descriptor, the body and its address.  Connections that send
 * anything else, close, or stay silent for HELLO_MS are refused and logged
 * with their address on the way.  TIMEOUT at deadline; another error when
 * accept fails (out of descriptors). */
symheap_result_t symheap__hellos_next(symheap__hellos_t *h, int64_t deadline,
                                      int *fd,
                                      unsigned char body[sizeof(hello_t)],
                                      char *from, size_t len);
/* The connections still waiting, refused (logged) and closed. */
void symheap__hellos_close(symheap__hellos_t *h);
/* The WARN line of a connection refused for not proving the secret. */
void symheap__hellos_refused(const char *from);

#endif

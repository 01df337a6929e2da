/* The bootstrap's TCP side (ranks on several hosts): rank 0's listener,
 * the peers' connection, and an accept for either kind of socket. */
#ifndef SYMHEAP_BOOTSTRAP_TCP_H
#define SYMHEAP_BOOTSTRAP_TCP_H

#include "sock_tcp.h"
#include "uid.h"

/* The line rank 0 writes to its stdout under SYMHEAP_RUN_ROOT_REPORT=1,
 * followed by its address: symheap-run takes it out of the output. */
#define SYMHEAP__ROOT_REPORT "@@symheap-run-root@@ "

typedef struct {
  int tcp;                        /* 0: Unix sockets on one host */
  char ip[SYMHEAP__TCP_ADDR_MAX]; /* TCP: this rank's address toward the job */
} symheap__boot_where_t;

/* Rank 0's listener for a TCP id: the one this process made with the id,
 * else one on the id's address, else (a launcher's id) one on this host's
 * address, reported on stdout. */
symheap_result_t symheap__boot_tcp_listen(const symheap__uid_t *uid,
                                          symheap__boot_where_t *w, int *lfd);
symheap_result_t symheap__boot_tcp_connect(const symheap__uid_t *uid,
                                           symheap__boot_where_t *w,
                                           int64_t deadline_ms, int *fd);
/* One connection: TCP names its address in `from`; Unix takes only this
 * user's processes (SO_PEERCRED) and says "a local process". */
symheap_result_t symheap__boot_accept(const symheap__boot_where_t *w, int lfd,
                                      int64_t deadline_ms, int *fd, char *from,
                                      size_t len);

#endif

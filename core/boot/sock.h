/* Unix-socket plumbing shared by the local bootstrap and the descriptor
 * exchange: naming (abstract or filesystem), connect with retry, and sends
 * and receives bounded by an absolute deadline.  Every failure sets the last
 * error with the peer named by `peer` (a rank, or -1). */
#ifndef SYMHEAP_SOCK_H
#define SYMHEAP_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include "base/internal.h"
#include "idle.h"

/* A socket name: abstract (no filesystem entry) or a path. */
typedef struct {
  int abstract;
  char name[100];
} symheap__sockname_t;

symheap_result_t symheap__sock_listen(const symheap__sockname_t *n, int *fd);
/* Retries while the listener is not there yet, until the deadline. */
symheap_result_t symheap__sock_connect(const symheap__sockname_t *n,
                                       int64_t deadline_ms, int peer, int *fd);
/* Accept one connection of this user (SO_PEERCRED) before the deadline;
 * other users' connections are dropped. */
symheap_result_t symheap__sock_accept(int lfd, int64_t deadline_ms, int *fd);
/* Send all of buf; attach send_fd (if >= 0) to the first byte. */
symheap_result_t symheap__sock_send(int fd, const void *buf, size_t len,
                                    int send_fd, int64_t deadline_ms, int peer);
/* Receive exactly len bytes; a descriptor that arrives with them goes to
 * *recv_fd (which must then be non-NULL; -1 if none came, -2 if one was
 * sent but the kernel dropped it: this process is out of descriptors). */
symheap_result_t symheap__sock_recv(int fd, void *buf, size_t len, int *recv_fd,
                                    int64_t deadline_ms, int peer);
void symheap__sock_unlink(const symheap__sockname_t *n);
void symheap__hex(const unsigned char *in, size_t n, char *out);

/* EMFILE/ENFILE from `call` as an error that names the limit, its value
 * and what symheap holds descriptors for. */
symheap_result_t symheap__fd_limit_error(const char *call);

/* Until fd has events (1), the deadline passed (0) or poll failed (-1).
 * Every socket wait takes a turn of the waits' idle hook (idle.h) before
 * each poll and sleeps on the descriptors it hands out beside its socket. */
int symheap__sock_wait(int fd, short events, int64_t deadline_ms);

#endif

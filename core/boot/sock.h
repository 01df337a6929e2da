/* Unix-socket plumbing shared by the local bootstrap and the descriptor
 * exchange: naming (abstract or filesystem), connect with retry, and sends
 * and receives bounded by an absolute deadline.  Every failure sets the last
 * error with the peer named by `peer` (a rank, or -1). */
#ifndef SYMHEAP_SOCK_H
#define SYMHEAP_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include "base/internal.h"

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

/* The idle hook every socket wait calls before each poll: a higher floor's
 * work that must go on while a rank waits (comm/net_comm.c: net adaptors
 * with manual progress).  The wait says whether its last sleep ended on
 * one of the hook's descriptors (the engine has work); the
 * hook may hand out descriptors (armed: an engine's wait objects) that the
 * wait's sleep also polls, at most SYMHEAP__IDLE_SLEEP_MS at a time (a
 * provider may lose a wakeup).  Nonzero from it: poll without sleeping
 * (the CPU yielded now and then) and call it again.  Set once per process
 * (later calls replace it). */
#define SYMHEAP__IDLE_FDS 8
#define SYMHEAP__IDLE_SLEEP_MS 20
typedef struct {
  int woke;                   /* in: its last sleep ended on one of fds */
  int nfds;                   /* out: how many of fds to poll */
  int fds[SYMHEAP__IDLE_FDS]; /* out: readable when the hook has work */
} symheap__idle_t;
void symheap__sock_set_idle_hook(int (*hook)(symheap__idle_t *io));

#endif

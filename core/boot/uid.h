/* The unique id: what every rank of a job needs to find the others. */
#ifndef SYMHEAP_UID_H
#define SYMHEAP_UID_H

#include "sock.h"

#define SYMHEAP__UID_MAGIC "SYMHEAP1"
#define SYMHEAP__UID_VERSION 1u

typedef struct {
  char magic[8];
  uint32_t version;
  uint32_t abstract;       /* 0: a path, 1: abstract, SYMHEAP__UID_TCP */
  unsigned char token[16]; /* random (getrandom): the job's secret, which
                              every connection to rank 0 proves first */
  char name[96];           /* rank 0's listening socket; TCP: "ip:port",
                              or SYMHEAP__UID_DEFERRED */
} symheap__uid_t;

/* A TCP id: rank 0 listens on name's address. */
#define SYMHEAP__UID_TCP 2u
/* A TCP id made by a launcher (symheap-run --hosts): no address yet; rank 0
 * chooses one when it joins and reports it (SYMHEAP_RUN_ROOT_REPORT). */
#define SYMHEAP__UID_DEFERRED "?"

_Static_assert(sizeof(symheap__uid_t) <= sizeof(symheap_unique_id_t),
               "unique id layout must fit the public id");

/* A new id: a fresh token, and where rank 0 will listen. */
symheap_result_t symheap__uid_make(symheap_unique_id_t *id);
/* Decode and validate a public id. */
symheap_result_t symheap__uid_decode(const symheap_unique_id_t *id,
                                     symheap__uid_t *out);
/* 256 hex digits <-> id, for the environment. */
void symheap__uid_to_hex(const symheap_unique_id_t *id, char out[257]);
symheap_result_t symheap__uid_from_hex(const char *hex,
                                       symheap_unique_id_t *id);
/* Where sockets go: from SYMHEAP_IPC_SOCKET.  dir is "" for abstract. */
symheap_result_t symheap__ipc_socket_mode(int *abstract, const char **dir);
/* A Unix-socket id (one host), whatever SYMHEAP_BOOTSTRAP says. */
symheap_result_t symheap__uid_make_unix(symheap_unique_id_t *id);
/* uid_tcp.c: a TCP id, its listener made here and kept for this process's
 * rank 0 (ip NULL: SYMHEAP_SOCKET_IFNAME's interface), or with deferred, an
 * id that carries only the secret. */
symheap_result_t symheap__uid_make_tcp(const char *ip, int deferred,
                                       symheap_unique_id_t *id);
/* The listener this process made for the id with this token, taken (-1:
 * none). */
int symheap__uid_take_listener(const unsigned char token[16]);
/* An id this process made but will not use: its listener goes. */
void symheap__uid_release(const symheap_unique_id_t *id);
/* Fill 16 random bytes. */
symheap_result_t symheap__random(unsigned char *buf, size_t len);

#endif

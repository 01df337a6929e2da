/* The unique id: what every rank of a job needs to find the others. */
#ifndef SYMHEAP_UID_H
#define SYMHEAP_UID_H

#include "sock.h"

#define SYMHEAP__UID_MAGIC "SYMHEAP1"
#define SYMHEAP__UID_VERSION 1u

typedef struct {
  char magic[8];
  uint32_t version;
  uint32_t abstract;
  unsigned char token[16]; /* random; every bootstrap message proves it */
  char name[96];           /* rank 0's listening socket */
} symheap__uid_t;

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
/* Fill 16 random bytes. */
symheap_result_t symheap__random(unsigned char *buf, size_t len);

#endif

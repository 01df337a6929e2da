/* The legacy-IPC bookkeeping GPU adaptors share (cuda.c, hip.c): every
 * pointer ipc_open handed out, which peer allocation it came from, and
 * whether the runtime opened it (another process's memory: closed when the
 * last pointer into it goes) or not (a thread-rank's own pointer).
 * Adaptor-private: a vendor copying cuda.c or hip.c takes this file too. */
#ifndef SYMHEAP_ADAPTOR_IPC_TABLE_H
#define SYMHEAP_ADAPTOR_IPC_TABLE_H

#include <stdint.h>

#include "symheap_adaptor.h"

typedef struct symheap_ipc_rec {
  struct symheap_ipc_rec *next;
  char *ptr;            /* what ipc_open returned */
  uint64_t local_base;  /* the allocation as mapped here */
  int32_t pid;          /* owner process */
  uint64_t remote_base; /* the allocation in the owner */
  int opened;           /* opened by the runtime: must be closed */
} symheap_ipc_rec_t;

/* The local base of an earlier open of (pid, remote_base), or 0: one open
 * of an allocation serves every window over it. */
uint64_t symheap_ipc_table_opened_base(const symheap_ipc_rec_t *list,
                                       int32_t pid, uint64_t remote_base);
/* Record what ipc_open hands out (NO_MEMORY: nothing recorded). */
symheap_result_t symheap_ipc_table_add(const symheap_host_services_t *svc,
                                       symheap_ipc_rec_t **list, int32_t pid,
                                       uint64_t remote_base,
                                       uint64_t local_base, int opened,
                                       char *ptr);
/* ipc_close: take ptr's record out.  *close_base is the base the runtime
 * must close now (its last user went), or 0.  INVALID_ARG naming `who` when
 * ptr was not handed out here. */
symheap_result_t symheap_ipc_table_take(const symheap_host_services_t *svc,
                                        symheap_ipc_rec_t **list, void *ptr,
                                        uint64_t *close_base, const char *who);
/* fini: empty the table, calling close_fn once per opened base. */
void symheap_ipc_table_drain(symheap_ipc_rec_t **list,
                             void (*close_fn)(uint64_t base, void *arg),
                             void *arg);

#endif

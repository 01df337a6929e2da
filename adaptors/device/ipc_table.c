/* Legacy-IPC bookkeeping shared by the GPU adaptors (ipc_table.h). */
#include <stdlib.h>

#include "ipc_table.h"

uint64_t symheap_ipc_table_opened_base(const symheap_ipc_rec_t *list,
                                       int32_t pid, uint64_t remote_base) {
  for (const symheap_ipc_rec_t *e = list; e; e = e->next)
    if (e->opened && e->pid == pid && e->remote_base == remote_base)
      return e->local_base;
  return 0;
}

symheap_result_t symheap_ipc_table_add(const symheap_host_services_t *svc,
                                       symheap_ipc_rec_t **list, int32_t pid,
                                       uint64_t remote_base,
                                       uint64_t local_base, int opened,
                                       char *ptr) {
  symheap_ipc_rec_t *rec = calloc(1, sizeof *rec);
  if (!rec)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "ipc: out of memory");
  rec->pid = pid;
  rec->remote_base = remote_base;
  rec->local_base = local_base;
  rec->opened = opened;
  rec->ptr = ptr;
  rec->next = *list;
  *list = rec;
  return SYMHEAP_SUCCESS;
}

static int shared(const symheap_ipc_rec_t *list, uint64_t base) {
  for (const symheap_ipc_rec_t *e = list; e; e = e->next)
    if (e->opened && e->local_base == base)
      return 1;
  return 0;
}

symheap_result_t symheap_ipc_table_take(const symheap_host_services_t *svc,
                                        symheap_ipc_rec_t **list, void *ptr,
                                        uint64_t *close_base, const char *who) {
  symheap_ipc_rec_t **pp = list;
  while (*pp && (*pp)->ptr != ptr)
    pp = &(*pp)->next;
  if (!*pp)
    return svc->error(SYMHEAP_ERR_INVALID_ARG, "%s ipc: %p was not opened here",
                      who, ptr);
  symheap_ipc_rec_t *rec = *pp;
  *pp = rec->next;
  *close_base =
      rec->opened && !shared(*list, rec->local_base) ? rec->local_base : 0;
  free(rec);
  return SYMHEAP_SUCCESS;
}

void symheap_ipc_table_drain(symheap_ipc_rec_t **list,
                             void (*close_fn)(uint64_t base, void *arg),
                             void *arg) {
  while (*list) {
    symheap_ipc_rec_t *rec = *list;
    *list = rec->next;
    if (rec->opened && !shared(*list, rec->local_base))
      close_fn(rec->local_base, arg);
    free(rec);
  }
}

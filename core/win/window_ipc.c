/* The asymmetric fallback: memory that is not VMM memory (plain cudaMalloc)
 * cannot join a flat range, so each rank opens every peer's legacy IPC
 * handle and the window carries per-peer pointers. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/exchange.h"
#include "window.h"

symheap_result_t symheap__map_ipc(symheap_comm_t c, struct symheap_window *w) {
  const symheap_device_ops *ops = &c->dev.ops;
  symheap_shareable_t mine;
  memset(&mine, 0, sizeof mine);
  mine.fd = -1;
  symheap_shareable_t *all = calloc((size_t)c->nranks, sizeof *all);
  symheap_result_t r =
      all ? ops->ipc_get(c->dev_ctx, w->user_ptr, w->size, &mine)
          : symheap__error(SYMHEAP_ERR_NO_MEMORY, "register: no memory");
  /* Every rank reached this point with the same adaptor, so the kind that
   * ipc_get chose is the same everywhere; a rank that failed sends nothing. */
  uint32_t kind = r == SYMHEAP_SUCCESS ? mine.kind : SYMHEAP_HANDLE_NONE;
  uint32_t *kinds = calloc((size_t)c->nranks, sizeof *kinds);
  if (!kinds && r == SYMHEAP_SUCCESS)
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "register: no memory");
  r = symheap__agree(c, r, 0, &kind, sizeof kind, kinds); /* all may be NULL */
  if (r == SYMHEAP_SUCCESS)
    for (int p = 1; p < c->nranks; p++)
      if (kinds[p] != kinds[0])
        r = symheap__error(SYMHEAP_ERR_MISMATCH,
                           "ranks export IPC handles of different kinds");
  free(kinds);
  if (r != SYMHEAP_SUCCESS) {
    if (mine.kind == SYMHEAP_HANDLE_FD && mine.fd >= 0)
      close(mine.fd);
    free(all);
    return r;
  }
  r = symheap__exchange_handles(c, r, &mine, kind, 0, all);
  if (r == SYMHEAP_SUCCESS) {
    for (int p = 0; p < c->nranks; p++) {
      if (p == c->rank) {
        w->peer[p] = w->user_ptr;
        continue;
      }
      if (!c->reach[p]) /* another host: nothing was sent */
        continue;
      symheap_result_t ro = SYMHEAP_SUCCESS;
      if (r == SYMHEAP_SUCCESS)
        ro = ops->ipc_open(c->dev_ctx, &all[p], &w->peer[p]);
      else if (all[p].kind == SYMHEAP_HANDLE_FD && all[p].fd >= 0)
        close(all[p].fd);
      all[p].fd = -1;
      if (ro != SYMHEAP_SUCCESS) {
        w->peer[p] = NULL;
        r = symheap__error_context(ro, "opening rank %d's IPC handle", p);
      }
    }
    r = symheap__agree(c, r, 0, NULL, 0, NULL);
    if (r != SYMHEAP_SUCCESS)
      for (int p = 0; p < c->nranks; p++)
        if (p != c->rank && w->peer[p]) {
          (void)ops->ipc_close(c->dev_ctx, w->peer[p]);
          w->peer[p] = NULL;
        }
  }
  free(all);
  return r;
}

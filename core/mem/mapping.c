/* Flat mappings: every rank's memory mapped into one reservation, rank p's
 * at base + p * stride.  Registrations' mappings (owned by mapping objects,
 * mapobj.c) and the heap's chunks (heap.c) are all built and unmapped here,
 * in named phases:
 * export, exchange, import, map, set access, release the imports, agree. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "comm/exchange.h"
#include "mapping.h"

symheap_result_t symheap__unmap_peers(symheap_comm_t c, char *base,
                                      size_t stride, size_t len, int mapped) {
  symheap_result_t first = SYMHEAP_SUCCESS;
  for (int p = 0; p < mapped; p++) {
    if (!c->reach[p]) /* another host's place: reserved, never mapped */
      continue;
    symheap_result_t r =
        c->dev.ops.unmap(c->dev_ctx, base + (size_t)p * stride, len);
    if (r != SYMHEAP_SUCCESS && first == SYMHEAP_SUCCESS)
      first = r;
    c->stats.bytes_mapped -= len;
    c->mapped_from[p] -= len;
  }
  return first;
}

/* Export phase.  A descriptor of a symheap allocation is exported once and
 * kept (closed when the memory is freed); each registration sends a
 * duplicate. */
static symheap_result_t export_local(symheap_comm_t c, symheap__alloc_t *a,
                                     symheap_mem_handle_t local, uint32_t kind,
                                     symheap_shareable_t *out) {
  if (!a || kind != SYMHEAP_HANDLE_FD)
    return c->dev.ops.mem_export(c->dev_ctx, local, kind, out);
  if (a->export_fd < 0) {
    symheap_shareable_t first;
    symheap_result_t r = c->dev.ops.mem_export(c->dev_ctx, local, kind, &first);
    if (r != SYMHEAP_SUCCESS)
      return r;
    a->export_fd = first.fd;
    c->stats.descriptors_held++;
  }
  int fd = fcntl(a->export_fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    return symheap__error(SYMHEAP_ERR_SYSTEM,
                          "dup of an exported descriptor: %s", strerror(errno));
  memset(out, 0, sizeof *out);
  out->kind = SYMHEAP_HANDLE_FD;
  out->fd = fd;
  return SYMHEAP_SUCCESS;
}

/* Import phase: every reachable peer's handle; imp[p] is set for each. */
static symheap_result_t import_peers(symheap_comm_t c, symheap_shareable_t *all,
                                     symheap_mem_handle_t *imp) {
  symheap_result_t r = SYMHEAP_SUCCESS;
  for (int p = 0; p < c->nranks; p++) {
    if (p == c->rank || !c->reach[p])
      continue;
    symheap_result_t ri = c->dev.ops.mem_import(c->dev_ctx, &all[p], &imp[p]);
    all[p].fd = -1; /* the adaptor owns it now, imported or not */
    if (ri != SYMHEAP_SUCCESS && r == SYMHEAP_SUCCESS)
      r = symheap__error_context(ri, "importing rank %d's memory", p);
  }
  return r;
}

/* Map phase: rank p's memory at base + p * stride; *mapped counts the ranks
 * done (another host's place counts as done: it stays a hole). */
static symheap_result_t map_all(symheap_comm_t c, char *base, size_t stride,
                                size_t len, symheap_mem_handle_t local,
                                const symheap_mem_handle_t *imp, size_t map_off,
                                int *mapped) {
  symheap_result_t r = SYMHEAP_SUCCESS;
  for (int p = 0; p < c->nranks && r == SYMHEAP_SUCCESS; p++) {
    if (!c->reach[p]) {
      (*mapped)++;
      continue;
    }
    r = c->dev.ops.map(c->dev_ctx, base + (size_t)p * stride, len,
                       p == c->rank ? local : imp[p], map_off);
    if (r == SYMHEAP_SUCCESS) {
      (*mapped)++;
      c->stats.bytes_mapped += len;
      c->mapped_from[p] += len;
    } else {
      r = symheap__error_context(r, "mapping rank %d's memory", p);
    }
  }
  return r;
}

/* Access phase.  Holes must stay inaccessible (a stray access faults rather
 * than reading nothing), so with a partial team access goes on the team's
 * places one by one. */
static symheap_result_t access_all(symheap_comm_t c, char *base, size_t stride,
                                   size_t len) {
  if (c->local_nranks == c->nranks && len == stride)
    return c->dev.ops.set_access(c->dev_ctx, base, stride * (size_t)c->nranks);
  symheap_result_t r = SYMHEAP_SUCCESS;
  for (int p = 0; p < c->nranks && r == SYMHEAP_SUCCESS; p++)
    if (c->reach[p])
      r = c->dev.ops.set_access(c->dev_ctx, base + (size_t)p * stride, len);
  return r;
}

/* Reserve phase (only when the caller has no reservation yet). */
static symheap_result_t reserve_va(symheap_comm_t c, size_t total,
                                   char **base) {
  void *va = NULL;
  symheap_result_t r = symheap__va_reserve(&c->dev.ops, c->dev_ctx, total,
                                           c->caps.granularity, &va);
  if (r == SYMHEAP_SUCCESS) {
    *base = va;
    c->stats.va_reserved += total;
  }
  return r;
}

symheap_result_t symheap__map_peers(symheap_comm_t c, symheap_result_t pre,
                                    symheap__alloc_t *a,
                                    symheap_mem_handle_t local, char **basep,
                                    size_t reserve, size_t stride, size_t len,
                                    size_t map_off) {
  uint32_t kind = (c->caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD))
                      ? SYMHEAP_HANDLE_FD
                      : SYMHEAP_HANDLE_BYTES;
  symheap_shareable_t mine;
  memset(&mine, 0, sizeof mine);
  mine.fd = -1;
  symheap_shareable_t *all = calloc((size_t)c->nranks, sizeof *all);
  symheap_mem_handle_t *imp = calloc((size_t)c->nranks, sizeof *imp);
  symheap_result_t r = pre;
  if (r == SYMHEAP_SUCCESS && (!all || !imp))
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "mapping: no memory");
  /* Step times, for SYMHEAP_DEBUG=TRACE: where mapping time goes. */
  uint64_t t[7];
  t[0] = symheap__now_ns();
  if (r == SYMHEAP_SUCCESS)
    r = export_local(c, a, local, kind, &mine);
  t[1] = symheap__now_ns();
  if (!all || !imp) { /* still take part in the exchange, failing */
    r = symheap__exchange_handles(c, r, &mine, kind, 0, c->scratch_sh);
    free(all);
    free(imp);
    return r;
  }
  r = symheap__exchange_handles(c, r, &mine, kind, 0, all);
  t[2] = symheap__now_ns();
  if (r != SYMHEAP_SUCCESS)
    goto out;
  r = import_peers(c, all, imp);
  t[3] = symheap__now_ns();
  int mapped = 0;
  char *base = reserve ? NULL : *basep;
  if (r == SYMHEAP_SUCCESS && reserve)
    r = reserve_va(c, reserve, &base);
  if (r == SYMHEAP_SUCCESS)
    r = map_all(c, base, stride, len, local, imp, map_off, &mapped);
  t[4] = symheap__now_ns();
  if (r == SYMHEAP_SUCCESS)
    r = access_all(c, base, stride, len);
  t[5] = symheap__now_ns();
  /* The mappings keep the memory alive; the imported handles can go. */
  for (int p = 0; p < c->nranks; p++)
    if (imp[p])
      (void)c->dev.ops.mem_release(c->dev_ctx, imp[p]);
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  t[6] = symheap__now_ns();
  SYMHEAP_TRACE("map %zu bytes per rank: export %.3f, exchange %.3f, import "
                "%.3f, map %.3f, set_access %.3f, release+agree %.3f ms",
                len, (t[1] - t[0]) / 1e6, (t[2] - t[1]) / 1e6,
                (t[3] - t[2]) / 1e6, (t[4] - t[3]) / 1e6, (t[5] - t[4]) / 1e6,
                (t[6] - t[5]) / 1e6);
  if (r != SYMHEAP_SUCCESS && mapped)
    SYMHEAP__KEEP_ERROR(
        (void)symheap__unmap_peers(c, base, stride, len, mapped));
  if (r != SYMHEAP_SUCCESS && reserve && base) {
    SYMHEAP__KEEP_ERROR((void)c->dev.ops.va_free(c->dev_ctx, base, reserve));
    c->stats.va_reserved -= reserve;
  } else if (r == SYMHEAP_SUCCESS) {
    *basep = base;
  }
out:
  free(all);
  free(imp);
  return r;
}

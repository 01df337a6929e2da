/* Making a comm object: the struct, the agreement on device and hosts that
 * every rank joins with (the node-local team follows), the device adaptor's
 * context.  api/init.c runs these phases, then the subsystems above. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agree.h"
#include "base/config.h"
#include "base/forks.h"
#include "base/plugin.h"
#include "boot/host.h"
#include "boot/uid.h"
#include "comm.h"

/* What each rank says about itself when joining (one agreement payload). */
typedef struct {
  char host_id[SYMHEAP__HOST_ID_MAX]; /* its team: SYMHEAP_HOST_ID or machine */
  char machine[112];
  char device[32];
  unsigned char token[16];
} join_rec_t;
_Static_assert(sizeof(join_rec_t) <= SYMHEAP__AGREE_MAX, "join record size");

/* Phase 1: the struct (comm.h). */
symheap_comm_t symheap__comm_alloc(const symheap_ccl_ops *ops, void *ctx,
                                 int owned, int timeout_ms,
                                 int64_t deadline_ms) {
  symheap_comm_t c = calloc(1, sizeof *c);
  if (!c) {
    if (owned && ops->fini)
      ops->fini(ctx);
    symheap__error(SYMHEAP_ERR_NO_MEMORY, "comm: out of memory");
    return NULL;
  }
  c->magic = SYMHEAP__COMM_LIVE;
  c->ccl = *ops;
  c->ccl_ctx = ctx;
  c->ccl_owned = owned;
  c->rank = ops->rank(ctx);
  c->nranks = ops->size(ctx);
  c->timeout_ms = timeout_ms;
  c->call_deadline_ms = deadline_ms;
  c->pid = getpid();
  c->forks_at_init = symheap__forks_watch();
  c->fdx.rank = c->rank;
  c->fdx.nranks = c->nranks;
  c->stats.struct_size = sizeof c->stats;
  c->world = calloc((size_t)c->nranks, sizeof *c->world);
  c->mapped_from = calloc((size_t)c->nranks, sizeof *c->mapped_from);
  c->reach = calloc((size_t)c->nranks, 1);
  c->host = calloc((size_t)c->nranks, sizeof *c->host);
  c->host_nranks = calloc((size_t)c->nranks, sizeof *c->host_nranks);
  c->fdx.reach = c->reach;
  c->agree_buf = malloc((size_t)(c->nranks + 1) * SYMHEAP__AGREE_REC);
  c->scratch_fds = calloc((size_t)c->nranks, sizeof *c->scratch_fds);
  c->scratch_sh = calloc((size_t)c->nranks, sizeof *c->scratch_sh);
  if (!c->agree_buf || !c->scratch_fds || !c->scratch_sh) {
    /* Without them this rank cannot take part in a single exchange: leave
     * before the first, and the peers see it go. */
    symheap__comm_free(c);
    symheap__error(SYMHEAP_ERR_NO_MEMORY, "comm: out of memory");
    return NULL;
  }
  for (int p = 0; c->world && p < c->nranks; p++)
    c->world[p] = p;
  return c;
}

static symheap_result_t prepare_join(symheap_comm_t c, join_rec_t *me,
                                     char *why, size_t why_len) {
  symheap_result_t r = symheap__cfg_validate_all();
  if (r != SYMHEAP_SUCCESS)
    return r;
  r = symheap__log_configure();
  if (r != SYMHEAP_SUCCESS)
    return r;
  const char *dir;
  r = symheap__ipc_socket_mode(&c->fdx.sock_abstract, &dir);
  if (r != SYMHEAP_SUCCESS)
    return r;
  snprintf(c->fdx.sock_dir, sizeof c->fdx.sock_dir, "%s", dir);
  const char *want;
  if ((r = symheap__plugins_load()) != SYMHEAP_SUCCESS)
    return r;
  /* Again, now that the adaptors and plugins have declared theirs (a
   * process's first init checked only the core's above). */
  if ((r = symheap__cfg_validate_all()) != SYMHEAP_SUCCESS)
    return r;
  r = symheap__cfg_string("SYMHEAP_DEVICE", &want);
  if (r != SYMHEAP_SUCCESS)
    return r;
  r = symheap__device_select(want, &c->dev, why, why_len);
  if (r != SYMHEAP_SUCCESS)
    return r;
  snprintf(me->device, sizeof me->device, "%s", c->dev.ops.name);
  symheap__machine_identity(me->machine, sizeof me->machine);
  r = symheap__host_identity(me->host_id, sizeof me->host_id);
  if (r != SYMHEAP_SUCCESS)
    return r;
  return symheap__random(me->token, sizeof me->token);
}

/* Deterministic over the same records, so every rank reaches the same
 * verdict.  The node-local team is the ranks with this rank's host identity:
 * only they map each other's memory. */
static symheap_result_t check_join(symheap_comm_t c, const join_rec_t *all) {
  c->nhosts = 0;
  for (int p = 0; p < c->nranks; p++) {
    if (strcmp(all[p].device, all[0].device) != 0)
      return symheap__error(SYMHEAP_ERR_MISMATCH,
                            "ranks chose different device adaptors: rank 0 "
                            "'%s', rank %d '%s' (check SYMHEAP_DEVICE)",
                            all[0].device, p, all[p].device);
    int first = 0;
    while (strcmp(all[first].host_id, all[p].host_id) != 0)
      first++;
    c->host[p] = first == p ? c->nhosts : c->host[first];
    c->host_nranks[c->host[p]] += first != p;
    if (first == p)
      c->host_nranks[c->nhosts++] = 1;
    else if (strcmp(all[first].machine, all[p].machine) != 0)
      return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                            "ranks %d and %d say they share host '%s' but run "
                            "on different machines (%s and %s): ranks of one "
                            "host map each other's memory (check "
                            "SYMHEAP_HOST_ID)",
                            first, p, all[p].host_id, all[first].machine,
                            all[p].machine);
  }
  memcpy(c->fdx.token, all[0].token, sizeof c->fdx.token);
  c->local_rank = 0;
  c->local_nranks = 0;
  for (int p = 0; p < c->nranks; p++) {
    c->reach[p] = strcmp(all[p].host_id, all[c->rank].host_id) == 0;
    c->local_nranks += c->reach[p];
    c->local_rank += c->reach[p] && p < c->rank;
  }
  return SYMHEAP_SUCCESS;
}

/* Phase 2 (comm.h). */
symheap_result_t symheap__comm_join(symheap_comm_t c, char *why, size_t len) {
  join_rec_t me, *all = calloc((size_t)c->nranks, sizeof *all);
  memset(&me, 0, sizeof me);
  symheap_result_t r =
      all && c->world && c->mapped_from && c->reach && c->host &&
              c->host_nranks
          ? prepare_join(c, &me, why, len)
          : symheap__error(SYMHEAP_ERR_NO_MEMORY, "comm: no memory");
  r = symheap__agree(c, r, 0, &me, sizeof me, all);
  if (r == SYMHEAP_SUCCESS)
    r = check_join(c, all);
  free(all);
  return r;
}

/* Phase 3 (comm.h). */
symheap_result_t symheap__comm_device(symheap_comm_t c,
                                      symheap_result_t (*check)(symheap_comm_t)) {
  symheap_device_init_t args = {sizeof args, c->rank, c->nranks, c->local_rank,
                                c->local_nranks};
  symheap_result_t r =
      c->dev.ops.init(&symheap__host_services, &args, &c->dev_ctx);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__plugins_wrap(&c->dev, &c->dev_ctx);
  if (r == SYMHEAP_SUCCESS) {
    c->caps.struct_size = sizeof c->caps;
    r = c->dev.ops.query(c->dev_ctx, &c->caps);
  }
  if (r == SYMHEAP_SUCCESS)
    r = symheap__caps_check(&c->caps, c->dev.ops.name);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__multicast_disabled_by(&c->mc_disabled_by);
  long keep = 0;
  if (r == SYMHEAP_SUCCESS)
    r = symheap__cfg_int("SYMHEAP_WINDOW_CACHE", &keep);
  c->cache_max = (int)keep;
  if (r == SYMHEAP_SUCCESS && check)
    r = check(c);
  return symheap__agree(c, r, 0, NULL, 0, NULL);
}

void symheap__comm_device_close(symheap_comm_t c) {
  if (c->dev_ctx)
    c->dev.ops.fini(c->dev_ctx);
  c->dev_ctx = NULL;
}

/* Making and destroying comms: the one place that sets up and closes every
 * subsystem of a comm, from one ordered table.  Init runs it up, after the
 * comm object is made and joined (comm/join.c); destroy, and an init that
 * fails half way, run it down, once.  The stages are ordered so that each
 * one's close finds what it needs still open: windows go before the window
 * path and RDMA they used, the pad and the mappings before the mesh that
 * announces freed memory, all of them before the device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "boot/bootstrap.h"
#include "comm/agree.h"
#include "comm/ccl_env.h"
#include "comm/net.h"
#include "init.h"
#include "mem/heap.h"
#include "proxy.h"
#include "win/window.h"

/* The descriptor mesh, with the mapping cache's hook for peers' freed
 * memory (or no window cache without one: a peer's free is announced over
 * the mesh, and without it a kept mapping could hold a peer's freed memory
 * indefinitely). */
static symheap_result_t mesh_setup(symheap_comm_t c) {
  if (c->caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD))
    return symheap__mesh_setup(c, symheap__map_on_freed, c);
  if (c->cache_max > 0) {
    SYMHEAP_INFO("device adaptor '%s' shares no descriptors: the window "
                 "cache is off",
                 c->dev.ops.name);
    c->cache_max = 0;
  }
  return SYMHEAP_SUCCESS;
}

/* Windows the caller left: torn down, with a warning. */
static void windows_close(symheap_comm_t c) {
  while (c->windows) {
    struct symheap_window *w = c->windows;
    SYMHEAP_WARN("comm destroy: window %llu (%zu bytes) was still registered",
                 (unsigned long long)w->id, w->size);
    symheap__window_unlink(c, w);
    (void)symheap__window_teardown(c, w, 0);
  }
}

static void pad_close(symheap_comm_t c) {
  if (c->pad)
    (void)symheap__window_teardown(c, c->pad, 0);
  symheap__dstatus_close(c);
}

/* The device, and the heap's variables as it takes them (a GPU's chunks
 * may be more than this host's memory, the host adaptor's may not). */
static symheap_result_t device_setup(symheap_comm_t c) {
  return symheap__comm_device(c, symheap__heap_vars_check);
}

typedef struct {
  const char *name;
  symheap_result_t (*setup)(symheap_comm_t c); /* collective; NULL: none */
  void (*close)(symheap_comm_t c);             /* local; NULL: none */
} stage_t;

/* Up in this order at init, down in the reverse at destroy. */
static const stage_t stages[] = {
    {"device", device_setup, symheap__comm_device_close},
    {"descriptor mesh", mesh_setup, symheap__mesh_close},
    /* allocations and mappings: made by calls, not at init */
    {"memory", NULL, symheap__mem_close},
    {"pad", symheap__pad_create, pad_close},
    /* the heap's fast agreements */
    {"shared-memory agreements", symheap__agree_shm_setup,
     symheap__agree_shm_close},
    /* after the pad, which is symheap's own window, never registered for
     * RDMA nor through a vendor path */
    {"RDMA", symheap__rdma_setup, symheap__rdma_close},
    {"window path", symheap__winpath_setup, symheap__winpath_close},
    /* windows: made by calls, not at init */
    {"windows", NULL, windows_close},
    /* the device proxy: the pad registered with the net adaptor (after
     * RDMA opened it); closed first, so no entry outlives a window */
    {"device proxy", symheap__proxy_setup, symheap__proxy_close},
};
#define NSTAGES (sizeof stages / sizeof stages[0])

/* Close stages top..0. */
static void stages_down(symheap_comm_t c, size_t top) {
  for (size_t i = top + 1; i-- > 0;)
    if (stages[i].close)
      stages[i].close(c);
}

symheap_result_t symheap__comm_setup(symheap_comm_t *out,
                                     const symheap_ccl_ops *ops, void *ctx,
                                     int owned, int timeout_ms,
                                     int64_t deadline_ms) {
  symheap_comm_t c =
      symheap__comm_alloc(ops, ctx, owned, timeout_ms, deadline_ms);
  if (!c)
    return SYMHEAP_ERR_NO_MEMORY;
  char why[768] = "";
  symheap_result_t r = symheap__comm_join(c, why, sizeof why);
  size_t up = 0;
  for (; r == SYMHEAP_SUCCESS && up < NSTAGES; up++)
    if (stages[up].setup)
      r = stages[up].setup(c);
  if (r != SYMHEAP_SUCCESS) {
    /* Down from the stage that failed (it undid its own part): each close
     * takes what its stage left, and nothing when it made nothing. */
    SYMHEAP__KEEP_ERROR(stages_down(c, up ? up - 1 : 0));
    symheap__comm_free(c);
    return r;
  }
  SYMHEAP_INFO("comm ready: rank %d of %d; %d host%s, %d rank%s reachable by "
               "load/store here; device adaptor '%s' on %s (%s); ccl '%s'; "
               "window path: %s; multicast: %s",
               c->rank, c->nranks, c->nhosts, c->nhosts == 1 ? "" : "s",
               c->local_nranks, c->local_nranks == 1 ? "" : "s",
               c->dev.ops.name, c->caps.device_name, why, c->ccl.name,
               c->winpath ? c->winpath->name : "symheap flat VA",
               c->mc_disabled_by      ? c->mc_disabled_by
               : c->dev.has_multicast ? "available"
                                      : "not supported by the adaptor");
  *out = c;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_init(
    symheap_comm_t *comm, int nranks, const symheap_unique_id_t *id, int rank) {
  if (!comm || !id)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_init: comm or id is NULL");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_init: rank %d of %d is out of range",
                          rank, nranks);
  symheap__log_set_rank(rank);
  int64_t start = symheap__now_ms();
  symheap__uid_t uid;
  symheap_result_t r = symheap__uid_decode(id, &uid);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* A malformed timeout on this rank alone must not leave the others
   * waiting for it: join with the default, and the join's agreement fails
   * every rank at once, naming the variable. */
  long timeout = SYMHEAP__DEFAULT_TIMEOUT_MS;
  SYMHEAP__KEEP_ERROR((void)symheap__cfg_int("SYMHEAP_TIMEOUT_MS", &timeout));
  void *ctx;
  r = symheap__local_ccl_create(&uid, nranks, rank, (int)timeout, &ctx);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "rank %d joining the job", rank);
  /* The join and the setup after it are one call: one deadline. */
  return symheap__comm_setup(comm, &symheap__local_ccl_ops, ctx, 1,
                             (int)timeout, start + timeout);
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_init_ccl(
    symheap_comm_t *comm, const symheap_ccl_ops *ops, void *ctx) {
  if (!comm || !ops)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_init_ccl: comm or ops is NULL");
  const char *missing = NULL;
  if (ops->abi_version != SYMHEAP_ADAPTOR_ABI_VERSION)
    return symheap__error(SYMHEAP_ERR_PLUGIN,
                          "symheap_comm_init_ccl: the ccl table has ABI "
                          "version %u; this library speaks %d",
                          ops->abi_version, SYMHEAP_ADAPTOR_ABI_VERSION);
  if (!SYMHEAP_HAS_MEMBER(ops, symheap_ccl_ops, allgather))
    missing = "struct_size (too small for rank, size and allgather)";
  else if (!ops->name || !ops->name[0])
    missing = "name";
  else if (!ops->rank)
    missing = "rank";
  else if (!ops->size)
    missing = "size";
  else if (!ops->allgather)
    missing = "allgather";
  else if (SYMHEAP_HAS_MEMBER(ops, symheap_ccl_ops, window_deregister) &&
           !ops->window_register != !ops->window_deregister)
    missing = ops->window_register ? "window_deregister (window_register is "
                                     "set; give both or neither)"
                                   : "window_register (window_deregister is "
                                     "set; give both or neither)";
  else if (SYMHEAP_HAS_MEMBER(ops, symheap_ccl_ops, split) && ops->split &&
           !ops->fini)
    missing = "fini (split is set, and the contexts it makes are released "
              "with fini)";
  if (missing)
    return symheap__error(SYMHEAP_ERR_PLUGIN,
                          "symheap_comm_init_ccl: the ccl table lacks the "
                          "required member '%s'",
                          missing);
  /* Read only what its struct_size covers; later members stay NULL. */
  symheap_ccl_ops copy;
  memset(&copy, 0, sizeof copy);
  memcpy(&copy, ops,
         ops->struct_size < sizeof copy ? ops->struct_size : sizeof copy);
  copy.struct_size = sizeof copy;
  int n = copy.size(ctx), rank = copy.rank(ctx);
  if (n < 1 || rank < 0 || rank >= n)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_init_ccl: ccl '%s' says rank %d of %d",
                          copy.name, rank, n);
  symheap__log_set_rank(rank);
  long timeout;
  symheap_result_t r = symheap__cfg_int("SYMHEAP_TIMEOUT_MS", &timeout);
  if (r != SYMHEAP_SUCCESS)
    return r;
  return symheap__comm_setup(comm, &copy, ctx, copy.fini != NULL, (int)timeout,
                             symheap__now_ms() + timeout);
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_init_env(symheap_comm_t *comm) {
  if (!comm)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_init_env: comm is NULL");
  const char *why;
  const symheap_ccl_ops *plugin_ccl = NULL;
  symheap_result_t r;
  symheap__ccl_kind_t kind = symheap__ccl_env_choice(&r, &why, &plugin_ccl);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (kind == SYMHEAP__CCL_MPI || kind == SYMHEAP__CCL_PLUGIN) {
    const symheap_ccl_ops *ops = plugin_ccl;
    void *ctx = NULL;
    r = kind == SYMHEAP__CCL_MPI ? symheap__ccl_mpi_open(why, &ops, &ctx)
                                 : symheap__ccl_plugin_open(ops, &ctx);
    /* From here the comm owns the context: fini releases it, also when
     * the comm cannot be made. */
    return r == SYMHEAP_SUCCESS ? symheap_comm_init_ccl(comm, ops, ctx) : r;
  }
  const char *hex = symheap__cfg_raw("SYMHEAP_UNIQUE_ID");
  if (!hex || !symheap__cfg_raw("SYMHEAP_RANK") ||
      !symheap__cfg_raw("SYMHEAP_NRANKS"))
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_init_env: SYMHEAP_RANK, SYMHEAP_NRANKS "
                          "and SYMHEAP_UNIQUE_ID must be set (start the "
                          "program with symheap-run), or an MPI launcher's "
                          "variables (mpirun; %s)",
                          why);
  long rank, nranks;
  r = symheap__cfg_int("SYMHEAP_RANK", &rank);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__cfg_int("SYMHEAP_NRANKS", &nranks);
  if (r != SYMHEAP_SUCCESS)
    return r;
  symheap_unique_id_t id;
  r = symheap__uid_from_hex(hex, &id);
  if (r != SYMHEAP_SUCCESS)
    return r;
  return symheap_comm_init(comm, (int)nranks, &id, (int)rank);
}

/* In a forked child: close this process's copies of the comm's sockets,
 * sending nothing (the parent's job goes on over the same connections), and
 * call no runtime (a device runtime is not usable after fork, an MPI
 * library not at all).  Mappings stay until the child exits or execs; the
 * struct stays too, since the child's windows still point at it. */
static symheap_result_t destroy_in_child(symheap_comm_t c) {
  symheap__mesh_close(c);
  if (c->ccl_owned && c->ccl.fini == symheap__local_ccl_ops.fini)
    c->ccl.fini(c->ccl_ctx);
  c->ccl_owned = 0;
  c->broken = SYMHEAP_ERR_INVALID_ARG;
  snprintf(c->broken_why, sizeof c->broken_why, "destroyed in a forked child");
  return SYMHEAP_SUCCESS;
}

static symheap_result_t comm_destroy_one(symheap_comm_t c) {
  if (symheap__comm_check(c, "symheap_comm_destroy") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (symheap__in_forked_child(c))
    return destroy_in_child(c);
  symheap__log_set_rank(c->rank);
  /* This rank's one-sided operations are complete at their targets before
   * the barrier, so no rank closes its net adaptor under a peer's. */
  if (c->netc &&
      symheap__net_quiet(c, "symheap_comm_destroy") != SYMHEAP_SUCCESS)
    SYMHEAP_WARN("comm destroy: quiet failed (%s)", symheap__error_peek());
  if (c->broken == SYMHEAP_SUCCESS && symheap__comm_barrier(c, "symheap_comm_destroy") != SYMHEAP_SUCCESS)
    SYMHEAP_WARN("comm destroy: final barrier failed (%s); tearing down anyway",
                 symheap__error_peek());
  stages_down(c, NSTAGES - 1);
  SYMHEAP_INFO("comm destroyed; left over (all should be 0): windows %llu, "
               "allocations %llu, bytes allocated %llu, registered %llu, VA "
               "reserved %llu, mapped %llu, descriptors %llu, multicast "
               "objects %llu",
               (unsigned long long)c->stats.windows_live,
               (unsigned long long)c->stats.allocations_live,
               (unsigned long long)c->stats.bytes_allocated,
               (unsigned long long)c->stats.bytes_registered,
               (unsigned long long)c->stats.va_reserved,
               (unsigned long long)c->stats.bytes_mapped,
               (unsigned long long)c->stats.descriptors_held,
               (unsigned long long)c->stats.multicast_objects);
  symheap__comm_free(c);
  symheap__error_clear();
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_destroy(symheap_comm_t c) {
  SYMHEAP__CLAIMED(c, "symheap_comm_destroy", comm_destroy_one(c));
}


/* Communicators: joining, the agreement on backend and host, teardown. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap.h"
#include "comm.h"
#include "config.h"
#include "heap.h"
#include "mapping.h"
#include "plugin.h"

/* A forked child shares its parent's sockets: a call of its own would
 * interleave with the parent's messages and desynchronise the job. */
static symheap_result_t forked(symheap_comm_t c, const char *fn) {
  return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                        "%s: this comm belongs to process %d and this is "
                        "process %d, a fork of it: a child cannot use its "
                        "parent's comm (make a comm of its own; "
                        "symheap_comm_destroy releases only this process's "
                        "part)",
                        fn, (int)c->pid, (int)getpid());
}

int64_t symheap__call_deadline(symheap_comm_t c) {
  return c->call_deadline_ms ? c->call_deadline_ms
                             : symheap__now_ms() + c->timeout_ms;
}

int symheap__call_remaining_ms(symheap_comm_t c) {
  int64_t left = symheap__call_deadline(c) - symheap__now_ms();
  return left < 1 ? 1 : left > INT32_MAX ? INT32_MAX : (int)left;
}

symheap_result_t symheap__comm_enter(symheap_comm_t c, const char *fn) {
  symheap_result_t live = symheap__comm_check(c, fn);
  if (live != SYMHEAP_SUCCESS)
    return live;
  if (symheap__in_forked_child(c))
    return forked(c, fn);
  c->call_deadline_ms = symheap__now_ms() + c->timeout_ms;
  symheap__log_set_rank(c->rank);
  if (c->broken != SYMHEAP_SUCCESS)
    return symheap__error(c->broken,
                          "%s: the comm failed earlier and cannot be used for "
                          "collectives (destroy it): %s",
                          fn, c->broken_why);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__comm_allgather(symheap_comm_t c, const void *in,
                                         void *out, size_t bytes) {
  if (symheap__in_forked_child(c))
    return forked(c, "a collective");
  if (c->broken != SYMHEAP_SUCCESS)
    return symheap__error(c->broken, "the comm failed earlier: %s",
                          c->broken_why);
  symheap_result_t r = c->ccl.allgather(c->ccl_ctx, in, out, bytes,
                                        symheap__call_remaining_ms(c));
  /* A collective that failed part way leaves the ranks out of step. */
  return r == SYMHEAP_SUCCESS ? r : symheap__comm_break(c, r);
}

symheap_result_t symheap__comm_break(symheap_comm_t c, symheap_result_t r) {
  c->broken = r;
  snprintf(c->broken_why, sizeof c->broken_why, "%s", symheap__error_peek());
  SYMHEAP_WARN("comm broken: %s", c->broken_why);
  return r;
}

/* What each rank says about itself when joining (one agreement payload). */
typedef struct {
  char host_id[SYMHEAP__HOST_ID_MAX]; /* its team: SYMHEAP_HOST_ID or machine */
  char machine[112];
  char device[32];
  unsigned char token[16];
} join_rec_t;
_Static_assert(sizeof(join_rec_t) <= SYMHEAP__AGREE_MAX, "join record size");

/* The machine itself: ranks that say they share a host (SYMHEAP_HOST_ID)
 * must really share one, since their team maps each other's memory. */
static void machine_identity(char *out, size_t len) {
  char name[64] = "?", boot[40] = "";
  gethostname(name, sizeof name);
  name[sizeof name - 1] = '\0';
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
  if (f) {
    if (!fgets(boot, sizeof boot, f))
      boot[0] = '\0';
    fclose(f);
    boot[strcspn(boot, "\n")] = '\0';
  }
  snprintf(out, len, "%s/%s", name, boot);
}

symheap_result_t symheap__host_identity(char *out, size_t len) {
  const char *forced = symheap__cfg_raw("SYMHEAP_HOST_ID");
  if (!forced) {
    machine_identity(out, len);
    return SYMHEAP_SUCCESS;
  }
  if (!forced[0] || strlen(forced) >= len)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_HOST_ID='%s': expected 1 to %zu characters",
                          forced, len - 1);
  snprintf(out, len, "%s", forced);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__capture_check(symheap_comm_t c, const char *fn) {
  symheap_result_t r = c->dev.ops.capture_check(c->dev_ctx);
  return r == SYMHEAP_SUCCESS ? r : symheap__error_context(r, "%s", fn);
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
  r = symheap__ipc_socket_mode(&c->sock_abstract, &dir);
  if (r != SYMHEAP_SUCCESS)
    return r;
  snprintf(c->sock_dir, sizeof c->sock_dir, "%s", dir);
  const char *want;
  if ((r = symheap__plugins_load()) != SYMHEAP_SUCCESS)
    return r;
  r = symheap__cfg_string("SYMHEAP_DEVICE", &want);
  if (r != SYMHEAP_SUCCESS)
    return r;
  r = symheap__device_select(want, &c->dev, why, why_len);
  if (r != SYMHEAP_SUCCESS)
    return r;
  snprintf(me->device, sizeof me->device, "%s", c->dev.ops.name);
  machine_identity(me->machine, sizeof me->machine);
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
    if (first == p)
      c->nhosts++;
    else if (strcmp(all[first].machine, all[p].machine) != 0)
      return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                            "ranks %d and %d say they share host '%s' but run "
                            "on different machines (%s and %s): ranks of one "
                            "host map each other's memory (check "
                            "SYMHEAP_HOST_ID)",
                            first, p, all[p].host_id, all[first].machine,
                            all[p].machine);
  }
  memcpy(c->token, all[0].token, sizeof c->token);
  c->local_rank = 0;
  c->local_nranks = 0;
  for (int p = 0; p < c->nranks; p++) {
    c->reach[p] = strcmp(all[p].host_id, all[c->rank].host_id) == 0;
    c->local_nranks += c->reach[p];
    c->local_rank += c->reach[p] && p < c->rank;
  }
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__multicast_disabled_by(const char **by) {
  int off = 0;
  *by = NULL;
  symheap_result_t r = symheap__cfg_bool("SYMHEAP_DISABLE_MULTICAST", &off);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (off) {
    *by = "SYMHEAP_DISABLE_MULTICAST=1";
    return SYMHEAP_SUCCESS;
  }
  if (symheap__cfg_raw("NCCL_NVLS_ENABLE")) {
    long nvls;
    r = symheap__cfg_int("NCCL_NVLS_ENABLE", &nvls);
    if (r != SYMHEAP_SUCCESS)
      return r;
    if (nvls == 0)
      *by = "NCCL_NVLS_ENABLE=0";
  }
  return SYMHEAP_SUCCESS;
}

/* Everything the comm still holds: windows (with a warning), the pad, the
 * mappings no window holds (kept ones, the heap's), allocations (with a
 * warning).  Local. */
static void release_all(symheap_comm_t c) {
  while (c->windows) {
    struct symheap_window *w = c->windows;
    SYMHEAP_WARN("comm destroy: window %llu (%zu bytes) was still registered",
                 (unsigned long long)w->id, w->size);
    symheap__window_unlink(c, w);
    (void)symheap__window_teardown(c, w, 0);
  }
  if (c->pad)
    (void)symheap__window_teardown(c, c->pad, 0);
  symheap__map_clear(c); /* kept mappings, the heap's */
  while (c->allocs) {
    SYMHEAP_WARN("comm destroy: allocation %p (%zu bytes) was never freed",
                 (void *)c->allocs->ptr, c->allocs->size);
    c->allocs->windows = 0;
    (void)symheap__alloc_free(c, c->allocs);
  }
}

/* A destroyed comm's struct is never given back to the allocator, so no
 * later allocation can sit at its address: a stale handle finds it dead.
 * (What it pointed to is freed; the struct itself is a few kilobytes.) */
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;
static symheap_comm_t retired;

static void retire(symheap_comm_t c) {
  c->magic = SYMHEAP__COMM_DEAD;
  pthread_mutex_lock(&retired_lock);
  c->retired_next = retired;
  retired = c;
  pthread_mutex_unlock(&retired_lock);
}

symheap_result_t symheap__comm_check(symheap_comm_t c, const char *fn) {
  if (!c)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: comm is NULL", fn);
  if (c->magic == SYMHEAP__COMM_DEAD)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: comm %p was destroyed",
                          fn, (void *)c);
  if (c->magic != SYMHEAP__COMM_LIVE)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: %p is not a comm", fn,
                          (void *)c);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__comm_claim(symheap_comm_t c, const char *fn) {
  symheap_result_t r = symheap__comm_check(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  int idle = 0;
  if (!__atomic_compare_exchange_n(&c->busy, &idle, 1, 0, __ATOMIC_ACQUIRE,
                                   __ATOMIC_RELAXED)) {
    const char *other = __atomic_load_n(&c->busy_fn, __ATOMIC_RELAXED);
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: another thread is in %s on this comm right "
                          "now; a comm belongs to one thread at a time (give "
                          "each thread a comm of its own, or serialise the "
                          "calls)",
                          fn, other ? other : "a call");
  }
  __atomic_store_n(&c->busy_fn, fn, __ATOMIC_RELAXED);
  return SYMHEAP_SUCCESS;
}

void symheap__comm_unclaim(symheap_comm_t c) {
  __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

static void comm_free(symheap_comm_t c) {
  symheap__agree_shm_close(c);
  symheap__fdx_close(c);
  symheap__rdma_close(c);    /* its memory regions went with the windows */
  symheap__winpath_close(c); /* likewise its windows; before the device */
  if (c->dev_ctx)
    c->dev.ops.fini(c->dev_ctx);
  if (c->ccl_owned && c->ccl.fini)
    c->ccl.fini(c->ccl_ctx);
  free(c->world);
  free(c->reach);
  free(c->mapped_from);
  free(c->agree_buf);
  free(c->scratch_fds);
  free(c->scratch_sh);
  retire(c);
}

/* Everything after the ccl exists: shared by every way of making a comm. */
/* Phase 1: the struct and everything the protocol needs before its first
 * exchange.  NULL (with the error set) when there is no memory for it. */
static symheap_comm_t comm_alloc(const symheap_ccl_ops *ops, void *ctx,
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
  symheap__forks_watch(c);
  c->stats.struct_size = sizeof c->stats;
  c->world = calloc((size_t)c->nranks, sizeof *c->world);
  c->mapped_from = calloc((size_t)c->nranks, sizeof *c->mapped_from);
  c->reach = calloc((size_t)c->nranks, 1);
  c->agree_buf = malloc((size_t)(c->nranks + 1) * SYMHEAP__AGREE_REC);
  c->scratch_fds = calloc((size_t)c->nranks, sizeof *c->scratch_fds);
  c->scratch_sh = calloc((size_t)c->nranks, sizeof *c->scratch_sh);
  if (!c->agree_buf || !c->scratch_fds || !c->scratch_sh) {
    /* Without them this rank cannot take part in a single exchange: leave
     * before the first, and the peers see it go. */
    comm_free(c);
    symheap__error(SYMHEAP_ERR_NO_MEMORY, "comm: out of memory");
    return NULL;
  }
  for (int p = 0; c->world && p < c->nranks; p++)
    c->world[p] = p;
  return c;
}

/* Phase 2, collective: every rank's host, device choice and variables,
 * agreed; the node-local team follows. */
static symheap_result_t comm_join(symheap_comm_t c, char *why, size_t len) {
  join_rec_t me, *all = calloc((size_t)c->nranks, sizeof *all);
  memset(&me, 0, sizeof me);
  symheap_result_t r =
      all && c->world && c->mapped_from && c->reach
          ? prepare_join(c, &me, why, len)
          : symheap__error(SYMHEAP_ERR_NO_MEMORY, "comm: no memory");
  r = symheap__agree(c, r, 0, &me, sizeof me, all);
  if (r == SYMHEAP_SUCCESS)
    r = check_join(c, all);
  free(all);
  return r;
}

/* Phase 3, collective: the device adaptor's context (with plugin hooks),
 * its capabilities checked, the multicast policy and the window cache. */
static symheap_result_t comm_device(symheap_comm_t c) {
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
  return symheap__agree(c, r, 0, NULL, 0, NULL);
}

/* Phase 4, collective: the descriptor mesh (or no window cache without
 * one), the pad, the heap's agreement channel, RDMA, the window path. */
static symheap_result_t comm_channels(symheap_comm_t c) {
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (c->caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD)) {
    r = symheap__fdx_setup(c);
  } else if (c->cache_max > 0) {
    /* A peer's free is announced over the descriptor mesh; without one a
     * kept mapping could hold a peer's freed memory indefinitely. */
    SYMHEAP_INFO("device adaptor '%s' shares no descriptors: the window "
                 "cache is off",
                 c->dev.ops.name);
    c->cache_max = 0;
  }
  if (r == SYMHEAP_SUCCESS)
    r = symheap__pad_create(c);
  if (r == SYMHEAP_SUCCESS) /* the heap's fast agreements (agree_shm.c) */
    r = symheap__agree_shm_setup(c);
  /* After the pad, which is always symheap's own window and never
   * registered for RDMA. */
  if (r == SYMHEAP_SUCCESS)
    r = symheap__rdma_setup(c);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__winpath_setup(c);
  return r;
}

symheap_result_t symheap__comm_setup(symheap_comm_t *out,
                                     const symheap_ccl_ops *ops, void *ctx,
                                     int owned, int timeout_ms,
                                     int64_t deadline_ms) {
  symheap_comm_t c = comm_alloc(ops, ctx, owned, timeout_ms, deadline_ms);
  if (!c)
    return SYMHEAP_ERR_NO_MEMORY;
  char why[768] = "";
  symheap_result_t r = comm_join(c, why, sizeof why);
  if (r == SYMHEAP_SUCCESS)
    r = comm_device(c);
  if (r == SYMHEAP_SUCCESS)
    r = comm_channels(c);
  if (r != SYMHEAP_SUCCESS) {
    SYMHEAP__KEEP_ERROR(release_all(c));
    comm_free(c);
    return r;
  }
  SYMHEAP_INFO("comm ready: rank %d of %d; %d host%s, %d rank%s reachable by "
               "load/store here; device adaptor '%s' on %s (%s); ccl '%s'; "
               "window path: %s; multicast: %s",
               c->rank, c->nranks, c->nhosts, c->nhosts == 1 ? "" : "s",
               c->local_nranks, c->local_nranks == 1 ? "" : "s",
               c->dev.ops.name, c->caps.device_name, why, c->ccl.name,
               c->winpath.name ? c->winpath.name : "symheap flat VA",
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
  if (kind == SYMHEAP__CCL_MPI)
    return symheap__comm_init_mpi_world(comm, why);
  if (kind == SYMHEAP__CCL_PLUGIN)
    return symheap__comm_init_plugin_ccl(comm, plugin_ccl);
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
  symheap__fdx_close(c);
  if (c->ccl_owned && c->ccl.fini == symheap__local_ccl_ops.fini)
    c->ccl.fini(c->ccl_ctx);
  c->ccl_owned = 0;
  c->broken = SYMHEAP_ERR_INVALID_ARG;
  snprintf(c->broken_why, sizeof c->broken_why, "destroyed in a forked child");
  return SYMHEAP_SUCCESS;
}

static symheap_result_t comm_barrier_one(symheap_comm_t c);

static symheap_result_t comm_destroy_one(symheap_comm_t c) {
  if (symheap__comm_check(c, "symheap_comm_destroy") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (symheap__in_forked_child(c))
    return destroy_in_child(c);
  symheap__log_set_rank(c->rank);
  /* This rank's one-sided operations are complete at their targets before
   * the barrier, so no rank closes its net adaptor under a peer's. */
  if (c->netc && symheap_quiet(c) != SYMHEAP_SUCCESS)
    SYMHEAP_WARN("comm destroy: quiet failed (%s)", symheap_last_error());
  if (c->broken == SYMHEAP_SUCCESS && comm_barrier_one(c) != SYMHEAP_SUCCESS)
    SYMHEAP_WARN("comm destroy: final barrier failed (%s); tearing down anyway",
                 symheap_last_error());
  release_all(c);
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
  comm_free(c);
  symheap__error_clear();
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_destroy(symheap_comm_t c) {
  SYMHEAP__CLAIMED(c, "symheap_comm_destroy", comm_destroy_one(c));
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_rank(symheap_comm_t c,
                                                   int *rank) {
  if (symheap__comm_check(c, "symheap_comm_rank") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!rank)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_rank: NULL argument");
  *rank = c->rank;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_size(symheap_comm_t c,
                                                   int *nranks) {
  if (symheap__comm_check(c, "symheap_comm_size") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_size: NULL argument");
  *nranks = c->nranks;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t comm_barrier_one(symheap_comm_t c) {
  symheap_result_t r = symheap__comm_enter(c, "symheap_comm_barrier");
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (symheap__collectives_by_shm(c)) /* comm_shm.c says why */
    return symheap__barrier_shm(c);
  if (c->ccl.barrier) {
    r = c->ccl.barrier(c->ccl_ctx, symheap__call_remaining_ms(c));
    return r == SYMHEAP_SUCCESS ? r : symheap__comm_break(c, r);
  }
  /* Into the comm's own buffer: a barrier never allocates, so it cannot
   * skip its part and pair the ranks' barriers off by one. */
  char one = 0;
  return symheap__comm_allgather(c, &one, c->agree_buf, 1);
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_barrier(symheap_comm_t c) {
  SYMHEAP__CLAIMED(c, "symheap_comm_barrier", comm_barrier_one(c));
}

/* Bytes per rank one round of symheap_comm_allgather carries: small enough
 * for every ccl's message (the bootstrap's is 16 MiB in all), large enough
 * that 1 MiB per rank takes a few rounds. */
static size_t allgather_chunk(symheap_comm_t c) {
  size_t per = ((size_t)8 << 20) / (size_t)c->nranks;
  size_t chunk = per < ((size_t)64 << 10) ? per : ((size_t)64 << 10);
  return chunk ? chunk : 1;
}

static symheap_result_t comm_allgather_one(symheap_comm_t c, const void *in,
                                           void *out, size_t bytes) {
  symheap_result_t r = symheap__comm_enter(c, "symheap_comm_allgather");
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* A bad argument here is local; the peers would wait for this rank, so
   * it still takes part, with its failure, through the agreement. */
  size_t chunk = allgather_chunk(c);
  char *tmp = NULL;
  if ((!in || !out) && bytes)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                       "symheap_comm_allgather: NULL buffer");
  else if (bytes > SYMHEAP_ALLGATHER_MAX)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                       "symheap_comm_allgather: %zu bytes per rank is more "
                       "than the %u this bootstrap exchange is for",
                       bytes, SYMHEAP_ALLGATHER_MAX);
  else if (bytes > chunk && !(tmp = malloc(chunk * (size_t)c->nranks)))
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY,
                       "symheap_comm_allgather: no memory for %zu bytes",
                       chunk * (size_t)c->nranks);
  int differ, carried = 0;
  uint64_t b0, bp;
  if (symheap__collectives_by_shm(c)) /* the same answer on every rank */
    r = symheap__allgather_size_shm(c, r, in, out, bytes, &carried, &differ,
                                    &b0, &bp);
  else
    r = symheap__agree_equal(c, r, r == SYMHEAP_SUCCESS ? bytes : UINT64_MAX,
                             &differ, &b0, &bp);
  if (r == SYMHEAP_SUCCESS && differ >= 0)
    r = symheap__error(SYMHEAP_ERR_MISMATCH,
                       "symheap_comm_allgather: rank 0 gives %llu bytes, "
                       "rank %d %llu",
                       (unsigned long long)b0, differ, (unsigned long long)bp);
  if (r == SYMHEAP_SUCCESS && bytes && bytes <= chunk && !carried)
    r = symheap__comm_allgather(c, in, out, bytes);
  /* Larger: in rounds every ccl can carry, the same number on every rank. */
  for (size_t off = 0; r == SYMHEAP_SUCCESS && bytes > chunk && off < bytes;
       off += chunk) {
    size_t len = bytes - off < chunk ? bytes - off : chunk;
    r = symheap__comm_allgather(c, (const char *)in + off, tmp, len);
    for (int p = 0; r == SYMHEAP_SUCCESS && p < c->nranks; p++)
      memcpy((char *)out + (size_t)p * bytes + off, tmp + (size_t)p * len, len);
  }
  free(tmp);
  return r;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_allgather(symheap_comm_t c,
                                                        const void *in,
                                                        void *out,
                                                        size_t bytes) {
  SYMHEAP__CLAIMED(c, "symheap_comm_allgather",
                   comm_allgather_one(c, in, out, bytes));
}

/* Copy a library-filled struct into a caller-sized one. */
symheap_result_t symheap__copy_sized(void *dst, const void *src, size_t ours,
                                     const char *what) {
  uint32_t theirs;
  memcpy(&theirs, dst, sizeof theirs);
  if (theirs < sizeof(uint32_t))
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: set struct_size to sizeof the struct (got %u)",
                          what, theirs);
  memcpy((char *)dst + sizeof theirs, (const char *)src + sizeof theirs,
         (theirs < ours ? theirs : ours) - sizeof theirs);
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t
symheap_comm_get_info(symheap_comm_t c, symheap_comm_info_t *info) {
  if (symheap__comm_check(c, "symheap_comm_get_info") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!info)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_get_info: NULL argument");
  symheap_comm_info_t i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  i.rank = c->rank;
  i.nranks = c->nranks;
  i.local_rank = c->local_rank;
  snprintf(i.device_adaptor, sizeof i.device_adaptor, "%s", c->dev.ops.name);
  snprintf(i.ccl_adaptor, sizeof i.ccl_adaptor, "%s", c->ccl.name);
  i.granularity = c->caps.granularity;
  i.multicast_available = c->dev.has_multicast && !c->mc_disabled_by;
  i.timeout_ms = c->timeout_ms;
  snprintf(i.device, sizeof i.device, "%s", c->caps.device_name);
  i.cpu_access = (c->caps.caps & SYMHEAP_CAP_HOST_ACCESS) != 0;
  i.window_cache = c->cache_max;
  i.local_nranks = c->local_nranks;
  i.nhosts = c->nhosts;
  snprintf(i.window_path, sizeof i.window_path, "%s",
           c->winpath.name ? c->winpath.name : "symheap");
  return symheap__copy_sized(info, &i, sizeof i, "symheap_comm_get_info");
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_get_mapped_per_peer(
    symheap_comm_t c, uint64_t *bytes, int nranks) {
  if (symheap__comm_check(c, "symheap_comm_get_mapped_per_peer") !=
      SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!bytes)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_get_mapped_per_peer: NULL argument");
  if (nranks != c->nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_get_mapped_per_peer: nranks is %d, "
                          "the comm has %d ranks",
                          nranks, c->nranks);
  memcpy(bytes, c->mapped_from, (size_t)nranks * sizeof *bytes);
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_world_rank(symheap_comm_t c,
                                                         int rank,
                                                         int *world_rank) {
  if (symheap__comm_check(c, "symheap_comm_world_rank") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!world_rank)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_world_rank: NULL argument");
  if (rank < 0 || rank >= c->nranks)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_world_rank: rank %d is not a rank of "
                          "0..%d",
                          rank, c->nranks - 1);
  *world_rank = c->world[rank];
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_local_ranks(symheap_comm_t c,
                                                          int *ranks, int max,
                                                          int *count) {
  if (symheap__comm_check(c, "symheap_comm_local_ranks") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!count || (max > 0 && !ranks) || max < 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_local_ranks: %s",
                          max < 0 ? "max is negative" : "NULL argument");
  int n = 0;
  for (int p = 0; p < c->nranks; p++)
    if (c->reach[p]) {
      if (n < max)
        ranks[n] = p;
      n++;
    }
  *count = n;
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t
symheap_comm_get_stats(symheap_comm_t c, symheap_comm_stats_t *s) {
  if (symheap__comm_check(c, "symheap_comm_get_stats") != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  if (!s)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_get_stats: NULL argument");
  return symheap__copy_sized(s, &c->stats, sizeof c->stats,
                             "symheap_comm_get_stats");
}

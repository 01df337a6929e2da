/* Sub-communicators.  A split is a new comm of its own (ccl, pad, windows)
 * over the ranks that chose one color.  It rides on the parent's runtime:
 * the parent's ccl splits its context when it can (MPI_Comm_split, say);
 * otherwise the members meet over symheap's socket bootstrap (every rank
 * makes a unique id, the parent exchanges them, and each color's first
 * rank's id is the one its members join with), which reaches one host only,
 * so a parent spanning hosts without a ccl split is refused.  Failures agree
 * over the parent, so every rank of it returns the same result and nothing
 * is left half made. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/bootstrap.h"
#include "boot/host.h"
#include "comm/agree.h"
#include "init.h"

typedef struct {
  int32_t color, key;
  symheap_unique_id_t id;
} split_rec_t;

/* Members of `color` ordered by (key, rank); returns their count. */
static int members(const split_rec_t *all, int n, int color, int *out) {
  int m = 0;
  for (int p = 0; p < n; p++)
    if (all[p].color == color) {
      int i = m++;
      while (i > 0 && (all[out[i - 1]].key > all[p].key ||
                       (all[out[i - 1]].key == all[p].key && out[i - 1] > p))) {
        out[i] = out[i - 1];
        i--;
      }
      out[i] = p;
    }
  return m;
}

/* How the members of the new comm meet. */
typedef enum { VIA_BOOTSTRAP, VIA_CCL_SPLIT, VIA_NOTHING } split_via_t;

static split_via_t split_via(symheap_comm_t c) {
  if (c->ccl.split)
    return VIA_CCL_SPLIT;
  if (strcmp(c->ccl.name, symheap__local_ccl_ops.name) == 0 || c->nhosts == 1)
    return VIA_BOOTSTRAP;
  return VIA_NOTHING;
}

/* Every rank calls the parent ccl's split (it is collective); members make
 * their comm on the context it gives them. */
static symheap_result_t child_over_ccl(symheap_comm_t c, int color, int key,
                                       symheap_comm_t *child) {
  void *ctx = NULL;
  symheap_result_t r =
      c->ccl.split(c->ccl_ctx, color == SYMHEAP_COLOR_NONE ? -1 : color, key,
                   symheap__call_remaining_ms(c), &ctx);
  /* Every rank learns whether every split worked before any member starts
   * a comm on its new context (whose peers would otherwise wait). */
  r = symheap__agree(c, r, 0, NULL, 0, NULL);
  if (r != SYMHEAP_SUCCESS) {
    if (ctx)
      c->ccl.fini(ctx);
    return r;
  }
  if (color == SYMHEAP_COLOR_NONE)
    return SYMHEAP_SUCCESS;
  if (!ctx)
    return symheap__error(SYMHEAP_ERR_PLUGIN,
                          "ccl '%s': split gave no context for color %d",
                          c->ccl.name, color);
  /* The new comm's device is this one's (see below). */
  symheap_device_caps_t caps = {sizeof caps, 0, 0, 0, 0, 0, 0, ""};
  r = c->dev.ops.query(c->dev_ctx, &caps);
  if (r != SYMHEAP_SUCCESS) {
    c->ccl.fini(ctx);
    return r;
  }
  return symheap__comm_setup(child, &c->ccl, ctx, 1, c->timeout_ms,
                             symheap__call_deadline(c));
}

/* Descriptors a new comm of at most n ranks may open on one rank (its
 * bootstrap's sockets, the descriptor mesh, the pad's and the agreements'
 * memfds, the device's own), with room to spare. */
static int fds_needed(int n) { return 2 * n + 16; }

/* Before the parent's first agreement: this rank opens the descriptors
 * its part of the new comm may need (held in fds until the comm is made),
 * so a rank that would run out says so in that agreement, naming itself,
 * instead of failing inside the new comm's join while its peers wait there
 * for it until the timeout. */
static symheap_result_t reserve_fds(symheap_comm_t c, int *fds, int need) {
  int got = 0;
  for (; got < need; got++)
    if ((fds[got] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
      break;
  if (got == need)
    return SYMHEAP_SUCCESS;
  int e = errno;
  while (got > 0)
    close(fds[--got]);
  fds[0] = -1;
  return symheap__error(SYMHEAP_ERR_SYSTEM,
                        "rank %d ran out of file descriptors: its part of the "
                        "new comm needs about %d, and opening them failed: "
                        "%s (raise the limit: ulimit -n, RLIMIT_NOFILE)",
                        c->rank, need, strerror(e));
}

static void release_fds(int *fds, int need) {
  for (int i = 0; fds && i < need && fds[i] >= 0; i++) {
    close(fds[i]);
    fds[i] = -1;
  }
}

/* A failure inside the new comm names its ranks in its own numbering: say
 * which of this comm's ranks they are. */
static symheap_result_t child_failed(symheap_result_t r, int color,
                                     const int *mem, int m) {
  char list[160] = "";
  size_t at = 0;
  for (int i = 0; i < m && at < sizeof list - 16; i++)
    at += (size_t)snprintf(list + at, sizeof list - at, "%s%d", i ? "," : "",
                           mem[i]);
  if (at >= sizeof list - 16)
    snprintf(list + at, sizeof list - at, ",...");
  return symheap__error_context(r,
                                "in the new comm of color %d (its ranks 0, "
                                "1, ... are this comm's ranks %s)",
                                color, list);
}

static symheap_result_t split(symheap_comm_t c, int color, int key,
                              symheap_comm_t *out, const char *fn) {
  symheap_result_t r = symheap__comm_enter(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  split_rec_t me, *all = calloc((size_t)c->nranks, sizeof *all);
  int *mem = calloc((size_t)c->nranks, sizeof *mem);
  memset(&me, 0, sizeof me);
  me.color = color;
  me.key = key;
  if (!out)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: newcomm is NULL", fn);
  else if (color < 0 && color != SYMHEAP_COLOR_NONE)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                       "%s: color %d; colors are >= 0 or SYMHEAP_COLOR_NONE",
                       fn, color);
  else if (!all || !mem)
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "%s: no memory", fn);
  else if (split_via(c) == VIA_NOTHING)
    r = symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                       "%s: this comm rides on ccl '%s', which cannot split "
                       "(no symheap_ccl_ops.split), and it spans %d hosts, "
                       "which symheap's own bootstrap cannot reach: split "
                       "your runtime's communicator and make a comm on it "
                       "(symheap_comm_init_ccl), or give the ccl a split",
                       fn, c->ccl.name, c->nhosts);
  else if (color != SYMHEAP_COLOR_NONE && split_via(c) == VIA_BOOTSTRAP)
    r = strcmp(c->ccl.name, symheap__local_ccl_ops.name) == 0
            ? symheap__local_ccl_new_uid(c->ccl_ctx, &me.id) /* its kind */
            : symheap_get_unique_id(&me.id);
  int need = fds_needed(c->nranks);
  int *held = r == SYMHEAP_SUCCESS && color != SYMHEAP_COLOR_NONE
                  ? calloc((size_t)need, sizeof *held)
                  : NULL;
  if (r == SYMHEAP_SUCCESS && color != SYMHEAP_COLOR_NONE)
    r = held ? reserve_fds(c, held, need)
             : symheap__error(SYMHEAP_ERR_NO_MEMORY, "%s: no memory", fn);
  r = symheap__agree(c, r, 0, &me, sizeof me, all);
  int settled = r != SYMHEAP_SUCCESS; /* every rank has this verdict */
  release_fds(held, need); /* the new comm opens them now */
  free(held);
  symheap_comm_t child = NULL;
  if (r == SYMHEAP_SUCCESS && split_via(c) == VIA_CCL_SPLIT) {
    int m =
        color != SYMHEAP_COLOR_NONE ? members(all, c->nranks, color, mem) : 0;
    r = child_over_ccl(c, color, key, &child);
    if (r != SYMHEAP_SUCCESS && m)
      r = child_failed(r, color, mem, m);
    for (int i = 0; r == SYMHEAP_SUCCESS && child && i < m; i++)
      child->world[i] = c->world[mem[i]];
    symheap__log_set_rank(c->rank);
  } else if (r == SYMHEAP_SUCCESS && color != SYMHEAP_COLOR_NONE) {
    int m = members(all, c->nranks, color, mem), newrank = 0;
    while (mem[newrank] != c->rank)
      newrank++;
    /* The new comm's device is this one's: leave its context current, so a
     * GPU adaptor follows it rather than choosing by the new local rank. */
    symheap_device_caps_t caps = {sizeof caps, 0, 0, 0, 0, 0, 0, ""};
    r = c->dev.ops.query(c->dev_ctx, &caps);
    if (r == SYMHEAP_SUCCESS &&
        (r = symheap_comm_init(&child, m, &all[mem[0]].id, newrank)) !=
            SYMHEAP_SUCCESS)
      r = child_failed(r, color, mem, m);
    if (r == SYMHEAP_SUCCESS)
      for (int i = 0; i < m; i++)
        child->world[i] = c->world[mem[i]];
    symheap__log_set_rank(c->rank);
  }
  /* A TCP id listens from the start: the one its comm's rank 0 took is
   * gone from the table, the ids not chosen stop here. */
  if (color != SYMHEAP_COLOR_NONE && split_via(c) == VIA_BOOTSTRAP)
    symheap__uid_release(&me.id);
  /* Over the parent: a member whose new comm failed fails everyone.  With
   * a deadline of its own: the new comm's join may have used up the call's
   * (a peer that failed there leaves the others waiting until it passes),
   * and the parent must stay usable.  A member that only waited for a peer
   * there is not the cause. */
  if (!settled) {
    c->call_deadline_ms = symheap__now_ms() + c->timeout_ms;
    int waited = r == SYMHEAP_ERR_TIMEOUT || r == SYMHEAP_ERR_REMOTE;
    r = symheap__agree(c, r, waited, NULL, 0, NULL);
  }
  if (r != SYMHEAP_SUCCESS && child) {
    /* Its peers may be gone: tear down locally, no final barrier. */
    child->broken = SYMHEAP_ERR_REMOTE;
    SYMHEAP__KEEP_ERROR((void)symheap_comm_destroy(child));
    child = NULL;
  }
  free(all);
  free(mem);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "%s", fn);
  *out = child;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t comm_split_one(symheap_comm_t c, int color, int key,
                                       symheap_comm_t *newcomm) {
  return split(c, color, key, newcomm, "symheap_comm_split");
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_split(symheap_comm_t c, int color,
                                                    int key,
                                                    symheap_comm_t *newcomm) {
  SYMHEAP__CLAIMED(c, "symheap_comm_split",
                   comm_split_one(c, color, key, newcomm));
}

/* Ranks with the same host identity: the color is the index of the first
 * rank that reported this rank's identity. */
static symheap_result_t comm_split_local_one(symheap_comm_t c,
                                             symheap_comm_t *newcomm) {
  const char *fn = "symheap_comm_split_local";
  symheap_result_t r = symheap__comm_enter(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  char me[SYMHEAP__HOST_ID_MAX];
  memset(me, 0, sizeof me);
  char(*all)[SYMHEAP__HOST_ID_MAX] = calloc((size_t)c->nranks, sizeof *all);
  r = all ? symheap__host_identity(me, sizeof me)
          : symheap__error(SYMHEAP_ERR_NO_MEMORY, "%s: no memory", fn);
  r = symheap__agree(c, r, 0, me, sizeof me, all);
  if (r != SYMHEAP_SUCCESS) {
    free(all);
    return symheap__error_context(r, "%s", fn);
  }
  int color = 0;
  while (strcmp(all[color], me) != 0)
    color++;
  free(all);
  return split(c, color, c->rank, newcomm, fn);
}

SYMHEAP__EXPORT symheap_result_t
symheap_comm_split_local(symheap_comm_t c, symheap_comm_t *newcomm) {
  SYMHEAP__CLAIMED(c, "symheap_comm_split_local",
                   comm_split_local_one(c, newcomm));
}

/* Teams and contexts.
 *
 * A team is a list of world PEs and a slot: the index of the team's
 * synchronisation words in every PE's control block.  Slots are taken from a
 * bitmap on world PE 0 by the new team's first PE (an atomic compare-and-swap)
 * and handed to the other members through the parent team's scratch word, so
 * every member of a team agrees on its slot even when teams are made and
 * destroyed by different subsets of PEs.  Contexts are a team and options:
 * every operation completes before it returns, so a context holds no
 * pending work of its own. */
/* ThreadSanitizer does not model fences; gcc refuses them under it unless
 * told to let them be (the tests run the layer under TSan). */
#if defined(__SANITIZE_THREAD__)
#pragma GCC diagnostic ignored "-Wtsan"
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmem_peer.h"

struct symheap_shmem_team symheap_shmem_team_world = {.slot = -1};
struct symheap_shmem_team symheap_shmem_team_shared = {.slot = -1};
struct symheap_shmem_ctx symheap_shmem_ctx_default = {
    .team = &symheap_shmem_team_world};

static int *world_ranks;
static int *shared_ranks; /* this host's PEs (a job across hosts) */
/* This PE's teams by slot, so that shmem_finalize frees those the program
 * did not destroy. */
static struct symheap_shmem_team *live[SHM_MAX_TEAMS];

/* Destroyed teams and contexts are kept, marked dead (a team's slot -1,
 * a context's team NULL), for the next SHM_HUSKS destructions, so that a
 * handle used after its destruction meets the mark: an error, or for a
 * context's operation a message that ends the job.  Before, they were
 * freed at once, and such a call read freed memory.  The oldest is freed
 * when the ring is full (a program that makes and destroys contexts in a
 * loop keeps SHM_HUSKS of them), the rest at shmem_finalize. */
#define SHM_HUSKS 256
static void *husks[SHM_HUSKS];
static unsigned husk_next;
/* Threads make and destroy contexts of their own at once
 * (SHMEM_THREAD_MULTIPLE). */
static pthread_mutex_t husk_lock = PTHREAD_MUTEX_INITIALIZER;

static void keep_husk(void *p) {
  pthread_mutex_lock(&husk_lock);
  unsigned i = husk_next++ % SHM_HUSKS;
  free(husks[i]); /* the oldest, or NULL */
  husks[i] = p;
  pthread_mutex_unlock(&husk_lock);
}

static void free_husks(void) {
  for (unsigned i = 0; i < SHM_HUSKS; i++) {
    free(husks[i]);
    husks[i] = NULL;
  }
  husk_next = 0;
}

/* SHMEM_TEAM_SHARED of a job across hosts: the PEs shm__s.remote does not
 * mark, in PE order. */
static int shared_init(void) {
  int n = 0;
  shared_ranks = malloc((size_t)shm__s.npes * sizeof(int));
  if (!shared_ranks)
    return -1;
  for (int p = 0; p < shm__s.npes; p++) {
    if (p == shm__s.me)
      symheap_shmem_team_shared.me = n;
    if (!shm__remote(p))
      shared_ranks[n++] = p;
  }
  symheap_shmem_team_shared.size = n;
  symheap_shmem_team_shared.world = shared_ranks;
  return 0;
}

int shm__teams_init(void) {
  world_ranks = malloc((size_t)shm__s.npes * sizeof(int));
  if (!world_ranks)
    return -1;
  for (int i = 0; i < shm__s.npes; i++)
    world_ranks[i] = i;
  /* SHMEM_TEAM_SHARED: the PEs whose memory shmem_ptr reaches, this
   * host's (every PE on a job of one host); its own team with its own slot
   * (each host's team synchronises on its own first PE's words). */
  struct symheap_shmem_team *t[2] = {&symheap_shmem_team_world,
                                     &symheap_shmem_team_shared};
  for (int i = 0; i < 2; i++) {
    *t[i] = (struct symheap_shmem_team){
        .slot = i, .size = shm__s.npes, .me = shm__s.me, .world = world_ranks};
  }
  if (shm__s.net && shared_init() != 0)
    return -1;
  shm__s.ctrl->team_slots = 3; /* on PE 0 it is the bitmap */
  return 0;
}

void shm__teams_fini(void) {
  for (int i = 2; i < SHM_MAX_TEAMS; i++) {
    if (live[i]) {
      free(live[i]->world);
      free(live[i]);
      live[i] = NULL;
    }
  }
  free(world_ranks);
  world_ranks = NULL;
  free(shared_ranks);
  shared_ranks = NULL;
  symheap_shmem_team_world.slot = symheap_shmem_team_shared.slot = -1;
  free_husks();
}

int shmem_team_my_pe(shmem_team_t team) {
  return shm__team_gone(team) ? -1 : team->me;
}

int shmem_team_n_pes(shmem_team_t team) {
  return shm__team_gone(team) ? -1 : team->size;
}

int shmem_team_get_config(shmem_team_t team, long config_mask,
                          shmem_team_config_t *config) {
  if (shm__team_gone(team) || !config)
    return -1;
  if (config_mask & SHMEM_TEAM_NUM_CONTEXTS)
    config->num_contexts = team->config.num_contexts;
  return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
                            shmem_team_t dest_team) {
  if (shm__team_gone(src_team) || shm__team_gone(dest_team) || src_pe < 0 ||
      src_pe >= src_team->size)
    return -1;
  int w = src_team->world[src_pe];
  for (int i = 0; i < dest_team->size; i++)
    if (dest_team->world[i] == w)
      return i;
  return -1;
}

void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe) {
  if (shm__team_gone(team) || pe < 0 || pe >= team->size)
    return NULL;
  return shm__peer_or_null(dest, team->world[pe]);
}

/* Takes a free slot on world PE 0's bitmap; -1 if all are taken. */
static long take_slot(void) {
  if (shm__s.net) { /* the bitmap's domain: symheap_atomic */
    uint64_t old = 0, seen = 0;
    const uint64_t *word = &shm__s.ctrl->team_slots;
    shm__amo(word, 0, SYMHEAP_AMO_FETCH, 8, NULL, NULL, &old);
    for (;;) {
      if (old == ~(uint64_t)0)
        return -1;
      int s = __builtin_ctzll(~old);
      uint64_t want = old | (1ULL << s);
      shm__amo(word, 0, SYMHEAP_AMO_CSWAP, 8, &want, &old, &seen);
      if (seen == old)
        return s;
      old = seen;
    }
  }
  uint64_t *bits = (uint64_t *)shm__peer(&shm__s.ctrl->team_slots, 0);
  uint64_t old = __atomic_load_n(bits, __ATOMIC_ACQUIRE);
  for (;;) {
    if (old == ~(uint64_t)0)
      return -1;
    int s = __builtin_ctzll(~old);
    if (__atomic_compare_exchange_n(bits, &old, old | (1ULL << s), 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return s;
  }
}

static void give_slot(int s) {
  if (shm__s.net) {
    uint64_t mask = ~(1ULL << s);
    shm__amo(&shm__s.ctrl->team_slots, 0, SYMHEAP_AMO_AND, 8, &mask, NULL,
             NULL);
    return;
  }
  uint64_t *bits = (uint64_t *)shm__peer(&shm__s.ctrl->team_slots, 0);
  __atomic_fetch_and(bits, ~(1ULL << s), __ATOMIC_ACQ_REL);
}

/* Whether every member of parent asked for the same team (one reduction of
 * each argument's minimum and maximum).  The specification leaves
 * mismatched arguments undefined; before, PEs that disagreed left with
 * different teams (one a team, another SHMEM_TEAM_INVALID), and the next
 * collective on it hung. */
static int same_split(shmem_team_t parent, const struct shm_group *g, int first,
                      int stride, int size) {
  long v[3] = {first, stride, size}, all[6];
  int same = shm__same3(g, shm__s.ctrl->split_args[parent->slot], v, all);
  if (!same && parent->me == 0)
    fprintf(stderr,
            "symheap-shmem: PE %d: a team split whose members gave different "
            "arguments (start %ld..%ld, stride %ld..%ld, size %ld..%ld): "
            "SHMEM_TEAM_INVALID on every member\n",
            shm__s.me, all[0], all[3], all[1], all[4], all[2], all[5]);
  return same;
}

/* Collective over parent: the PEs parent->world[first + i*stride], i < size,
 * form a team.  The new team's first PE takes a slot and writes it into
 * every parent PE's scratch word (-2 if none was free); a barrier before and
 * after keeps the word from being overwritten while someone reads it. */
static int split(shmem_team_t parent, int first, int stride, int size,
                 const shmem_team_config_t *config, long mask,
                 shmem_team_t *out) {
  struct shm_group g;
  shm__team_group(parent, &g);
  int ok = size > 0 && first >= 0 && first < parent->size &&
           first + (long)(size - 1) * stride >= 0 &&
           first + (long)(size - 1) * stride < parent->size &&
           (stride != 0 || size == 1);
  /* The reduction's values are taken before it returns; the barrier then
   * keeps the members' sources unchanged until every one has read them. */
  ok = same_split(parent, &g, first, stride, size) && ok;
  shm__barrier(&g);
  if (ok && parent->me == first) {
    long slot = take_slot(), v = slot < 0 ? -2 : slot;
    for (int i = 0; i < parent->size; i++) {
      if (shm__s.net) /* complete before the barrier: the quiet below */
        shm__amo(&g.sync[2], parent->world[i], SYMHEAP_AMO_SET, sizeof(long),
                 &v, NULL, NULL);
      else
        __atomic_store_n((long *)shm__peer(&g.sync[2], parent->world[i]), v,
                         __ATOMIC_RELEASE);
    }
    if (shm__s.net)
      shm__net_quiet();
  }
  shm__barrier(&g);
  long slot = ok ? __atomic_load_n(&g.sync[2], __ATOMIC_ACQUIRE) : -2;
  *out = SHMEM_TEAM_INVALID;
  if (slot < 0)
    return -1;
  int me = -1;
  if (stride != 0 && (parent->me - first) % stride == 0 &&
      (parent->me - first) / stride >= 0 &&
      (parent->me - first) / stride < size)
    me = (parent->me - first) / stride;
  if (stride == 0 && parent->me == first)
    me = 0;
  if (me < 0)
    return 0;
  struct symheap_shmem_team *t = calloc(1, sizeof *t);
  int *w = malloc((size_t)size * sizeof(int));
  if (!t || !w) {
    free(t);
    free(w);
    return -1;
  }
  for (int i = 0; i < size; i++)
    w[i] = parent->world[first + i * stride];
  *t = (struct symheap_shmem_team){.slot = (int)slot,
                                   .size = size,
                                   .me = me,
                                   .world = w,
                                   .heap_owned = 1,
                                   .config_mask = mask};
  if (config && (mask & SHMEM_TEAM_NUM_CONTEXTS))
    t->config.num_contexts = config->num_contexts;
  live[slot] = t;
  *out = t;
  return 0;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride,
                             int size, const shmem_team_config_t *config,
                             long config_mask, shmem_team_t *new_team) {
  shm__require_init("shmem_team_split_strided");
  if (shm__team_gone(parent_team)) {
    *new_team = SHMEM_TEAM_INVALID;
    return -1;
  }
  return split(parent_team, start, stride, size, config, config_mask, new_team);
}

/* The parent as a grid of xrange columns: x teams are rows, y teams are
 * columns.  Every parent PE takes part in every split (collective), each
 * joining only its own row and column. */
int shmem_team_split_2d(shmem_team_t parent, int xrange,
                        const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team,
                        const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team) {
  shm__require_init("shmem_team_split_2d");
  *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
  if (shm__team_gone(parent) || xrange <= 0)
    return -1;
  int n = parent->size;
  if (xrange > n)
    xrange = n;
  int rows = (n + xrange - 1) / xrange;
  int rc = 0;
  for (int r = 0; r < rows; r++) {
    int len = r == rows - 1 ? n - r * xrange : xrange;
    shmem_team_t t;
    rc |= split(parent, r * xrange, 1, len, xaxis_config, xaxis_mask, &t);
    if (t != SHMEM_TEAM_INVALID)
      *xaxis_team = t;
  }
  for (int c = 0; c < xrange; c++) {
    int len = (n - c + xrange - 1) / xrange;
    shmem_team_t t;
    rc |= split(parent, c, xrange, len, yaxis_config, yaxis_mask, &t);
    if (t != SHMEM_TEAM_INVALID)
      *yaxis_team = t;
  }
  return rc ? -1 : 0;
}

/* Collective over the team: a barrier, so that nobody still uses the slot,
 * then its first PE gives the slot back (its words are zero again: every
 * barrier leaves them so). */
void shmem_team_destroy(shmem_team_t team) {
  if (team == SHMEM_TEAM_INVALID || team == SHMEM_TEAM_WORLD ||
      team == SHMEM_TEAM_SHARED || team->slot < 0)
    return;
  struct shm_group g;
  shm__team_group(team, &g);
  shm__barrier(&g);
  if (team->me == 0)
    give_slot(team->slot);
  live[team->slot] = NULL;
  free(team->world);
  *team = (struct symheap_shmem_team){.slot = -1, .me = -1};
  keep_husk(team);
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx) {
  if (!ctx)
    return -1;
  *ctx = SHMEM_CTX_INVALID;
  if (shm__team_gone(team))
    return -1;
  struct symheap_shmem_ctx *c = malloc(sizeof *c);
  if (!c)
    return -1;
  c->team = team;
  c->options = options;
  __atomic_fetch_add(&team->nctx, 1, __ATOMIC_RELAXED);
  *ctx = c;
  return 0;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx) {
  return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}

void shmem_ctx_destroy(shmem_ctx_t ctx) {
  if (ctx == SHMEM_CTX_INVALID || ctx == SHMEM_CTX_DEFAULT)
    return;
  if (!ctx->team)
    shm__fatal("shmem_ctx_destroy: the context was destroyed already");
  __atomic_thread_fence(__ATOMIC_SEQ_CST); /* its operations are complete */
  __atomic_fetch_sub(&ctx->team->nctx, 1, __ATOMIC_RELAXED);
  ctx->team = NULL;
  keep_husk(ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team) {
  if (!team)
    return -1;
  if (ctx == SHMEM_CTX_INVALID || !ctx->team || shm__team_gone(ctx->team)) {
    *team = SHMEM_TEAM_INVALID;
    return -1;
  }
  *team = ctx->team;
  return 0;
}

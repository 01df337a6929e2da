/* symheap-shmem internals: the state of one PE, address translation, the
 * bounded spin-wait and the group (team or active set) collectives build on.
 * Not installed.  Internal names start with shm__ and are not exported (the
 * version script exports shmem_* and symheap_shmem_* only). */
#ifndef SYMHEAP_SHMEM_INTERNAL_H
#define SYMHEAP_SHMEM_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "shmem.h"
#include "symheap.h"

#define SHM_MAX_TEAMS 64
/* Words of a group's synchronisation area (a team's slot, or pSync):
 * [0] arrivals (counted at the group's first PE), [1] release flag,
 * [2] a scratch word (collect sizes, a new team's slot). */
#define SHM_SYNC_WORDS 4
/* Eager collectives' data copied through the control block up to this many
 * bytes a PE (coll.c); above it, read from the caller's source, whose owner
 * waits for its readers.  The copy in and out costs more than that wait
 * from 8 KiB on: OSU at 2 PEs, broadcast 8-16 KiB took 1.4-2.4 us with
 * 16 KiB here and 0.35 with 4 KiB (docs/perf/openshmem.md, round 11).
 * Also where reductions of 3 PEs or more are split (coll.c). */
#define SHM_EAGER 4096
/* A broadcast whose root copies up to this many bytes in all (its data
 * times the members but itself) is written by the root into every
 * member's dest (coll.c, broadcast_push); a larger one is read by the
 * members, in parallel.  OSU at 4 PEs on 2 CPUs: pushed, 64 KiB took 3.4
 * us against 3.8-4.0 read, 128 KiB 6.7-7.1 against 5.7; at 2 PEs pushing
 * won up to 512 KiB and tied at 1 MiB (docs/perf/openshmem.md, round 14). */
#define SHM_PUSH (256 << 10)
/* The smallest put or get that may use streaming stores (copy.c), unless
 * SYMHEAP_SHMEM_STREAM_MIN says otherwise: shmem_fast.h's
 * SYMHEAP_SHMEM_FAST_COPY_MAX, the smallest copy the inline paths hand to
 * the library (a smaller minimum could not apply to them).  OSU's message rates
 * at 2 and 4 PEs ran 1.0-1.55x (median 1.4) as many 16 KiB puts and gets a
 * second streamed (round 15); in one process, 8 KiB copies to fresh offsets
 * went 1.17x as fast, 4 KiB 1.08x, 2 KiB slower. */
#define SHM_STREAM_MIN SYMHEAP_SHMEM_FAST_COPY_MAX
/* SYMHEAP_SHMEM_PREFAULT's default (prefault.c): an object is prefaulted
 * at allocation when its size times the PEs of its host is at most this.  It
 * costs its pages and page tables at shmem_malloc: on the 2-CPU machine a
 * new 4 MiB object took 1.8 ms at 2 PEs and 3.1 at 4 (0.001 without), a
 * 64 MiB one 30 and 63 ms.  OSU's latency benchmarks allocate 4 MiB
 * buffers (prefaulted up to 16 PEs a host); its message-rate ones 200 MiB,
 * which they put to whole before timing. */
#define SHM_PREFAULT_DEFAULT ((size_t)64 << 20)
/* A wait's pause-spins before it yields, with a CPU for each PE (init.c). */
#define SHM_SPINS_DEFAULT 3000

/* Lives at the start of every PE's symmetric heap, so peers reach it. */
struct shm_ctrl {
  int exit_req;        /* 1 + status once a PE called shmem_global_exit */
  int pid;             /* this PE's process, for the liveness check */
  int sleepers;        /* this PE's waits asleep in a futex (wait.c) */
  int cpu;             /* 1 + the CPU this PE's last wait began on, or 0 */
  /* This PE's waits asleep in the kernel: with more PEs than CPUs, a PE
   * sharing its CPU stays awake while every other one there sleeps
   * (wait.c, mates_asleep). */
  int asleep;
  uint64_t team_slots; /* on PE 0: which team slots are taken */
  long team_sync[SHM_MAX_TEAMS][SHM_SYNC_WORDS];
  /* A split's arguments as this PE gave them, twice (team.c, same_split),
   * per parent team's slot: the members compare them in one reduction. */
  long split_args[SHM_MAX_TEAMS][6];
  long alloc_args[6]; /* an allocation's size and alignment (heap.c) */
  /* On a group's first PE: the word its members sleep on while they wait
   * for their release flags (wait.c, shm__wait_raised), and how many do. */
  _Alignas(64) int wake_gen;
  int wake_sleepers;
  /* Eager collectives' data from this PE (coll.c): the PEs still to read
   * it, its length (above SHM_EAGER bytes it is read from the caller's
   * source instead of eager_data), and the data.  A cache line apart
   * from the wake word: every PE of a group writes the first PE's
   * wake_sleepers, and each reader its writer's eager_readers. */
  _Alignas(64) long eager_readers;
  long eager_len;
  _Alignas(64) char eager_data[SHM_EAGER];
};

struct symheap_shmem_team {
  int slot;       /* index into shm_ctrl.team_sync; -1 for a dead team */
  int size;       /* number of PEs */
  int me;         /* this PE's number in the team, -1 if not a member */
  int *world;     /* team PE -> world PE */
  int heap_owned; /* world is malloc'd (not the world team's) */
  shmem_team_config_t config;
  long config_mask;
  int nctx; /* contexts made on it and not destroyed */
};

struct symheap_shmem_ctx {
  shmem_team_t team;
  long options;
};

struct shm_state {
  int initialized;
  int me, npes;
  int thread_level;
  int push;  /* SYMHEAP_SHMEM_PUSH: collectives write into peers' dest */
  int eager; /* no PE asked for SHMEM_THREAD_MULTIPLE (init.c) */
  /* SYMHEAP_SHMEM_STREAM_MIN: puts and gets of this many bytes or more
   * choose their stores (copy.c); SIZE_MAX: none do. */
  size_t stream_min;
  /* Objects up to this many bytes get their page tables at allocation
   * (prefault.c: SYMHEAP_SHMEM_PREFAULT over this host's PEs); 0: none. */
  size_t prefault_max;
  symheap_comm_t comm;
  symheap_window_t heap_win;
  char *heap_base;
  size_t heap_size;
  char **heap_peer; /* npes entries */
  /* Per PE: where its heap starts in its window (heap.c: every PE's heap
   * starts 2 MiB-aligned, so that shmem_align has one offset for all);
   * window offsets on PE p are heap_shift[p] + the heap offset. */
  size_t *heap_shift;
  symheap_window_t data_win;
  void *data_mem;   /* symheap_mem_alloc'd backing of the data segment */
  char *data_base;  /* the program's own data+bss, page-aligned */
  size_t data_size; /* 0: the data segment is not symmetric */
  char **data_peer;
  struct shm_ctrl *ctrl;      /* this PE's */
  /* The job spans hosts (remote.c): PEs with remote[pe] set are on another
   * host (no heap_peer/data_peer: the one-sided API reaches them), and
   * every atomic goes through symheap_atomic. */
  int net;
  unsigned char *remote; /* npes entries, or NULL on one host */
  pthread_mutex_t net_lock;
  pthread_mutex_t lock;       /* the heap allocator and team slots */
  unsigned spin_before_yield; /* SYMHEAP_SHMEM_SPIN: pause-spins, then yield */
  int spin_explicit;          /* SYMHEAP_SHMEM_SPIN was set */
  long long wait_limit_ns;    /* SYMHEAP_SHMEM_TIMEOUT_MS (ns), or 0 */
};
extern struct shm_state shm__s;

/* copy.c: a put's or get's bytes between this PE's memory and a peer's
 * mapping: memcpy, or for stream_min bytes and more the stores it picks
 * (shm__copy_large, which says whether it streamed: test_shmem_copy.c
 * checks its choices).  Set up at shmem_init (stream_min 0: memcpy only);
 * shm__copy is also shmem_fast.h's symheap_shmem_fast_copy. */
void shm__copy_setup(size_t stream_min);
void shm__copy(void *dest, const void *src, size_t bytes);
int shm__copy_large(void *dest, const void *src, size_t bytes);

/* prefault.c: the page tables of objects of a page to prefault_max bytes,
 * made at allocation.  shm__prefault_setup (shmem_init, after the heap:
 * it counts the PEs whose heap this one maps) sets prefault_max from
 * SYMHEAP_SHMEM_PREFAULT's limit, and shm__prefault_info says what it
 * chose (SHMEM_INFO's line).  shm__prefault_own populates this PE's copy
 * (before the allocation's barrier: the pages are made here),
 * shm__prefault_peers this PE's mappings of the same-host peers' copies
 * (after it), where peer and base are the heap's or the data segment's.
 * Failures are ignored: the pages then fault as before. */
void shm__prefault_setup(size_t limit);
const char *shm__prefault_info(void);
void shm__prefault_own(const void *p, size_t bytes);
void shm__prefault_peers(char *const *peer, const char *base, const void *p,
                         size_t bytes);

/* A set of PEs that runs a collective: a team, or a deprecated active set
 * (start, stride, size), with the symmetric words it synchronises on. */
struct shm_group {
  const int *world; /* team PE -> world PE, or NULL for start + i*stride */
  int start, stride, size;
  int me;     /* this PE's index, -1 if not a member */
  long *sync; /* SHM_SYNC_WORDS symmetric longs */
};

/* base.c, the floor every other file stands on (it calls no shmem_
 * routine).  Errors that the specification leaves undefined end the job,
 * saying why. */
void shm__fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)))
__attribute__((noreturn));
/* [addr, addr + bytes) is not all in the heap or all in the data segment:
 * says which (not symmetric, or running past the region's end) and ends. */
void shm__range_fatal(const void *addr, size_t bytes) __attribute__((noreturn));
/* n elements of elem bytes, every |stride|-th element, in bytes from the
 * lowest to past the highest: 0 for none, SIZE_MAX when that does not fit
 * a size_t (no region holds it; shm__range_fatal says the count
 * overflowed).  Strided transfers (rma.c) and alltoalls (coll.c). */
static inline size_t shm__span(size_t n, ptrdiff_t stride, size_t elem) {
  size_t step = stride < 0 ? (size_t)0 - (size_t)stride : (size_t)stride;
  size_t span;
  if (!n)
    return 0;
  if (__builtin_mul_overflow(n - 1, step, &span) ||
      __builtin_mul_overflow(span, elem, &span) ||
      __builtin_add_overflow(span, elem, &span))
    return SIZE_MAX;
  return span;
}
void shm__require_init(const char *fn);
/* Every PE is asked to exit with `status` (at its next wait); this one
 * exits now.  shmem_global_exit is this. */
void shm__exit_all(int status) __attribute__((noreturn));

/* NULL instead of failing, for shmem_ptr and shmem_addr_accessible. */
char *shm__peer_or_null(const void *addr, int pe);

/* One turn of a wait loop (wait.c): spin briefly, then yield, then sleep
 * (the machine may have fewer cores than PEs); ends the job when a PE
 * called shmem_global_exit or a PE's process is gone. */
struct shm_spin {
  unsigned n;
  long long next_check_ns;
  int shared_cpu; /* with more PEs than CPUs: another PE's wait began on
                     this wait's CPU (wait.c) */
  int awake;            /* may stay awake for its CPU (a barrier's wait) */
  long long awake_from; /* when it began to stay awake for its CPU (ns) */
  long long yield_from; /* when an oversubscribed wait began to yield (ns) */
  long long began;      /* when the wait began (its first check, ns) */
  int polls; /* the turns of a caller's loop on shmem_test: not bounded by
                SYMHEAP_SHMEM_TIMEOUT_MS (the caller works between them) */
  symheap_wait_state_t net; /* across hosts: the core's wait turns */
};
#define SHM_SPIN_INIT                                                          \
  { 0, 0, 0, 0, 0, 0, 0, 0, {0} }
void shm__spin(struct shm_spin *s);
/* A global exit asked for, or a PE gone: end the job (every wait's turn). */
void shm__turn_checks(struct shm_spin *s);
/* The same, for a wait on `word` (4-byte aligned; its low 32 bits must
 * change when the wait is over) that the writer follows with shm__wake:
 * it sleeps in a futex on the word instead of a timed sleep, unless the
 * word no longer holds `seen`, the low 32 bits of the value the caller's
 * loop saw (a value read here could already be the one it waits for). */
void shm__spin_on(struct shm_spin *s, const void *word, int seen);
/* After a store to `word` (in this PE's mapping of PE pe's memory): wake
 * its waits if PE pe has any asleep. */
void shm__wake(int pe, const void *word);
/* More PEs than this process has CPUs (waits sleep almost at once). */
int shm__oversubscribed(void);
/* Notes this PE's CPU in its control page, where the PEs sharing it look
 * (wait.c); returns it, or -1.  At each wait's start and each barrier's
 * arrival: a PE that is always the last to arrive never waits. */
int shm__note_cpu(void);
/* Until this PE's release flag (sync[1] of a group whose first PE is
 * root) holds n or more; returns what it held.  One host only. */
long shm__wait_raised(const long *flag, long n, int root);
/* A barrier's wait for its release (flag at 1 or more): the same, but
 * with more PEs than CPUs it stays awake a while where every other PE of
 * its CPU sleeps (wait.c, turn_over). */
void shm__wait_released(const long *flag, int root);
/* After raising members' flags of a group whose first PE is root: wakes
 * whichever of them sleep, with one system call. */
void shm__wake_group(int root);

int shm__compare(int cmp, const void *a, const void *b, int is_signed,
                 int is_float, size_t size);

/* Groups. */
void shm__team_group(shmem_team_t team, struct shm_group *g);
int shm__active_group(int start, int log_stride, int size, long *psync,
                      struct shm_group *g);
static inline int shm__group_pe(const struct shm_group *g, int i) {
  return g->world ? g->world[i] : g->start + i * g->stride;
}
void shm__barrier(const struct shm_group *g);
/* Combines n elements of `in` into `acc`. */
typedef void (*shm_combine_fn)(void *acc, const void *in, size_t n);
/* Whether every member gave the same three values (a collective: one
 * reduction of their minima and maxima into all[0..2] and all[3..5]);
 * scratch: 6 symmetric longs of this PE's that nothing else writes until
 * the caller's next collective on g. */
int shm__same3(const struct shm_group *g, long *scratch, const long v[3],
               long all[6]);
void shm__reduce(const struct shm_group *g, void *dest, const void *source,
                 size_t n, size_t elem, shm_combine_fn combine);
void shm__broadcast(const struct shm_group *g, void *dest, const void *source,
                    size_t bytes, int root, int root_too);
void shm__collect(const struct shm_group *g, void *dest, const void *source,
                  size_t bytes, int fixed);
void shm__alltoalls(const struct shm_group *g, void *dest, const void *source,
                    ptrdiff_t dst, ptrdiff_t sst, size_t n, size_t elem);

/* remote.c: the one-sided API, for PEs on other hosts and for every atomic
 * of a job that spans hosts.  Each ends the job, saying why, on failure. */
void shm__where(const void *addr, int pe, symheap_window_t *win, size_t *off);
void shm__net_put(void *dest, const void *src, size_t bytes, int pe, int nbi);
void shm__net_get(void *dest, const void *src, size_t bytes, int pe, int nbi);
void shm__net_strided(char *d, ptrdiff_t dst, const char *s, ptrdiff_t sst,
                      size_t n, size_t elem, int pe, int is_put);
void shm__amo(const void *addr, int pe, symheap_amo_t op, size_t size,
              const void *operand, const void *compare, void *result);
void shm__net_put_signal(void *dest, const void *src, size_t bytes,
                         uint64_t *sig, uint64_t value, symheap_amo_t op,
                         int pe);
void shm__net_quiet(void);
void shm__net_fence(void);
/* wait.c, beside the other waits: wait until this PE's 8-byte symmetric
 * word compares true with value. */
uint64_t shm__net_wait_word(const void *word, int cmp, uint64_t value);
/* bytes of PE pe's copy of the symmetric src into dest (private memory):
 * a copy through the mapping, or a get (remote.c). */
void shm__getmem(void *dest, const void *src, size_t bytes, int pe);

/* SHMEM_TEAM_INVALID, or a team destroyed (team.c keeps it, slot -1). */
static inline int shm__team_gone(shmem_team_t team) {
  return team == SHMEM_TEAM_INVALID || team->slot < 0;
}

/* Heap (heap.c) and teams (team.c) set-up. */
int shm__heap_init(void);
void shm__heap_fini(void);
int shm__teams_init(void);
void shm__teams_fini(void);
int shm__data_segment_init(void);
void shm__data_segment_fini(void);

#endif /* SYMHEAP_SHMEM_INTERNAL_H */

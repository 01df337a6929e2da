/* Multi-rank checks through the core, with ranks the kit starts itself:
 * K.ranks threads of one process, or K.ranks processes it forks (joined
 * with a unique id, the local bootstrap), so that a vendor needs nothing
 * but the kit.  Every rank writes what went wrong into shared memory. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit.h"

typedef struct {
  int bad, claimed, injected, cpu;
  char why[600];
} shared_t;
static shared_t *S;

static void rank_fail(int rank, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rank_fail(int rank, const char *fmt, ...) {
  __atomic_add_fetch(&S->bad, 1, __ATOMIC_SEQ_CST);
  if (__atomic_exchange_n(&S->claimed, 1, __ATOMIC_SEQ_CST))
    return; /* the first failure's text is the one shown */
  int o = snprintf(S->why, sizeof S->why, "rank %d: ", rank);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(S->why + o, sizeof S->why - (size_t)o, fmt, ap);
  va_end(ap);
}

typedef void (*rank_fn)(symheap_comm_t comm, int rank, int n);
typedef struct {
  const symheap_unique_id_t *id;
  int rank, n;
  rank_fn fn;
} rank_arg_t;

static void *one_rank(void *p) {
  rank_arg_t *a = p;
  symheap_comm_t comm;
  symheap_result_t r = symheap_comm_init(&comm, a->n, a->id, a->rank);
  if (r != SYMHEAP_SUCCESS) {
    rank_fail(a->rank, "symheap_comm_init %s", kit_said(r));
    return NULL;
  }
  a->fn(comm, a->rank, a->n);
  r = symheap_comm_destroy(comm);
  if (r != SYMHEAP_SUCCESS)
    rank_fail(a->rank, "symheap_comm_destroy %s", kit_said(r));
  return NULL;
}

static void run_ranks(int procs, rank_fn fn) {
  symheap_unique_id_t id;
  int n = K.ranks;
  if (symheap_get_unique_id(&id) != SYMHEAP_SUCCESS) {
    rank_fail(0, "symheap_get_unique_id: %s", symheap_last_error());
    return;
  }
  rank_arg_t a[16];
  pthread_t th[16];
  pid_t pid[16];
  for (int r = 0; r < n; r++) {
    a[r] = (rank_arg_t){&id, r, n, fn};
    if (!procs) {
      pthread_create(&th[r], NULL, one_rank, &a[r]);
      continue;
    }
    fflush(stdout);
    pid[r] = fork();
    if (pid[r] == 0) {
      one_rank(&a[r]);
      _exit(0);
    }
  }
  for (int r = 0; r < n; r++) {
    if (!procs) {
      pthread_join(th[r], NULL);
      continue;
    }
    int st = 0;
    waitpid(pid[r], &st, 0);
    if (WIFSIGNALED(st))
      rank_fail(r, "the rank's process was killed by signal %d (%s)",
                WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      rank_fail(r, "the rank's process exited with status %d", WEXITSTATUS(st));
  }
}

static int same_stats(const symheap_comm_stats_t *a,
                      const symheap_comm_stats_t *b) {
  return a->windows_live == b->windows_live &&
         a->allocations_live == b->allocations_live &&
         a->bytes_mapped == b->bytes_mapped &&
         a->va_reserved == b->va_reserved &&
         a->descriptors_held == b->descriptors_held;
}

/* --- the flat VA: every rank's bytes at base + rank * stride ----------- */
#define FLAT 200000
static char pat(int r, size_t i) { return (char)(r * 31 + i * 7 + 1); }

static void flat_body(symheap_comm_t comm, int rank, int n) {
  symheap_window_t w;
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  symheap_comm_get_info(comm, &info);
  S->cpu = info.cpu_access;
  symheap_result_t r = symheap_malloc(comm, FLAT, 0, &w);
  if (r != SYMHEAP_SUCCESS) {
    rank_fail(rank, "symheap_malloc(%d) %s", FLAT, kit_said(r));
    return;
  }
  char *base = NULL, *mine = NULL;
  size_t stride = 0;
  if (symheap_window_flat_base(w, (void **)&base, &stride) != SYMHEAP_SUCCESS ||
      !base || stride < FLAT || (info.granularity && stride % info.granularity))
    rank_fail(rank,
              "flat base %p, stride %zu: expected a base and a stride "
              "of at least %d bytes, a multiple of the granularity %zu",
              (void *)base, stride, FLAT, info.granularity);
  symheap_window_local_ptr(w, (void **)&mine);
  if (info.cpu_access && base) {
    int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    for (size_t i = 0; i < FLAT / 2; i += 997) {
      base[(size_t)rank * stride + i] = pat(rank, i);
      /* a peer write: into the next rank's memory, through the flat VA */
      base[(size_t)next * stride + FLAT / 2 + i] = pat(rank + 100, i);
    }
    symheap_comm_barrier(comm);
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < FLAT / 2; i += 997)
        if (base[(size_t)p * stride + i] != pat(p, i)) {
          rank_fail(rank,
                    "rank %d's byte %zu read through base + %d * "
                    "stride is 0x%02x, expected 0x%02x",
                    p, i, p, (unsigned char)base[(size_t)p * stride + i],
                    (unsigned char)pat(p, i));
          p = n;
          break;
        }
    for (size_t i = 0; i < FLAT / 2 && mine; i += 997)
      if (mine[FLAT / 2 + i] != pat(prev + 100, i)) {
        rank_fail(rank,
                  "rank %d's write into this rank's memory (byte %zu) "
                  "did not land: reads 0x%02x through the local pointer",
                  prev, FLAT / 2 + i, (unsigned char)mine[FLAT / 2 + i]);
        break;
      }
  }
  symheap_comm_barrier(comm);
  r = symheap_free(comm, w);
  if (r != SYMHEAP_SUCCESS)
    rank_fail(rank, "symheap_free %s", kit_said(r));
}

static void flat(int procs) {
  S = kit_shared(sizeof *S);
  setenv("SYMHEAP_DEVICE", K.name, 1);
  kit_stage("%d ranks as %s: malloc, flat VA, peer writes", K.ranks,
            procs ? "processes" : "threads");
  run_ranks(procs, flat_body);
  if (S->bad)
    kit_fail("%s", S->why);
  else if (!S->cpu)
    kit_pass("%d ranks as %s: a window of %d bytes mapped with a flat base "
             "(no CPU access: the bytes are checked by device code)",
             K.ranks, procs ? "processes" : "threads", FLAT);
  else
    kit_pass("%d ranks as %s: every rank reads every rank's bytes at base + "
             "rank * stride, and peer writes land in the peer's memory",
             K.ranks, procs ? "processes" : "threads");
}
static void check_flat_threads(void) { flat(0); }
static void check_flat_procs(void) { flat(1); }

/* --- ranks that disagree all get MISMATCH, nothing stays --------------- */
static void mismatch_body(symheap_comm_t comm, int rank, int n) {
  (void)n;
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  symheap_window_t w;
  symheap_comm_get_stats(comm, &s0);
  symheap_result_t r = symheap_malloc(comm, rank == 0 ? 65536 : 131072, 0, &w);
  if (r != SYMHEAP_ERR_MISMATCH) {
    rank_fail(rank,
              "sizes that differ between ranks: symheap_malloc "
              "returned %d (%s), expected SYMHEAP_ERR_MISMATCH on every rank",
              (int)r, symheap_strerror(r));
    if (r == SYMHEAP_SUCCESS)
      symheap_free(comm, w);
    return;
  }
  symheap_comm_get_stats(comm, &s1);
  if (!same_stats(&s0, &s1))
    rank_fail(rank,
              "after MISMATCH the comm's accounting moved (bytes "
              "mapped %llu -> %llu, descriptors %llu -> %llu)",
              (unsigned long long)s0.bytes_mapped,
              (unsigned long long)s1.bytes_mapped,
              (unsigned long long)s0.descriptors_held,
              (unsigned long long)s1.descriptors_held);
  r = symheap_malloc(comm, 65536, 0, &w);
  if (r != SYMHEAP_SUCCESS)
    rank_fail(rank, "after MISMATCH, a matching symheap_malloc %s",
              kit_said(r));
  else
    symheap_free(comm, w);
}
static void mismatch(int procs) {
  S = kit_shared(sizeof *S);
  setenv("SYMHEAP_DEVICE", K.name, 1);
  kit_stage("%d ranks: sizes that differ", K.ranks);
  run_ranks(procs, mismatch_body);
  if (S->bad)
    kit_fail("%s", S->why);
  else
    kit_pass("%d ranks as %s: every rank got MISMATCH, nothing stayed, the "
             "comm went on",
             K.ranks, procs ? "processes" : "threads");
}
static void check_mismatch_threads(void) { mismatch(0); }
static void check_mismatch_procs(void) { mismatch(1); }

/* --- rollback: a failure injected on one rank undoes everything -------- */
static void rollback_body(symheap_comm_t comm, int rank, int n) {
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  symheap_comm_barrier(comm);
  symheap_comm_get_stats(comm, &s0);
  long live0 = kit_faults_live(rank);
  for (int k = 0; kit_fault_ops[k] && !S->bad; k++)
    for (int victim = 0; victim < n && !S->bad; victim++)
      for (int nth = 1; nth <= 2 && !S->bad; nth++) {
        symheap_comm_barrier(comm);
        if (rank == 0)
          kit_faults_arm(kit_fault_ops[k], victim, nth);
        symheap_comm_barrier(comm);
        symheap_window_t w;
        symheap_result_t r = symheap_malloc(comm, 3 * 65536, 0, &w);
        symheap_comm_barrier(comm);
        if (rank == 0)
          S->injected += kit_faults_fired();
        int ok = r == SYMHEAP_SUCCESS, all[16];
        symheap_comm_allgather(comm, &ok, all, sizeof ok);
        for (int p = 0; p < n; p++)
          if (all[p] != ok)
            rank_fail(rank,
                      "%s failing (call %d) on rank %d: this rank "
                      "%s, rank %d %s",
                      kit_fault_ops[k], nth, victim,
                      ok ? "succeeded" : "failed", p,
                      all[p] ? "succeeded" : "failed");
        if (ok)
          symheap_free(comm, w);
        symheap_comm_get_stats(comm, &s1);
        if (!same_stats(&s0, &s1))
          rank_fail(rank,
                    "%s failing (call %d) on rank %d: the comm's "
                    "accounting moved (bytes mapped %llu -> %llu)",
                    kit_fault_ops[k], nth, victim,
                    (unsigned long long)s0.bytes_mapped,
                    (unsigned long long)s1.bytes_mapped);
        if (kit_faults_live(rank) != live0)
          rank_fail(rank,
                    "%s failing (call %d) on rank %d: %ld objects "
                    "(handles, reservations, mappings) left in the adaptor",
                    kit_fault_ops[k], nth, victim,
                    kit_faults_live(rank) - live0);
        symheap_comm_barrier(comm);
      }
}
static void rollback(int procs) {
  S = kit_shared(sizeof *S);
  char name[32];
  symheap_result_t r = kit_faults_register(name, sizeof name);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("the kit's fault layer over the adaptor was refused: %s",
             symheap_last_error());
    return;
  }
  setenv("SYMHEAP_DEVICE", name, 1);
  setenv("SYMHEAP_DEBUG", "NONE", 1); /* the injected failures' warnings */
  /* Every symheap_malloc a registration of its own, so that each one runs
   * the adaptor's whole create/export/import/map sequence (the heap would
   * serve most from memory it committed once). */
  setenv("SYMHEAP_HEAP", "0", 1);
  kit_stage("%d ranks: injected failures", K.ranks);
  run_ranks(procs, rollback_body);
  unsetenv("SYMHEAP_HEAP");
  if (S->bad)
    kit_fail("%s", S->why);
  else if (!S->injected)
    kit_fail("no failure could be injected: symheap_malloc made none of the "
             "adaptor calls the layer fails");
  else
    kit_pass("%d ranks as %s: %d failures injected (mem_create, mem_export, "
             "mem_import, va_reserve, map, set_access, mem_zero on each "
             "rank): every rank failed alike, the accounting and the "
             "adaptor's objects came back",
             K.ranks, procs ? "processes" : "threads", S->injected);
}
static void check_rollback_threads(void) { rollback(0); }
static void check_rollback_procs(void) { rollback(1); }

/* --- windows made and dropped through the core leave nothing ----------- */
/* One round: allocate, register, deregister, free, which makes the core
 * call mem_create, mem_export, mem_import, va_reserve, map, set_access and
 * their undoing on every rank. */
static int window_round(symheap_comm_t comm, int rank) {
  void *p = NULL;
  symheap_window_t w;
  symheap_result_t r = symheap_mem_alloc(comm, 3 * 65536, &p);
  if (r != SYMHEAP_SUCCESS) {
    rank_fail(rank, "symheap_mem_alloc %s", kit_said(r));
    return 0;
  }
  r = symheap_window_register(comm, p, 3 * 65536, 0, &w);
  if (r == SYMHEAP_SUCCESS)
    r = symheap_window_deregister(comm, w);
  symheap_result_t f = symheap_mem_free(comm, p);
  if (r != SYMHEAP_SUCCESS || f != SYMHEAP_SUCCESS) {
    rank_fail(rank, "window register/deregister/free %s",
              kit_said(r != SYMHEAP_SUCCESS ? r : f));
    return 0;
  }
  return 1;
}
static void window_leak_body(symheap_comm_t comm, int rank, int n) {
  (void)n;
  int rounds = K.cycles / 2;
  if (!window_round(comm, rank)) /* warm-up: first-use costs */
    return;
  kit_res_t a, b;
  symheap_comm_barrier(comm);
  kit_res(&a);
  for (int i = 0; i < rounds; i++)
    if (!window_round(comm, rank))
      return;
  symheap_comm_barrier(comm);
  kit_res(&b);
  char what[200];
  if (kit_leaked(&a, &b, rounds, 65536, what, sizeof what))
    rank_fail(rank,
              "%d rounds of symheap_mem_alloc, window_register, "
              "window_deregister, mem_free through the adaptor: %s leaked",
              rounds, what);
}
static void check_window_leak(void) {
  S = kit_shared(sizeof *S);
  setenv("SYMHEAP_DEVICE", K.name, 1);
  setenv("SYMHEAP_WINDOW_CACHE", "0", 1); /* every round maps anew */
  kit_stage("%d ranks as processes: window rounds", K.ranks);
  run_ranks(1, window_leak_body);
  if (S->bad)
    kit_fail("%s", S->why);
  else
    kit_pass("%d ranks as processes, %d rounds of allocate, register, "
             "deregister, free: every rank's descriptors, mappings and "
             "address space came back",
             K.ranks, K.cycles / 2);
}

const kit_check_t kit_rank_checks[] = {
    {"ranks_threads_flat_va", check_flat_threads,
     "--ranks threads: a window's flat VA; every rank's bytes at base + "
     "rank * stride, peer writes land"},
    {"ranks_procs_flat_va", check_flat_procs,
     "the same with --ranks processes the kit forks"},
    {"ranks_threads_mismatch", check_mismatch_threads,
     "ranks that disagree on a size all get MISMATCH; nothing stays"},
    {"ranks_procs_mismatch", check_mismatch_procs, "the same as processes"},
    {"ranks_threads_rollback", check_rollback_threads,
     "a failure injected in each operation on each rank: every rank fails "
     "alike, nothing stays in the comm or the adaptor"},
    {"ranks_procs_rollback", check_rollback_procs, "the same as processes"},
    {"ranks_procs_window_leak", check_window_leak,
     "rounds of allocate, register, deregister, free through the core leave "
     "no descriptor, mapping or address space on any rank"},
    {NULL, NULL, NULL}};

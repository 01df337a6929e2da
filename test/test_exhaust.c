/* Running out of things, and running at once.
 *  - out of memory at each allocation of a registration and of a
 *    deregistration (the library's malloc/calloc are wrapped at link time,
 *    -Wl,--wrap, and the Nth call of one thread fails): every rank fails
 *    alike, nothing changes, the comm goes on;
 *  - out of file descriptors (RLIMIT_NOFILE lowered under a registration):
 *    a clear error, full rollback, the comm goes on once the limit is back;
 *  - 10,000 malloc/free cycles per rank with descriptors, mappings and heap
 *    blocks in use (counted through the wrapped malloc/calloc/free)
 *    unchanged;
 *  - several comms in one process used from several threads at once: two
 *    jobs of two thread-ranks each, every rank also on a sub-communicator,
 *    registering, checking and deregistering concurrently. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness.h"

/* --- allocation failure injection --------------------------------------- */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void __wrap_free(void *p);
static __thread long countdown; /* 0: off; 1: this call fails */
static __thread long calls;
/* Blocks allocated and not freed, through the wrapped calls: the heap as
 * the library uses it, whichever arena glibc serves a thread from. */
static long live_blocks;

static int should_fail(void) {
  calls++;
  if (countdown == 0)
    return 0;
  if (--countdown == 0)
    return 1;
  return 0;
}
void *__wrap_malloc(size_t n) {
  void *p = should_fail() ? NULL : __real_malloc(n);
  if (p)
    __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
  return p;
}
void *__wrap_calloc(size_t n, size_t m) {
  void *p = should_fail() ? NULL : __real_calloc(n, m);
  if (p)
    __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
  return p;
}
void __wrap_free(void *p) {
  if (p)
    __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
  __real_free(p);
}

static symheap_comm_stats_t stats(symheap_comm_t c) {
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  symheap_comm_get_stats(c, &s);
  s.mappings_cached = 0; /* kept mappings are a cache, not a leak */
  return s;
}

typedef struct {
  int fired, absorbed, runs;
} sweep_t;

/* Fail the Nth allocation of `victim` during symheap_malloc (op 0) or
 * symheap_free (op 1), for N = 1, 2, ... until the call no longer
 * allocates that often. */
static void oom_sweep(th_ctx_t *c, int op, int victim, sweep_t *out) {
  for (long n = 1;; n++) {
    symheap_window_t w = NULL;
    if (op == 1)
      CHECK_OK(symheap_malloc(c->comm, 8192, 0, &w));
    CHECK_OK(symheap_comm_barrier(c->comm));
    symheap_comm_stats_t s0 = stats(c->comm);
    if (c->rank == victim)
      countdown = n;
    symheap_result_t r = op == 0 ? symheap_malloc(c->comm, 8192, 0, &w)
                                 : symheap_free(c->comm, w);
    int fired = c->rank == victim && countdown == 0;
    countdown = 0;
    int any = fired;
    int all[16] = {0};
    CHECK_OK(symheap_comm_allgather(c->comm, &any, all, sizeof any));
    any = 0;
    for (int p = 0; p < c->n; p++)
      any |= all[p];
    if (!any) { /* the call made fewer than n allocations: done */
      CHECK_OK(r);
      if (op == 0 && r == SYMHEAP_SUCCESS)
        CHECK_OK(symheap_free(c->comm, w));
      out->runs = (int)n - 1;
      return;
    }
    out->fired++;
    /* Every rank ends alike: all failed, or all succeeded (a failure the
     * library absorbs: a missing optional table only costs the cache). */
    int ok = r == SYMHEAP_SUCCESS, oks[16] = {0};
    CHECK_OK(symheap_comm_allgather(c->comm, &ok, oks, sizeof ok));
    for (int p = 0; p < c->n; p++)
      CHECK(oks[p] == ok,
            "allocation %ld failing on rank %d: rank %d %s, "
            "rank %d %s",
            n, victim, c->rank, ok ? "succeeded" : "failed", p,
            oks[p] ? "succeeded" : "failed");
    if (ok) {
      out->absorbed++;
      if (op == 0)
        CHECK_OK(symheap_free(c->comm, w));
      symheap_comm_stats_t s2 = stats(c->comm);
      CHECK(memcmp(&s0, &s2, sizeof s0) == 0 || op == 1,
            "accounting after an absorbed failure");
      continue;
    }
    if (c->rank == victim)
      CHECK(r == SYMHEAP_ERR_NO_MEMORY, "the failing rank got %s (%s)",
            symheap_strerror(r), symheap_last_error());
    symheap_comm_stats_t s1 = stats(c->comm);
    CHECK(memcmp(&s0, &s1, sizeof s0) == 0,
          "%s with allocation %ld failing changed the accounting",
          op ? "free" : "malloc", n);
    if (op == 1) { /* the window is still there, and goes now */
      size_t sz = 0;
      CHECK_OK(symheap_window_size(w, &sz));
      CHECK_OK(symheap_free(c->comm, w));
    }
    if (th_total_failures())
      return;
  }
}

static void oom_body(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("exhaust", "out_of_memory_at_each_allocation", c->rank);
  CHECK_OK(symheap_comm_barrier(c->comm));
  int fds0 = th_count_symheap_fds();
  CHECK_OK(symheap_comm_barrier(c->comm));
  symheap_comm_stats_t base = stats(c->comm);
  sweep_t sw[2][2];
  memset(sw, 0, sizeof sw);
  for (int op = 0; op < 2; op++)
    for (int victim = 0; victim < c->n; victim++)
      oom_sweep(c, op, victim, &sw[op][victim]);
  CHECK_OK(symheap_comm_barrier(c->comm));
  symheap_comm_stats_t end = stats(c->comm);
  CHECK(memcmp(&base, &end, sizeof base) == 0, "accounting moved");
  if (c->rank == 0) {
    CHECK(th_count_symheap_fds() == fds0, "fds %d -> %d", fds0,
          th_count_symheap_fds());
    printf("# out-of-memory injected at every allocation: malloc %d+%d, "
           "free %d+%d (ranks 0+1); %d absorbed without failing the call\n",
           sw[0][0].fired, sw[0][1].fired, sw[1][0].fired, sw[1][1].fired,
           sw[0][0].absorbed + sw[0][1].absorbed + sw[1][0].absorbed +
               sw[1][1].absorbed);
  }
  th_end();
}

/* A barrier and an allgather never skip their part for want of memory: a
 * rank whose allocations fail still takes part (barrier: no allocation at
 * all), so the ranks' collectives never pair off by one. */
static void no_skip_body(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("exhaust", "collectives_never_skip_their_part", c->rank);
  for (int round = 0; round < 5; round++) {
    if (c->rank == 1)
      countdown = 1; /* its next allocation fails */
    CHECK_OK(symheap_comm_barrier(c->comm));
    if (c->rank == 1) {
      CHECK(countdown == 1, "the barrier allocated");
      countdown = 0;
    }
    /* The ranks are still in step: an allgather of the round agrees. */
    int mine = round * 10 + c->rank, all[2] = {-1, -1};
    CHECK_OK(symheap_comm_allgather(c->comm, &mine, all, sizeof mine));
    CHECK(all[0] == round * 10 && all[1] == round * 10 + 1,
          "round %d: allgather gave %d %d", round, all[0], all[1]);
  }
  /* An allgather that needs memory (above one round) and cannot get it on
   * one rank fails on both, and the comm goes on. */
  size_t big = 256u << 10;
  char *in = malloc(big), *out = malloc(2 * big);
  if (c->rank == 1)
    countdown = 1;
  symheap_result_t r = symheap_comm_allgather(c->comm, in, out, big);
  countdown = 0;
  CHECK(r == SYMHEAP_ERR_NO_MEMORY, "allgather with no memory on rank 1: %s",
        symheap_strerror(r));
  CHECK_OK(symheap_comm_barrier(c->comm));
  free(in);
  free(out);
  th_end();
}

/* Every size the API accepts works, at any rank count (17 ranks x 1 MiB
 * once broke the comm); a size it refuses is refused on every rank and the
 * comm stays usable. */
static void allgather_sizes_body(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("exhaust", "allgather_every_accepted_size", c->rank);
  size_t max = SYMHEAP_ALLGATHER_MAX;
  unsigned char *in = malloc(max + 1), *out = malloc((max + 1) * (size_t)c->n);
  CHECK(in && out, "no memory for the test's buffers");
  if (in && out) {
    for (size_t i = 0; i < max; i++)
      in[i] = (unsigned char)(c->rank * 31 + i);
    CHECK_OK(symheap_comm_allgather(c->comm, in, out, max));
    int bad = -1;
    for (int p = 0; p < c->n && bad < 0; p++)
      for (size_t i = 0; i < max; i += 4093)
        if (out[(size_t)p * max + i] != (unsigned char)(p * 31 + i))
          bad = p;
    CHECK(bad < 0, "rank %d's bytes came back wrong", bad);
    CHECK_ERR(symheap_comm_allgather(c->comm, in, out, max + 1),
              SYMHEAP_ERR_INVALID_ARG);
    CHECK_OK(symheap_comm_barrier(c->comm));
  }
  free(in);
  free(out);
  th_end();
}

/* Two threads on one comm (not allowed): the second thread's call fails at
 * once, saying what the caller did, and leaves nothing behind; the first
 * call completes, and the comm goes on (it once failed with "rank 1 is out
 * of step", blaming a peer, and left an allocation behind). */
typedef struct {
  symheap_comm_t comm;
  symheap_result_t r;
  char msg[512];
  symheap_comm_stats_t before, after;
} intruder_t;

static void *intruder(void *arg) {
  intruder_t *x = arg;
  symheap_window_t w = NULL;
  usleep(100 * 1000); /* its owner is in a barrier by now (300 ms long) */
  symheap_comm_get_stats(x->comm, &x->before);
  x->r = symheap_malloc(x->comm, 4096, 0, &w);
  snprintf(x->msg, sizeof x->msg, "%s", symheap_last_error());
  symheap_comm_get_stats(x->comm, &x->after);
  return NULL;
}

static void two_threads_body(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("exhaust", "two_threads_on_one_comm_refused", c->rank);
  for (int round = 0; round < 3; round++) {
    if (c->rank == 1) {
      usleep(300 * 1000); /* rank 0 waits in its barrier meanwhile */
      CHECK_OK(symheap_comm_barrier(c->comm));
    } else {
      intruder_t x;
      memset(&x, 0, sizeof x);
      x.comm = c->comm;
      x.before.struct_size = x.after.struct_size = sizeof x.before;
      pthread_t t;
      pthread_create(&t, NULL, intruder, &x);
      CHECK_OK(symheap_comm_barrier(c->comm)); /* the intruder comes in */
      pthread_join(t, NULL);
      CHECK(x.r == SYMHEAP_ERR_INVALID_ARG &&
                strstr(x.msg, "another thread is in symheap_comm_barrier"),
            "the second thread's malloc: %s (%s)", symheap_strerror(x.r),
            x.msg);
      CHECK(memcmp(&x.before, &x.after, sizeof x.before) == 0,
            "the refused call changed the comm's accounting");
    }
  }
  /* The comm goes on. */
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* Limits name themselves: with the process at vm.max_map_count, a new
 * allocation fails saying so (it once said "mmap: Cannot allocate memory").
 * Not under valgrind or the sanitizers, which need mappings of their own. */
static void map_limit(void) {
  const char *tool = getenv("SYMHEAP_TEST_UNDER_TOOL");
  if (tool) {
    printf("SKIP exhaust/max_map_count_named: under %s, which maps memory "
           "of its own (runs in the plain pass)\n",
           tool);
    return;
  }
  th_begin("exhaust", "max_map_count_named", 0);
  symheap_unique_id_t id;
  symheap_comm_t c = NULL;
  CHECK_OK(symheap_get_unique_id(&id));
  CHECK_OK(symheap_comm_init(&c, 1, &id, 0));
  /* Fill the process's mappings: one-page holes between them, so that none
   * merges with its neighbour. */
  enum { MAX = 1 << 20 };
  static void *maps[MAX];
  int n = 0;
  char *base = mmap(NULL, (size_t)2 * MAX * 4096, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(base != MAP_FAILED, "no address space for the test");
  if (base != MAP_FAILED && c) {
    munmap(base, (size_t)2 * MAX * 4096);
    while (n < MAX &&
           (maps[n] = mmap(base + (size_t)2 * n * 4096, 4096, PROT_READ,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                           -1, 0)) != MAP_FAILED)
      n++;
    void *p = NULL;
    symheap_result_t r = symheap_mem_alloc(c, 1 << 20, &p);
    CHECK(r == SYMHEAP_ERR_NO_MEMORY &&
              strstr(symheap_last_error(), "vm.max_map_count"),
          "with %d mappings made: %s (%s)", n, symheap_strerror(r),
          symheap_last_error());
    if (r == SYMHEAP_SUCCESS)
      symheap_mem_free(c, p);
    for (int i = 0; i < n; i++)
      munmap(maps[i], 4096);
  }
  if (c)
    CHECK_OK(symheap_comm_destroy(c));
  th_end();
}

/* --- descriptors ---------------------------------------------------------- */
static pthread_barrier_t fd_bar;
static void emfile_body(th_ctx_t *c, void *arg) {
  (void)arg;
  const char *tool = getenv("SYMHEAP_TEST_UNDER_TOOL");
  if (tool && strcmp(tool, "valgrind") == 0) {
    if (c->rank == 0)
      printf("SKIP exhaust/out_of_descriptors: valgrind keeps descriptors of "
             "its own and emulates RLIMIT_NOFILE (runs in the other passes)\n");
    return;
  }
  th_begin("exhaust", "out_of_descriptors", c->rank);
  symheap_window_t w;
  CHECK_OK(symheap_comm_barrier(c->comm));
  symheap_comm_stats_t s0 = stats(c->comm);
  int fds0 = th_count_symheap_fds();
  struct rlimit old;
  getrlimit(RLIMIT_NOFILE, &old);
  pthread_barrier_wait(&fd_bar);
  if (c->rank == 0) { /* process-wide: no new descriptor at all */
    struct rlimit low = old;
    low.rlim_cur = (rlim_t)fds0;
    setrlimit(RLIMIT_NOFILE, &low);
  }
  pthread_barrier_wait(&fd_bar);
  symheap_result_t r = symheap_malloc(c->comm, 1 << 20, 0, &w);
  pthread_barrier_wait(&fd_bar);
  if (c->rank == 0)
    setrlimit(RLIMIT_NOFILE, &old);
  pthread_barrier_wait(&fd_bar);
  CHECK(r != SYMHEAP_SUCCESS, "malloc succeeded with no descriptor to spare");
  CHECK(strstr(symheap_last_error(), "Too many open files") ||
            strstr(symheap_last_error(), "rank "),
        "the error does not say why: %s", symheap_last_error());
  symheap_comm_stats_t s1 = stats(c->comm);
  CHECK(memcmp(&s0, &s1, sizeof s0) == 0, "a failed malloc changed the "
                                          "accounting");
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) /* counted between barriers: the other rank is idle */
    CHECK(th_count_symheap_fds() == fds0, "fds %d -> %d", fds0,
          th_count_symheap_fds());
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_malloc(c->comm, 1 << 20, 0, &w)); /* and it goes on */
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* --- 10,000 cycles ------------------------------------------------------- */
static void cycles_body(th_ctx_t *c, void *arg) {
  (void)arg;
  const int n = getenv("SYMHEAP_TEST_UNDER_TOOL") ? 1000 : 10000;
  char name[64];
  snprintf(name, sizeof name, "malloc_free_cycles_%d", n);
  th_begin("exhaust", name, c->rank);
  symheap_window_t w;
  /* A few cycles first: state made lazily (glibc's per-thread caches fill
   * on the first frees), which is not growth. */
  for (int i = 0; i < 16; i++) {
    CHECK_OK(symheap_malloc(c->comm, 65536, 0, &w));
    CHECK_OK(symheap_free(c->comm, w));
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  int fds0 = 0, maps0 = 0;
  long heap0 = 0;
  if (c->rank == 0) {
    fds0 = th_count_symheap_fds();
    maps0 = th_count_symheap_maps();
    heap0 = __atomic_load_n(&live_blocks, __ATOMIC_RELAXED);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int i = 0; i < n; i++) {
    symheap_result_t r = symheap_malloc(c->comm, 65536, 0, &w);
    if (r == SYMHEAP_SUCCESS)
      r = symheap_free(c->comm, w);
    if (r != SYMHEAP_SUCCESS) {
      CHECK_OK(r);
      break;
    }
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    long heap1 = __atomic_load_n(&live_blocks, __ATOMIC_RELAXED);
    /* Growth is a leak; one block fewer was seen once under ASan (a block
     * made before the loop and freed in it, e.g. by the other rank's thread
     * between the barrier and the count), which is not. */
    CHECK(th_count_symheap_fds() == fds0 && th_count_symheap_maps() == maps0 &&
              heap1 <= heap0,
          "after %d cycles: fds %d -> %d, maps %d -> %d, heap blocks in use "
          "%ld -> %ld",
          n, fds0, th_count_symheap_fds(), maps0, th_count_symheap_maps(),
          heap0, heap1);
    printf("# %d cycles per rank: fds %d, memfd mappings %d, heap blocks in "
           "use %ld, before and after\n",
           n, fds0, maps0, heap0);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  th_end();
}

/* --- several comms, several threads -------------------------------------- */
typedef struct {
  symheap_unique_id_t *id;
  int job, rank;
  int failures;
} conc_t;

static void *conc_rank(void *arg) {
  conc_t *a = arg;
  th_begin("exhaust", "comms_used_from_threads_at_once", a->job * 2 + a->rank);
  symheap_comm_t c = NULL, sub = NULL;
  CHECK_OK(symheap_comm_init(&c, 2, a->id, a->rank));
  if (c)
    CHECK_OK(symheap_comm_split(c, 0, -a->rank, &sub)); /* reversed */
  for (int i = 0; c && sub && i < 200; i++) {
    symheap_comm_t on = (i % 2) ? sub : c;
    int me = 0;
    symheap_comm_rank(on, &me);
    symheap_window_t w;
    symheap_result_t r = symheap_malloc(on, 4096 * (size_t)(1 + i % 5), 0, &w);
    CHECK_OK(r);
    if (r != SYMHEAP_SUCCESS)
      break;
    int *mine = NULL, *peer = NULL;
    CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
    *mine = a->job * 100000 + me * 1000 + i;
    CHECK_OK(symheap_comm_barrier(on));
    CHECK_OK(symheap_window_peer_ptr(w, 1 - me, (void **)&peer));
    CHECK(peer && *peer == a->job * 100000 + (1 - me) * 1000 + i,
          "job %d iteration %d: peer holds %d", a->job, i, peer ? *peer : -1);
    CHECK_OK(symheap_comm_barrier(on));
    CHECK_OK(symheap_free(on, w));
  }
  if (sub)
    CHECK_OK(symheap_comm_destroy(sub));
  if (c)
    CHECK_OK(symheap_comm_destroy(c));
  a->failures = th_end();
  return NULL;
}

static void concurrency(void) {
  symheap_unique_id_t ids[2];
  conc_t a[4];
  pthread_t t[4];
  for (int j = 0; j < 2; j++)
    symheap_get_unique_id(&ids[j]);
  for (int k = 0; k < 4; k++) {
    a[k] = (conc_t){&ids[k / 2], k / 2, k % 2, 0};
    pthread_create(&t[k], NULL, conc_rank, &a[k]);
  }
  for (int k = 0; k < 4; k++)
    pthread_join(t[k], NULL);
}

int main(int argc, char **argv) {
  int only_threads = argc > 1 && strcmp(argv[1], "--concurrency") == 0;
  int rc = 0;
  if (!only_threads) {
    rc |= th_run_threads(2, oom_body, NULL);
    rc |= th_run_threads(2, no_skip_body, NULL);
    rc |= th_run_threads(2, two_threads_body, NULL);
    map_limit();
    rc |= th_run_threads(17, allgather_sizes_body, NULL);
    pthread_barrier_init(&fd_bar, NULL, 2);
    rc |= th_run_threads(2, emfile_body, NULL);
    rc |= th_run_threads(2, cycles_body, NULL);
  }
  concurrency();
  return rc || th_total_failures() ? 1 : 0;
}

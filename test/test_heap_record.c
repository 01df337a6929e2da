/* test_heap --record: the heap as the device adaptor sees it (the recording
 * adaptor, ranks as threads): the calls of the first allocation, none at
 * all on the fast path, a fault injected at every step of a growth rolled
 * back on every rank, a reservation that fails, and the heap's variables. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "mem/heap.h"

void test_heap_record(void);

static symheap_heap_info_t info(th_ctx_t *c) {
  symheap_heap_info_t i = SYMHEAP_HEAP_INFO_INIT;
  CHECK_OK(symheap_heap_get_info(c->comm, &i));
  return i;
}

static void barrier(th_ctx_t *c) { CHECK_OK(symheap_comm_barrier(c->comm)); }

/* Every rank's view of whether a call succeeded is the same. */
static void same_everywhere(th_ctx_t *c, symheap_result_t r, const char *what) {
  int ok = r == SYMHEAP_SUCCESS, all[16] = {0};
  CHECK_OK(symheap_comm_allgather(c->comm, &ok, all, sizeof ok));
  for (int p = 0; p < c->n && p < 16; p++)
    CHECK(all[p] == ok, "%s: rank %d %s, rank %d %s", what, c->rank,
          ok ? "succeeded" : "failed", p, all[p] ? "succeeded" : "failed");
}

/* The first allocation reserves and commits one chunk; then allocations
 * that fit make no adaptor call at all. */
static void sequence(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("heap_record", "adaptor_calls", c->rank);
  barrier(c);
  if (c->rank == 0)
    th_record_reset(0);
  barrier(c);
  symheap_window_t w[20];
  CHECK_OK(symheap_malloc(c->comm, 5000, 0, &w[0]));
  barrier(c);
  const char *want = "va_reserve,mem_create,mem_export,mem_import,map,map,"
                     "set_access,set_access,mem_release";
  CHECK(strcmp(th_record_log(c->rank), want) == 0, "first malloc: %s",
        th_record_log(c->rank));
  barrier(c);
  if (c->rank == 0)
    th_record_reset(0);
  barrier(c);
  for (int i = 1; i < 20; i++)
    CHECK_OK(symheap_malloc(c->comm, (size_t)i * 777, 0, &w[i]));
  for (int i = 19; i >= 1; i -= 2)
    CHECK_OK(symheap_free(c->comm, w[i]));
  for (int i = 2; i < 20; i += 2)
    CHECK_OK(symheap_free(c->comm, w[i]));
  barrier(c);
  CHECK(strcmp(th_record_log(c->rank), "") == 0,
        "allocations that fit called the adaptor: %s", th_record_log(c->rank));
  barrier(c);
  CHECK_OK(symheap_free(c->comm, w[0]));
  /* Trim unmaps every rank's place of the chunk and releases it. */
  barrier(c);
  if (c->rank == 0)
    th_record_reset(0);
  barrier(c);
  CHECK_OK(symheap_heap_trim(c->comm));
  barrier(c);
  CHECK(strcmp(th_record_log(c->rank), "unmap,unmap,mem_release") == 0,
        "trim: %s", th_record_log(c->rank));
  th_end();
}

/* A fault at each call of a growth, on each rank: every rank fails, the
 * heap and the accounting are as before, nothing is left in the adaptor. */
static void growth_faults(th_ctx_t *c, void *arg) {
  int *injected = arg;
  th_begin("heap_record", "fault_at_every_growth_step", c->rank);
  static const char *ops[] = {"mem_create", "mem_export", "mem_import", "map",
                              "set_access"};
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 64, 0, &w)); /* the reservation */
  CHECK_OK(symheap_free(c->comm, w));
  CHECK_OK(symheap_heap_trim(c->comm));
  symheap_heap_info_t h0 = info(c), h1;
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  barrier(c);
  int fds0 = c->rank == 0 ? th_count_symheap_fds() : 0;
  int maps0 = c->rank == 0 ? th_count_symheap_maps() : 0;
  barrier(c);
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
    for (int victim = 0; victim < c->n; victim++)
      for (int nth = 1; nth <= 2; nth++) {
        barrier(c);
        if (c->rank == 0) {
          th_record_reset(0);
          th_record_fault(ops[k], victim, nth, SYMHEAP_ERR_DEVICE);
        }
        barrier(c);
        /* Two chunks and a bit: the fault may hit any of them. */
        size_t size = 2 * (size_t)h0.chunk_size + 4096;
        symheap_result_t r = symheap_malloc(c->comm, size, 0, &w);
        barrier(c);
        int fired = th_record_count(ops[k], victim) >= nth;
        if (fired && c->rank == 0)
          (*injected)++;
        same_everywhere(c, r, ops[k]);
        CHECK(!fired || r == SYMHEAP_ERR_DEVICE || r == SYMHEAP_ERR_REMOTE,
              "%s #%d on rank %d: got %s (%s)", ops[k], nth, victim,
              symheap_strerror(r), symheap_last_error());
        if (r == SYMHEAP_SUCCESS) {
          CHECK(!fired, "%s #%d on rank %d: success", ops[k], nth, victim);
          CHECK_OK(symheap_free(c->comm, w));
          CHECK_OK(symheap_heap_trim(c->comm));
        }
        h1 = info(c);
        CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
        CHECK(memcmp(&h0, &h1, sizeof h0) == 0 &&
                  memcmp(&s0, &s1, sizeof s0) == 0,
              "%s #%d on rank %d: the heap moved (%llu chunks, %llu mapped)",
              ops[k], nth, victim, (unsigned long long)h1.chunks,
              (unsigned long long)s1.bytes_mapped);
        barrier(c);
        if (c->rank == 0) {
          CHECK(th_count_symheap_fds() == fds0 &&
                    th_count_symheap_maps() == maps0,
                "%s #%d on rank %d: fds %d -> %d, mappings %d -> %d", ops[k],
                nth, victim, fds0, th_count_symheap_fds(), maps0,
                th_count_symheap_maps());
          th_record_fault("", 0, 0, SYMHEAP_SUCCESS);
        }
      }
  barrier(c);
  /* Still usable. */
  CHECK_OK(symheap_malloc(c->comm, 3 * (size_t)h0.chunk_size, 0, &w));
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* The heap's next reservation (va_reserve) fails on the last rank, an
 * injected NO_MEMORY, armed by rank 0 between two barriers so every rank
 * calls after it is armed. */
static void reservation_fails_on_last(th_ctx_t *c) {
  barrier(c);
  if (c->rank == 0) {
    th_record_reset(0);
    th_record_fault("va_reserve", c->n - 1, 1, SYMHEAP_ERR_NO_MEMORY);
  }
  barrier(c);
}

/* The heap's reservation fails on one rank where SYMHEAP_HEAP_RESERVE is
 * set (test_heap sets 256M): symheap_malloc fails on every rank, the
 * failing one naming the variable, its value and why, and changes
 * nothing (no reservation, no allocation, the heap still on), so the next
 * call, without the fault, is the heap's.  Before, every rank went on
 * without a heap, said only at INFO. */
static void set_reservation_fails(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("heap_record", "set_reservation_fails_the_call", c->rank);
  reservation_fails_on_last(c);
  symheap_window_t w = NULL;
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  symheap_result_t r = symheap_malloc(c->comm, 4096, 0, &w);
  char why[SYMHEAP_ERROR_MAX];
  snprintf(why, sizeof why, "%s", symheap_last_error());
  CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
  CHECK(r != SYMHEAP_SUCCESS, "symheap_malloc succeeded after the heap's "
                              "reservation failed on rank %d",
        c->n - 1);
  if (c->rank == c->n - 1)
    CHECK(r == SYMHEAP_ERR_NO_MEMORY &&
              strstr(why, "SYMHEAP_HEAP_RESERVE=256M cannot be reserved") &&
              strstr(why, "injected"),
          "the failing rank: %s: %s", symheap_strerror(r), why);
  same_everywhere(c, r, "symheap_malloc, a reservation failed");
  symheap_heap_info_t h = info(c);
  CHECK(h.enabled && h.reserved == 0 && h.allocations == 0 &&
            s1.allocations_live == s0.allocations_live &&
            s1.va_reserved == s0.va_reserved,
        "the failed call changed something: heap enabled %d, reserved %llu, "
        "live allocations %llu -> %llu, VA reserved %llu -> %llu",
        h.enabled, (unsigned long long)h.reserved,
        (unsigned long long)s0.allocations_live,
        (unsigned long long)s1.allocations_live,
        (unsigned long long)s0.va_reserved, (unsigned long long)s1.va_reserved);
  if (r == SYMHEAP_SUCCESS)
    CHECK_OK(symheap_free(c->comm, w));
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  h = info(c);
  CHECK(h.enabled && h.reserved == 256u << 20 && h.allocations == 1,
        "the next malloc: heap enabled %d, reserved %llu, %llu allocations",
        h.enabled, (unsigned long long)h.reserved,
        (unsigned long long)h.allocations);
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* The heap's reservation fails on one rank, SYMHEAP_HEAP_RESERVE unset:
 * every rank goes on without a heap, allocating by registration (the
 * warning it logs: test_heap_record below). */
static void no_reservation(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("heap_record", "default_reservation_fails", c->rank);
  reservation_fails_on_last(c);
  symheap_window_t w;
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
  symheap_heap_info_t h = info(c);
  CHECK(!h.enabled && h.reserved == 0 &&
            s1.allocations_live == s0.allocations_live + 1,
        "after a failed reservation: enabled %d reserved %llu", h.enabled,
        (unsigned long long)h.reserved);
  CHECK_OK(symheap_free(c->comm, w));
  CHECK_ERR(symheap_heap_reserve(c->comm, 4096), SYMHEAP_ERR_UNSUPPORTED);
  th_end();
}

/* SYMHEAP_HEAP=0: every allocation is a registration. */
static void heap_off(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("heap_record", "SYMHEAP_HEAP=0", c->rank);
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT, s1 = s0;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 100, 0, &w));
  CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
  CHECK(!info(c).enabled && s1.allocations_live == s0.allocations_live + 1 &&
            s1.heap_reserved == 0,
        "SYMHEAP_HEAP=0 still used the heap");
  CHECK_OK(symheap_free(c->comm, w));
  CHECK_ERR(symheap_heap_reserve(c->comm, 100), SYMHEAP_ERR_UNSUPPORTED);
  CHECK_OK(symheap_heap_trim(c->comm)); /* nothing to trim */
  th_end();
}

/* A malformed variable fails the call on every rank, naming it. */
/* A malformed heap variable fails comm init itself, naming the variable
 * (every variable is checked there: docs/env.md), and makes no comm; it
 * used to pass init and fail only the first symheap_malloc. */
static void bad_variable(void) {
  th_begin("heap_record", "malformed_variable", 0);
  symheap_unique_id_t id;
  symheap_comm_t comm = NULL;
  CHECK_OK(symheap_get_unique_id(&id));
  CHECK_ERR(symheap_comm_init(&comm, 1, &id, 0), SYMHEAP_ERR_INVALID_ARG);
  CHECK(strstr(symheap_last_error(), "SYMHEAP_HEAP_CHUNK") != NULL,
        "message: %s", symheap_last_error());
  CHECK(comm == NULL, "a comm was made");
  th_end();
}

/* A rank's process dies while the others wait in a heap agreement over
 * shared memory: they fail at once (REMOTE, naming the rank; the mesh socket
 * hangs up), well before SYMHEAP_TIMEOUT_MS, and hold nothing after
 * destroying the comm.  Processes, before this one has threads. */
static void peer_death(void) {
  enum { N = 3, VICTIM = 1 };
  th_begin("heap_record", "peer_death_in_agreement", 0);
  symheap_unique_id_t id;
  CHECK_OK(symheap_get_unique_id(&id));
  fflush(stdout);
  pid_t pids[N];
  for (int r = 0; r < N; r++) {
    pids[r] = fork();
    if (pids[r] != 0)
      continue;
    int fds0 = th_count_fds(), maps0 = th_count_symheap_maps();
    symheap_comm_t c;
    symheap_window_t w;
    if (symheap_comm_init(&c, N, &id, r) != SYMHEAP_SUCCESS ||
        symheap_malloc(c, 4096, 0, &w) != SYMHEAP_SUCCESS ||
        symheap_free(c, w) != SYMHEAP_SUCCESS ||
        symheap_comm_barrier(c) != SYMHEAP_SUCCESS)
      _exit(10);
    if (!c->agree_shm)
      _exit(11); /* the case is about the shared-memory channel */
    if (r == VICTIM)
      raise(SIGKILL);
    int64_t t0 = symheap__now_ms();
    symheap_result_t rc = symheap_malloc(c, 4096, 0, &w);
    int64_t ms = symheap__now_ms() - t0;
    int named = strstr(symheap_last_error(), "rank 1") != NULL;
    symheap_comm_destroy(c);
    int clean = th_count_fds() == fds0 && th_count_symheap_maps() == maps0;
    _exit(rc == SYMHEAP_ERR_REMOTE && named && ms < 5000 ? (clean ? 0 : 13)
                                                          : 12);
  }
  for (int r = 0; r < N; r++) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (r == VICTIM)
      CHECK(WIFSIGNALED(st), "the victim was not killed (status %#x)", st);
    else
      CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
            "survivor %d: exit %d (10 setup, 11 no shared-memory channel, 12 "
            "not REMOTE naming rank 1 within 5 s, 13 left descriptors or "
            "mappings)",
            r, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  th_end();
}

/* no_reservation with SYMHEAP_HEAP_RESERVE unset and the log in a file:
 * the fallback is said at WARN (the default level), naming the variable
 * and its default; before, at INFO, the default log said nothing. */
static void default_reservation_warns(void) {
  char keep[64] = "";
  if (getenv("SYMHEAP_HEAP_RESERVE"))
    snprintf(keep, sizeof keep, "%s", getenv("SYMHEAP_HEAP_RESERVE"));
  char path[] = "/tmp/symheap-heap-log-XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0)
    close(fd);
  unsetenv("SYMHEAP_HEAP_RESERVE");
  if (fd >= 0)
    setenv("SYMHEAP_DEBUG_FILE", path, 1);
  th_run_threads(3, no_reservation, NULL);
  unsetenv("SYMHEAP_DEBUG_FILE");
  if (keep[0])
    setenv("SYMHEAP_HEAP_RESERVE", keep, 1);
  th_begin("heap_record", "default_reservation_fallback_warns", 0);
  char buf[8192] = "";
  FILE *f = fd >= 0 ? fopen(path, "r") : NULL;
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  buf[n] = '\0';
  if (f)
    fclose(f);
  if (fd >= 0)
    unlink(path);
  CHECK(f != NULL, "no log file");
  CHECK(strstr(buf, " WARN: no heap: ") &&
            strstr(buf, "SYMHEAP_HEAP_RESERVE=64G (its default) cannot be "
                        "reserved"),
        "the log lacks the fallback's warning: '%s'", buf);
  th_end();
}

void test_heap_record(void) {
  int own_timeout = getenv("SYMHEAP_TIMEOUT_MS") == NULL;
  if (own_timeout)
    setenv("SYMHEAP_TIMEOUT_MS", "20000", 1); /* seen long before that */
  peer_death();
  if (own_timeout)
    unsetenv("SYMHEAP_TIMEOUT_MS");
  if (symheap_register_device_adaptor(&th_record_ops) != SYMHEAP_SUCCESS) {
    printf("FAIL heap_record/register_adaptor: %s\n", symheap_last_error());
    return;
  }
  setenv("SYMHEAP_DEVICE", "record", 1);
  th_record_reset(0);
  th_run_threads(2, sequence, NULL);
  int injected = 0;
  th_run_threads(2, growth_faults, &injected);
  th_run_threads(3, growth_faults, &injected);
  printf("# %d faults injected in heap growth\n", injected);
  th_run_threads(3, set_reservation_fails, NULL);
  default_reservation_warns();
  th_record_reset(0);
  setenv("SYMHEAP_HEAP", "0", 1);
  th_run_threads(2, heap_off, NULL);
  unsetenv("SYMHEAP_HEAP");
  setenv("SYMHEAP_HEAP_CHUNK", "lots", 1);
  bad_variable();
  setenv("SYMHEAP_HEAP_CHUNK", "1M", 1);
  unsetenv("SYMHEAP_DEVICE");
}

/* Faults: a failure injected at every adaptor call of a registration (with
 * multicast too) is undone on every rank; multicast honours the disabling
 * variables; filesystem sockets work and leave nothing behind; a rank that
 * dies gives every survivor a prompt error naming it. */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *ops_to_fail[] = {"mem_create", "mem_export",    "mem_import",
                                    "va_reserve", "map",           "set_access",
                                    "mc_create",  "mc_add_device", "mc_bind"};
#define NOPS (sizeof ops_to_fail / sizeof ops_to_fail[0])

typedef struct {
  const char *tag;
  unsigned flags;
  int injections; /* out: how many faults were injected */
} sweep_t;

static symheap_comm_stats_t stats(th_ctx_t *c) {
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s));
  return s;
}

/* Inject a fault at every call a registration makes, on the first and on the
 * last rank; every rank must fail with the injected error and end where it
 * started, and the next registration must work. */
static void sweep(th_ctx_t *c, void *arg) {
  sweep_t *sw = arg;
  th_begin(sw->tag, "fault_at_every_step", c->rank);
  int calls[2][NOPS];
  int targets[2] = {0, c->n - 1};
  /* A clean run first, to count each op's calls per rank. */
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    th_record_reset(1);
  CHECK_OK(symheap_comm_barrier(c->comm));
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 8192, sw->flags, &w));
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int t = 0; t < 2; t++)
    for (size_t o = 0; o < NOPS; o++)
      calls[t][o] = th_record_count(ops_to_fail[o], targets[t]);
  CHECK_OK(symheap_free(c->comm, w));
  symheap_comm_stats_t base = stats(c);
  int fds0 = 0, maps0 = 0;
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    fds0 = th_count_fds();
    maps0 = th_count_maps() * 100000 + th_count_symheap_maps();
  }
  for (int t = 0; t < 2; t++)
    for (size_t o = 0; o < NOPS; o++)
      for (int nth = 1; nth <= calls[t][o]; nth++) {
        CHECK_OK(symheap_comm_barrier(c->comm));
        if (c->rank == 0) {
          th_record_reset(1);
          th_record_fault(ops_to_fail[o], targets[t], nth, SYMHEAP_ERR_DEVICE);
          sw->injections++;
        }
        CHECK_OK(symheap_comm_barrier(c->comm));
        symheap_result_t r = symheap_malloc(c->comm, 8192, sw->flags, &w);
        CHECK(r == SYMHEAP_ERR_DEVICE &&
                  strstr(symheap_last_error(), "injected fault") != NULL,
              "fault in %s #%d on rank %d: got %s (%s)", ops_to_fail[o], nth,
              targets[t], symheap_strerror(r), symheap_last_error());
        if (r == SYMHEAP_SUCCESS)
          CHECK_OK(symheap_free(c->comm, w));
        symheap_comm_stats_t s = stats(c);
        CHECK(memcmp(&s, &base, sizeof s) == 0,
              "fault in %s #%d on rank %d left resources: windows %llu "
              "mapped %llu va %llu handles %llu multicast %llu",
              ops_to_fail[o], nth, targets[t],
              (unsigned long long)s.windows_live,
              (unsigned long long)s.bytes_mapped,
              (unsigned long long)s.va_reserved,
              (unsigned long long)s.descriptors_held,
              (unsigned long long)s.multicast_objects);
        CHECK_OK(symheap_comm_barrier(c->comm));
        if (c->rank == 0) {
          int fds = th_count_fds();
          int maps = th_count_maps() * 100000 + th_count_symheap_maps();
          CHECK(fds == fds0 && maps == maps0,
                "fault in %s #%d on rank %d: fds %d -> %d, maps %d -> %d",
                ops_to_fail[o], nth, targets[t], fds0, fds, maps0, maps);
        }
      }
  /* The comm is still good. */
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    th_record_reset(1);
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_malloc(c->comm, 8192, sw->flags, &w));
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* The multicast sequence as the adaptor sees it, and its teardown. */
static void multicast_sequence(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("faults", "multicast_sequence", c->rank);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    th_record_reset(1);
  CHECK_OK(symheap_comm_barrier(c->comm));
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 4096, SYMHEAP_WINDOW_MULTICAST, &w));
  CHECK_OK(symheap_comm_barrier(c->comm));
  const char *want = c->rank == 0
                         ? "mc_create,mem_export,mc_add_device,mc_bind,"
                           "va_reserve,map,set_access"
                         : "mem_import,mc_add_device,mc_bind,va_reserve,map,"
                           "set_access";
  const char *log = th_record_log(c->rank);
  const char *mc =
      strstr(log, c->rank == 0 ? "mc_create" : "mem_import,mc_add");
  CHECK(mc && strcmp(mc, want) == 0, "multicast calls: %s", log);
  void *p = NULL;
  CHECK_OK(symheap_window_multicast_ptr(w, &p));
  CHECK(p != NULL, "no multicast pointer");
  symheap_device_window_t v;
  CHECK_OK(symheap_window_device_view(w, &v));
  CHECK((v.flags & SYMHEAP_VIEW_MULTICAST) && v.multicast_base == p,
        "view lacks the multicast base");
  symheap_comm_stats_t s = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s));
  CHECK(s.multicast_objects == 1, "multicast objects %llu",
        (unsigned long long)s.multicast_objects);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    th_record_reset(1);
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_free(c->comm, w));
  /* The window's signal slot is cleared first (a view was taken, and every
   * rank agreed to let it go), then the multicast part goes, in order. */
  CHECK(strncmp(th_record_log(c->rank),
                "mem_zero,unmap,va_free,mc_unbind,mem_release,", 45) == 0,
        "teardown starts with: %s", th_record_log(c->rank));
  CHECK_OK(symheap_comm_get_stats(c->comm, &s));
  /* the pad: its handle and its kept exported descriptor */
  CHECK(s.multicast_objects == 0 && s.descriptors_held == 2,
        "multicast objects %llu handles %llu after free",
        (unsigned long long)s.multicast_objects,
        (unsigned long long)s.descriptors_held);
  th_end();
}

static void multicast_refused(th_ctx_t *c, void *arg) {
  const char *by = arg;
  th_begin("faults",
           by[0] == 'S' ? "multicast_disabled_by_symheap_env"
                        : "multicast_disabled_by_nccl_env",
           c->rank);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    th_record_reset(1);
  CHECK_OK(symheap_comm_barrier(c->comm));
  symheap_window_t w;
  CHECK_ERR(symheap_malloc(c->comm, 4096, SYMHEAP_WINDOW_MULTICAST, &w),
            SYMHEAP_ERR_UNSUPPORTED);
  CHECK(strstr(symheap_last_error(), by) != NULL, "message '%s' lacks %s",
        symheap_last_error(), by);
  CHECK(th_record_count("mc_create", 0) == 0, "a multicast object was created");
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  CHECK(!info.multicast_available, "info says multicast is available");
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

static void fs_sockets(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("faults", "filesystem_sockets", c->rank);
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  int *mine = NULL;
  CHECK_OK(symheap_window_local_ptr(w, (void **)&mine));
  if (mine)
    *mine = 100 + c->rank;
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int p = 0; p < c->n; p++) {
    int *pp = NULL;
    CHECK_OK(symheap_window_peer_ptr(w, p, (void **)&pp));
    CHECK(pp && *pp == 100 + p, "peer %d", p);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* Ranks as processes; `victim` leaves at `stage`.  Each survivor checks its
 * own outcome and reports through its exit status. */
enum { DIE_BEFORE_JOIN, DIE_AFTER_JOIN };

static int survivor(symheap_unique_id_t *id, int n, int rank, int victim,
                    int stage, int timeout_ms) {
  int fds = th_count_fds(), maps = th_count_maps();
  int shmaps = th_count_symheap_maps();
  symheap_comm_t c = NULL;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  symheap_result_t r = symheap_comm_init(&c, n, id, rank);
  if (stage == DIE_AFTER_JOIN && r == SYMHEAP_SUCCESS) {
    symheap_window_t w;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = symheap_malloc(c, 4096, 0, &w);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
              (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  char name[16];
  snprintf(name, sizeof name, "rank %d", victim);
  int ok = (r == SYMHEAP_ERR_REMOTE || r == SYMHEAP_ERR_TIMEOUT) &&
           strstr(symheap_last_error(), name) != NULL &&
           ms <= timeout_ms + 1000;
  if (!ok)
    printf("FAIL faults/peer_death [rank %d] got %s after %.0f ms: %s\n", rank,
           symheap_strerror(r), ms, symheap_last_error());
  if (c) {
    symheap_comm_destroy(c);
    /* Once the comm is gone, so is everything it held. */
    if (th_count_fds() != fds || th_count_maps() != maps ||
        th_count_symheap_maps() != shmaps) {
      printf("FAIL faults/peer_death [rank %d] fds %d -> %d, maps %d -> %d, "
             "symheap maps %d -> %d\n",
             rank, fds, th_count_fds(), maps, th_count_maps(), shmaps,
             th_count_symheap_maps());
      ok = 0;
    }
  }
  return ok ? 0 : 1;
}

static void peer_death(int n, int victim, int stage, const char *name) {
  const int timeout_ms = 1500;
  char tmo[16];
  snprintf(tmo, sizeof tmo, "%d", timeout_ms);
  setenv("SYMHEAP_TIMEOUT_MS", tmo, 1);
  setenv("SYMHEAP_DEBUG", "NONE", 1); /* the survivors' warnings are expected */
  symheap_unique_id_t id;
  th_begin("faults", name, 0);
  CHECK_OK(symheap_get_unique_id(&id));
  fflush(stdout);
  pid_t pids[8];
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      if (r == victim) {
        if (stage == DIE_AFTER_JOIN) {
          symheap_comm_t c;
          if (symheap_comm_init(&c, n, &id, r) != SYMHEAP_SUCCESS)
            _exit(2);
        }
        _exit(0); /* gone without a word, as a crash would be */
      }
      int st = survivor(&id, n, r, victim, stage, timeout_ms);
      fflush(stdout);
      _exit(st);
    }
  }
  for (int r = 0; r < n; r++) {
    int st;
    waitpid(pids[r], &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d: status 0x%x", r, st);
  }
  th_end();
  unsetenv("SYMHEAP_TIMEOUT_MS");
  unsetenv("SYMHEAP_DEBUG");
}

int main(void) {
  int rc = 0;
  if (symheap_register_device_adaptor(&th_record_ops) != SYMHEAP_SUCCESS) {
    printf("FAIL faults/register_adaptor: %s\n", symheap_last_error());
    return 1;
  }
  /* Peer death first, before this process has threads (fork-safe). */
  peer_death(3, 2, DIE_BEFORE_JOIN, "peer_death_before_join");
  peer_death(3, 2, DIE_AFTER_JOIN, "peer_death_during_register");
  peer_death(3, 0, DIE_AFTER_JOIN, "rank0_death_during_register");

  setenv("SYMHEAP_DEVICE", "record", 1);
  /* The registration path's steps (test_heap sweeps the heap's growth). */
  setenv("SYMHEAP_HEAP", "0", 1);
  th_record_reset(1);
  sweep_t a = {"faults2", 0, 0}, b = {"faults3", 0, 0},
          m = {"faults2_multicast", SYMHEAP_WINDOW_MULTICAST, 0};
  rc |= th_run_threads(2, sweep, &a);
  rc |= th_run_threads(3, sweep, &b);
  rc |= th_run_threads(2, sweep, &m);
  printf("# injected %d, %d and %d faults\n", a.injections, b.injections,
         m.injections);
  th_record_reset(1);
  rc |= th_run_threads(3, multicast_sequence, NULL);
  setenv("SYMHEAP_DISABLE_MULTICAST", "1", 1);
  rc |= th_run_threads(2, multicast_refused, "SYMHEAP_DISABLE_MULTICAST=1");
  unsetenv("SYMHEAP_DISABLE_MULTICAST");
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  rc |= th_run_threads(2, multicast_refused, "NCCL_NVLS_ENABLE=0");
  unsetenv("NCCL_NVLS_ENABLE");
  unsetenv("SYMHEAP_DEVICE");
  unsetenv("SYMHEAP_HEAP");

  char dir[] = "/tmp/symheap-test-XXXXXX";
  if (mkdtemp(dir)) {
    setenv("SYMHEAP_IPC_SOCKET", dir, 1);
    rc |= th_run_threads(3, fs_sockets, NULL);
    unsetenv("SYMHEAP_IPC_SOCKET");
    DIR *d = opendir(dir);
    int left = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
      left += e->d_name[0] != '.';
    if (d)
      closedir(d);
    th_begin("faults", "filesystem_sockets_cleaned_up", 0);
    CHECK(left == 0, "%d socket files left in %s", left, dir);
    th_end();
    rmdir(dir);
  }
  return rc || th_total_failures() ? 1 : 0;
}

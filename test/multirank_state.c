/* The multi-rank suite (test_multirank.c): what a comm reports (info and
 * stats), and what it refuses (a stale handle, a forked child's call). */
#include <sys/wait.h>
#include <unistd.h>

#include "multirank.h"

void case_info(th_ctx_t *c) {
  const char *want = getenv("SYMHEAP_DEVICE");
  if (!want || strcmp(want, "auto") == 0)
    want = "host";
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  CHECK_OK(symheap_comm_get_info(c->comm, &info));
  CHECK(info.rank == c->rank && info.nranks == c->n, "info rank %d/%d",
        info.rank, info.nranks);
  CHECK(strcmp(info.device_adaptor, want) == 0,
        "device adaptor '%s', "
        "expected '%s'",
        info.device_adaptor, want);
  /* Under mpirun, symheap_comm_init_env joins through the MPI ccl; with
   * SYMHEAP_CCL naming a plugin's ccl, through that. */
  const char *named = getenv("SYMHEAP_CCL");
  const char *ccl = g_threads ? "local"
                    : named && strcmp(named, "auto") && strcmp(named, "local")
                        ? named
                    : getenv("OMPI_COMM_WORLD_SIZE") ? "mpi"
                                                     : "local";
  CHECK(strcmp(info.ccl_adaptor, ccl) == 0, "ccl '%s', expected '%s'",
        info.ccl_adaptor, ccl);
  CHECK(info.granularity >= 4096 &&
            (info.granularity & (info.granularity - 1)) == 0,
        "granularity %zu", info.granularity);
  CHECK(info.device[0] != '\0', "no device name");
  if (strcmp(want, "host") == 0)
    CHECK(!info.multicast_available, "host backend claims multicast");
  symheap_comm_info_t bad = SYMHEAP_COMM_INFO_INIT;
  bad.struct_size = 0;
  CHECK_ERR(symheap_comm_get_info(c->comm, &bad), SYMHEAP_ERR_INVALID_ARG);
  /* Earlier cases left heap chunks committed: release them, so that the
   * heap's growth below is counted from none. */
  CHECK_OK(symheap_heap_trim(c->comm));
  symheap_heap_info_t hi = SYMHEAP_HEAP_INFO_INIT;
  CHECK_OK(symheap_heap_get_info(c->comm, &hi));
  symheap_comm_stats_t s0 = stats(c), s;
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 10000, 0, &w));
  s = stats(c);
  uint64_t g = info.granularity, alloc = (10000 + g - 1) / g * g;
  if (hi.enabled) {
    /* A heap allocation: the heap commits its first chunk (mapped from
     * every rank, one handle here); no allocation of its own. */
    CHECK(s.windows_live == s0.windows_live + 1 &&
              s.bytes_registered == s0.bytes_registered + 10000 &&
              s.allocations_live == s0.allocations_live &&
              s.heap_allocations == s0.heap_allocations + 1 &&
              s.heap_used == s0.heap_used + 10240 &&
              s.heap_committed == s0.heap_committed + hi.chunk_size &&
              s.bytes_mapped == s0.bytes_mapped + hi.chunk_size * c->n &&
              s.descriptors_held == s0.descriptors_held + 1,
          "heap stats: windows %llu registered %llu allocs %llu heap used "
          "%llu committed %llu mapped %llu fds %llu",
          (unsigned long long)s.windows_live,
          (unsigned long long)s.bytes_registered,
          (unsigned long long)s.allocations_live,
          (unsigned long long)s.heap_used, (unsigned long long)s.heap_committed,
          (unsigned long long)s.bytes_mapped,
          (unsigned long long)s.descriptors_held);
    CHECK_OK(symheap_free(c->comm, w));
    CHECK_OK(symheap_heap_trim(c->comm));
    s = stats(c);
    CHECK(memcmp(&s, &s0, sizeof s) == 0,
          "stats did not return to where they were");
    return;
  }
  uint64_t mapped = alloc * (uint64_t)(c->n + 1);
  CHECK(s.windows_live == s0.windows_live + 1 &&
            s.bytes_registered == s0.bytes_registered + 10000 &&
            s.allocations_live == s0.allocations_live + 1 &&
            s.bytes_allocated == s0.bytes_allocated + alloc &&
            s.bytes_mapped == s0.bytes_mapped + mapped &&
            s.va_reserved == s0.va_reserved + mapped &&
            /* the memory's handle, and its kept exported descriptor where
             * handles are descriptors */
            (s.descriptors_held == s0.descriptors_held + 2 ||
             (s.descriptors_held == s0.descriptors_held + 1 &&
              !info.window_cache)),
        "stats: windows %llu registered %llu allocs %llu mapped %llu fds %llu",
        (unsigned long long)s.windows_live,
        (unsigned long long)s.bytes_registered,
        (unsigned long long)s.allocations_live,
        (unsigned long long)s.bytes_mapped,
        (unsigned long long)s.descriptors_held);
  /* The comm's own pad: SYMHEAP_PAD_BYTES per rank in whole granules,
   * mapped flat, no window. */
  uint64_t pad = (SYMHEAP_PAD_BYTES + g - 1) / g * g;
  CHECK(s0.windows_live == 0 && s0.allocations_live == 1 &&
            s0.bytes_allocated == pad && s0.bytes_mapped == pad * (c->n + 1u),
        "the comm's pad: windows %llu allocations %llu bytes %llu mapped %llu",
        (unsigned long long)s0.windows_live,
        (unsigned long long)s0.allocations_live,
        (unsigned long long)s0.bytes_allocated,
        (unsigned long long)s0.bytes_mapped);
  CHECK_OK(symheap_free(c->comm, w));
  s = stats(c);
  CHECK(memcmp(&s, &s0, sizeof s) == 0,
        "stats did not return to where they were");
}

/* Handles are checked, not trusted: a released window's handle is refused
 * even when a new window's struct reuses its memory (it once released the
 * live window), and a destroyed comm's handle is refused too. */
void case_stale_handles(th_ctx_t *c) {
  symheap_window_t a = NULL, b = NULL;
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &a));
  CHECK_OK(symheap_free(c->comm, a));
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &b)); /* may reuse a's memory */
  int *pb = NULL, *pa = NULL;
  CHECK_OK(symheap_window_local_ptr(b, (void **)&pb));
  if (pb)
    *pb = 4242;
  CHECK(a != b, "a released handle came back for a new window");
  CHECK_ERR(symheap_window_local_ptr(a, (void **)&pa), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_free(c->comm, a), SYMHEAP_ERR_INVALID_ARG);
  CHECK_ERR(symheap_window_deregister(c->comm, a), SYMHEAP_ERR_INVALID_ARG);
  /* The live window is untouched. */
  int *again = NULL;
  CHECK_OK(symheap_window_local_ptr(b, (void **)&again));
  CHECK(again == pb && again && *again == 4242, "the live window changed");
  CHECK_OK(symheap_free(c->comm, b));
  /* A destroyed comm: every call on its handle refused, saying so. */
  symheap_comm_t sub = NULL;
  CHECK_OK(symheap_comm_split(c->comm, 0, c->rank, &sub));
  if (sub) {
    CHECK_OK(symheap_comm_destroy(sub));
    int r = -1;
    symheap_window_t w;
    CHECK_ERR(symheap_comm_rank(sub, &r), SYMHEAP_ERR_INVALID_ARG);
    CHECK(strstr(symheap_last_error(), "destroyed") != NULL, "%s",
          symheap_last_error());
    CHECK_ERR(symheap_comm_barrier(sub), SYMHEAP_ERR_INVALID_ARG);
    CHECK_ERR(symheap_malloc(sub, 4096, 0, &w), SYMHEAP_ERR_INVALID_ARG);
    CHECK_ERR(symheap_comm_destroy(sub), SYMHEAP_ERR_INVALID_ARG);
  }
}

/* A forked child cannot use its parent's comm: every collective fails,
 * saying so, destroy releases only the child's part, and the parent's job
 * goes on (before, the child's calls used the parent's sockets and
 * desynchronised the job). */
void case_fork(th_ctx_t *c) {
  if (getenv("OMPI_COMM_WORLD_SIZE"))
    return; /* MPI forbids fork in its processes */
  /* Under valgrind, a fork of a threaded process "leaks" what the other
   * threads held (gone in the child), and the child's exit code says so:
   * the processes' run covers fork there. */
  const char *tool = getenv("SYMHEAP_TEST_UNDER_TOOL");
  if (g_threads && tool && strcmp(tool, "valgrind") == 0)
    return;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int bad = 0, v = c->rank, all[64];
    symheap_window_t w;
    bad |= symheap_comm_barrier(c->comm) != SYMHEAP_ERR_INVALID_ARG;
    bad |= strstr(symheap_last_error(), "fork") == NULL;
    bad |= symheap_comm_allgather(c->comm, &v, all, sizeof v) !=
           SYMHEAP_ERR_INVALID_ARG;
    bad |= symheap_malloc(c->comm, 4096, 0, &w) != SYMHEAP_ERR_INVALID_ARG;
    bad |= symheap_comm_destroy(c->comm) != SYMHEAP_SUCCESS;
    _exit(bad ? 1 : 0);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait failed");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child's calls on the parent's comm were not all refused "
        "(status %d)",
        status);
  /* The parent's job is intact. */
  symheap_window_t w;
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
  CHECK_OK(symheap_free(c->comm, w));
}

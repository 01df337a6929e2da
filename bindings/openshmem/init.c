/* Library setup, exit and query: shmem_init joins a symheap comm (from the
 * environment symheap-run or mpirun gives), refuses a backend the CPU cannot
 * load from, and builds the symmetric heap, the symmetric data segment and
 * the predefined teams. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shmem_env.h"
#include "shmem_internal.h"

static int init_fail(const char *what, symheap_result_t r) {
  fprintf(stderr, "symheap-shmem: shmem_init: %s: %s (%s)\n", what,
          symheap_strerror(r), symheap_last_error());
  return -1;
}

/* Only backends whose memory the CPU loads and stores: RMA and atomics to
 * this host's PEs are plain loads, stores and atomics through the peers'
 * mappings.  A job across hosts reaches the other hosts' PEs through the
 * one-sided API (remote.c), and needs a net adaptor for that (heap.c says
 * so when there is none). */
static int check_backend(void) {
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  symheap_result_t r = symheap_comm_get_info(shm__s.comm, &info);
  if (r != SYMHEAP_SUCCESS)
    return init_fail("symheap_comm_get_info", r);
  if (!info.cpu_access) {
    fprintf(stderr,
            "symheap-shmem: shmem_init: the device adaptor \"%s\" (%s) gives "
            "no CPU access to symmetric memory; this OpenSHMEM library moves "
            "data with CPU loads and stores, so it needs a CPU-accessible "
            "backend (SYMHEAP_DEVICE=host)\n",
            info.device_adaptor, info.device);
    return -1;
  }
  shm__s.net = info.nhosts > 1;
  return 0;
}

/* Started by hand, with no launcher's variables: one PE, as other
 * implementations do. */
static int launched_alone(void) {
  static const char *vars[] = {
      "SYMHEAP_RANK", "SYMHEAP_NRANKS",       "SYMHEAP_UNIQUE_ID",
      "SYMHEAP_CCL",  "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
      "PMIX_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i]))
      return 0;
  return 1;
}

static symheap_result_t join(void) {
  if (!launched_alone())
    return symheap_comm_init_env(&shm__s.comm);
  symheap_unique_id_t id;
  symheap_result_t r = symheap_get_unique_id(&id);
  return r != SYMHEAP_SUCCESS ? r : symheap_comm_init(&shm__s.comm, 1, &id, 0);
}

struct symheap_shmem_fast symheap_shmem_fast;

/* Publishes the offsets of the peers' copies for shmem_fast.h's inline
 * paths; npes goes last, and first on the way out. */
static int fast_init(void) {
  /* Across hosts the library decides every call (a remote PE, and atomics
   * through symheap_atomic): npes stays 0, so the inline paths call it. */
  if (shm__s.net)
    return 0;
  intptr_t *h = calloc((size_t)shm__s.npes, sizeof *h);
  intptr_t *d = calloc((size_t)shm__s.npes, sizeof *d);
  if (!h || !d) {
    free(h);
    free(d);
    return -1;
  }
  for (int p = 0; p < shm__s.npes; p++) {
    if (p == shm__s.me)
      continue;
    h[p] = (intptr_t)(shm__s.heap_peer[p] - shm__s.heap_base);
    if (shm__s.data_size)
      d[p] = (intptr_t)(shm__s.data_peer[p] - shm__s.data_base);
  }
  struct symheap_shmem_fast *f = &symheap_shmem_fast;
  f->heap_base = (uintptr_t)shm__s.heap_base;
  f->heap_size = shm__s.heap_size;
  f->heap_delta = h;
  f->data_base = (uintptr_t)shm__s.data_base;
  f->data_size = shm__s.data_size;
  f->data_delta = d;
  __atomic_store_n(&f->npes, shm__s.npes, __ATOMIC_RELEASE);
  return 0;
}

static void fast_fini(void) {
  struct symheap_shmem_fast *f = &symheap_shmem_fast;
  __atomic_store_n(&f->npes, 0, __ATOMIC_RELEASE);
  free((void *)f->heap_delta);
  free((void *)f->data_delta);
  *f = (struct symheap_shmem_fast){0};
}

/* Every PE runs its collectives alike, or eager and barrier ones (or
 * pushing and reading ones) wait for each other for ever: before, a job
 * whose PE 2 asked for SHMEM_THREAD_MULTIPLE hung in its first broadcast.
 * The PEs agree through the bootstrap, whose allgather neither choice
 * changes: the barrier forms when any PE asked for SHMEM_THREAD_MULTIPLE
 * (the specification lets each PE ask for its own level); different
 * SYMHEAP_SHMEM_PUSH values are a setting given wrong, refused on every
 * PE, PE 0 naming one that differs.  The allgather is also the barrier
 * that ends shmem_init (no PE goes on before every PE has published its
 * pid). */
static int same_collectives(void) {
  int mine[2] = {shm__s.push, shm__s.thread_level == SHMEM_THREAD_MULTIPLE};
  int *all = malloc(sizeof mine * (size_t)shm__s.npes);
  if (!all) /* ends the job: the others would wait in the allgather */
    shm__fatal("shmem_init: no memory for %d PEs' settings", shm__s.npes);
  symheap_result_t r =
      symheap_comm_allgather(shm__s.comm, mine, all, sizeof mine);
  int differs = -1, multiple = 0;
  for (int p = 0; r == SYMHEAP_SUCCESS && p < shm__s.npes; p++) {
    if (all[2 * p] != mine[0] && differs < 0)
      differs = p;
    multiple |= all[2 * p + 1];
  }
  free(all);
  if (r != SYMHEAP_SUCCESS)
    return init_fail("symheap_comm_allgather", r);
  shm__s.eager = !multiple;
  if (differs >= 0 && shm__s.me == 0)
    fprintf(stderr,
            "symheap-shmem: shmem_init: PE %d's SYMHEAP_SHMEM_PUSH differs "
            "from PE 0's: set it alike on every PE\n",
            differs);
  return differs >= 0 ? -1 : 0;
}

/* Everything do_init built, undone, in the reverse order: at
 * shmem_finalize (after its barrier), and when the PEs turn out to differ
 * (every PE gets there; before, the heap's windows stayed registered until
 * the comm's destroy warned of them). */
static void teardown(void) {
  fast_fini();
  shm__teams_fini();
  shm__data_segment_fini();
  shm__s.initialized = 0;
  shm__heap_fini();
  shm__s.ctrl = NULL;
  free(shm__s.heap_peer);
  shm__s.heap_peer = NULL;
  free(shm__s.heap_shift);
  shm__s.heap_shift = NULL;
  free(shm__s.remote);
  shm__s.remote = NULL;
  shm__s.net = 0;
  shm__s.heap_base = NULL;
  shm__s.heap_size = 0;
  shm__s.npes = 0;
  symheap_comm_destroy(shm__s.comm);
  shm__s.comm = NULL;
}

/* prefault: SYMHEAP_SHMEM_PREFAULT's limit (prefault.c). */
static int do_init(size_t prefault) {
  symheap_result_t r = join();
  if (r != SYMHEAP_SUCCESS)
    return init_fail("symheap_comm_init_env (run under symheap-run or mpirun)",
                     r);
  symheap_comm_rank(shm__s.comm, &shm__s.me);
  symheap_comm_size(shm__s.comm, &shm__s.npes);
  if (check_backend() != 0 || shm__heap_init() != 0)
    goto fail;
  /* After the heap (it counts the PEs whose heap this one maps), before
   * the data segment (which it prefaults). */
  shm__prefault_setup(prefault);
  if (shm__data_segment_init() != 0 || shm__teams_init() != 0 ||
      fast_init() != 0)
    goto fail;
  __atomic_store_n(&shm__s.ctrl->pid, (int)getpid(), __ATOMIC_RELEASE);
  if (same_collectives() != 0) {
    teardown();
    return -1;
  }
  shm__s.initialized = 1;
  shm__env_print(shm__s.me, shm__s.stream_min, shm__prefault_info());
  return 0;
fail:
  /* The comm's destroy is local once it has failed, collective otherwise:
   * every PE fails the same checks, so all of them get here. */
  symheap_comm_destroy(shm__s.comm);
  shm__s.comm = NULL;
  return -1;
}

int shmem_init_thread(int requested, int *provided) {
  if (shm__s.initialized) {
    if (provided)
      *provided = shm__s.thread_level;
    return 0;
  }
  if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE)
    requested = SHMEM_THREAD_MULTIPLE;
  /* Every routine is safe from several threads (RMA and AMOs are loads,
   * stores and atomics; the allocator has a lock), so any level is given. */
  shm__s.thread_level = requested;
  /* Spin this many times (a pause each, about 60 us here) before yielding:
   * long enough that a peer that is running answers without a trip through
   * the scheduler.  A yield on a loaded machine gives the CPU to other
   * programs for a time slice: with 64 spins, 2-PE OSU collects and
   * fcollects of 4 B-2 KiB took 16-10000 us (medians of 3, load ~20)
   * against 0.6-1.4 us with 3000 (docs/perf/openshmem.md, round 7).  With
   * more PEs than CPUs wait.c spins 16 times instead (a peer waiting for
   * this core gets it soon).  SYMHEAP_SHMEM_SPIN overrides it, then in both
   * cases. */
  shm__s.spin_before_yield = SHM_SPINS_DEFAULT;
  /* Malformed variables: every PE refuses alike, before any comm. */
  int push = 1;
  size_t stream_min = SHM_STREAM_MIN, prefault = SHM_PREFAULT_DEFAULT;
  if (shm__env_spin(&shm__s.spin_before_yield, &shm__s.spin_explicit) != 0 ||
      shm__env_data_segment() < 0 || (push = shm__env_push()) < 0 ||
      shm__env_stream_min(&stream_min) != 0 ||
      shm__env_prefault(&prefault) != 0 ||
      shm__env_wait_limit_ns(&shm__s.wait_limit_ns) != 0)
    return -1;
  shm__s.push = push;
  shm__copy_setup(stream_min);
  if (do_init(prefault) != 0)
    return -1;
  if (provided)
    *provided = shm__s.thread_level;
  return 0;
}

void shmem_init(void) {
  if (shmem_init_thread(SHMEM_THREAD_SINGLE, NULL) != 0)
    exit(1);
}

void start_pes(int npes) {
  (void)npes;
  shmem_init();
}

void shmem_query_thread(int *provided) {
  shm__require_init("shmem_query_thread");
  *provided = shm__s.thread_level;
}

void shmem_finalize(void) {
  if (!shm__s.initialized)
    return;
  shmem_barrier_all();
  if (shm__s.net) /* the barrier's last releases, before the windows go */
    shm__net_quiet();
  teardown();
}

/* Ask every PE to exit with `status` (they see it in their next wait, which
 * includes every barrier), then exit (base.c). */
void shmem_global_exit(int status) { shm__exit_all(status); }

int shmem_my_pe(void) { return shm__s.initialized ? shm__s.me : -1; }
int shmem_n_pes(void) { return shm__s.initialized ? shm__s.npes : -1; }
int _my_pe(void) { return shmem_my_pe(); }
int _num_pes(void) { return shmem_n_pes(); }

int shmem_pe_accessible(int pe) {
  return shm__s.initialized && pe >= 0 && pe < shm__s.npes;
}

void shmem_info_get_version(int *major, int *minor) {
  *major = SHMEM_MAJOR_VERSION;
  *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char *name) {
  snprintf(name, SHMEM_MAX_NAME_LEN, "%s", SHMEM_VENDOR_STRING);
}

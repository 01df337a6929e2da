/* The MPI ccl adaptor, built as its own shared object (libsymheap-ccl-mpi.so)
 * so that libsymheap never links MPI.  Two ways in:
 *  - symheap_comm_init_mpi(comm, mpi_comm), for programs that link it;
 *  - symheap_ccl_mpi_open_world, which libsymheap looks up with dlsym when
 *    symheap_comm_init_env runs under an MPI launcher.
 * It calls back into libsymheap only through symbols bound weakly, so the
 * second way works from a program that links libsymheap statically. */
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symheap_adaptor.h"
#include "symheap_mpi.h"

#define EXPORT __attribute__((visibility("default")))

/* Present when the program links libsymheap (the explicit entry). */
extern symheap_result_t symheap_comm_init_ccl(symheap_comm_t *comm,
                                              const symheap_ccl_ops *ops,
                                              void *ctx) __attribute__((weak));
extern const symheap_host_services_t *symheap_host_services(void)
    __attribute__((weak));

typedef struct {
  MPI_Comm comm; /* our duplicate */
  int rank, size;
  const symheap_host_services_t *svc;
} mpi_ctx_t;

static symheap_result_t fail(const mpi_ctx_t *m, symheap_result_t r,
                             const char *what, int err) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (err != MPI_SUCCESS)
    MPI_Error_string(err, text, &len);
  return m->svc->error(r, "MPI: %s%s%s", what, text[0] ? ": " : "", text);
}

/* One turn of the core's net progress (services' wait_progress, where
 * this libsymheap has it): nonzero while its engines are busy. */
static int progress_others(const mpi_ctx_t *m) {
  return SYMHEAP_HAS_MEMBER(m->svc, symheap_host_services_t, wait_progress) &&
         m->svc->wait_progress();
}

/* Busy engines: pure spinning (a yield every BUSY_YIELD turns) for the
 * first BUSY_SPIN_TURNS turns, a burst of peers' operations served at spin
 * speed; then naps from BUSY_NAP_MIN_NS growing to BUSY_NAP_MAX_NS, so that
 * an engine that stays busy for the whole wait (one without wait fds)
 * does not cost a CPU for the whole collective, while each peer operation
 * still waits at most a nap for this rank's progress. */
#define BUSY_YIELD 64u
#define BUSY_SPIN_TURNS 1000u
#define BUSY_NAP_MIN_NS 20000
#define BUSY_NAP_MAX_NS 50000
#define BUSY_NAP_STEP_NS 5000

static void busy_turn(unsigned *busy, struct timespec *nap) {
  if (++*busy <= BUSY_SPIN_TURNS) {
    if (*busy % BUSY_YIELD == 0)
      sched_yield();
    return;
  }
  nap->tv_nsec = nap->tv_nsec < BUSY_NAP_MIN_NS ? BUSY_NAP_MIN_NS
                 : nap->tv_nsec < BUSY_NAP_MAX_NS
                     ? nap->tv_nsec + BUSY_NAP_STEP_NS
                     : BUSY_NAP_MAX_NS;
  nanosleep(nap, NULL);
}

/* Poll a nonblocking collective until it completes or the deadline passes:
 * MPI's own waits have no timeout, and every symheap wait has one.  Each
 * turn progresses the core's net adaptors too: a peer of another host may
 * be waiting on this rank's progress (its get or atomic on this rank's
 * memory over tcp;ofi_rxm) before it can enter this very collective. */
static symheap_result_t wait_for(const mpi_ctx_t *m, MPI_Request *req,
                                 int timeout_ms, const char *what) {
  struct timespec nap = {0, 0}, busy_nap = {0, 0};
  unsigned busy = 0; /* turns in a row with the engines busy */
  uint64_t t0 = m->svc->now_ns(); /* the core's clock */
  for (;;) {
    int done = 0;
    int err = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (err != MPI_SUCCESS)
      return fail(m, SYMHEAP_ERR_REMOTE, what, err);
    if (done)
      return SYMHEAP_SUCCESS;
    int64_t ms = (int64_t)((m->svc->now_ns() - t0) / 1000000u);
    if (ms >= timeout_ms)
      /* The request cannot be cancelled (collectives can't be); the comm is
       * broken from here on, which the core records. */
      return m->svc->error(SYMHEAP_ERR_TIMEOUT,
                           "MPI: %s did not complete within %d ms (a rank "
                           "did not arrive)",
                           what, timeout_ms);
    if (progress_others(m)) { /* engines busy: spin, then nap briefly */
      busy_turn(&busy, &busy_nap);
      continue;
    }
    busy = 0;
    busy_nap.tv_nsec = 0;
    /* Spin briefly, then back off to 100 us: setup latency, not a CPU. */
    if (ms > 1 && nap.tv_nsec < 100000)
      nap.tv_nsec += 5000;
    if (nap.tv_nsec)
      nanosleep(&nap, NULL);
  }
}

static int mpi_rank(void *ctx) { return ((mpi_ctx_t *)ctx)->rank; }
static int mpi_size(void *ctx) { return ((mpi_ctx_t *)ctx)->size; }

static symheap_result_t mpi_allgather(void *ctx, const void *in, void *out,
                                      size_t bytes, int timeout_ms) {
  mpi_ctx_t *m = ctx;
  if (bytes > INT32_MAX)
    return m->svc->error(SYMHEAP_ERR_INVALID_ARG,
                         "MPI: allgather of %zu bytes per rank", bytes);
  MPI_Request req;
  int err = MPI_Iallgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE,
                           m->comm, &req);
  if (err != MPI_SUCCESS)
    return fail(m, SYMHEAP_ERR_REMOTE, "MPI_Iallgather", err);
  return wait_for(m, &req, timeout_ms, "MPI_Iallgather");
}

static symheap_result_t mpi_barrier(void *ctx, int timeout_ms) {
  mpi_ctx_t *m = ctx;
  MPI_Request req;
  int err = MPI_Ibarrier(m->comm, &req);
  if (err != MPI_SUCCESS)
    return fail(m, SYMHEAP_ERR_REMOTE, "MPI_Ibarrier", err);
  return wait_for(m, &req, timeout_ms, "MPI_Ibarrier");
}

static void mpi_fini(void *ctx) {
  mpi_ctx_t *m = ctx;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Comm_free(&m->comm);
  free(m);
}

/* MPI_Comm_split has no timeout; an Iallgather first (polled against the
 * deadline) makes sure every rank is there, so the split then completes. */
static symheap_result_t mpi_split(void *ctx, int color, int key, int timeout_ms,
                                  void **child) {
  mpi_ctx_t *m = ctx;
  *child = NULL;
  int here = 1, *all = calloc((size_t)m->size, sizeof *all);
  if (!all)
    return m->svc->error(SYMHEAP_ERR_NO_MEMORY, "MPI ccl: out of memory");
  symheap_result_t r = mpi_allgather(m, &here, all, sizeof here, timeout_ms);
  free(all);
  if (r != SYMHEAP_SUCCESS)
    return r;
  MPI_Comm nc = MPI_COMM_NULL;
  int err = MPI_Comm_split(m->comm, color < 0 ? MPI_UNDEFINED : color, key, &nc);
  if (err != MPI_SUCCESS)
    return fail(m, SYMHEAP_ERR_REMOTE, "MPI_Comm_split", err);
  if (nc == MPI_COMM_NULL)
    return SYMHEAP_SUCCESS;
  mpi_ctx_t *c = calloc(1, sizeof *c);
  if (!c) {
    MPI_Comm_free(&nc);
    return m->svc->error(SYMHEAP_ERR_NO_MEMORY, "MPI ccl: out of memory");
  }
  c->svc = m->svc;
  c->comm = nc;
  err = MPI_Comm_set_errhandler(nc, MPI_ERRORS_RETURN);
  if (err == MPI_SUCCESS)
    err = MPI_Comm_rank(nc, &c->rank);
  if (err == MPI_SUCCESS)
    err = MPI_Comm_size(nc, &c->size);
  if (err != MPI_SUCCESS) {
    r = fail(m, SYMHEAP_ERR_REMOTE, "MPI_Comm_split", err);
    mpi_fini(c);
    return r;
  }
  *child = c;
  return SYMHEAP_SUCCESS;
}

static const symheap_ccl_ops mpi_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_ccl_ops),
    .name = "mpi",
    .rank = mpi_rank,
    .size = mpi_size,
    .allgather = mpi_allgather,
    .barrier = mpi_barrier,
    .fini = mpi_fini,
    .split = mpi_split,
};

static symheap_result_t make_ctx(const symheap_host_services_t *svc,
                                 MPI_Comm parent, mpi_ctx_t **out) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (!inited || finalized)
    return svc->error(SYMHEAP_ERR_INVALID_ARG, "MPI is %s: call MPI_Init first",
                      finalized ? "finalized already" : "not initialized");
  mpi_ctx_t *m = calloc(1, sizeof *m);
  if (!m)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "MPI ccl: out of memory");
  m->svc = svc;
  /* Errors come back as codes, not as an abort of the job. */
  int err = MPI_Comm_dup(parent, &m->comm);
  if (err == MPI_SUCCESS)
    err = MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
  if (err == MPI_SUCCESS)
    err = MPI_Comm_rank(m->comm, &m->rank);
  if (err == MPI_SUCCESS)
    err = MPI_Comm_size(m->comm, &m->size);
  if (err != MPI_SUCCESS) {
    symheap_result_t r = fail(m, SYMHEAP_ERR_REMOTE, "MPI_Comm_dup", err);
    if (m->comm != MPI_COMM_NULL)
      MPI_Comm_free(&m->comm);
    free(m);
    return r;
  }
  *out = m;
  return SYMHEAP_SUCCESS;
}

static void finalize_at_exit(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

/* For symheap_comm_init_env under an MPI launcher: MPI_COMM_WORLD, with
 * MPI_Init (and MPI_Finalize at exit) when the program did not init MPI.
 * Declared with the header's type, so the compiler holds this definition to
 * what libsymheap's dlsym casts it to. */
EXPORT symheap_ccl_open_world_fn symheap_ccl_mpi_open_world;
EXPORT symheap_result_t
symheap_ccl_mpi_open_world(const symheap_host_services_t *svc,
                           const symheap_ccl_ops **ops, void **ctx) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized)
    return svc->error(SYMHEAP_ERR_INVALID_ARG,
                      "MPI was finalized already: symheap cannot join "
                      "MPI_COMM_WORLD");
  if (!inited) {
    int provided = 0;
    int err = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (err != MPI_SUCCESS)
      return svc->error(SYMHEAP_ERR_REMOTE, "MPI_Init_thread failed (%d)", err);
    atexit(finalize_at_exit);
    svc->log(SYMHEAP_LOG_INFO,
             "MPI initialised by symheap (thread level %d); "
             "it finalises MPI at exit",
             provided);
  }
  mpi_ctx_t *m;
  symheap_result_t r = make_ctx(svc, MPI_COMM_WORLD, &m);
  if (r != SYMHEAP_SUCCESS)
    return r;
  *ops = &mpi_ops;
  *ctx = m;
  return SYMHEAP_SUCCESS;
}

EXPORT symheap_result_t symheap_comm_init_mpi(symheap_comm_t *comm,
                                              MPI_Comm mpi_comm) {
  if (!symheap_comm_init_ccl || !symheap_host_services)
    return SYMHEAP_ERR_PLUGIN; /* no libsymheap to report through */
  const symheap_host_services_t *svc = symheap_host_services();
  if (!comm)
    return svc->error(SYMHEAP_ERR_INVALID_ARG,
                      "symheap_comm_init_mpi: comm is NULL");
  if (mpi_comm == MPI_COMM_NULL)
    return svc->error(SYMHEAP_ERR_INVALID_ARG,
                      "symheap_comm_init_mpi: mpi_comm is MPI_COMM_NULL");
  mpi_ctx_t *m;
  symheap_result_t r = make_ctx(svc, mpi_comm, &m);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* fini is set: the duplicate is symheap's, freed at destroy or failure. */
  return symheap_comm_init_ccl(comm, &mpi_ops, m);
}

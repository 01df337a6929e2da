/* How symheap_comm_init_env joins: symheap-run's variables (the local
 * bootstrap) or an MPI launcher's (the MPI ccl, a shared object of its own
 * loaded here so that libsymheap never links MPI). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "comm.h"
#include "config.h"
#include "plugin.h"

#define MPI_CCL_LIB "libsymheap-ccl-mpi.so"

typedef symheap_result_t (*open_world_fn)(const symheap_host_services_t *svc,
                                          const symheap_ccl_ops **ops,
                                          void **ctx);

enum { CCL_AUTO, CCL_LOCAL, CCL_MPI };

/* Set by mpirun/mpiexec of Open MPI, MPICH/Hydra, Slurm and PMIx. */
static const char *mpi_launcher(void) {
  static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (symheap__cfg_raw(vars[i]))
      return vars[i];
  return NULL;
}

int symheap__ccl_env_choice(symheap_result_t *r, const char **why) {
  int which = CCL_AUTO;
  *r = symheap__cfg_choice("SYMHEAP_CCL", &which);
  *why = "SYMHEAP_CCL";
  if (*r != SYMHEAP_SUCCESS || which != CCL_AUTO)
    return which == CCL_MPI;
  if (symheap__cfg_raw("SYMHEAP_UNIQUE_ID")) {
    *why = "SYMHEAP_UNIQUE_ID is set";
    return 0;
  }
  const char *var = mpi_launcher();
  *why = var ? var : "no MPI launcher variable";
  return var != NULL;
}

/* The MPI ccl is loaded once and never unloaded: MPI cannot be, and the
 * object finalises MPI at exit when it initialised it. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static open_world_fn open_world;

static symheap_result_t load_mpi(const char *why) {
  pthread_mutex_lock(&lock);
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (!open_world) {
    char path[512];
    r = symheap__find_library(MPI_CCL_LIB, path, sizeof path);
    /* Global: Open MPI's own components resolve MPI symbols through it. */
    void *dl =
        r == SYMHEAP_SUCCESS ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (r == SYMHEAP_SUCCESS && !dl)
      r = symheap__error(SYMHEAP_ERR_PLUGIN, "cannot load %s: %s", path,
                         dlerror());
    if (dl)
      *(void **)&open_world = dlsym(dl, "symheap_ccl_mpi_open_world");
    if (dl && !open_world)
      r = symheap__error(SYMHEAP_ERR_PLUGIN,
                         "%s does not export symheap_ccl_mpi_open_world", path);
    if (r != SYMHEAP_SUCCESS)
      r = symheap__error_context(
          r,
          "symheap_comm_init_env joins through MPI (%s) and needs the MPI ccl "
          "adaptor, " MPI_CCL_LIB " (built where mpicc is)",
          why);
  }
  pthread_mutex_unlock(&lock);
  return r;
}

symheap_result_t symheap__comm_init_mpi_world(symheap_comm_t *comm,
                                              const char *why) {
  symheap_result_t r = load_mpi(why);
  const symheap_ccl_ops *ops = NULL;
  void *ctx = NULL;
  if (r == SYMHEAP_SUCCESS)
    r = open_world(&symheap__host_services, &ops, &ctx);
  if (r != SYMHEAP_SUCCESS)
    return r;
  return symheap_comm_init_ccl(comm, ops, ctx);
}

/* How symheap_comm_init_env joins: symheap-run's variables (the local
 * bootstrap), an MPI launcher's (the MPI ccl, a shared object of its own
 * loaded here so that libsymheap never links MPI), or a plugin's ccl named
 * by SYMHEAP_CCL. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/config.h"
#include "base/dl.h"
#include "base/plugin.h"
#include "ccl_env.h"

#define MPI_CCL_LIB "libsymheap-ccl-mpi.so"

/* Set by mpirun/mpiexec of Open MPI, MPICH/Hydra, Slurm and PMIx. */
static const char *mpi_launcher(void) {
  static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (symheap__cfg_raw(vars[i]))
      return vars[i];
  return NULL;
}

/* SYMHEAP_CCL=<name>: a loaded plugin's ccl of that name. */
static symheap__ccl_kind_t plugin_choice(const char *name, symheap_result_t *r,
                                         const symheap_ccl_ops **plugin) {
  char known[256];
  *r = symheap__plugins_load();
  if (*r != SYMHEAP_SUCCESS)
    return SYMHEAP__CCL_LOCAL;
  *plugin = symheap__plugin_ccl(name, known, sizeof known);
  if (!*plugin)
    *r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                        "SYMHEAP_CCL='%s' is not valid: expected auto, local, "
                        "mpi or the name of a loaded plugin's ccl that can "
                        "open a job (loaded: %s)",
                        name, known[0] ? known : "none");
  else if (!(*plugin)->open)
    *r = symheap__error(SYMHEAP_ERR_PLUGIN,
                        "SYMHEAP_CCL=%s: that plugin's ccl has no open, so it "
                        "cannot join a job by itself; pass it to "
                        "symheap_comm_init_ccl instead",
                        name);
  return SYMHEAP__CCL_PLUGIN;
}

symheap__ccl_kind_t symheap__ccl_env_choice(symheap_result_t *r,
                                            const char **why,
                                            const symheap_ccl_ops **plugin) {
  const char *want = "auto";
  *r = symheap__cfg_string("SYMHEAP_CCL", &want);
  *why = "SYMHEAP_CCL";
  if (*r != SYMHEAP_SUCCESS)
    return SYMHEAP__CCL_LOCAL;
  if (strcasecmp(want, "local") == 0)
    return SYMHEAP__CCL_LOCAL;
  if (strcasecmp(want, "mpi") == 0)
    return SYMHEAP__CCL_MPI;
  if (strcasecmp(want, "auto") != 0)
    return plugin_choice(want, r, plugin);
  if (symheap__cfg_raw("SYMHEAP_UNIQUE_ID")) {
    *why = "SYMHEAP_UNIQUE_ID is set";
    return SYMHEAP__CCL_LOCAL;
  }
  const char *var = mpi_launcher();
  *why = var ? var : "no MPI launcher variable";
  return var ? SYMHEAP__CCL_MPI : SYMHEAP__CCL_LOCAL;
}

symheap_result_t symheap__ccl_plugin_open(const symheap_ccl_ops *ops,
                                          void **ctx) {
  long timeout;
  symheap_result_t r = symheap__cfg_int("SYMHEAP_TIMEOUT_MS", &timeout);
  if (r == SYMHEAP_SUCCESS &&
      (r = ops->open(&symheap__host_services, (int)timeout, ctx)) !=
          SYMHEAP_SUCCESS)
    r = symheap__error_context(r, "SYMHEAP_CCL=%s: joining the job", ops->name);
  return r;
}

/* The MPI ccl is loaded once and never unloaded: MPI cannot be, and the
 * object finalises MPI at exit when it initialised it. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static symheap_ccl_open_world_fn *open_world;

static symheap_result_t load_mpi(const char *why) {
  pthread_mutex_lock(&lock);
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (!open_world) {
    char path[512];
    r = symheap__find_library(MPI_CCL_LIB, path, sizeof path);
    /* Global: Open MPI's own components resolve MPI symbols through it. */
    char err[512];
    void *dl = r == SYMHEAP_SUCCESS ? symheap__dl_open(path, 1, err, sizeof err)
                                    : NULL;
    if (r == SYMHEAP_SUCCESS && !dl)
      r = symheap__error(SYMHEAP_ERR_PLUGIN, "cannot load %s: %s", path, err);
    if (dl)
      *(void **)&open_world =
          symheap__dl_sym(dl, SYMHEAP_CCL_MPI_OPEN_WORLD);
    if (dl && !open_world)
      r = symheap__error(SYMHEAP_ERR_PLUGIN,
                         "%s does not export " SYMHEAP_CCL_MPI_OPEN_WORLD,
                         path);
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

symheap_result_t symheap__ccl_mpi_open(const char *why,
                                       const symheap_ccl_ops **ops,
                                       void **ctx) {
  symheap_result_t r = load_mpi(why);
  return r == SYMHEAP_SUCCESS ? open_world(&symheap__host_services, ops, ctx)
                              : r;
}

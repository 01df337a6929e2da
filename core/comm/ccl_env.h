/* How symheap_comm_init_env joins (ccl_env.c). */
#ifndef SYMHEAP_CCL_ENV_H
#define SYMHEAP_CCL_ENV_H

#include "base/internal.h"

/* ccl_env.c: whether symheap_comm_init_env joins through MPI (and why),
 * and the join itself. */
typedef enum {
  SYMHEAP__CCL_LOCAL,  /* symheap-run's variables, the socket bootstrap */
  SYMHEAP__CCL_MPI,    /* libsymheap-ccl-mpi.so over MPI_COMM_WORLD */
  SYMHEAP__CCL_PLUGIN, /* a loaded plugin's ccl, through its open */
} symheap__ccl_kind_t;
/* How symheap_comm_init_env joins (SYMHEAP_CCL and the launcher's
 * variables); *why says how it was decided, *plugin is the ccl for
 * SYMHEAP__CCL_PLUGIN. */
symheap__ccl_kind_t symheap__ccl_env_choice(symheap_result_t *r,
                                            const char **why,
                                            const symheap_ccl_ops **plugin);
/* The ccl context of SYMHEAP__CCL_PLUGIN: the plugin's open. */
symheap_result_t symheap__ccl_plugin_open(const symheap_ccl_ops *ops,
                                          void **ctx);
/* The ccl of SYMHEAP__CCL_MPI: MPI_COMM_WORLD through the MPI ccl adaptor
 * (loaded once); `why` says why MPI was chosen. */
symheap_result_t symheap__ccl_mpi_open(const char *why,
                                       const symheap_ccl_ops **ops, void **ctx);

#endif

/* symheap over MPI: a comm on the ranks of an MPI communicator.
 *
 * Link with -lsymheap-ccl-mpi -lsymheap and your MPI.  The adaptor lives in
 * its own shared object (libsymheap-ccl-mpi.so, built where mpicc is), so
 * libsymheap itself never depends on MPI.  Under mpirun,
 * symheap_comm_init_env finds that object at run time and joins
 * MPI_COMM_WORLD without any of this (SYMHEAP_CCL). */
#ifndef SYMHEAP_MPI_H
#define SYMHEAP_MPI_H

#include <mpi.h>

#include "symheap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over mpi_comm: a symheap comm on its ranks, in its rank order.
 * MPI must be initialised (and not finalised) and must stay so until
 * symheap_comm_destroy.  symheap duplicates mpi_comm, so its traffic never
 * mixes with the caller's; the duplicate is freed at destroy.  Waits are
 * bounded by SYMHEAP_TIMEOUT_MS like every symheap wait (a rank that never
 * arrives gives SYMHEAP_ERR_TIMEOUT).  Ranks on several hosts form one
 * node-local team per host (docs/windows.md). */
symheap_result_t symheap_comm_init_mpi(symheap_comm_t *comm, MPI_Comm mpi_comm);

#ifdef __cplusplus
}
#endif
#endif /* SYMHEAP_MPI_H */

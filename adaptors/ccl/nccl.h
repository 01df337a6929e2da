/* The NCCL window path (SYMHEAP_WINDOW_PATH=nccl): windows registered by
 * NCCL (ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC) on an NCCL
 * communicator the comm makes over its own bootstrap, with peer addresses
 * taken from NCCL's window (its LSA flat range).  libnccl.so.2 is loaded with
 * dlopen; the path exists for the cuda device adaptor only. */
#ifndef SYMHEAP_CCL_NCCL_H
#define SYMHEAP_CCL_NCCL_H

#include "../../core/comm.h"

/* Collective, at comm init: SYMHEAP_WINDOW_PATH decides; with "nccl" every
 * rank opens NCCL or the init fails saying why. */
symheap_result_t symheap__nccl_setup(symheap_comm_t c);
void symheap__nccl_close(symheap_comm_t c);
/* Collective: the window registered by NCCL; w's flat fields describe
 * NCCL's mapping.  Agreed, and undone on failure. */
symheap_result_t symheap__nccl_register(symheap_comm_t c,
                                        struct symheap_window *w);
/* Local (NCCL's deregistration is collective: every rank calls it in the
 * same order, as symheap's deregistration guarantees). */
symheap_result_t symheap__nccl_deregister(symheap_comm_t c,
                                          struct symheap_window *w);

#endif

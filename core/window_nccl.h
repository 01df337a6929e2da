/* The NCCL window path (SYMHEAP_WINDOW_PATH=nccl): a vendor window path
 * (core/window_vendor.c) whose windows NCCL registers with
 * ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC), on an NCCL
 * communicator made over the comm's own bootstrap.  libnccl.so.2 is loaded
 * with dlopen; the path exists for the cuda device adaptor only. */
#ifndef SYMHEAP_CCL_NCCL_H
#define SYMHEAP_CCL_NCCL_H

#include "comm.h"

/* Collective, at comm init: every rank opens NCCL and fills *out, or the
 * init fails on every rank saying why. */
symheap_result_t symheap__nccl_open(symheap_comm_t c, symheap__winpath_t *out);

#endif

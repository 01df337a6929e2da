/* Shared by the one-sided API's files (onesided*.c). */
#ifndef SYMHEAP_ONESIDED_H
#define SYMHEAP_ONESIDED_H

#include "comm/net.h"
#include "win/net_window.h"
#include "win/window.h"

/* The live window h, with peer and [off, off + len) checked against it
 * (INVALID_ARG naming fn, before anything is sent). */
symheap_result_t symheap__os_begin(symheap_window_t h, int peer, size_t off,
                                   size_t len, const char *fn,
                                   struct symheap_window **out);
/* UNSUPPORTED unless the CPU can touch window memory. */
symheap_result_t symheap__os_host_access(symheap_comm_t c, const char *fn);
/* UNSUPPORTED naming SYMHEAP_NET unless the comm has a net adaptor. */
symheap_result_t symheap__os_need_net(symheap_comm_t c, int peer,
                                      const char *fn);
/* A peer of this host: its copy of the window at off. */
char *symheap__os_local(struct symheap_window *w, int peer, size_t off);

/* onesided_net.c: through the comm's net adaptor (c->netc set). */
symheap_result_t symheap__os_net_rma(struct symheap_window *w, int peer,
                                     size_t off, void *buf, size_t len,
                                     int is_put, unsigned flags,
                                     const char *fn);
symheap_result_t symheap__os_net_atomic(struct symheap_window *w, int peer,
                                        size_t off, symheap_net_amo_t op,
                                        size_t size, const void *operand,
                                        const void *compare, void *fetch,
                                        const char *fn);
symheap_result_t symheap__os_net_put_signal(struct symheap_window *w, int peer,
                                            size_t off, const void *src,
                                            size_t len,
                                            struct symheap_window *sw,
                                            size_t sig_off, uint64_t value,
                                            symheap_net_amo_t op,
                                            const char *fn);
symheap_result_t symheap__os_net_fence(symheap_comm_t c, const char *fn);
symheap_result_t symheap__os_net_quiet(symheap_comm_t c, const char *fn);

#endif

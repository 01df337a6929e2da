/* minicoll: a tiny collective library that embeds symheap.  It has its own
 * bootstrap (a star of TCP connections on loopback around rank 0) and hands
 * it to symheap with symheap_comm_init_ccl; its all-reduce runs over a
 * symheap window.  The reference for library authors: docs/embedding.md. */
#ifndef MINICOLL_H
#define MINICOLL_H

#include <stddef.h>

#include "symheap.h"

typedef struct minicoll minicoll_t;

/* Collective over n processes on one host; rank 0 listens on `port`. */
int minicoll_init(minicoll_t **mc, int rank, int n, int port);
/* In place, float sum over every rank, ranks added in rank order (so every
 * rank gets the same bits). */
int minicoll_allreduce_f32(minicoll_t *mc, float *data, size_t count);
/* Collective. */
void minicoll_finalize(minicoll_t *mc);
/* The symheap comm minicoll rides on (symheap_comm_split of it rides on
 * minicoll's own split). */
symheap_comm_t minicoll_symheap_comm(minicoll_t *mc);
/* The last error, for messages. */
const char *minicoll_error(void);

#endif

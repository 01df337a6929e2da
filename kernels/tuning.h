/* The tuning tables at run time (tuning.cu): the table of this GPU, loaded
 * at first use, the override variables, and the choice AUTO makes.
 * Private to kernels/. */
#ifndef SYMHEAP_COLL_TUNING_H
#define SYMHEAP_COLL_TUNING_H

#include "coll_launch.h"
#include "tune_table.h"

namespace symheap_coll {

/* AUTO's choice for coll on this thread's device (tune_table.h:
 * symheap_tune_choose), with q's table, topology and forced algorithm
 * filled in here.  Fails (naming the file and line) only where the table
 * file is bad or SYMHEAP_TUNING_FILE names a file that is missing. */
symheap_result_t tuned_choice(int coll, symheap_tune_query_t *q,
                              symheap_tune_choice_t *c);

/* Launch parameters of a choice into a (after device_ok): blocks caps the
 * grid, threads sets two-shot's block size. */
void apply_choice(const symheap_tune_choice_t &c, launch_t *a);

/* This process's topology key: "nvlink" (every pair of visible devices has
 * peer access with native atomics), "pcie" (peer access without them),
 * "nop2p", or "single" (one visible device). */
const char *tuning_topology();

/* For the tuning program only (tools/symheap-tune.cu links the objects):
 * launch parameters that this thread's calls with an explicit algorithm
 * take, as a table row's would; 0, 0: none. */
void set_launch_override(int blocks, int threads);
/* The algorithm AUTO takes for coll on this thread, over the variable and
 * the table (an algorithm the flags cannot name); 0: none. */
void set_algo_override(int coll, int algo);
void launch_override(symheap_tune_choice_t *c);

} // namespace symheap_coll

#endif

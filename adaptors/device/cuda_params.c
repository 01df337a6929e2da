/* The cuda adaptor's configuration variables (cuda_adaptor.h), declared at
 * plugin init so that symheap-info -e lists them: the driver it loads, the
 * device it picks, and those libsymheap_cuda.so (kernels/) reads. */
#include "cuda_adaptor.h"

const symheap_param_t cuda_params[] = {
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_CUDA_LIBRARY",
     "libcuda.so.1", 0, 0, NULL,
     "the CUDA driver library the cuda adaptor loads with dlopen (a name "
     "searched the usual way, or a path)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_INT, "SYMHEAP_CUDA_DEVICE", NULL, 0,
     1023, NULL,
     "CUDA device ordinal for ranks whose thread has no current context; "
     "unset: local rank modulo the device count"},
    /* Read by libsymheap_cuda.so (kernels/), declared here with the rest of
     * CUDA's variables so that symheap-info -e lists them. */
    {sizeof(symheap_param_t), SYMHEAP_PARAM_BOOL, "SYMHEAP_CUDA_ZERO_SM", "0",
     0, 0, NULL,
     "read by libsymheap_cuda.so: 1 makes every all-gather and broadcast "
     "use the copy engines only (no SM), as the per-call flag "
     "SYMHEAP_CUDA_ZERO_SM does"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_INT, "SYMHEAP_CUDA_CE_BYTES",
     "67108864", 0, 1L << 40, NULL,
     "read by libsymheap_cuda.so: SYMHEAP_ALGO_AUTO all-reduces of at least "
     "this many bytes as reduce-scatter by SM, then all-gather by the copy "
     "engines (where no tuning table has a row for the size)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_INT, "SYMHEAP_CUDA_PIPE_CHUNK",
     "0", 0, 1L << 40, NULL,
     "read by libsymheap_cuda.so: bytes per chunk of the pipelined rs+ce "
     "all-reduce (rs_ce_pipe); 0: an eighth of the buffer, 8 to 32 MiB"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_TUNING_FILE",
     NULL, 0, 0, NULL,
     "read by libsymheap_cuda.so: the tuning table SYMHEAP_ALGO_AUTO "
     "chooses from (docs/tuning.md), instead of "
     "<libdir>/../share/symheap/tuning/<gpu>.tsv; 'none': no table, the "
     "built-in thresholds; a bad or missing named file fails AUTO calls, "
     "naming the line"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE, "SYMHEAP_ALL_REDUCE_ALGO",
     "auto", 0, 0,
     "auto|one_shot|two_shot|rs_ce|one_shot_push|two_shot_push|rs_ce_pipe|"
     "ll128",
     "read by libsymheap_cuda.so: the algorithm SYMHEAP_ALGO_AUTO all-reduces "
     "take (auto: the tuning table, else the thresholds); where it cannot "
     "run a call (one_shot in place above the LL capacity, rs_ce or "
     "rs_ce_pipe (rs_ce in chunks, the copies of one under the reduction of "
     "the next) without stream memory operations, the push ones at other "
     "than 2, 4 or 8 ranks or above what their staging holds), two_shot"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE,
     "SYMHEAP_REDUCE_SCATTER_ALGO", "auto", 0, 0, "auto|one_shot|two_shot",
     "read by libsymheap_cuda.so: the algorithm SYMHEAP_ALGO_AUTO "
     "reduce-scatters take (one_shot above the LL capacity: two_shot)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE, "SYMHEAP_ALL_GATHER_ALGO",
     "auto", 0, 0, "auto|sm|zero_sm",
     "read by libsymheap_cuda.so: sm (kernel) or zero_sm (copy engines) for "
     "all-gathers without the SYMHEAP_CUDA_ZERO_SM flag (auto: the tuning "
     "table, else sm)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE, "SYMHEAP_BROADCAST_ALGO",
     "auto", 0, 0, "auto|sm|zero_sm|scatter|scatter_pipe|ce_pipe",
     "read by libsymheap_cuda.so: sm (kernel: every rank reads root's "
     "buffer), zero_sm (copy engines) or scatter (kernel: each rank pushes "
     "its part of root's buffer to every rank) or scatter_pipe (kernel: root "
     "pushes each rank its part in steps, which it forwards to the others "
     "as they land) or ce_pipe (the same by the copy engines, no SM) for "
     "broadcasts without the SYMHEAP_CUDA_ZERO_SM flag "
     "(auto: the tuning table, else sm)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE, "SYMHEAP_ALL_TO_ALL_ALGO",
     "auto", 0, 0, "auto|sm|zero_sm",
     "read by libsymheap_cuda.so: sm (kernel: stores into the peers' "
     "outputs) or zero_sm (a copy-engine copy per peer, ordered by stream "
     "memory operations) for all-to-alls (not all-to-all-v; auto: the "
     "tuning table, else sm)"},
};
const size_t cuda_nparams = sizeof cuda_params / sizeof cuda_params[0];

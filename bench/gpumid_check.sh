#!/usr/bin/env bash
# The push all-reduces (kernels/all_reduce_push.cu: one_shot_push,
# two_shot_push, ll128) on a lent GPU machine of 2 or 4 GPUs, NVLink
# multicast off, in one bounded command:
#   1. build (make -j16 all gpu-tests);
#   2. correctness at 2 and 4 ranks (RANKS): test_coll_mid (processes;
#      threads at 2), test_coll with AUTO forced to ll128 (every count and
#      offset, the graph case) and test_coll's graph case with AUTO forced
#      to each push kernel (SYMHEAP_ALL_REDUCE_ALGO);
#   3. timing, bf16 all-reduce 64 KiB to 4 MiB: symheap-tune --coll
#      all_reduce (every old and new variant, eager and --graph) and
#      bench/python_peers.py (PyTorch's symm_mem one_shot / two_shot, eager
#      and graph; NCCL) at 2 and 4 ranks;
#   4. with TUNE=1, the tuning run over every size at each rank count
#      (symheap-tune --out: the rows of tuning/<gpu>.tsv);
#   5. the short table (bench/gpumid_table.py), last.
# Logs and raw files: $OUT/gpumid.tar.gz; the table: $OUT/table.txt.
# Every step runs under a timeout within BUDGET seconds (default 360).
#   bash bench/gpumid_check.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpumid-out}
BUDGET=${BUDGET:-360}
RANKS=${RANKS:-2 4}
W=$(mktemp -d)
mkdir -p "$OUT"
# step NAME LIMIT LOG COMMAND...: under a timeout no longer than what is
# left of the budget; one summary line (bench/gpu_step.sh).
STEP_DIR=$W STEP_WIDTH=44
. bench/gpu_step.sh
finish() { step_finish "$OUT" gpumid.tar.gz bench/gpumid_table.py; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$W/gpus.txt"
# the commit: git's, or COMMIT where the tree travelled as a copy
if [ -f COMMIT ]; then cat COMMIT; else git log -1 --format='%H %s'; fi \
  >"$W/commit.txt" 2>&1
step build 200 build.log make -j16 all gpu-tests || { tail -n 40 "$W/build.log"; exit 1; }
RUN=build/bin/symheap-run
PP=$PWD/build/lib/python3/site-packages
# A push kernel that hangs would hang every later step that runs it: then
# only PyTorch's side is measured.
HUNG=0
for n in $RANKS; do
  [ $HUNG = 1 ] && break
  step "test_coll_mid procs x$n" 45 mid_n$n.log $RUN -n $n build/test/test_coll_mid
  rc=$?
  [ $rc = 124 ] || [ $rc = 137 ] && HUNG=1
done
for n in $RANKS; do
  [ $HUNG = 1 ] && break
  step "symheap-tune graph x$n" 60 tune_graph_n$n.log $RUN -n $n \
    build/bin/symheap-tune --coll all_reduce --min-bytes 65536 \
    --max-bytes 4194304 --graph --all "$W/tune_graph_n$n.tsv"
done
for n in $RANKS; do
  step "torch python_peers x$n" 90 torch_n$n.log env OUT="$W/torch_n$n" \
    PYTHONPATH="$PP" bash -c "mkdir -p \$OUT && python3 bench/python_peers.py \
    --ranks $n --sizes 64K,256K,512K,1M,2M,4M --no-symheap-backend"
done
[ $HUNG = 1 ] && exit 1
for n in $RANKS; do
  step "symheap-tune eager x$n" 60 tune_eager_n$n.log $RUN -n $n \
    build/bin/symheap-tune --coll all_reduce --min-bytes 65536 \
    --max-bytes 4194304 --all "$W/tune_eager_n$n.tsv"
done
n=${RANKS##* } # the largest rank count
for a in one_shot_push two_shot_push; do
  step "test_coll graph, AUTO=$a x$n" 40 coll_graph_${a}_n$n.log env \
    SYMHEAP_ALL_REDUCE_ALGO=$a SYMHEAP_TEST_ONLY=graph_capture_replay_500 \
    $RUN -n $n build/test/test_coll
done
for n in $RANKS; do
  step "test_coll, AUTO=ll128 x$n" 90 coll_ll128_n$n.log env \
    SYMHEAP_ALL_REDUCE_ALGO=ll128 $RUN -n $n build/test/test_coll
done
step "test_coll_mid threads x2" 60 mid_threads2.log build/test/test_coll_mid --threads 2
if [ "${TUNE:-0}" = 1 ]; then
  for n in $RANKS; do
    step "symheap-tune table x$n" 120 tune_table_n$n.log $RUN -n $n \
      build/bin/symheap-tune --out "$W/table_n$n.tsv" --all "$W/tune_all_n$n.tsv"
  done
fi
exit 0

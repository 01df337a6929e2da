#!/usr/bin/env bash
# Round 6 on a 2-GPU machine (NVLink multicast off), one bounded command:
# the LL128 all-reduce of this tree against BASE's (another tree, e.g. main,
# built there), issue 30's graph goal from Python, and issue 29's 2-rank
# large sizes and tuning run.
#   1. build this tree (all gpu-tests python) and BASE's symheap-tune;
#   2. correctness: test_coll_mid (processes, threads), test_coll with AUTO
#      forced to ll128 and with AUTO on the shipped table;
#   3. symheap-tune --coll all_reduce 16 KiB-4 MiB, graph and eager, this
#      tree and BASE alternately, twice each (the spread; every variant's
#      result checked);
#   4. bench/python_peers.py at 2 ranks (symheap AUTO, PyTorch's one-shot
#      and two-shot, NCCL; eager and graph), twice;
#   5. with TUNE=1: the tuning run at 2 ranks (every size; --all) eager and
#      graph, and symheap-bench --collectives (the copy-engine put rate);
#   6. the short table (bench/ll128_ab_table.py), last.
# Raw files under OUTDIR (default $OUT) as ab.tgz; the table as table.txt.
#   BASES="main=.. r6a=base" TUNE=1 bash bench/ll128_ab.sh [OUTDIR]
# (BASES: name=tree pairs, each tree built and timed beside this one)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-/tmp/ll128-ab}}
BUDGET=${BUDGET:-420}
BASES=${BASES:-${BASE:+base=$BASE}}
W=$(mktemp -d)
mkdir -p "$OUTDIR"
STEP_DIR=$W
. bench/gpu_step.sh
finish() { step_finish "$OUTDIR" ab.tgz bench/ll128_ab_table.py; }
trap finish EXIT
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvidia-smi topo -m | head -3
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
} >"$W/machine.txt" 2>&1
cat "$W/machine.txt"
bpids=
for nb in $BASES; do
  (make -C "${nb#*=}" -j4 build/bin/symheap-tune >"$W/build_${nb%%=*}.log" 2>&1;
   echo "build rc=$?" >>"$W/build_${nb%%=*}.log") &
  bpids="$bpids $!"
done
step build 200 build.log make -j12 all python ||
  { tail -n 40 "$W/build.log"; exit 1; }
step build-tests 120 build_tests.log make -j12 -k gpu-tests ||
  tail -n 20 "$W/build_tests.log"
[ -n "$bpids" ] && wait $bpids
# registers and spills of the push kernels, this tree and each base
for nb in new=. $BASES; do
  t=${nb#*=}
  nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I$t/include \
    -I$t/kernels -Xptxas -v -c $t/kernels/all_reduce_push.cu -o /dev/null 2>&1 |
    grep -E 'Compiling entry|registers|spill' | paste - - - |
    sed -e 's/.*push_cu_[0-9a-f]*//' >"$W/ptxas_${nb%%=*}.txt" &
done
RUN=build/bin/symheap-run
PP=$PWD/build/lib/python3/site-packages
HUNG=0
step "test_coll_mid procs x2" 60 mid_procs2.log $RUN -n 2 build/test/test_coll_mid
rc=$?; [ $rc = 124 ] || [ $rc = 137 ] && HUNG=1
[ $HUNG = 0 ] && step "test_coll_mid threads x2" 60 mid_threads2.log \
  build/test/test_coll_mid --threads 2
TB=build/bin/symheap-tune
for k in 1 2; do
  [ $HUNG = 1 ] && break
  for m in graph eager; do
    g=; [ $m = graph ] && g=--graph
    for nb in new=. $BASES; do
      n=${nb%%=*} t=${nb#*=}
      [ -x "$t/$TB" ] || continue
      step "tune $m $n #$k" 40 tune_${m}_$n$k.log $RUN -n 2 $t/$TB \
        --coll all_reduce --min-bytes 16384 --max-bytes 4194304 $g \
        --all "$W/tune_${m}_$n$k.tsv"
    done
  done
done
[ $HUNG = 0 ] && step "test_coll AUTO=ll128 x2" 90 coll_ll128.log env \
  SYMHEAP_ALL_REDUCE_ALGO=ll128 $RUN -n 2 build/test/test_coll
if [ "${TUNE:-0}" = 1 ] && [ $HUNG = 0 ]; then
  step "tune table eager x2" 120 tune_table.log $RUN -n 2 $TB \
    --out "$W/table_eager.tsv" --all "$W/tune_all_eager.tsv"
  step "tune table graph x2" 120 tune_table_graph.log $RUN -n 2 $TB --graph \
    --max-bytes 67108864 --out "$W/table_graph.tsv" --all "$W/tune_all_graph.tsv"
  step "symheap-bench --collectives x2" 60 bench.log $RUN -n 2 \
    build/bin/symheap-bench --collectives --json "$W/bench.json"
  # MERGE=1: this run's 2-rank rows into the shipped table, in place where
  # the library looks (and in $W/tuning/ to bring back)
  name=$(sed -n 's/^# file name: //p' "$W/table_eager.tsv")
  if [ "${MERGE:-0}" = 1 ] && [ -n "$name" ] && [ -f "tuning/$name" ]; then
    mkdir -p "$W/tuning"
    # all_reduce rows near the best in eager calls and in graphs alike
    python3 bench/tune_both.py "$W/tune_all_eager.tsv" "$W/tune_all_graph.tsv" \
      "$W/table_eager.tsv" "$W/table_both.tsv" >"$W/tune_both.txt" 2>&1
    python3 bench/merge_table.py "tuning/$name" "$W/table_both.tsv" \
      "$W/tuning/$name" "2-rank rows: symheap-tune at 2 ranks on $(nvidia-smi \
      --query-gpu=name --format=csv,noheader | head -1), $(date -u '+%F %H:%M') UTC (bench/ll128_ab.sh, round 6)" &&
      build/bin/symheap-tune --check "$W/tuning/$name" &&
      cp "$W/tuning/$name" build/share/symheap/tuning/ &&
      cp "$W/tuning/$name" tuning/ && touch build/share/symheap/tuning/.stamp &&
      echo "merged table in place: build/share/symheap/tuning/$name" | tee -a "$W/summary.txt"
    step "symheap-bench --collectives x2 (merged)" 60 bench_merged.log $RUN -n 2 \
      build/bin/symheap-bench --collectives --json "$W/bench_merged.json"
  fi
fi
for k in 1 2; do
  [ $HUNG = 1 ] && break
  mkdir -p "$W/peers$k"
  step "python_peers x2 #$k" 100 peers$k.log env OUT="$W/peers$k" \
    PYTHONPATH="$PP" python3 bench/python_peers.py --ranks 2 \
    --sizes 4K,64K,256K,512K,1M,2M,16M --no-symheap-backend
done
[ $HUNG = 0 ] && step "test_coll AUTO (table) x2" 90 coll_auto.log \
  $RUN -n 2 build/test/test_coll
# EXTRA=1: the other suites the LL kernels' launch touches: reduce-scatter
# (test_coll_xfer), ranks sharing a GPU (4 ranks on 2 GPUs: no early
# trigger), threads
if [ "${EXTRA:-0}" = 1 ] && [ $HUNG = 0 ]; then
  step "test_coll_xfer x2" 60 xfer2.log $RUN -n 2 build/test/test_coll_xfer
  step "test_coll threads x2" 90 coll_threads2.log build/test/test_coll --threads 2
  step "test_coll_mid threads x4 (2 a GPU)" 90 mid_threads4.log \
    build/test/test_coll_mid --threads 4
  [ "${EXTRA}" = 2 ] && step "test_coll procs x4 (2 a GPU)" 120 coll_procs4.log \
    $RUN -n 4 build/test/test_coll
fi
# PEERS=1: NCCL's and PyTorch's all-reduce at 4 KiB-1 GiB, eager (the scale
# page's 2-rank column; bench/peers_baseline_n.py)
if [ "${PEERS:-0}" = 1 ]; then
  mkdir -p "$W/baseline"
  step "NCCL / PyTorch all-reduce 4K-1G x2" 120 baseline.log env OUT="$W/baseline" \
    PEERS_SIZES=4096,16384,65536,262144,1048576,4194304,16777216,67108864,268435456,1073741824 \
    python3 bench/peers_baseline_n.py 2
fi
wait
# TORCH=1: bench/torch_gpu.sh (issue 30's torch tests and python_peers)
if [ "${TORCH:-0}" = 1 ] && [ $HUNG = 0 ]; then
  left=$((BUDGET - SECONDS))
  echo "torch_gpu.sh with BUDGET_S=$((left - 100))" | tee -a "$W/summary.txt"
  OUT=$W/torch BUDGET_S=$((left - 100)) timeout -k 5 $((left + 20)) \
    bash bench/torch_gpu.sh >"$W/torch_gpu.log" 2>&1
  echo "torch_gpu.sh rc=$?" | tee -a "$W/summary.txt"
  tail -n 40 "$W/torch_gpu.log" >"$W/torch_gpu_tail.txt"
fi
exit 0

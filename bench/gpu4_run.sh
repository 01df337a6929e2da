#!/usr/bin/env bash
# Issues 29 and 30 at 4 ranks on a lent 4-GPU machine, in one bounded command
# (NVLink multicast off): build; the tuning run at 4 ranks (eager and graph,
# merged like bench/ll128_ab.sh does at 2: bench/tune_both.py, then
# bench/merge_table.py puts the 4-rank rows into the shipped table); the
# sweep with that table (symheap-bench --collectives) beside NCCL and
# PyTorch (bench/peers_baseline_n.py 4); the torch tests and
# bench/python_peers.py at 4 ranks; the GPU suites at 4 ranks, processes and
# threads, as long as the budget lasts.  Every step runs under a timeout
# inside BUDGET seconds (default 430); a step the budget cannot hold is
# listed as skipped.  Raw files into OUTDIR as gpu4.tgz, summary last.
#   BUDGET=430 bash bench/gpu4_run.sh [OUTDIR]
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-/tmp/gpu4}}
BUDGET=${BUDGET:-430}
W=$(mktemp -d)
mkdir -p "$OUTDIR" "$W/n4/suites"
STEP_DIR=$W STEP_WIDTH=36 STEP_COUNT="PASS FAIL SKIP" STEP_WHY=240
. bench/gpu_step.sh
finish() {
  step_finish "$OUTDIR" gpu4.tgz
  echo "== auto vs peers (symheap-bench --collectives, 4 ranks)"
  grep -E 'all_reduce|bus' "$W/n4/coll.txt" 2>/dev/null | head -40
}
trap finish EXIT
{ date -u; nvidia-smi -L; nvidia-smi topo -m | head -5
  nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
} >"$W/machine.txt" 2>&1
cat "$W/machine.txt"
gpus=$(nvidia-smi -L | wc -l)
[ "$gpus" -ge 4 ] || { echo "gpu4_run: needs 4 GPUs ($gpus seen)"; exit 1; }
# build: library, tools, tests, the CUDA collectives and the torch extension
step "build lib" 120 build_lib.log make -j16 PYTHON=python3 lib tools python ||
  { tail -n 40 "$W/build_lib.log"; exit 1; }
MAX_JOBS=8 make PYTHON=python3 python-torch >"$W/build_torch.log" 2>&1 &
tpid=$!
step build 200 build.log make -j16 all gpu-tests NVCC_ARCH=-arch=sm_90 ||
  { tail -n 40 "$W/build.log"; exit 1; }
wait $tpid; echo "torch extension build rc=$?" | tee -a "$W/summary.txt"
RUN="build/bin/symheap-run -n 4"
TB=build/bin/symheap-tune
PP=$PWD/build/lib/python3/site-packages
# correctness of the new kernels at 4 ranks before any timing
step "test_coll_mid procs x4" 60 mid4.log $RUN build/test/test_coll_mid
# the tuning run at 4 ranks, eager and graph; one table for both modes
step "tune eager x4" 120 tune_eager.log $RUN $TB --out "$W/n4/table_eager.tsv" \
  --all "$W/n4/tune_all_eager.tsv"
step "tune graph x4" 120 tune_graph.log $RUN $TB --graph --max-bytes 67108864 \
  --out "$W/n4/table_graph.tsv" --all "$W/n4/tune_all_graph.tsv"
name=$(sed -n 's/^# file name: //p' "$W/n4/table_eager.tsv" 2>/dev/null)
if [ -n "$name" ]; then
  mkdir -p "$W/tuning" build/share/symheap/tuning
  python3 bench/tune_both.py "$W/n4/tune_all_eager.tsv" "$W/n4/tune_all_graph.tsv" \
    "$W/n4/table_eager.tsv" "$W/n4/table_both.tsv" >"$W/n4/tune_both.txt" 2>&1 ||
    cp "$W/n4/table_eager.tsv" "$W/n4/table_both.tsv"
  if [ -f "tuning/$name" ]; then
    python3 bench/merge_table.py "tuning/$name" "$W/n4/table_both.tsv" "$W/tuning/$name" \
      "4-rank rows: symheap-tune at 4 ranks on $(nvidia-smi --query-gpu=name \
      --format=csv,noheader | head -1), $(date -u '+%F %H:%M') UTC (bench/gpu4_run.sh, round 6)"
  else
    cp "$W/n4/table_both.tsv" "$W/tuning/$name"
  fi
  $TB --check "$W/tuning/$name" && cp "$W/tuning/$name" build/share/symheap/tuning/ &&
    cp "$W/tuning/$name" tuning/ && touch build/share/symheap/tuning/.stamp &&
    echo "table in place: $name" | tee -a "$W/summary.txt"
fi
# the sweep with the table, then NCCL and PyTorch in the same command
step "coll sweep x4" 150 n4/coll.txt env SYMHEAP_DEBUG=INFO $RUN \
  build/bin/symheap-bench --collectives --json "$W/n4/coll.json"
step "NCCL/PyTorch 4K-1G x4" 150 n4/baseline.txt env OUT="$W/n4" \
  PEERS_SIZES=4096,16384,65536,262144,1048576,4194304,16777216,67108864,268435456,1073741824 \
  python3 bench/peers_baseline_n.py 4
step "test_coll AUTO (table) procs x4" 120 coll4.log $RUN build/test/test_coll
# issue 30 at 4 ranks
mkdir -p "$W/peers4"
step "python_peers x4" 120 peers4.log env OUT="$W/peers4" PYTHONPATH="$PP" \
  python3 bench/python_peers.py --ranks 4 --sizes 4K,64K,256K,512K,1M,16M,256M
step "torch symm_mem SYMHEAP srun x4" 100 symm4.log env PYTHONPATH="$PP" \
  $RUN python3 test/python/test_torch_symm.py
step "torch.ops.symheap srun x4" 100 ops4.log env PYTHONPATH="$PP" \
  $RUN python3 test/python/test_torch_ops.py
# the GPU suites at 4 ranks, as long as the budget lasts
step "coll_xfer procs x4" 90 n4/suites/xfer_procs.log $RUN build/test/test_coll_xfer
step "python GPU test x4" 90 n4/suites/python.log env PYTHONPATH="$PP" \
  $RUN python3 test/python/test_gpu.py
step "gpu procs x4" 90 n4/suites/gpu_procs.log $RUN build/test/test_gpu
step "heap procs x4" 90 n4/suites/heap_procs.log $RUN build/test/test_heap_gpu
step "coll threads x4" 120 n4/suites/coll_threads.log build/test/test_coll --threads 4
step "coll_xfer threads x4" 90 n4/suites/xfer_threads.log build/test/test_coll_xfer --threads 4
step "gpu threads x4" 90 n4/suites/gpu_threads.log build/test/test_gpu --threads 4
step "heap threads x4" 90 n4/suites/heap_threads.log build/test/test_heap_gpu --threads 4
step "reg x4" 60 n4/reg.txt env SYMHEAP_DEVICE=cuda $RUN build/bin/symheap-bench --iters 11
exit 0

#!/usr/bin/env bash
# Issue 29's large-size goals on a 2- or 4-GPU machine (NVLink multicast
# off), for the pipelined algorithms (rs_ce_pipe all-reduce, scatter_pipe
# broadcast) and the copy-engine all-to-all (zero_sm) beside the old ones,
# in one command:
#   1. build (make -j16 all gpu-tests);
#   2. correctness of what they touch at 4 and 2 ranks: test_coll (every
#      all-reduce algorithm, odd counts and offsets, 256 MiB + 3 elements
#      pipelined in place) and test_coll_xfer under
#      SYMHEAP_BROADCAST_ALGO=scatter_pipe and SYMHEAP_ALL_TO_ALL_ALGO=zero_sm, and
#      again under SYMHEAP_BROADCAST_ALGO=ce_pipe (odd sizes, in place, the graph
#      case: rs_ce_pipe and the broadcast captured and replayed 500 times);
#   3. symheap-tune at 4 and 2 ranks (every variant, each checked, the
#      table AUTO would get), symheap-bench --collectives (the copy-engine
#      peer put rate of the same run), NCCL's all-reduce
#      (bench/peers_baseline_n.py) and broadcast (bench/peers_collectives.py);
#   4. the short table, last (bench/gpularge_table.py).
# Every step under a timeout inside BUDGET seconds (default 320); a step the
# budget cannot hold is skipped and said.  Raw files in OUTDIR (default
# $OUT), and OUTDIR/gpularge.tgz of them all.
#   bench/gpularge_check.sh [OUTDIR]
#   STEPS="tune table" bench/gpularge_check.sh   only those (of: build coll
#                                   xfer tune chunks bench nccl table)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-build/gpularge-out}}
D="$OUTDIR/gpularge"
mkdir -p "$D"
BUDGET=${BUDGET:-320}
STEPS=" ${STEPS:-build coll xfer tune chunks bench nccl table} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
run=build/bin/symheap-run

# step NAME LIMIT LOG COMMAND... (bench/gpu_step.sh): LOG as given, a line
# in steps.txt, the last step's limit 5 s short of the budget
STEP_DIR= STEP_SUMMARY=$D/steps.txt STEP_MARGIN=5
. bench/gpu_step.sh
step_line() {
  printf '%-26s rc %-3s %4ss  pass %3s fail %3s\n' "$1" "$2" "$3" \
    "$(grep -c '^PASS' "$4")" "$(grep -c '^FAIL' "$4")"
}

gpus=$(nvidia-smi -L | wc -l)
{ date -u +"%Y-%m-%d %H:%M UTC"; nvidia-smi -L
  nvidia-smi topo -m | head -$((gpus + 1))
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1
} >"$D/machine.txt"
cat "$D/machine.txt"
ranks=""
for n in 4 2; do [ "$n" -le "$gpus" ] && ranks="$ranks $n"; done

if want build; then
  step build 200 "$D/build.txt" make -j16 all gpu-tests NVCC_ARCH=-arch=sm_90 ||
    { tail -30 "$D/build.txt"; tar -C "$OUTDIR" -czf "$OUTDIR/gpularge.tgz" gpularge; exit 1; }
fi

if want coll; then
  for n in $ranks; do
    step "coll.procs$n" 75 "$D/coll.procs$n.txt" $run -n "$n" build/test/test_coll
  done
fi
if want xfer; then
  for n in $ranks; do
    step "xfer.pipe.procs$n" 40 "$D/xfer.pipe.procs$n.txt" \
      env SYMHEAP_BROADCAST_ALGO=scatter_pipe SYMHEAP_ALL_TO_ALL_ALGO=zero_sm $run -n "$n" build/test/test_coll_xfer
  done
  for n in $ranks; do
    step "xfer.cepipe.procs$n" 40 "$D/xfer.cepipe.procs$n.txt" \
      env SYMHEAP_BROADCAST_ALGO=ce_pipe $run -n "$n" build/test/test_coll_xfer
  done
  step "xfer.cepipe.threads4" 40 "$D/xfer.cepipe.threads4.txt" \
    env SYMHEAP_BROADCAST_ALGO=ce_pipe build/test/test_coll_xfer --threads "$gpus"
  step "xfer.pipe.threads4" 40 "$D/xfer.pipe.threads4.txt" \
    env SYMHEAP_BROADCAST_ALGO=scatter_pipe SYMHEAP_ALL_TO_ALL_ALGO=zero_sm build/test/test_coll_xfer --threads "$gpus"
fi

if want tune; then
  for n in $ranks; do
    step "tune.n$n" 90 "$D/tune.n$n.txt" $run -n "$n" build/bin/symheap-tune \
      --out "$D/table.n$n.tsv" --all "$D/tune-all.n$n.tsv"
  done
fi

# rs_ce_pipe's chunk size (SYMHEAP_CUDA_PIPE_CHUNK; default an eighth of
# the buffer, 8-32 MiB): the whole tuning sweep again at 4 ranks per value
if want chunks; then
  for c in ${CHUNKS:-2097152 134217728}; do
    step "tune.n4.chunk$c" 60 "$D/tune.n4.chunk$c.txt" env SYMHEAP_CUDA_PIPE_CHUNK=$c \
      $run -n 4 build/bin/symheap-tune --out "$D/table.n4.chunk$c.tsv"
  done
fi

if want bench; then
  for n in $ranks; do
    step "coll.bench.n$n" 40 "$D/bench.n$n.txt" env SYMHEAP_DEBUG=INFO $run -n "$n" \
      build/bin/symheap-bench --collectives --json "$D/bench.n$n.json"
  done
fi

if want nccl; then
  mkdir -p "$D/nccl4"
  step "nccl.allreduce.n4" 45 "$D/nccl.allreduce.n4.txt" env OUT="$D/nccl4" \
    PEERS_SIZES=67108864,268435456,1073741824 python3 bench/peers_baseline_n.py 4
  step "nccl.coll.n4" 45 "$D/nccl.coll.n4.txt" env OUT="$D/nccl4" python3 \
    bench/peers_collectives.py 4
fi

if want table; then
  python3 bench/gpularge_table.py "$D" | tee "$D/table.txt"
fi
tar -C "$OUTDIR" -czf "$OUTDIR/gpularge.tgz" gpularge
echo "== steps"
cat "$D/steps.txt"
echo "== table"
cat "$D/table.txt" 2>/dev/null

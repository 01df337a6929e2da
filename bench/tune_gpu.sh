#!/usr/bin/env bash
# The one run on a GPU machine (2 or 4 GPUs of one host, NVLink multicast
# off) that measures the tuning tables and the scale page (issue 29):
#   1. build (make -j16 all gpu-tests);
#   2. the tuning run (symheap-tune) at 2 and 4 ranks, merged into
#      OUTDIR/tuning/<gpu>.tsv, the file the tree ships (tuning/);
#   3. the sweep with that table in place (symheap-bench --collectives) and
#      NCCL and PyTorch in the same command (bench/peers_baseline_n.py, the
#      N-rank form of shared/bench/peers_baseline.py);
#   4. OUTDIR/docs/perf/scale.md (docs/perf/scale.md with its measured part
#      written), the plot, and the short table;
#   5. the GPU suites at 2 and 4 ranks, processes and threads, and the
#      registration table, as long as the time budget lasts;
#   6. the short table again, last (auto vs best own vs NCCL vs PyTorch).
# Raw files: OUTDIR/docs/perf/data/scale-<date>/n2|n4/; the table:
# OUTDIR/tuning/<gpu>.tsv; the page: OUTDIR/docs/perf/scale.md.  Every step runs
# under a timeout inside BUDGET seconds (default 540); a step the budget
# cannot hold is listed as skipped, never left hanging.
#   bench/tune_gpu.sh [OUTDIR]          (OUTDIR default: $OUT)
#   STEPS="suites reg" bench/tune_gpu.sh  only those steps (of: build tune
#                                         sweep report suites reg pcoll)
#   DRY_RUN=1 bench/tune_gpu.sh          print the commands, run nothing
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-build/tune-out}}
MAIN_OUTDIR=$OUTDIR # gpu_suite.sh's suite() writes into $OUTDIR
BUDGET=${BUDGET:-540}
STEPS=" ${STEPS:-build tune sweep report suites reg pcoll} "
DRY=${DRY_RUN:-0}
DATE=$(date -u +%Y-%m-%d)
# Everything is written under WORK (kept on the machine between commands, as
# build/ is) and copied to OUTDIR after each stage, so a second command
# (STEPS="suites reg pcoll report") adds to the first one's files.
WORK=${TUNE_WORK:-build/tune-data}
[ "$DRY" = 1 ] && WORK="$OUTDIR/work"
want() { [[ "$STEPS" == *" $1 "* ]]; }
want tune && rm -rf "$WORK"
DATA="$WORK/docs/perf/data/scale-$DATE"
TDIR="$WORK/tuning"
mkdir -p "$DATA" "$TDIR" "$OUTDIR"
touch "$DATA/skipped.txt" "$DATA/steps.txt"
sync_out() { [ "$DRY" = 1 ] || cp -r "$WORK"/. "$MAIN_OUTDIR"/; }

# step NAME LIMIT LOG COMMAND... (bench/gpu_step.sh): COMMAND into LOG
# under a timeout no longer than what is left of the budget; skipped (and
# said) when too little is; with DRY_RUN=1 only printed.
STEP_DIR= STEP_SUMMARY=$DATA/steps.txt STEP_SKIPPED=$DATA/skipped.txt \
  STEP_MIN_LEFT=20 STEP_DRY=$DRY
. bench/gpu_step.sh
step_line() { printf '%-22s rc %-3s %4ss\n' "$1" "$2" "$3"; }

if [ "$DRY" = 1 ]; then
  gpus=${GPUS:-4}
else
  gpus=$(nvidia-smi -L | wc -l)
  { date -u +"%Y-%m-%d %H:%M UTC"; nvidia-smi -L
    nvidia-smi topo -m | head -$((gpus + 1))
    nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
    python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1
    git log -1 --format='tree at %H' 2>/dev/null; } >"$DATA/machine.txt"
  cat "$DATA/machine.txt"
fi
ranks=""
for n in 2 4; do [ "$n" -le "$gpus" ] && ranks="$ranks $n"; done
[ -n "$ranks" ] || { echo "tune_gpu: needs at least 2 GPUs ($gpus seen)"; exit 1; }
echo "rank counts:$ranks; budget ${BUDGET}s; steps:$STEPS"
for n in $ranks; do mkdir -p "$DATA/n$n/suites"; done
run="build/bin/symheap-run"
# NCCL and PyTorch at the sweep's all-reduce sizes (symheap-bench: 4 KiB to
# 1 GiB by 4)
PEERS_SIZES=4096,16384,65536,262144,1048576,4194304,16777216,67108864,268435456,1073741824

# 1. build
if want build; then
  step build 300 "$DATA/build.txt" make -j16 all gpu-tests NVCC_ARCH=-arch=sm_90 ||
    { tail -30 "$DATA/build.txt"; exit 1; }
fi

# 2. the tuning run, one rank count at a time, then one table
if want tune; then
  for n in $ranks; do
    step "tune.n$n" 120 "$DATA/n$n/tune.txt" $run -n "$n" build/bin/symheap-tune \
      --out "$DATA/n$n/table.tsv" --all "$DATA/n$n/tune-all.tsv"
    [ "$DRY" = 1 ] || grep -E '^(WRONG|FAIL|#)' "$DATA/n$n/tune.txt" | head -5
  done
  first=$(for n in $ranks; do [ -s "$DATA/n$n/table.tsv" ] && echo "$DATA/n$n/table.tsv"; done | head -1)
  if [ -n "$first" ]; then
    name=$(sed -n 's/^# file name: //p' "$first")
    { echo "# symheap tuning table: bench/tune_gpu.sh on $(date -u +%F), ranks:$ranks"
      echo "# (symheap-tune per rank count; docs/tuning.md).  Columns: collective"
      echo "# ranks topology min_bytes max_bytes algorithm blocks threads us"
      grep '^gpu' "$first"
      for n in $ranks; do grep -Ev '^(#|gpu|$)' "$DATA/n$n/table.tsv" 2>/dev/null; done
    } >"$TDIR/$name"
    build/bin/symheap-tune --check "$TDIR/$name" || exit 1
    # where the library looks (<libdir>/../share/symheap/tuning), and the
    # tree's copy, so the sweep below runs with it as a user would
    mkdir -p build/share/symheap/tuning tuning
    cp "$TDIR/$name" build/share/symheap/tuning/ && cp "$TDIR/$name" tuning/
  elif [ "$DRY" != 1 ]; then
    echo "tune_gpu: no table was written; the sweep runs on the thresholds"
  fi
  sync_out
fi

# 3. the sweep: symheap (with the table) and NCCL / PyTorch, same command
if want sweep; then
  for n in $ranks; do
    d="$DATA/n$n"
    step "coll.n$n" 150 "$d/coll.txt" env SYMHEAP_DEBUG=INFO $run -n "$n" \
      build/bin/symheap-bench --collectives --json "$d/coll.json"
    [ "$DRY" = 1 ] || grep -m1 -o 'tuning table.*\|no tuning table.*' "$d/coll.txt" \
      >"$d/table-used.txt"
    step "baseline.n$n" 180 "$d/baseline.txt" env OUT="$d" PEERS_SIZES="$PEERS_SIZES" python3 \
      bench/peers_baseline_n.py "$n"
  done
fi

report() {
  [ "$DRY" = 1 ] && { echo "[dry] python3 bench/scale_report.py $DATA docs/perf/scale.md $WORK/docs/perf/scale.md"; return; }
  python3 bench/scale_report.py "$DATA" docs/perf/scale.md "$WORK/docs/perf/scale.md"
}
want report && report
sync_out

# 5. correctness at each rank count, processes and threads (as long as the
# budget lasts: the largest rank count first)
if want suites; then
  . bench/gpu_suite.sh
  py="env PYTHONPATH=$PWD/build/lib/python3/site-packages"
  for n in $(echo $ranks | tr ' ' '\n' | sort -rn); do
    OUTDIR="$DATA/n$n/suites"
    rows=()
    for s in "coll.procs $run -n $n build/test/test_coll" \
      "coll.threads build/test/test_coll --threads $n" \
      "xfer.procs $run -n $n build/test/test_coll_xfer" \
      "xfer.threads build/test/test_coll_xfer --threads $n" \
      "xfer.scatter.procs env SYMHEAP_BROADCAST_ALGO=scatter $run -n $n build/test/test_coll_xfer" \
      "xfer.pipe.procs env SYMHEAP_BROADCAST_ALGO=scatter_pipe SYMHEAP_ALL_TO_ALL_ALGO=zero_sm $run -n $n build/test/test_coll_xfer" \
      "xfer.cepipe.procs env SYMHEAP_BROADCAST_ALGO=ce_pipe $run -n $n build/test/test_coll_xfer" \
      "gpu.procs $run -n $n build/test/test_gpu" \
      "gpu.threads build/test/test_gpu --threads $n" \
      "heap.procs $run -n $n build/test/test_heap_gpu" \
      "heap.threads build/test/test_heap_gpu --threads $n" \
      "python.procs $py $run -n $n python3 test/python/test_gpu.py"; do
      set -- $s
      name=$1
      shift
      left=$((BUDGET - SECONDS))
      if [ "$left" -lt 25 ]; then
        rows+=("$(printf '%-30s not run (time budget)' "$name$n")")
        continue
      fi
      lim=120
      [ "$lim" -gt "$left" ] && lim=$((left - 5))
      if [ "$DRY" = 1 ]; then
        echo "[dry] suite $name$n $lim $*"
        continue
      fi
      suite "$name$n" "$lim" "$@"
    done
    printf '%s\n' "${rows[@]}" >"$DATA/n$n/suites.txt"
    cat "$DATA/n$n/suites.txt"
    sync_out
  done
  OUTDIR=$MAIN_OUTDIR
fi

# registration (first and again), and the peers' other collectives
if want reg; then
  for n in $ranks; do
    step "reg.n$n" 60 "$DATA/n$n/reg.txt" env SYMHEAP_DEVICE=cuda $run -n "$n" \
      build/bin/symheap-bench --iters 11
  done
fi
if want pcoll; then
  for n in $ranks; do
    step "pcoll.n$n" 90 "$DATA/n$n/pcoll.txt" env OUT="$DATA/n$n" python3 \
      bench/peers_collectives.py "$n"
  done
fi
want report && report
sync_out

echo "== steps"
cat "$DATA/steps.txt" "$DATA/skipped.txt" 2>/dev/null
echo "== tables: $OUTDIR/tuning ($(ls "$TDIR" 2>/dev/null | tr '\n' ' '))"
echo "== auto vs best own vs NCCL vs PyTorch (us per op; $DATA/summary.txt)"
cat "$DATA/summary.txt" 2>/dev/null

#!/usr/bin/env bash
# One GPU, two ranks: the collectives' GPU suites as processes and as
# threads (each under a timeout, so a hang shows as rc 124 instead of eating
# the run), then a short pass over symheap-bench-cuda.  On one GPU this shows
# that every code path runs and is correct; it measures nothing worth
# quoting (both ranks share the GPU and no link is crossed).
#   bench/gpu_coll_check.sh [OUTDIR]
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-build/gpu-out}}
T=${T:-170}
mkdir -p "$OUTDIR"
nvidia-smi -L
make -s -j"$(nproc)" all gpu-tests 2>&1 | grep -E 'error|Error' | head -20
rows=()
suite() { # name, command...
  local name=$1
  shift
  local t0=$SECONDS
  timeout -k 5 "$T" "$@" >"$OUTDIR/$name.txt" 2>&1
  local rc=$?
  rows+=("$(printf '%-28s rc %-4s %3ss  pass %3s fail %3s skip %3s' "$name" \
    "$rc" $((SECONDS - t0)) "$(grep -c '^PASS' "$OUTDIR/$name.txt")" \
    "$(grep -c '^FAIL' "$OUTDIR/$name.txt")" \
    "$(grep -c '^SKIP' "$OUTDIR/$name.txt")")")
}
for t in ${SUITES:-test_coll_xfer test_coll}; do
  suite "$t.procs2" build/bin/symheap-run -n 2 "build/test/$t"
  suite "$t.threads2" "build/test/$t" --threads 2
done
# SYMHEAP_CUDA_ZERO_SM=1: every all-gather of test_coll by the copy engines
if [ "${ZEROSM:-1}" = 1 ]; then
  suite test_coll.threads2.zero_sm env SYMHEAP_CUDA_ZERO_SM=1 \
    build/test/test_coll --threads 2
fi
if [ "${BENCH:-1}" = 1 ]; then
  # few iterations: two processes on one GPU time-slice, each call costs
  # milliseconds, and the numbers mean nothing here anyway
  timeout -k 5 60 build/bin/symheap-run -n 2 build/bin/symheap-bench-cuda \
    ${BENCH_ARGS:---max-size $((16 << 20)) --iters 5} >"$OUTDIR/bench.txt" 2>&1
  echo "bench rc $?" >>"$OUTDIR/bench.txt"
fi
echo "== suites (2 ranks on one GPU)"
printf '%s\n' "${rows[@]}"
echo "== failures"
grep -h '^FAIL' "$OUTDIR"/test_*.txt | head -30
echo "== bench (code paths only: two ranks share one GPU)"
cat "$OUTDIR/bench.txt" 2>/dev/null | head -40

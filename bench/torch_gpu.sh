#!/bin/bash
# Issue 30 on a lent 4-GPU machine, in one go (about 8 minutes): build the
# library, symheap-run, the CUDA collectives, the Python package and the
# torch extension (symheap.torch._C); the torch tests at 2 and 4 ranks under
# symheap-run and under torchrun (test_torch_symm.py: PyTorch's symm_mem on
# SYMHEAP; test_torch_ops.py: torch.ops.symheap, graph, compile); the
# package's GPU test (test_gpu.py) through the compiled entry and through
# ctypes; the Python entry's cost layer by layer; bench/python_peers.py at
# 2 and 4 ranks.  Logs under $OUT; a short table last.  Steps that would start past
# the time budget (BUDGET_S, default 470 s) are listed as skipped.
#   bash bench/torch_gpu.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/symheap-torch-gpu}
BUDGET_S=${BUDGET_S:-470}
mkdir -p "$OUT"
PY=
for p in python3 /usr/bin/python3 python; do
  if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then
    PY=$(command -v "$p")
    break
  fi
done
[ -n "$PY" ] || { echo "no python with torch"; exit 1; }
{
  "$PY" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c
  date -u
} | tee "$OUT/env.txt"
NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
row() { printf '%-44s %s\n' "$1" "$2" | tee -a "$SUMMARY"; }

# -- build: the library and tools, then the CUDA collectives and the torch
# extension side by side (neither needs the other).
t0=$SECONDS
if ! make -j16 PYTHON="$PY" lib tools python >"$OUT/build.log" 2>&1; then
  tail -n 30 "$OUT/build.log"; exit 1
fi
make -j12 PYTHON="$PY" build/lib/libsymheap_cuda.so >"$OUT/build-cuda.log" 2>&1 &
cuda_pid=$!
MAX_JOBS=4 make PYTHON="$PY" python-torch >"$OUT/build-torch.log" 2>&1
torch_rc=$?
wait "$cuda_pid"
cuda_rc=$?
if [ $cuda_rc -ne 0 ]; then tail -n 30 "$OUT/build-cuda.log"; exit 1; fi
if [ $torch_rc -ne 0 ]; then tail -n 40 "$OUT/build-torch.log"; exit 1; fi
PP=$PWD/build/lib/python3/site-packages
export PYTHONPATH=$PP
row "build" "ok in $((SECONDS - t0)) s; _fast: $(ls "$PP/symheap/" | grep -c '^_fast'), torch _C: $(ls "$PP/symheap/torch/" | grep -c '^_C')"
grep -h 'symheap.torch skipped' "$OUT/build-torch.log" | tee -a "$SUMMARY"

# step NAME LOG TIMEOUT COMMAND...: one row; skipped past the budget.
step() {
  local name=$1 log=$OUT/$2 limit=$3
  shift 3
  if [ $((SECONDS - t0 + 20)) -gt "$BUDGET_S" ]; then
    row "$name" "skipped (time budget: $((SECONDS - t0)) s used)"
    return
  fi
  # No step runs past BUDGET_S + 90 s (the machine's limit is 600 s).
  local left=$((BUDGET_S + 90 - (SECONDS - t0)))
  [ "$limit" -le "$left" ] || limit=$left
  local s=$SECONDS rc=0
  timeout -k 5 "$limit" "$@" >"$log" 2>&1 || rc=$?
  local counts
  counts="$(grep -c '^PASS' "$log") PASS, $(grep -c '^FAIL' "$log") FAIL, $(grep -c '^SKIP' "$log") SKIP"
  if [ $rc -eq 0 ]; then
    row "$name" "ok ($counts) $((SECONDS - s)) s"
  else
    row "$name" "FAILED rc=$rc ($counts) $((SECONDS - s)) s, see $(basename "$log")"
    grep -m3 -E '^FAIL|Error' "$log" | cut -c1-200 | tee -a "$SUMMARY"
  fi
}
# timeout runs commands, not shell functions: these are words.
SRUN="build/bin/symheap-run -n"
TRUN="$PY -m torch.distributed.run --standalone --nproc-per-node"
R4=4
[ "$NGPU" -ge 4 ] || R4=$NGPU
mkdir -p "$OUT/peers2" "$OUT/peers$R4"
SIZES=4K,64K,256K,1M,16M,256M
# 2-rank tests two at a time, on GPUs 0,1 and 2,3 (fewer than 4 GPUs: in
# turn); then the timings alone on the machine; then the 4-rank tests.
pair() { # pair STEP-ARGS... -- STEP-ARGS...: two steps, side by side
  local a=() b=()
  while [ "$1" != -- ]; do a+=("$1"); shift; done
  shift
  b=("$@")
  if [ "$NGPU" -ge 4 ]; then
    CUDA_VISIBLE_DEVICES=0,1 step "${a[@]}" &
    CUDA_VISIBLE_DEVICES=2,3 step "${b[@]}"
    wait
  else
    step "${a[@]}"
    step "${b[@]}"
  fi
}
pair "torch symm_mem SYMHEAP, symheap-run x2" symm_srun2.log 100 $SRUN 2 "$PY" test/python/test_torch_symm.py -- \
  "torch.ops.symheap, torchrun x2" ops_trun2.log 120 $TRUN 2 test/python/test_torch_ops.py
pair "torch symm_mem SYMHEAP, torchrun x2" symm_trun2.log 100 $TRUN 2 test/python/test_torch_symm.py -- \
  "torch.ops.symheap, symheap-run x2" ops_srun2.log 120 $SRUN 2 "$PY" test/python/test_torch_ops.py
pair "python GPU test x2 (compiled entry)" gpu_fast2.log 100 $SRUN 2 "$PY" test/python/test_gpu.py -- \
  "python GPU test x2 (ctypes)" gpu_ctypes2.log 100 env SYMHEAP_PYTHON_FAST=0 $SRUN 2 "$PY" test/python/test_gpu.py
step "python_peers x2" peers2.log 150 env OUT="$OUT/peers2" "$PY" bench/python_peers.py --ranks 2 --sizes $SIZES
step "python_peers x$R4" peers$R4.log 170 env OUT="$OUT/peers$R4" "$PY" bench/python_peers.py --ranks "$R4" --sizes $SIZES
step "python entry cost, symheap-run x2" entry_cost2.log 60 $SRUN 2 "$PY" bench/python_entry_cost.py
step "torch symm_mem SYMHEAP, torchrun x$R4" symm_trun$R4.log 100 $TRUN "$R4" test/python/test_torch_symm.py
step "torch.ops.symheap, symheap-run x$R4" ops_srun$R4.log 100 $SRUN "$R4" "$PY" test/python/test_torch_ops.py
step "torch symm_mem SYMHEAP, symheap-run x$R4" symm_srun$R4.log 90 $SRUN "$R4" "$PY" test/python/test_torch_symm.py
step "torch.ops.symheap, torchrun x$R4" ops_trun$R4.log 90 $TRUN "$R4" test/python/test_torch_ops.py

echo
echo "== python entry cost (host us per call, 4 KiB bf16, 2 ranks)"
grep -E '^ +[0-9.na]+  ' "$OUT/entry_cost2.log" 2>/dev/null | head -n 20
echo
echo "== summary (also $SUMMARY)"
cat "$SUMMARY"
echo
echo "== all-reduce bf16, us per call, eager/graph (median of 5); 1shot = torch.ops.symm_mem.one_shot_all_reduce"
"$PY" - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
sizes = [4096, 65536, 262144, 1 << 20]
cols = [("symheap", "symheap_%d"), ("1shot default", "torch_one_shot_%d"),
        ("1shot SYMHEAP", "sh_one_shot_%d"), ("NCCL", "nccl_%d")]
for n in (2, 4):
    path = os.path.join(out, "peers%d" % n, "python_peers.json")
    if not os.path.exists(path):
        print("%d ranks: no result (%s)" % (n, path))
        continue
    R = json.load(open(path))
    print("%d ranks, %s, torch %s" % (n, R.get("device"), R.get("torch")))
    print("%8s | %s" % ("bytes", " | ".join("%15s" % c for c, _ in cols)))
    for nb in sizes:
        cells = []
        for _, k in cols:
            e = R.get((k % nb) + "_eager_us")
            g = R.get((k % nb) + "_graph_us")
            cells.append("%7s %7s" % ("%.1f" % e if e is not None else "-",
                                      "%.1f" % g if g is not None else "-"))
        print("%8d | %s" % (nb, " | ".join(cells)))
    d, s = R.get("torch_empty_rdv_ms"), R.get("sh_empty_rdv_ms")
    print("64 MiB empty+rendezvous warm, ms: default %s, SYMHEAP %s%s" % (
        "%.3f" % d if d else "-", "%.3f" % s if s else "-",
        " (%.2fx)" % (s / d) if d and s else ""))
    ok = [k for k, v in R.items() if k.endswith(tuple("_ok_%d" % b for b in
          R.get("sizes", []))) and v is False]
    print("results wrong: %s; symheap correct on every rank: %s" % (
        ", ".join(ok) or "none", R.get("symheap_ok_all_ranks")))
    for k, v in sorted(R.items()):
        if "_err" in k:
            print("  %s: %s" % (k, str(v)[:160]))
EOF
echo "total $((SECONDS - t0)) s"

#!/bin/bash
# The Python package on a lent GPU machine (issue 30), in one go: build
# (make -j16, symheap._fast for torch's interpreter), the window lookup's C
# test, the package's GPU test at 2 ranks through the compiled entry and
# through ctypes, torch.ops.symheap (test_torch_ops.py), pip install of bindings/python, and bench/python_peers.py
# (its "ctypes" column: the same call through ctypes).  Logs under $OUT;
# prints a short table.   bash bench/python_gpu.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
OUT=${OUT:-/tmp/symheap-python-gpu}
mkdir -p "$OUT"
PY=
for p in python3 /usr/bin/python3 python; do
  if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then
    PY=$(command -v "$p")
    break
  fi
done
[ -n "$PY" ] || { echo "no python with torch"; exit 1; }
"$PY" -c 'import torch, sys, sysconfig, os; print("python", sys.version.split()[0], "torch", torch.__version__, "Python.h", os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
row() { printf '%-46s %s\n' "$1" "$2"; }
step() { # step NAME LOG COMMAND...: runs it, one table row
  local name=$1 log=$OUT/$2
  shift 2
  if timeout 300 "$@" >"$log" 2>&1; then
    row "$name" "ok ($(grep -c '^PASS' "$log") PASS, $(grep -c '^FAIL' "$log") FAIL)"
  else
    row "$name" "FAILED rc=$? (see $(basename "$log")): $(grep -m2 '^FAIL' "$log" | tr '\n' ' ')"
    tail -n 15 "$log"
  fi
}
t0=$SECONDS
if ! make -j16 PYTHON="$PY" all tests >"$OUT/build.log" 2>&1; then
  tail -n 30 "$OUT/build.log"
  exit 1
fi
row "build (make -j16)" "ok in $((SECONDS - t0)) s; _fast: $(ls build/lib/python3/site-packages/symheap/ | grep -c _fast)"
PP=$PWD/build/lib/python3/site-packages
step "window_find threads x2" window_find.log build/test/test_window_find --threads 2
step "python GPU test x2 (compiled entry)" test_gpu_fast.log env PYTHONPATH="$PP" \
  build/bin/symheap-run -n 2 "$PY" test/python/test_gpu.py
step "python GPU test x2 (ctypes)" test_gpu_ctypes.log env PYTHONPATH="$PP" \
  SYMHEAP_PYTHON_FAST=0 build/bin/symheap-run -n 2 "$PY" test/python/test_gpu.py
step "torch.ops.symheap x2 (graph, compile)" test_torch_ops.log env PYTHONPATH="$PP" \
  build/bin/symheap-run -n 2 "$PY" test/python/test_torch_ops.py
step "python host test x2 (torch's python)" test_host.log env PYTHONPATH="$PP" \
  SYMHEAP_DEVICE=host CYCLES=100 build/bin/symheap-run -n 2 "$PY" test/python/test_host.py
d=$(mktemp -d)
if make -s install PREFIX="$d" >/dev/null 2>&1 && SYMHEAP_PREFIX="$d" "$PY" -m pip install -q \
  --no-build-isolation --no-index --target "$d/pip" ./bindings/python >"$OUT/pip.log" 2>&1; then
  row "pip install --target" "ok; $(cd "$d" && PYTHONPATH="$d/pip" "$PY" -c 'import symheap, symheap._hot as h; print(symheap.library_path, h.path())')"
else
  row "pip install --target" "FAILED: $(tail -n 3 "$OUT/pip.log" | tr '\n' ' ')"
fi
echo "== bench/python_entry_cost.py (2 ranks)"
PYTHONPATH="$PP" timeout 120 build/bin/symheap-run -n 2 "$PY" bench/python_entry_cost.py \
  2>&1 | tee "$OUT/python_entry_cost.txt"
echo "== bench/python_peers.py --ranks 2"
OUT="$OUT" PYTHONPATH="$PP" timeout 300 "$PY" bench/python_peers.py --ranks 2 \
  --sizes 4K,64K,1M,16M 2>&1 | tee "$OUT/python_peers.txt" | grep -v "^\[W\|Warning"

#!/bin/bash
# symheap.torch on a lent GPU machine (issue 30 item 1), in one go: build
# (make -j16 all tests, make python-torch), test_window_local (the local
# release the backend needs), test/python/test_torch_symm.py at 2 ranks on
# PyTorch's default backend and on SYMHEAP (same cases, same CPU-computed
# expectations), then their BENCH lines side by side.  Logs under $OUT.
#   bash bench/python_torch_backend.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
OUT=${OUT:-/tmp/symheap-python-torch}
mkdir -p "$OUT"
PY=$(command -v python3)
"$PY" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' | tee "$OUT/env.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/env.txt"
date -u | tee -a "$OUT/env.txt"
row() { printf '%-40s %s\n' "$1" "$2"; }
t0=$SECONDS
if ! make -j16 PYTHON="$PY" all tests >"$OUT/build.log" 2>&1; then
  tail -n 30 "$OUT/build.log"; exit 1
fi
if ! make PYTHON="$PY" python-torch >"$OUT/build-torch.log" 2>&1; then
  tail -n 40 "$OUT/build-torch.log"; exit 1
fi
row "build" "ok in $((SECONDS - t0)) s; _C: $(ls build/lib/python3/site-packages/symheap/torch/ | grep -c '^_C')"
step() { # step NAME LOG COMMAND...
  local name=$1 log=$OUT/$2
  shift 2
  if timeout 150 "$@" >"$log" 2>&1; then
    row "$name" "ok ($(grep -c '^PASS' "$log") PASS, $(grep -c '^FAIL' "$log") FAIL, $(grep -c '^SKIP' "$log") SKIP)"
  else
    row "$name" "FAILED rc=$? ($(basename "$log"))"
  fi
  grep -E '^(FAIL|SKIP)' "$log" | head -n 8
}
step "window_local threads x2" window_local.log build/test/test_window_local --threads 2
export PYTHONPATH=$PWD/build/lib/python3/site-packages
for b in default SYMHEAP; do
  step "torch symm_mem on $b x2" "symm_$b.log" build/bin/symheap-run -n 2 \
    "$PY" test/python/test_torch_symm.py --backend "$b" --bench
done
step "torch symm_mem on SYMHEAP pool=0 x2" symm_SYMHEAP_pool0.log env SYMHEAP_TORCH_POOL=0 \
  build/bin/symheap-run -n 2 "$PY" test/python/test_torch_symm.py --backend SYMHEAP --bench
for b in default SYMHEAP; do
  grep -q '^PASS' "$OUT/symm_$b.log" || tail -n 25 "$OUT/symm_$b.log"
done
echo
grep -h '^BENCH' "$OUT/symm_default.log" "$OUT/symm_SYMHEAP.log" "$OUT/symm_SYMHEAP_pool0.log"

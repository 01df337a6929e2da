#!/usr/bin/env bash
# The collectives' bounded waits (kernels/symheap_device.cuh, "bounded
# waits") on a 2-GPU machine (NVLink multicast off), one bounded command:
#   1. build this tree (all gpu-tests) and BASE's symheap-tune (BASE: a tree
#      without the change, e.g. main, built there);
#   2. correctness: test_coll_timeout (a rank skips an all-reduce: the other
#      gets SYMHEAP_ERR_TIMEOUT within the timeout + 1 s, per algorithm),
#      then every suite whose kernels' waits changed: test_coll, test_coll_mid,
#      test_coll_xfer, test_gpu (device barrier and signals), processes x2;
#   3. small all-reduce latency: symheap-tune --coll all_reduce 4 KiB-1 MiB
#      eager, this tree and BASE alternately, twice each, then per size and
#      variant the best of each tree and new/base (1.00 = the same).
#   BASE=/path/to/main bash bench/spin_ab.sh [OUTDIR]
export NCCL_NVLS_ENABLE=0 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-/tmp/spin-ab}}
BUDGET=${BUDGET:-540}
BASE=${BASE:-}
W=$(mktemp -d)
mkdir -p "$OUTDIR"
finish() {
  tar czf "$OUTDIR/spin_ab.tgz" -C "$W" .
  cp "$W/summary.txt" "$W/latency.txt" "$OUTDIR/" 2>/dev/null
  echo "== summary"
  cat "$W/summary.txt"
  echo "== latency (us, best of 2 runs each; new/base)"
  cat "$W/latency.txt" 2>/dev/null
}
trap finish EXIT
step() { # NAME LIMIT LOG COMMAND...
  local name=$1 lim=$2 log=$W/$3
  shift 3
  local left=$((BUDGET - SECONDS))
  if [ "$left" -lt 15 ]; then
    echo "skipped (budget): $name" | tee -a "$W/summary.txt"
    return 99
  fi
  [ "$lim" -gt "$left" ] && lim=$left
  local t0=$SECONDS rc=0
  timeout -k 5 "$lim" "$@" >"$log" 2>&1 || rc=$?
  printf '%-40s rc=%-3s %3ss PASS %s FAIL %s %s\n' "$name" "$rc" \
    $((SECONDS - t0)) "$(grep -c '^PASS' "$log")" "$(grep -c '^FAIL' "$log")" \
    "$(grep -m2 -E '^FAIL|WRONG' "$log" | tr '\n' ' ' | cut -c1-300)" |
    tee -a "$W/summary.txt"
  return $rc
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$W/machine.txt" 2>&1
cat "$W/machine.txt"
bpid=
if [ -n "$BASE" ]; then
  (make -C "$BASE" -j6 build/bin/symheap-tune >"$W/build_base.log" 2>&1
   echo "build rc=$?" >>"$W/build_base.log") &
  bpid=$!
fi
step build 240 build.log make -j10 all gpu-tests ||
  { tail -n 40 "$W/build.log"; exit 1; }
RUN=build/bin/symheap-run
step "test_coll_timeout procs x2" 90 timeout_procs2.log $RUN -n 2 build/test/test_coll_timeout
step "test_coll_timeout threads x2" 90 timeout_threads2.log build/test/test_coll_timeout --threads 2
step "test_coll procs x2" 90 coll2.log $RUN -n 2 build/test/test_coll
step "test_coll_mid procs x2" 60 mid2.log $RUN -n 2 build/test/test_coll_mid
step "test_coll_xfer procs x2" 60 xfer2.log $RUN -n 2 build/test/test_coll_xfer
step "test_gpu procs x2" 60 gpu2.log $RUN -n 2 build/test/test_gpu
[ -n "$bpid" ] && wait $bpid
TB=build/bin/symheap-tune
for k in 1 2; do
  for nb in new=. ${BASE:+base=$BASE}; do
    n=${nb%%=*} t=${nb#*=}
    [ -x "$t/$TB" ] || { echo "no $t/$TB" | tee -a "$W/summary.txt"; continue; }
    step "tune eager $n #$k" 45 tune_$n$k.log $RUN -n 2 $t/$TB \
      --coll all_reduce --min-bytes 4096 --max-bytes 1048576 \
      --all "$W/tune_$n$k.tsv"
  done
done
python3 - "$W" >"$W/latency.txt" 2>&1 <<'EOF'
import csv, glob, os, sys
w = sys.argv[1]
best = {}
for path in glob.glob(os.path.join(w, "tune_*.tsv")):
    tree = os.path.basename(path)[5:-5].rstrip("0123456789")
    for r in csv.DictReader(open(path), delimiter="\t"):
        us = float(r["us"])
        if us <= 0:
            continue
        k = (int(r["bytes"]), r["variant"])
        best.setdefault(k, {})
        best[k][tree] = min(us, best[k].get(tree, 1e30))
print("%10s  %-22s %9s %9s %7s" % ("bytes", "variant", "new", "base", "ratio"))
for (b, v), t in sorted(best.items()):
    n, o = t.get("new"), t.get("base")
    print("%10d  %-22s %9s %9s %7s" % (b, v, "%.2f" % n if n else "-",
          "%.2f" % o if o else "-", "%.2f" % (n / o) if n and o else "-"))
EOF

#!/usr/bin/env bash
# The scale run: symheap at 2, 4 and 8 ranks (one process per GPU, as many
# as this machine has), NCCL and PyTorch symmetric memory at the same rank
# counts in the same run, and every GPU correctness suite at each (processes
# and threads).  bench/tune_gpu.sh is the newer run (tuning tables first,
# then this sweep, within one command's time); this one has no budget.
#   bench/scale.sh OUTDIR
# Per rank count N: OUTDIR/nN/{gpu_*.txt, reg.txt, coll.json, coll.txt,
# baseline.json}; then OUTDIR/scale.txt, tables with ranks as columns.
# NVLink multicast stays off throughout.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-build/scale-out}}
mkdir -p "$OUTDIR"
gpus=$(nvidia-smi -L | wc -l)
date -u +"%Y-%m-%d %H:%M UTC" | tee "$OUTDIR/machine.txt"
nvidia-smi -L | tee -a "$OUTDIR/machine.txt"
nvidia-smi topo -m | head -$((gpus + 1)) | tee -a "$OUTDIR/machine.txt"
make -s -j"$(nproc)" all tests gpu-tests NVCC_ARCH="-arch=sm_90" 2>&1 | tail -5
ranks=""
for n in 2 4 8; do [ "$n" -le "$gpus" ] && ranks="$ranks $n"; done
echo "rank counts this machine allows:$ranks (of 2 4 8)" | tee -a "$OUTDIR/machine.txt"
for n in $ranks; do
  d="$OUTDIR/n$n"
  mkdir -p "$d"
  echo "== $n ranks: GPU suites, processes and threads"
  run="build/bin/symheap-run -n $n"
  for s in "adaptor $run build/test/test_gpu" "adaptor.threads build/test/test_gpu --threads $n" \
    "coll $run build/test/test_coll" "coll.threads build/test/test_coll --threads $n" \
    "xfer $run build/test/test_coll_xfer" "xfer.threads build/test/test_coll_xfer --threads $n" \
    "heap $run build/test/test_heap_gpu" "heap.threads build/test/test_heap_gpu --threads $n" \
    "python env PYTHONPATH=$PWD/build/lib/python3/site-packages $run python3 test/python/test_gpu.py"; do
    set -- $s
    name=$1
    shift
    timeout -k 5 180 "$@" >"$d/gpu_$name.txt" 2>&1 ||
      echo "gpu_$name: rc $? (124: timed out)" >>"$d/gpu_$name.txt"
  done
  grep -h '^FAIL' "$d"/gpu_*.txt | head -5
  echo "GPU tests at $n ranks: $(cat "$d"/gpu_*.txt | grep -c '^PASS ') passed, $(cat "$d"/gpu_*.txt | grep -c '^FAIL ') failed"
  echo "== $n ranks: registration"
  SYMHEAP_DEVICE=cuda build/bin/symheap-run -n "$n" build/bin/symheap-bench \
    --iters 11 >"$d/reg.txt" 2>&1
  echo "== $n ranks: collectives and peer copies"
  build/bin/symheap-run -n "$n" build/bin/symheap-bench --collectives \
    --json "$d/coll.json" >"$d/coll.txt" 2>&1
  tail -n 4 "$d/coll.txt"
  echo "== $n ranks: NCCL and PyTorch (same run)"
  OUT="$d" timeout 500 python3 bench/peers_baseline_n.py "$n" >"$d/baseline.txt" 2>&1
done
python3 - "$OUTDIR" $ranks <<'PY' | tee "$OUTDIR/scale.txt"
import json, os, re, sys
out, ranks = sys.argv[1], [int(r) for r in sys.argv[2:]]
def load(n, f):
    try: return json.load(open(os.path.join(out, f"n{n}", f)))
    except Exception: return {}
ours = {n: load(n, "coll.json") for n in ranks}
base = {n: load(n, "baseline.json") for n in ranks}
def row(name, vals): print(f"| {name} | " + " | ".join(vals) + " |")
head = lambda t: (print(f"\n{t}\n"), print("| | " + " | ".join(f"{n} ranks" for n in ranks) + " |"),
                  print("|---|" + "---|" * len(ranks)))
f = lambda d, k: (f"{d[k]:.2f}" if isinstance(d.get(k), (int, float)) else "-")
head("all-reduce bf16 sum, us per op: symheap auto / NCCL / PyTorch two-shot")
for b in [4096, 65536, 1 << 20, 16 << 20, 256 << 20]:
    row(f"{b >> 10} KiB" if b < 1 << 20 else f"{b >> 20} MiB",
        [f"{f(ours[n], f'allreduce_auto_us_{b}')} / {f(base[n], f'nccl_allreduce_us_{b}')} / "
         f"{f(base[n], f'torch_two_shot_us_{b}')}" for n in ranks])
head("all-gather, us per op (bytes per rank)")
for b in [4096, 65536, 1 << 20, 16 << 20]:
    row(f"{b >> 10} KiB", [f(ours[n], f"allgather_us_{b}") for n in ranks])
head("peer copy GB/s: one peer put / get; every peer at once put / get")
row("symheap", [f"{f(ours[n], 'peer_put_GBps')} / {f(ours[n], 'peer_get_GBps')}; "
                f"{f(ours[n], 'allpeers_put_GBps')} / {f(ours[n], 'allpeers_get_GBps')}" for n in ranks])
row("PyTorch copy_", [f"{f(base[n], 'sm_peer_write_GBps')} / {f(base[n], 'sm_peer_read_GBps')}" for n in ranks])
head("registration, ms (slowest rank, median): first / again")
regs = {}
for n in ranks:
    # Only the registration table: it starts at the "window  first reg" header
    # and ends at the blank line before the heap table, whose rows have the
    # same shape (reading those put the heap's figures under registration).
    try:
        in_table = False
        for line in open(os.path.join(out, f"n{n}", "reg.txt")):
            if line.startswith("window") and "first reg" in line:
                in_table = True
                continue
            if in_table and not line.strip():
                break
            m = re.match(r"(\d+ [KMG]iB)\s+([\d.]+)\s+([\d.]+)", line)
            if in_table and m: regs.setdefault(m.group(1), {})[n] = (m.group(2), m.group(3))
    except Exception: pass
for k in ["1 MiB", "64 MiB", "1 GiB"]:
    row(k, [" / ".join(regs.get(k, {}).get(n, ("-", "-"))) for n in ranks])
row("PyTorch empty+rendezvous 1 MiB / 64 MiB / 1 GiB",
    [" / ".join(f(base[n], f"torch_symm_setup_ms_{b}") for b in [1 << 20, 64 << 20, 1 << 30]) for n in ranks])
PY

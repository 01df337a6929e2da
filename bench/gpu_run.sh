#!/usr/bin/env bash
# Everything symheap does on a GPU machine, in one call: build, the GPU test
# suite (ranks as processes and as threads), symheap-bench on the cuda
# adaptor, and the peers' baseline (NCCL, PyTorch symmetric memory) in the
# same run, then a short table.  NVLink multicast stays off throughout: it must
# never be created on the shared development machines.
#   bench/gpu_run.sh [OUTDIR]
# QUICK=1: only the collectives' tests and benchmark (no registration
# benchmark, no peers' baseline), for iterating on kernels.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-build/gpu-out}}
mkdir -p "$OUTDIR"
step() { echo; echo "== $*"; }

step "machine"
date -u +"%Y-%m-%d %H:%M UTC"
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nvidia-smi topo -m | head -4

step "build"
make -s -j"$(nproc)" all tests gpu-tests NVCC_ARCH="-arch=sm_90" 2>&1 | tail -20
build/bin/symheap-info | tee "$OUTDIR/info.txt"

python3 -c 'import matplotlib' 2>/dev/null && echo "matplotlib: yes" || echo "matplotlib: no"

step "collectives: GPU tests (processes, then threads)"
build/bin/symheap-run -n 2 build/test/test_coll 2>&1 | tee "$OUTDIR/gpu_coll_procs.txt"
build/test/test_coll --threads 2 2>&1 | tee "$OUTDIR/gpu_coll_threads.txt"
# reduce-scatter, all-to-all(v), broadcast, copy-engine paths (issue 19)
timeout 300 build/bin/symheap-run -n 2 build/test/test_coll_xfer 2>&1 | tee "$OUTDIR/gpu_xfer_procs.txt"
timeout 300 build/test/test_coll_xfer --threads 2 2>&1 | tee "$OUTDIR/gpu_xfer_threads.txt"

step "collectives: symheap-bench --collectives, 2 ranks"
build/bin/symheap-run -n 2 build/bin/symheap-bench --collectives \
  --json "$OUTDIR/coll.json" 2>&1 | tee "$OUTDIR/coll_bench.txt"

if [ "${QUICK:-0}" = 1 ]; then
  echo "QUICK=1: stopping here"
  grep -h '^FAIL' "$OUTDIR"/gpu_*.txt | head -20
  echo "GPU tests: $(cat "$OUTDIR"/gpu_*.txt | grep -c '^PASS ') passed, $(cat "$OUTDIR"/gpu_*.txt | grep -c '^FAIL ') failed"
  exit 0
fi

step "GPU tests"
build/bin/symheap-run -n 2 build/test/test_gpu 2>&1 | tee "$OUTDIR/gpu_procs.txt"
build/test/test_gpu --threads 2 2>&1 | tee "$OUTDIR/gpu_threads.txt"

step "heap: GPU tests (kernels and collectives on heap windows, malloc in capture)"
build/bin/symheap-run -n 2 build/test/test_heap_gpu 2>&1 | tee "$OUTDIR/gpu_heap_procs.txt"
build/test/test_heap_gpu --threads 2 2>&1 | tee "$OUTDIR/gpu_heap_threads.txt"

step "symheap-bench, cuda adaptor, 2 ranks (its heap table: docs/perf/heap.md)"
SYMHEAP_DEVICE=cuda build/bin/symheap-run -n 2 build/bin/symheap-bench \
  --iters 21 2>&1 | tee "$OUTDIR/bench.txt"

step "symheap-bench, cuda adaptor, 2 ranks, window cache off"
SYMHEAP_WINDOW_CACHE=0 SYMHEAP_DEVICE=cuda build/bin/symheap-run -n 2 \
  build/bin/symheap-bench --iters 11 2>&1 | tee "$OUTDIR/bench_nocache.txt"

step "NCCL window path (SYMHEAP_WINDOW_PATH=nccl): GPU tests, collectives, registration"
SYMHEAP_WINDOW_PATH=nccl build/bin/symheap-run -n 2 build/test/test_gpu 2>&1 | tee "$OUTDIR/gpu_nccl_procs.txt"
SYMHEAP_WINDOW_PATH=nccl build/test/test_gpu --threads 2 2>&1 | tee "$OUTDIR/gpu_nccl_threads.txt"
SYMHEAP_WINDOW_PATH=nccl build/bin/symheap-run -n 2 build/test/test_coll 2>&1 | tee "$OUTDIR/gpu_nccl_coll_procs.txt"
# A comm on a caller's NCCL communicator (symheap_comm_init_nccl), both paths.
SYMHEAP_TEST_NCCL_COMM=1 build/bin/symheap-run -n 2 build/test/test_gpu 2>&1 | tee "$OUTDIR/gpu_ncclcomm_procs.txt"
SYMHEAP_TEST_NCCL_COMM=1 SYMHEAP_WINDOW_PATH=nccl build/bin/symheap-run -n 2 \
  build/test/test_gpu 2>&1 | tee "$OUTDIR/gpu_ncclcomm_win_procs.txt"
SYMHEAP_WINDOW_PATH=nccl SYMHEAP_DEVICE=cuda build/bin/symheap-run -n 2 \
  build/bin/symheap-bench --iters 11 2>&1 | tee "$OUTDIR/bench_nccl.txt"

step "RDMA registration with the machine's own libibverbs (where it has devices)"
ls /sys/class/infiniband 2>/dev/null || echo "no /sys/class/infiniband"
if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  SYMHEAP_NET=ibverbs build/bin/symheap-run -n 2 build/test/test_gpu 2>&1 | tee "$OUTDIR/gpu_rdma_procs.txt"
else
  SYMHEAP_NET=ibverbs SYMHEAP_DEBUG=NONE build/bin/symheap-run -n 2 build/bin/symheap-bench --iters 1 2>&1 | tail -3
fi

step "peers' baseline (same machine, same run)"
OUT="$OUTDIR" timeout 400 python3 bench/peers_baseline.py > "$OUTDIR/baseline.txt" 2>&1
tail -c 3000 "$OUTDIR/baseline.txt"
OUT="$OUTDIR" timeout 400 python3 bench/peers_collectives.py > "$OUTDIR/peers_collectives.txt" 2>&1
tail -c 3000 "$OUTDIR/peers_collectives.txt"

step "plot"
python3 bench/plot_coll.py "$OUTDIR/coll.json" "$OUTDIR/baseline.json" \
  "$OUTDIR/cuda-collectives.png" "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$(nvidia-smi -L | wc -l), $(date -u +%Y-%m-%d)"

step "summary"
pass=$(cat "$OUTDIR"/gpu_*.txt | grep -c '^PASS ')
fail=$(cat "$OUTDIR"/gpu_*.txt | grep -c '^FAIL ')
echo "GPU tests: $pass passed, $fail failed"
echo "symheap (ms, slowest rank, median): first registration, repeated"
echo "registration (cache on / off), symheap_malloc (alloc + register)"
printf '%-8s %10s %12s %12s %10s\n' window first "again(on)" "again(off)" malloc
awk 'FNR == 1 { f++ } $2 ~ /iB$/ { k = $1 " " $2
       if (f == 1) { first[k] = $3; on[k] = $4; mal[k] = $6 } else off[k] = $4 }
     END { split("1 MiB|64 MiB|1 GiB", ks, "|")
           for (i = 1; i <= 3; i++) printf "%-8s %10s %12s %12s %10s\n",
             ks[i], first[ks[i]], on[ks[i]], off[ks[i]], mal[ks[i]] }' \
  "$OUTDIR/bench.txt" "$OUTDIR/bench_nocache.txt"
echo "NCCL window path (ms, slowest rank, median): first registration, repeated, symheap_malloc"
awk '$2 ~ /iB$/ && ($1 " " $2 == "1 MiB" || $1 " " $2 == "64 MiB" || $1 " " $2 == "1 GiB") {
       printf "%-8s %10s %12s %23s\n", $1 " " $2, $3, $4, $6 }' "$OUTDIR/bench_nccl.txt"
python3 - "$OUTDIR/coll.json" "$OUTDIR/baseline.json" <<'PY'
import json, sys
ours, base = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("all-reduce bf16 (us per op): size, symheap auto / graph, NCCL, torch one-shot, torch two-shot")
for b in [4096, 65536, 1 << 20, 16 << 20, 256 << 20]:
    g = lambda d, k: d.get(k + str(b), float("nan"))
    print(f"{b:>10} {g(ours,'allreduce_auto_us_'):8.2f} {g(ours,'allreduce_graph_us_'):8.2f}"
          f" {g(base,'nccl_allreduce_us_'):8.2f} {g(base,'torch_one_shot_us_'):8.2f}"
          f" {g(base,'torch_two_shot_us_'):8.2f}")
print("peer copy GB/s: symheap put %.1f get %.1f (copy engine), SM kernel write %.1f read %.1f; torch copy_ write %.1f read %.1f, torch CE %.1f"
      % (ours["peer_put_GBps"], ours["peer_get_GBps"], ours["sm_write_GBps"],
         ours["sm_read_GBps"], base.get("sm_peer_write_GBps", 0), base.get("sm_peer_read_GBps", 0),
         base.get("ce_peer_copy_GBps", 0)))
PY
python3 - "$OUTDIR/baseline.json" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
for k in sorted(r):
    if "setup" in k:
        print(f"torch {k}: {r[k]:.2f}" if isinstance(r[k], float) else f"torch {k}: {r[k]}")
PY
python3 - "$OUTDIR/coll.json" "$OUTDIR/peers_collectives.json" <<'PY' 2>/dev/null
import json, sys
ours, base = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("reduce-scatter / all-to-all / broadcast bf16 (us per op, bytes per rank's block):")
print("size, symheap rs, NCCL rs, symheap a2a, NCCL a2a, NCCL a2av, torch a2a_vdev, symheap bcast, NCCL bcast")
for b in [4096, 65536, 1 << 20, 16 << 20, 256 << 20]:
    g = lambda d, k: d.get(k + str(b), float("nan"))
    print(f"{b:>10} {g(ours,'reducescatter_us_'):8.2f} {g(base,'nccl_reducescatter_us_'):8.2f}"
          f" {g(ours,'alltoall_us_'):8.2f} {g(base,'nccl_alltoall_us_'):8.2f}"
          f" {g(base,'nccl_alltoallv_us_'):8.2f} {g(base,'torch_all_to_all_vdev_us_'):8.2f}"
          f" {g(ours,'broadcast_us_'):8.2f} {g(base,'nccl_broadcast_us_'):8.2f}")
PY

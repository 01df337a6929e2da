#!/usr/bin/env bash
# Issue 19's hang, on one GPU: two thread-ranks queueing 1,002 collectives
# with no host sync.  First with the test's own kernels left to CUDA's lazy
# loading (the hazard symheap_cuda_preload exists for: the test's hang
# reporter says where each rank's host thread and GPU stand, then exits 3),
# then with every kernel loaded ahead, several times, and the thread-rank
# suites; then the heap's allocation cost next to PyTorch's.
#   bench/gpu_hang.sh      (on the device machine; logs in $OUT/logs.tgz)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUTDIR=${OUT:-build/gpu-out}
mkdir -p "$OUTDIR"
nvidia-smi -L
t0=$SECONDS
make -s -j"$(nproc)" all gpu-tests >"$OUTDIR/build.txt" 2>&1 ||
  { tail -30 "$OUTDIR/build.txt"; exit 1; }
echo "build: $((SECONDS - t0)) s"
. bench/gpu_suite.sh
x=build/test/test_coll_xfer
b2b="env SYMHEAP_TEST_HANG_S=15 SYMHEAP_TEST_ONLY=back_to_back_1000 $x --threads 2"
# The hazard: the test's own kernels left to lazy loading (the library
# still loads its own), then the same with everything loaded ahead.
for i in 1 2 3; do suite b2b.lazy.$i 40 env SYMHEAP_TEST_NO_PRELOAD=1 $b2b; done
for i in 1 2 3 4 5 6; do suite b2b.preloaded.$i 40 $b2b; done
suite b2b.eager 40 env CUDA_MODULE_LOADING=EAGER SYMHEAP_TEST_NO_PRELOAD=1 $b2b
for i in 1 2 3; do suite xfer.threads2.$i 90 env SYMHEAP_TEST_HANG_S=30 $x --threads 2; done
suite xfer.procs2 150 build/bin/symheap-run -n 2 $x
for i in 1 2 3; do suite coll.threads2.$i 90 build/test/test_coll --threads 2; done
suite heap.threads2 60 build/test/test_heap_gpu --threads 2
suite heap.bench.cuda 90 env SYMHEAP_DEVICE=cuda build/bin/symheap-run -n 2 \
  build/bin/symheap-bench --heap --max-size 64M
suite heap.peers.py 120 env PYTHONPATH="$PWD/build/lib/python3/site-packages" \
  python3 bench/heap_gpu_peers.py --ranks 2
for r in "${rows[@]}"; do echo "$r"; done
for f in "$OUTDIR"/b2b.lazy.*.txt "$OUTDIR"/b2b.preloaded.*.txt; do
  grep -q '^FAIL' "$f" && { echo "--- $f"; grep -v '^PASS' "$f" | head -30; }
done
echo "--- heap"; sed -n '/^block/,$p' "$OUTDIR/heap.bench.cuda.txt" | head -14
cat "$OUTDIR/heap.peers.py.txt" | tail -8
cd "$OUTDIR" && tar czf logs.tgz ./*.txt && rm -f ./*.txt

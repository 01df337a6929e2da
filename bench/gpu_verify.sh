#!/usr/bin/env bash
# Every GPU suite on the device machine, each under a timeout (a hang shows
# as rc 124), at 2 ranks and (4 GPUs or more) 4 ranks, one per GPU, as
# processes and as threads: the adaptor
# (test_gpu), the collectives (test_coll, test_coll_xfer), the heap
# (test_heap_gpu), the Python package on torch, the conformance kit on the
# real CUDA driver, and the cuda adaptor copied out of the tree, built as a
# plugin from the installed headers and put through the kit (the vendor
# contract on a real GPU).  Correctness only: nothing here is timed.
#   bench/gpu_verify.sh [OUTDIR]
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-build/gpu-out}}
mkdir -p "$OUTDIR"
nvidia-smi -L
make -s -j"$(nproc)" all tests gpu-tests >"$OUTDIR/build.txt" 2>&1 ||
  { tail -30 "$OUTDIR/build.txt"; exit 1; }
. bench/gpu_suite.sh
# Every suite at 2 ranks, and at 4 where the machine has 4 GPUs (one rank
# per GPU), as processes and as threads.
gpus=$(nvidia-smi -L | wc -l)
for n in 2 4; do
  [ "$n" -le "$gpus" ] || continue
  run="build/bin/symheap-run -n $n"
  suite gpu.procs$n 120 $run build/test/test_gpu
  suite gpu.threads$n 120 build/test/test_gpu --threads $n
  suite coll.procs$n 150 $run build/test/test_coll
  suite coll.threads$n 150 build/test/test_coll --threads $n
  suite coll.threads$n.noheap 150 env SYMHEAP_HEAP=0 build/test/test_coll --threads $n
  suite xfer.procs$n 180 $run build/test/test_coll_xfer
  suite xfer.threads$n 120 build/test/test_coll_xfer --threads $n
  suite xfer.scatter.procs$n 180 env SYMHEAP_BROADCAST_ALGO=scatter $run build/test/test_coll_xfer
  suite xfer.pipe.procs$n 180 env SYMHEAP_BROADCAST_ALGO=scatter_pipe \
    SYMHEAP_ALL_TO_ALL_ALGO=zero_sm $run build/test/test_coll_xfer
  suite xfer.cepipe.procs$n 180 env SYMHEAP_BROADCAST_ALGO=ce_pipe $run build/test/test_coll_xfer
  suite heap.procs$n 120 $run build/test/test_heap_gpu
  suite heap.threads$n 120 build/test/test_heap_gpu --threads $n
  suite python_torch.procs$n 150 env PYTHONPATH="$PWD/build/lib/python3/site-packages" \
    $run python3 test/python/test_gpu.py
done
run2="build/bin/symheap-run -n 2"
suite kit.cuda 200 build/bin/symheap-conformance --device cuda
# The cuda adaptor as a vendor would ship it: out of the tree, renamed,
# public headers only.
P=$(mktemp -d)
make -s install PREFIX="$P/prefix" >/dev/null 2>&1
mkdir "$P/src" && cp adaptors/device/cuda.c adaptors/device/cuda_*.[ch] adaptors/common/cuda_api.h \
  adaptors/common/cuda_driver.[ch] adaptors/common/dl.[ch] adaptors/common/vendor_error.[ch] adaptors/device/ipc_table.[ch] "$P/src/"
sed -i 's/"cuda"/"cudacopy"/g' "$P/src/cuda.c"
(cd "$P/src" && cc -shared -fPIC -fvisibility=hidden -DSYMHEAP_PLUGIN_BUILD \
  -I"$P/prefix/include" cuda*.c dl.c vendor_error.c ipc_table.c -o libcudacopy.so -ldl) \
  >"$OUTDIR/cudacopy-build.txt" 2>&1
suite kit.cudacopy 200 env SYMHEAP_PLUGIN="$P/src/libcudacopy.so" \
  build/bin/symheap-conformance --device cudacopy
suite gpu.cudacopy.procs2 120 env SYMHEAP_PLUGIN="$P/src/libcudacopy.so" \
  SYMHEAP_DEVICE=cudacopy $run2 build/test/test_gpu
for f in "$OUTDIR"/*.txt; do grep -H '^FAIL' "$f" | head -3; done
tar czf "$OUTDIR/all-logs.tgz" -C "$OUTDIR" $(cd "$OUTDIR" && ls *.txt) 2>/dev/null &&
  rm -f "$OUTDIR"/*.txt
printf '%s\n' "${rows[@]}"

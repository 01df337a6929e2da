#!/usr/bin/env bash
# Device put_signal to another (pretend) host through the host proxy
# (issue 27 step 7), on the GPU machine: test/gpu/test_proxy.cu at 2 and 4
# ranks split into two hosts (SYMHEAP_HOST_ID), over libfabric on loopback:
# tcp;ofi_rxm, then shm; each checked on the device and timed (us per
# put_signal round trip, 8 B - 1 MiB), every CUDA call checked by the test.
# Then the staged target (a provider without FI_HMEM: GPU windows reached
# through pinned host shadows) over tcp;ofi_rxm.  Also the CPU-as-kernel
# proxy and staging tests, as a baseline that needs no GPU.  Logs under
# OUTDIR; the table last.
#   bench/gpu_proxy.sh [OUTDIR]
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.." || exit 1
OUTDIR=${1:-${OUT:-build/gpu-out}}
mkdir -p "$OUTDIR"
nvidia-smi -L | tee "$OUTDIR/gpus.txt"
(command -v fi_info >/dev/null && fi_info -l; ldconfig -p | grep -i fabric) \
  >"$OUTDIR/libfabric.txt" 2>&1
make -s -j16 all tests gpu-tests >"$OUTDIR/build.txt" 2>&1 ||
  { tail -30 "$OUTDIR/build.txt"; exit 1; }
[ -x build/test/test_proxy_gpu ] ||
  { echo "build/test/test_proxy_gpu was not built (no nvcc?)"; exit 1; }
. bench/gpu_suite.sh
# the CPU plays the kernel: host memory (the default adaptor here is cuda)
suite cpu_proxy.loop.procs4 120 env SYMHEAP_DEVICE=host build/bin/symheap-run -n 4 build/test/test_proxy
for prov in "tcp;ofi_rxm" shm; do
  p=${prov//[^a-z_]/_}
  for n in 2 4; do
    # the pretend hosts share this machine: tcp on loopback, as run.sh does
    dom=()
    [ "$prov" = shm ] || dom=(SYMHEAP_NET_DOMAIN=lo)
    suite "gpu_proxy.$p.procs$n" 120 env "${dom[@]}" SYMHEAP_NET=ofi \
      SYMHEAP_NET_PROVIDER="$prov" SYMHEAP_NET_HMEM=1 SYMHEAP_DEVICE_PROXY=on \
      SYMHEAP_DEBUG=INFO build/bin/symheap-run -n "$n" build/test/test_proxy_gpu
  done
done
# Target-side staging (docs/network.md, "Staging"): tcp;ofi_rxm without
# FI_HMEM (SYMHEAP_NET_HMEM=0; this machine's libfabric has none anyway),
# so every rank's GPU window and pad are pinned host shadows that the
# target's progress copies into GPU memory; the log must say so.
for n in 2 4; do
  suite "gpu_proxy.staged_tcp.procs$n" 180 env SYMHEAP_NET_DOMAIN=lo SYMHEAP_NET=ofi \
    SYMHEAP_NET_PROVIDER="tcp;ofi_rxm" SYMHEAP_NET_HMEM=0 SYMHEAP_DEVICE_PROXY=on \
    SYMHEAP_DEBUG=INFO build/bin/symheap-run -n "$n" build/test/test_proxy_gpu
  grep -q "windows are staged" "$OUTDIR/gpu_proxy.staged_tcp.procs$n.txt" ||
    echo "FAIL gpu_proxy.staged_tcp.procs$n: the log does not say the windows were staged"
done
# The same on the CPU with the fake CUDA driver: no GPU needed.
suite cpu_stage.loop.procs4 120 env SYMHEAP_CUDA_LIBRARY="$PWD/build/fake_cuda/libcuda.so.1" \
  build/bin/symheap-run -n 4 build/test/test_stage
echo
for f in "$OUTDIR"/gpu_proxy.*.txt "$OUTDIR"/cpu_proxy.*.txt "$OUTDIR"/cpu_stage.*.txt; do
  grep -H '^FAIL\|^SKIP' "$f" | head -5
done
echo
echo "us per put_signal round trip (kernel -> proxy -> net -> peer's signal, and back)"
for f in "$OUTDIR"/gpu_proxy.*.txt; do
  grep -q '^TIME' "$f" || continue
  echo "${f##*/}:"
  grep '^TIME' "$f" | sed 's/^TIME proxy put_signal/ /'
done
printf '%s\n' "${rows[@]}"

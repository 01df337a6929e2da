#!/usr/bin/env bash
# Device put_signal to another host through the proxy (issue 27 step 7), the
# ranks split across two network namespaces joined by a veth pair on the GPU
# machine (test/netns.sh: addresses only inside them, deleted on exit), over
# libfabric tcp;ofi_rxm.  The lent machines' libfabric has no FI_HMEM for
# CUDA, so each rank's device window is staged (docs/network.md, "Staging"):
# the log must say so.  test/gpu/test_proxy_gpu checks every byte and signal
# on the device and prints TIME lines.
# Those machines have no `ip`: with none on PATH, iproute2 and its libraries
# are unpacked from .debs/ (carried: `apt-get download iproute2 libbpf1
# libbsd0 libcap2 libelf1 libmd0 libmnl0 zlib1g`) under /tmp, never into /.
#   bench/gpu_proxy_netns.sh [OUTDIR]
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
cd "$(dirname "$0")/.." || exit 1
OUTDIR=${1:-${OUT:-build/gpu-out}}
mkdir -p "$OUTDIR"

# `ip` from the carried packages: a wrapper that gives ip its libraries but
# not the commands it runs in a namespace (ip netns exec NS CMD).
if ! command -v ip >/dev/null 2>&1; then
  D=/tmp/symheap-iproute2
  rm -rf "$D" && mkdir -p "$D/wrap"
  for f in .debs/*.deb; do dpkg -x "$f" "$D" || exit 1; done
  LIBS="$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu"
  cat >"$D/wrap/ip" <<EOF
#!/bin/sh
if [ "\${1:-}" = netns ] && [ "\${2:-}" = exec ] && [ \$# -ge 4 ]; then
  ns=\$3; shift 3
  LD_LIBRARY_PATH=$LIBS exec "$D/bin/ip" netns exec "\$ns" env -u LD_LIBRARY_PATH "\$@"
fi
LD_LIBRARY_PATH=$LIBS exec "$D/bin/ip" "\$@"
EOF
  chmod +x "$D/wrap/ip"
  export PATH="$D/wrap:$PATH"
fi
ip -V || exit 1

[ -x build/test/test_proxy_gpu ] ||
  make -s -j16 all tests gpu-tests >"$OUTDIR/netns-build.txt" 2>&1 ||
  { tail -30 "$OUTDIR/netns-build.txt"; exit 1; }

. test/netns.sh
netns_setup "gpu proxy across namespaces" || exit 1
trap netns_cleanup EXIT
export SYMHEAP_NET=ofi SYMHEAP_NET_PROVIDER="tcp;ofi_rxm" \
  SYMHEAP_NET_DOMAIN="${NETNS_IP_A%.*}.0/24" SYMHEAP_NET_HMEM=0 \
  SYMHEAP_DEVICE_PROXY=on SYMHEAP_DEBUG=INFO SYMHEAP_TEST_NET_REAL_HOSTS=1
# Each "host" its own GPUs: ranks pick a device by their local rank, which
# restarts at 0 in each namespace, and two processes' kernels on one GPU
# take turns in time slices (a put_signal round trip then measured the
# slice, 4.5 ms, not the proxy).
RSH=/tmp/symheap-gpu-rsh-$$
printf '%s\n' '#!/bin/sh' 'ns=$1; shift' \
  "if [ \"\$ns\" = \"$NETNS_A\" ]; then v=\$GPUS_A; else v=\$GPUS_B; fi" \
  'exec ip netns exec "$ns" env CUDA_VISIBLE_DEVICES="$v" "$@"' >"$RSH"
chmod +x "$RSH"
trap 'netns_cleanup; rm -f "$RSH"' EXIT
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
status=0
for n in 2 4; do
  h=$((n / 2))
  log="$OUTDIR/netns_proxy_n$n.txt"
  if [ "$ngpu" -ge "$n" ]; then
    export GPUS_A=$(seq -s, 0 $((h - 1))) GPUS_B=$(seq -s, "$h" $((n - 1)))
  else
    echo "NOTE: $ngpu GPUs for $n ranks: the two hosts share GPUs (time slices)"
    export GPUS_A=$(seq -s, 0 $((ngpu - 1))) GPUS_B=$(seq -s, 0 $((ngpu - 1)))
  fi
  timeout 240 build/bin/symheap-run -n "$n" \
    --hosts "$NETNS_A:$h,$NETNS_B:$h" --rsh "$RSH" \
    build/test/test_proxy_gpu >"$log" 2>&1
  rc=$?
  pass=$(grep -c '^PASS\|\] PASS' "$log")
  fails=$(grep -c 'FAIL' "$log")
  staged=$(grep -c 'staged' "$log")
  echo "netns proxy n=$n: rc=$rc PASS lines=$pass FAIL lines=$fails 'staged' lines=$staged"
  [ "$rc" = 0 ] && [ "$fails" = 0 ] && [ "$staged" -gt 0 ] || status=1
  grep 'TIME' "$log" | head -20
done
exit $status

#!/usr/bin/env bash
# One-sided operations across two hosts (docs/perf/net.md): two network
# namespaces joined by a veth pair (test/netns.sh; 10.99.x.x addresses only
# inside them, deleted on exit), and in one run, round after round with the
# engines' order rotated (the machine is shared: rounds interleave so that
# load falls on every engine alike):
#   raw      the raw libfabric floor (bench/net_raw.c), its server passive:
#            asleep on libfabric's wait object (FI_WAIT_FD, fi_trywait,
#            poll) between progress calls, as symheap's waiting rank is
#   raw_spin the same with a busy-polling server (shown beside it)
#   raw_idle the same with a server that never calls libfabric after setup
#            (blocked on its rendezvous socket): the floor where the
#            provider progresses by itself (net), as symheap's waiting
#            rank leaves such a provider alone
#   adaptor  the same probe through the ofi adaptor's table (net_adaptor.c),
#            its server passive (the adaptor's wait_fds)
#   symheap_ucx the same over the ucx net adaptor (SYMHEAP_NET=ucx,
#            UCX_TLS=self,tcp, UCX_NET_DEVICES=nbveth)
#   symheap_ucx_noprog  that with SYMHEAP_NET_PROGRESS=none
#   symheap  the public API (bench/net_onesided.c) under symheap-run
#            --hosts A:1,B:1 --rsh 'ip netns exec', SYMHEAP_NET=ofi
#   symheap_noprog  the same with SYMHEAP_NET_PROGRESS=none (no progress
#            thread: the target's waits alone progress)
#   symheap_x the same with the environment NET_BENCH_X_ENV adds (VAR=VALUE
#            words): an A/B of a setting in one run
#   oshmem   Open MPI's OSHMEM (oshrun, spml ucx, UCX over tcp)
#   mpi      MPI-3 RMA (mpirun, pml/osc ucx, UCX over tcp)
# the libfabric engines on --provider (default tcp;ofi_rxm), or on the one
# an engine names after '@' (raw@net, symheap@net: two providers in one
# run), the others on UCX's tcp transport over the same veth, with the same
# sizes, iterations and medians (net_probe.c).  The raw engines also check
# (--check) that write, read and the 32/64-bit atomics work first.
#   bench/net.sh [--rounds N] [--quick] [--out DIR] [--provider P]
#                [--engines a,b@P,...]
# Raw output: DIR/round<r>-<engine>.txt (';' of a provider written '+'),
# DIR/load.txt (uptime before each
# run), DIR/env.txt; then the table (bench/net_table.py) to stdout and
# DIR/table.md, and the plot DIR/net.svg.  Needs root, iproute2,
# libfabric-dev, Open MPI (oshcc, oshrun, mpicc, mpirun).
set -u
cd "$(dirname "$0")/.."
ROUNDS=3 QUICK= OUT=build/bench/net-$(date -u +%F) ENGINES_ARG=raw,raw_spin,adaptor,symheap,oshmem,mpi
PROV="tcp;ofi_rxm"
while [ $# -gt 0 ]; do
  case $1 in
  --rounds) ROUNDS=$2; shift ;;
  --quick) QUICK=--quick ;;
  --out) OUT=$2; shift ;;
  --engines) ENGINES_ARG=$2; shift ;; # a subset, for a quick look
  --provider) PROV=$2; shift ;;
  *) echo "usage: $0 [--rounds N] [--quick] [--out DIR] [--provider P] [--engines a,b@P]" >&2; exit 2 ;;
  esac
  shift
done
make -s lib build/bin/symheap-run net-bench >/dev/null || exit 1
mkdir -p build/bench "$OUT"
cc -O2 -Wall -Wextra -Werror -Iinclude -o build/bench/net-onesided \
  bench/net_onesided.c -Lbuild/lib -lsymheap -Wl,-rpath,"$PWD/build/lib" || exit 1
# The peers only where asked for (the lent GPU machines have no Open MPI).
case ",$ENGINES_ARG," in *,oshmem,*)
  oshcc -O2 -DNB_SHMEM -o build/bench/net-oshmem bench/net_onesided.c || exit 1 ;;
esac
case ",$ENGINES_ARG," in *,mpi,*)
  mpicc -O2 -DNB_MPI -o build/bench/net-mpi bench/net_onesided.c || exit 1 ;;
esac

. test/netns.sh
netns_setup "net bench" || exit 1
# The same device name on both sides, so that UCX_NET_DEVICES names it on
# every rank (UCX would otherwise also offer lo, which the other
# namespace cannot reach).
for s in A B; do
  eval "ns=\$NETNS_$s v=\$NETNS_VETH_$s"
  ip -n "$ns" link set "$v" down && ip -n "$ns" link set "$v" name nbveth &&
    ip -n "$ns" link set nbveth up || exit 1
done
netns_link_up "$NETNS_A" nbveth 5 && netns_link_up "$NETNS_B" nbveth 5 &&
  netns_reaches "$NETNS_B" "$NETNS_IP_A" 5 || { echo "veth down" >&2; exit 1; }
# As netns_setup after the first up: a second more before libfabric lists
# it (round 1 failed with "no domain nbveth" in every run before).
sleep 1
AGENT=$(mktemp /tmp/net-bench-rsh.XXXXXX)
trap 'netns_cleanup; rm -f "$AGENT"' EXIT
# Open MPI's rsh agent: each host is an address; run there in its namespace.
cat >"$AGENT" <<EOF
#!/bin/sh
h=\$1; shift
case \$h in
$NETNS_IP_A) ns=$NETNS_A ;;
$NETNS_IP_B) ns=$NETNS_B ;;
*) echo "rsh agent: unknown host \$h" >&2; exit 1 ;;
esac
exec ip netns exec \$ns /bin/sh -c "\$*"
EOF
chmod +x "$AGENT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NET=${NETNS_IP_A%.*}.0/24
OMPI=(--mca plm_rsh_agent "$AGENT" -n 2 --host "$NETNS_IP_A:1,$NETNS_IP_B:1"
  --map-by node --bind-to none --mca oob_tcp_if_include "$NET"
  --mca btl_tcp_if_include "$NET" -x UCX_TLS=self,tcp -x UCX_NET_DEVICES=nbveth)
INA=(ip netns exec "$NETNS_A")
INB=(ip netns exec "$NETNS_B")

probe() { # probe PROVIDER raw|adaptor [--passive|--idle]: server in B, client in A
  local p=$1 what=$2 mode=${3:-} check=
  [ "$what" = raw ] && check=--check
  # The domain named: left to libfabric, a namespace's first domain was
  # sometimes lo (the client's 127.0.0.1 for the server: a hang until the
  # timeout, seen 2026-11-26 20:00).
  "${INB[@]}" timeout 300 "build/bin/net-$what" server "$NETNS_IP_B:7001" \
    --provider "$p" --domain nbveth $mode >/dev/null 2>&1 &
  local srv=$!
  # The client opens as the server does (with or without wait objects).
  [ "$mode" = --idle ] && mode=
  "${INA[@]}" timeout 300 "build/bin/net-$what" client "$NETNS_IP_B:7001" \
    --provider "$p" --domain nbveth $QUICK $mode $check
  local rc=$?
  wait $srv
  return $rc
}
run_engine() { # ENGINE[@PROVIDER]
  local p=$PROV
  case $1 in *@*) p=${1#*@} ;; esac
  case ${1%%@*} in
  raw | adaptor) probe "$p" "${1%%@*}" --passive ;;
  raw_spin) probe "$p" raw ;;
  raw_idle) probe "$p" raw --idle ;;
  symheap | symheap_noprog | symheap_x)
    local prog=auto x=
    [ "${1%%@*}" = symheap_noprog ] && prog=none
    [ "${1%%@*}" = symheap_x ] && x=${NET_BENCH_X_ENV:-}
    # shellcheck disable=SC2086 # NET_BENCH_X_ENV: several VAR=VALUE words
    env $x SYMHEAP_NET=ofi SYMHEAP_NET_PROVIDER="$p" SYMHEAP_NET_DOMAIN=nbveth \
      SYMHEAP_NET_PROGRESS=$prog timeout 300 \
      build/bin/symheap-run --hosts "$NETNS_A:1,$NETNS_B:1" \
      --rsh "ip netns exec" build/bench/net-onesided $QUICK |
      sed -E 's/^\[0\] //; /^\[1\]/d' ;;
  # The same program over the ucx net adaptor (UCP on UCX's tcp).
  symheap_ucx | symheap_ucx_noprog)
    local uprog=auto
    [ "${1%%@*}" = symheap_ucx_noprog ] && uprog=none
    SYMHEAP_NET=ucx UCX_TLS=self,tcp UCX_NET_DEVICES=nbveth \
      SYMHEAP_NET_PROGRESS=$uprog timeout 300 \
      build/bin/symheap-run --hosts "$NETNS_A:1,$NETNS_B:1" \
      --rsh "ip netns exec" build/bench/net-onesided $QUICK |
      sed -E 's/^\[0\] //; /^\[1\]/d' ;;
  # OSHMEM crashes in shmem_finalize after printing: its numbers stand.
  oshmem) "${INA[@]}" timeout 300 oshrun "${OMPI[@]}" build/bench/net-oshmem $QUICK ;;
  mpi)
    "${INA[@]}" timeout 300 mpirun "${OMPI[@]}" --mca pml ucx --mca osc ucx \
      --mca pml_ucx_tls any --mca pml_ucx_devices any build/bench/net-mpi $QUICK ;;
  esac
}

IFS=, read -r -a ENGINES <<<"$ENGINES_ARG"
{
  echo "date: $(date -u '+%F %T UTC')"
  echo "machine: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "libfabric: $(dpkg-query -W -f '${Version}' libfabric1 2>/dev/null)," \
    "Open MPI: $(dpkg-query -W -f '${Version}' openmpi-bin 2>/dev/null)," \
    "UCX: $(dpkg-query -W -f '${Version}' libucx0 2>/dev/null)"
  echo "symheap: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- core adaptors || echo ' + uncommitted changes')"
  echo "namespaces: $NETNS_A ($NETNS_IP_A) - $NETNS_B ($NETNS_IP_B), veth nbveth"
  echo "provider: $PROV; rounds: $ROUNDS ${QUICK:-(full iterations)}"
  echo "oshrun/mpirun arguments: ${OMPI[*]}"
} >"$OUT/env.txt"
cat "$OUT/env.txt"
: >"$OUT/load.txt"
for r in $(seq 1 "$ROUNDS"); do
  n=${#ENGINES[@]}
  for k in $(seq 0 $((n - 1))); do
    e=${ENGINES[$(((k + r - 1) % n))]}
    echo "round $r $e: $(uptime)" | tee -a "$OUT/load.txt"
    f=$OUT/round$r-${e//;/+}
    run_engine "$e" >"$f.txt" 2>"$f.err"
    echo "  exit $?, $(grep -c '^[a-z_]* [0-9]' "$f.txt") rows$(grep -c 'check.*FAILED' "$f.txt" | sed 's/^0$//; s/.\+/, & checks FAILED/')"
    netns_kill_all # whatever a crashed launcher left
  done
done
python3 bench/net_table.py "$OUT" "$OUT/net.svg" | tee "$OUT/table.md"

#!/bin/bash
# Interleaved quick runs of variants: symheap_ucx (env variants) and oshmem.
# usage: exp.sh OUTDIR ROUNDS variant...   variant = name:ENV=val,ENV=val  or oshmem
cd /work/wt/r6-ucx
OUT=$1; ROUNDS=$2; shift 2
mkdir -p "$OUT"
. test/netns.sh
netns_setup "r6u exp" || exit 1
for s in A B; do
  eval "ns=\$NETNS_$s v=\$NETNS_VETH_$s"
  ip -n "$ns" link set "$v" down && ip -n "$ns" link set "$v" name nbveth &&
    ip -n "$ns" link set nbveth up || exit 1
done
netns_reaches "$NETNS_B" "$NETNS_IP_A" 5 || { echo "veth down" >&2; exit 1; }
AGENT=$(mktemp /tmp/r6u/rsh.XXXXXX)
trap 'netns_cleanup; rm -f "$AGENT"' EXIT
cat >"$AGENT" <<EOA
#!/bin/sh
h=\$1; shift
case \$h in
$NETNS_IP_A) ns=$NETNS_A ;;
$NETNS_IP_B) ns=$NETNS_B ;;
*) exit 1 ;;
esac
exec ip netns exec \$ns /bin/sh -c "\$*"
EOA
chmod +x "$AGENT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NET=${NETNS_IP_A%.*}.0/24
OMPI=(--mca plm_rsh_agent "$AGENT" -n 2 --host "$NETNS_IP_A:1,$NETNS_IP_B:1"
  --map-by node --bind-to none --mca oob_tcp_if_include "$NET"
  --mca btl_tcp_if_include "$NET" -x UCX_TLS=self,tcp -x UCX_NET_DEVICES=nbveth)
for r in $(seq 1 $ROUNDS); do
  for v in "$@"; do
    name=${v%%:*}; envs=${v#*:}; [ "$envs" = "$v" ] && envs=
    echo "round $r $name: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"
    if [ "$name" = oshmem ]; then
      ip netns exec "$NETNS_A" timeout 120 oshrun "${OMPI[@]}" /tmp/r6u/net-oshmem --quick >"$OUT/r$r-$name.txt" 2>"$OUT/r$r-$name.err"
    else
      env $(echo "$envs" | tr ',' ' ') SYMHEAP_NET=ucx UCX_TLS=self,tcp UCX_NET_DEVICES=nbveth timeout 120 \
        build/bin/symheap-run --hosts "$NETNS_A:1,$NETNS_B:1" --rsh "ip netns exec" \
        ${BIN:-/tmp/r6u/net-onesided} --quick 2>"$OUT/r$r-$name.err" | sed -E 's/^\[0\] //; /^\[1\]/d' >"$OUT/r$r-$name.txt"
    fi
    grep -E "^(get (8|64|4096)|fetch_add 8|put_quiet (8|65536)) " "$OUT/r$r-$name.txt" | tr '\n' ';'; echo
    netns_kill_all
  done
done

#!/bin/bash
# bw.sh ROUNDS "label:ENV... ;label2:ENV..." : bandwidth only, symheap under symheap-run across 2 netns
cd /work/main
ROUNDS=$1; VARS=$2
cc -O2 -Wall -Wextra -Werror -Iinclude -o build/bench/net-onesided bench/net_onesided.c -Lbuild/lib -lsymheap -Wl,-rpath,"$PWD/build/lib" || exit 1
. test/netns.sh
netns_setup "bw" >/dev/null || exit 1
for s in A B; do eval "ns=\$NETNS_$s v=\$NETNS_VETH_$s"; ip -n "$ns" link set "$v" down && ip -n "$ns" link set "$v" name nbveth && ip -n "$ns" link set nbveth up || exit 1; done
netns_reaches "$NETNS_B" "$NETNS_IP_A" 5 || { echo veth down; exit 1; }
trap 'netns_cleanup' EXIT
IFS=';' read -ra VS <<< "$VARS"
for r in $(seq $ROUNDS); do for v in "${VS[@]}"; do lab=${v%%:*}; envs=${v#*:}
  echo "## $r $lab"
  echo "$envs" > /tmp/r11/wrap.conf
  env SYMHEAP_NET=ofi SYMHEAP_NET_PROVIDER="tcp;ofi_rxm" SYMHEAP_NET_DOMAIN=nbveth timeout 120 \
    build/bin/symheap-run --hosts "$NETNS_A:1,$NETNS_B:1" --rsh "ip netns exec" /tmp/r11/wrap.sh build/bench/net-onesided --bw | sed -E 's/^\[0\] //; /^\[1\]/d' | grep put_bw
done; done

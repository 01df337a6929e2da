cd /work/main
SYMHEAP_NET=ofi SYMHEAP_NET_PROVIDER='tcp;ofi_rxm' timeout 300 build/bin/symheap-run --hosts "$NETNS_A:1,$NETNS_B:1" --rsh "ip netns exec" sh -c 'if [ $SYMHEAP_RANK = 0 ]; then export SYMHEAP_NET_DOMAIN=$0; else export SYMHEAP_NET_DOMAIN=$1; fi; if [ $SYMHEAP_RANK = 0 ]; then exec strace -f -o /tmp/sta.sym build/bench/net-onesided --quick; else exec build/bench/net-onesided --quick; fi' $NETNS_VETH_A $NETNS_VETH_B > /tmp/sta.sym.out 2>&1
echo sym rc=$?
ip netns exec $NETNS_B build/bin/net-raw server $NETNS_IP_B:7711 --provider 'tcp;ofi_rxm' --passive --quick > /tmp/sta.raw1.out 2>&1 &
sleep 0.5
ip netns exec $NETNS_A strace -f -o /tmp/sta.raw build/bin/net-raw client $NETNS_IP_B:7711 --provider 'tcp;ofi_rxm' --passive --quick > /tmp/sta.raw0.out 2>&1
echo raw rc=$?
wait

#!/bin/sh
# symheap-run's remote-start command for hosts that are network namespaces,
# with the net adaptor's domain set to the namespace's own veth (each
# namespace names its end differently, so one SYMHEAP_NET_DOMAIN from the
# launcher cannot fit both).  --rsh "$PWD/test/shmem/ns_rsh.sh" runs
#   ns_rsh.sh NAMESPACE symheap-run --agent -- PROG ARGS...
ns=$1
shift
dev=$(ip -n "$ns" -o link show type veth | awk -F': ' 'NR == 1 {print $2}' | cut -d@ -f1)
exec ip netns exec "$ns" env SYMHEAP_NET_DOMAIN="$dev" "$@"

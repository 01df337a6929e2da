#!/usr/bin/env bash
# OpenSHMEM across two network namespaces (test/netns.sh) over libfabric's
# tcp;ofi_rxm: 4 PEs, 2 on each "host", started by symheap-run --hosts
# through test/shmem/ns_rsh.sh (ip netns exec, the adaptor's domain set to
# the namespace's veth).  The hosts test (shmem_ptr NULL for the other
# namespace's PEs, globals reached), the feature tests of RMA, AMOs,
# collectives and point-to-point, and six of the specification's examples
# where ../shared/openshmem is (run_shmem.sh builds them into
# build/shmem-spec).
# Prints the PEs' PASS/FAIL lines, untagged, and its own; one SKIP line
# where namespaces cannot be made or libfabric is missing.
#   test/shmem_hosts.sh [BUILD]      (BUILD defaults to build)
set -u
cd "$(dirname "$0")/.." || exit 1
B=${1:-build}
. test/deps.sh
if ! have_tool libfabric; then
  echo "SKIP shmem_hosts: libfabric1 is not installed (see test/deps.sh)"
  exit 0
fi
. test/netns.sh
netns_setup "shmem_hosts" || exit 0
LOG=$(mktemp -d)
trap 'netns_cleanup; rm -rf "$LOG"' EXIT
status=0
export SYMHEAP_NET=ofi SYMHEAP_NET_PROVIDER="tcp;ofi_rxm" SYMHEAP_TEST_PER_HOST=2

# across NAME PROG ARGS...: PROG at 4 PEs across the namespaces.
across() {
  local name=$1 log="$LOG/$1"
  shift
  netns_job "shmem_hosts/$name" "$log" timeout 180 "$B/bin/symheap-run" \
    --hosts "$NETNS_A:2,$NETNS_B:2" --rsh "$PWD/test/shmem/ns_rsh.sh" "$@"
  local rc=$?
  untag "$log"
  [ $rc -eq 0 ] || fail "shmem_hosts/$name" "symheap-run exited $rc: $(tail -n 3 "$log" | tr '\n' ' ')"
  return $rc
}

for t in hosts rma amo coll p2p; do
  across "$t" "$PWD/$B/test/shmem/test_shmem_$t"
done
# A few of the examples, one per area (the whole set runs across pretend
# hosts in run_shmem.sh; over tcp each job costs seconds to start).
for name in shmem_ctx_pipelined_reduce shmem_team_alltoalls \
  shmem_team_broadcast shmem_team_collect shmem_team_split_2D \
  shmem_wait_until_any; do
  ex=build/shmem-spec/$name
  [ -x "$ex" ] || continue
  across "$name" "$PWD/$ex" && echo "PASS shmem_hosts/spec_$name"
done
exit $status

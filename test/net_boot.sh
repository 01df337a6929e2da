#!/usr/bin/env bash
# The bootstrap and symheap-run across hosts, on two network namespaces
# (test/netns.sh): the cross-host suite at 2 and 4 ranks, strangers knocking
# at rank 0's port while the job joins, and a link that goes down mid-job.
# Prints PASS/FAIL lines (the ranks' own, untagged, and its checks), or one
# SKIP line where namespaces cannot be made.
#   test/net_boot.sh [BUILD]      (BUILD defaults to build)
set -u
cd "$(dirname "$0")/.."
B=${1:-build}
. test/netns.sh # the namespaces; fail, untag, wait_for
netns_setup "net bootstrap" || exit 0
RUN=("$B/bin/symheap-run")
PROG="$B/test/test_net_boot"
RSH="ip netns exec"
LOG=$(mktemp -d)
trap 'netns_cleanup; rm -rf "$LOG"' EXIT
status=0 # fail (test/netns.sh) sets it

suite() { # suite N: N/2 ranks on each host
  local n=$1 h=$(($1 / 2)) log="$LOG/suite$1"
  timeout 120 "${RUN[@]}" -n "$n" --hosts "$NETNS_A:$h,$NETNS_B:$h" \
    --rsh "$RSH" "$PROG" suite >"$log" 2>&1
  local rc=$?
  untag "$log"
  [ $rc -eq 0 ] || fail "suite$n/exit" "symheap-run exited $rc: $(tail -n 3 "$log" | tr '\n' ' ')"
}

# Strangers connect to rank 0's port while rank 1 is late to join: garbage,
# a well-formed hello with the wrong secret, and one that says nothing.
# Each is refused and logged with its address; the job completes.
strangers() {
  local log="$LOG/join" ip port addr
  SYMHEAP_DEBUG=INFO SYMHEAP_TEST_JOIN_DELAY_MS=4000 timeout 60 "${RUN[@]}" \
    --hosts "$NETNS_A:1,$NETNS_B:1" --rsh "$RSH" "$PROG" join >"$log" 2>&1 &
  local pid=$!
  if ! wait_for "$log" "bootstrap: listening on" 20; then
    kill $pid 2>/dev/null
    wait $pid
    fail stranger/address "rank 0 never said where it listens: $(tail -n 3 "$log" | tr '\n' ' ')"
    return
  fi
  addr=$(grep -o 'listening on [0-9.]*:[0-9]*' "$log" | head -n 1)
  addr=${addr#listening on }
  ip=${addr%:*} port=${addr##*:}
  local hello='BMHS\x01\x00\x01\x00\x00\x00\x00\x00\x18\x00\x00\x00'
  hello+='\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
  hello+='\x01\x00\x00\x00\x02\x00\x00\x00'
  ip netns exec "$NETNS_B" timeout 3 bash -c \
    "exec 3<>/dev/tcp/$ip/$port; printf 'GET / HTTP/1.0\r\n\r\n' >&3; cat <&3 >/dev/null" 2>/dev/null
  ip netns exec "$NETNS_B" timeout 3 bash -c \
    "exec 3<>/dev/tcp/$ip/$port; printf '$hello' >&3; cat <&3 >/dev/null" 2>/dev/null
  ip netns exec "$NETNS_B" timeout 3 bash -c \
    "exec 3<>/dev/tcp/$ip/$port; sleep 1.5" 2>/dev/null
  wait $pid
  local rc=$?
  grep -E '^\[[0-9]+\] (PASS|FAIL) ' "$log" | untag /dev/stdin
  [ $rc -eq 0 ] || fail stranger/exit "symheap-run exited $rc: $(grep -v INFO "$log" | tail -n 3 | tr '\n' ' ')"
  grep 'WARN' "$log"
  local refused
  refused=$(grep -c "refused a connection from $NETNS_IP_B:[0-9]*: it did not prove the job's secret" "$log")
  if [ "$refused" -ge 3 ] && grep -q "WARN.*refused a connection from $NETNS_IP_B" "$log"; then
    echo "PASS stranger/refused_and_logged"
  else
    fail stranger/refused_and_logged "$refused of 3 strangers refused in the log: $(grep -i 'refused\|WARN' "$log" | head -n 3 | tr '\n' ' ')"
  fi
}

# Host B's link goes down mid-job: every rank's failing barrier returns
# within SYMHEAP_TIMEOUT_MS + 1 s (test_net_boot checks), none hangs.
link_down() {
  local log="$LOG/linkdown"
  SYMHEAP_TIMEOUT_MS=3000 timeout 60 "${RUN[@]}" -n 4 \
    --hosts "$NETNS_A:2,$NETNS_B:2" --rsh "$RSH" "$PROG" linkdown >"$log" 2>&1 &
  local pid=$!
  if wait_for "$log" "READY" 30; then
    sleep 0.3
    ip -n "$NETNS_B" link set "$NETNS_VETH_B" down
  fi
  wait $pid
  local rc=$?
  untag "$log" | grep -E '^(PASS|FAIL) '
  [ $rc -eq 0 ] || fail linkdown/exit "symheap-run exited $rc: $(tail -n 4 "$log" | tr '\n' ' ')"
  local errored
  errored=$(grep -c '^\[[0-9]\] # rank [0-9]: .* after [0-9]* ms' "$log")
  if [ "$errored" -eq 4 ]; then
    echo "PASS linkdown/every_rank_errored"
  else
    fail linkdown/every_rank_errored "$errored of 4 ranks reported an error: $(tail -n 4 "$log" | tr '\n' ' ')"
  fi
  grep '# rank' "$log"
}

# No process left in either namespace within 5 s.
gone() {
  local until=$((SECONDS + 5))
  while [ -n "$(ip netns pids "$NETNS_A")$(ip netns pids "$NETNS_B")" ]; do
    [ $SECONDS -ge $until ] && return 1
    sleep 0.1
  done
}

# launcher HOW: symheap-run killed (SIGKILL), stopped (SIGTERM), or a rank
# on host B failing (exit 3): no rank outlives the job, and the exit status
# says what happened.
launcher() {
  local how=$1 log="$LOG/launcher-$1" mode=hang want
  [ "$how" = fail ] && mode=fail
  # No timeout wrapper: the signal must reach symheap-run itself (the
  # ranks sleep 2 minutes at most).
  "${RUN[@]}" --hosts "$NETNS_A:2,$NETNS_B:1" --rsh "$RSH" \
    "$PROG" $mode >"$log" 2>&1 &
  local pid=$!
  if ! wait_for "$log" "READY 2" 30; then
    kill -9 $pid
    fail "launcher/$how" "the ranks never got ready: $(tail -n 3 "$log" | tr '\n' ' ')"
    return
  fi
  case $how in
  sigkill) kill -KILL $pid; want=137 ;;
  sigterm) kill -TERM $pid; want=143 ;;
  fail) want=3 ;;
  esac
  { wait $pid; } 2>/dev/null # bash's "Killed" notice is expected here
  local rc=$?
  if [ $rc -ne $want ]; then
    fail "launcher/$how" "symheap-run exited $rc, expected $want: $(tail -n 3 "$log" | tr '\n' ' ')"
  elif ! gone; then
    fail "launcher/$how" "processes left: $(ip netns pids "$NETNS_A") / $(ip netns pids "$NETNS_B")"
  else
    echo "PASS launcher/$how"
  fi
  netns_kill_all
}

suite 2
suite 4
launcher sigkill
launcher sigterm
launcher fail
strangers
link_down
exit $status

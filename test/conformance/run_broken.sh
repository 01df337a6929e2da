#!/usr/bin/env bash
# The conformance kit's own test.  Runs symheap-conformance on each broken
# adaptor (test/conformance/broken_adaptor.c built with -DBREAK=N into
# BUILD/test/broken/brokenN.so) and asserts that the kit FAILs it with a
# message naming the mistake, exits 1 (never on a signal), never prints an
# empty FAIL; that correct adaptors pass with exit 0; and that an
# unavailable adaptor exits 3, or 0 with --allow-unavailable.
#   test/conformance/run_broken.sh [BUILD]      (default: build)
# Prints PASS/FAIL lines for test/run.sh.
set -u
cd "$(dirname "$0")/../.."
B=${1:-build}
KIT="$B/bin/symheap-conformance"
DIR="$PWD/$B/test/broken"
LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT

# BREAK|case name|words one FAIL line must contain|extra kit options
CASES=(
  "1|mem_release leaks the descriptor|descriptors leaked (mem_release must"
  "2|va_free leaks the range|bytes of address space leaked (va_free must"
  "3|unmap munmaps the reservation|unmap gave the reservation back"
  "4|va_reserve ignores align|which is not aligned as asked"
  "5|mem_import accepts any descriptor|mem_import accepted a pipe's descriptor"
  "6|mem_import leaks on failure|leaked (mem_import leaked on failure"
  "7|claims MAP_PARTIAL, refuses partial maps|claims SYMHEAP_CAP_MAP_PARTIAL, but map"
  "8|set_access does nothing|set_access did not make the range accessible"
  "9|errors without text|with no error text"
  "10|mem_create fails|precondition: mem_create("
  "11|handle 0 returned|returned handle 0"
  "12|bad granularity|granularity 3000: expected a power of two"
  "13|unterminated device name|caps.device_name is not NUL-terminated"
  "14|overlong adaptor name|a name of 32 characters or more|--device broken-with-a-name-far-too-long-for-it"
  "15|mem_zero does not zero|mem_zero must leave every byte of its range zero"
  "16|map at an offset maps wrong bytes|map at an offset maps the wrong bytes"
  "17|export hands out a non-owned descriptor|mem_export gave the same descriptor"
  "18|caps claim IPC without ipc ops|caps claim SYMHEAP_CAP_IPC but the table has no"
  "19|unmap leaves memory accessible|after unmap, the range is still readable"
  "20|va_reserve returns accessible memory|a fresh reservation is readable"
  "21|mem_export crashes|killed by signal 11 (SIGSEGV"
  "22|mem_zero hangs|did not finish within the 2 s bound|--only mem_zero --timeout 2"
  "23|set_access aborts|killed by signal 6 (SIGABRT"
  "24|fini leaks what init opened|leaked (fini must release everything init made)"
  "25|available but init fails|precondition: init (rank 0 of 1) returned"
  "28|writes to stderr itself|the adaptor wrote to stderr itself: 'broken: mem_create"
  "29|mem_retain gives a wrong base|mem_retain(base + g + 64) gave handle"
  "30|mem_retain of foreign memory not UNSUPPORTED|expected SYMHEAP_ERR_UNSUPPORTED, which sends the core to IPC"
  "31|dmabuf_export leaks|dmabuf_export + close, 100 rounds: 100 descriptors leaked"
  "32|capture_check refuses with no capture|capture_check with nothing being captured returned"
  "33|recommended granularity above the core's 1 GiB|at most 1 GiB (the core refuses more)"
  "34|mem_import accepts any regular file|mem_import accepted a regular file's descriptor"
  "35|mem_import accepts someone else's memfd|mem_import accepted someone else's memfd"
  "36|map opens the range before set_access|after map, before set_access, the range is readable"
)

# kit LOGNAME BREAK ARGS...: run the kit on broken adaptor BREAK.
kit() {
  local name=$1 n=$2
  shift 2
  SYMHEAP_PLUGIN="$DIR/broken$n.so" "$KIT" "$@" >"$LOG/$name" 2>&1
}

# An empty FAIL message, or no summary line, is a kit bug whatever the case.
well_formed() {
  if grep -Eq '^FAIL conformance/[a-z_]*: *$' "$1"; then
    echo "an empty FAIL message"
    return 1
  fi
  if ! tail -n 3 "$1" | grep -Eq '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'; then
    echo "no 'N passed, N failed, N skipped' line"
    return 1
  fi
}

for c in "${CASES[@]}"; do
  IFS='|' read -r n what words extra <<<"$c"
  label="kit/broken-$n"
  args=(--device broken)
  if [ -n "$extra" ]; then
    read -r -a more <<<"$extra"
    if [[ "$extra" == --device* ]]; then args=("${more[@]}"); else args+=("${more[@]}"); fi
  fi
  kit "$n" "$n" "${args[@]}"
  rc=$?
  why=$(well_formed "$LOG/$n")
  if [ $rc -ge 128 ]; then
    echo "FAIL $label ($what): the kit died on signal $((rc - 128))"
  elif [ $rc -ne 1 ]; then
    echo "FAIL $label ($what): exit status $rc, expected 1"
  elif [ -n "$why" ]; then
    echo "FAIL $label ($what): $why"
  elif ! grep '^FAIL ' "$LOG/$n" | grep -qF -- "$words"; then
    echo "FAIL $label ($what): no FAIL line says '$words'; the kit said:"
    grep '^FAIL ' "$LOG/$n" | head -n 3 | sed 's/^/    /'
  else
    echo "PASS $label ($what): $(grep '^FAIL ' "$LOG/$n" | grep -F -m1 -- "$words" | cut -c1-160)"
  fi
done

# Correct adaptors: exit 0, no FAIL.
pass_case() { # pass_case LABEL ENV... -- KIT-ARGS...
  local label=$1 envs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$KIT" "$@" >"$LOG/ok" 2>&1
  local rc=$? why
  why=$(well_formed "$LOG/ok")
  if [ $rc -ne 0 ] || grep -q '^FAIL ' "$LOG/ok" || [ -n "$why" ]; then
    echo "FAIL $label: exit $rc $why; $(grep -m1 '^FAIL ' "$LOG/ok")"
  else
    echo "PASS $label: $(tail -n 1 "$LOG/ok")"
  fi
}
pass_case kit/correct-host -- --device host
pass_case kit/correct-example "SYMHEAP_PLUGIN_PATH=$PWD/$B/lib" SYMHEAP_PLUGIN=example \
  -- --device example
pass_case kit/correct-broken0 "SYMHEAP_PLUGIN=$DIR/broken0.so" -- --device broken
pass_case kit/correct-no-host-access "SYMHEAP_PLUGIN=$DIR/broken27.so" -- --device broken
pass_case kit/correct-4-ranks "SYMHEAP_PLUGIN=$DIR/broken0.so" -- --device broken \
  --ranks 4 --only ranks_threads_flat_va,ranks_procs_flat_va,ranks_procs_rollback

# Unavailable: exit 3 (nothing could run), 0 with --allow-unavailable.
kit unavail 26 --device broken
rc=$?
if [ $rc -eq 3 ] && ! grep -q '^FAIL ' "$LOG/unavail" &&
  grep -q '^SKIP conformance/available: the adaptor cannot run here: broken adaptor 26' "$LOG/unavail" &&
  grep -q '^SKIP conformance/mem_zero: the adaptor cannot run here' "$LOG/unavail"; then
  echo "PASS kit/unavailable-exits-nonzero: exit 3"
else
  echo "FAIL kit/unavailable-exits-nonzero: exit $rc, expected 3 with SKIPs"
fi
kit unavail2 26 --device broken --allow-unavailable
rc=$?
if [ $rc -eq 0 ]; then
  echo "PASS kit/unavailable-allowed: exit 0 with --allow-unavailable"
else
  echo "FAIL kit/unavailable-allowed: exit $rc, expected 0"
fi
# A name nothing registers: FAIL, exit 1.
"$KIT" --device no-such-adaptor >"$LOG/none" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "^FAIL conformance/table: no device adaptor 'no-such-adaptor'" "$LOG/none"; then
  echo "PASS kit/unknown-device: exit 1, named"
else
  echo "FAIL kit/unknown-device: exit $rc"
fi
# Output as it happens, also into a file: each verdict is on disk before the
# next check ends (the hang case: the line before it is already written).
SYMHEAP_PLUGIN="$DIR/broken22.so" "$KIT" --device broken --only caps,mem_zero \
  --timeout 6 >"$LOG/lines" 2>&1 &
pid=$!
seen=0
for _ in $(seq 50); do # up to 5 s, while mem_zero hangs (6 s bound)
  if grep -q '^PASS conformance/caps' "$LOG/lines" && kill -0 $pid 2>/dev/null; then
    seen=1
    break
  fi
  sleep 0.1
done
if [ $seen = 1 ]; then
  echo "PASS kit/line-by-line: a verdict is in the file while a later check runs"
else
  echo "FAIL kit/line-by-line: no verdict in the file while mem_zero hung: $(cat "$LOG/lines")"
fi
wait $pid
# --help documents the options.
if "$KIT" --help | grep -q -- --allow-unavailable && "$KIT" --help | grep -q -- --ranks; then
  echo "PASS kit/help: --help lists the options"
else
  echo "FAIL kit/help: --help does not list --ranks and --allow-unavailable"
fi
# Every check the kit runs is listed in the docs (one line each).
missing=""
for c in $("$KIT" --list | awk '{print $1}'); do
  for d in docs/writing-an-adaptor.md docs/conformance.md; do
    grep -q "\`$c\`" "$d" || missing="$missing $c($d)"
  done
done
if [ -z "$missing" ]; then
  echo "PASS kit/docs-list-every-check: docs/writing-an-adaptor.md and docs/conformance.md"
else
  echo "FAIL kit/docs-list-every-check: not in the docs:$missing"
fi
# make install installs the kit, and the installed kit runs.
if make -s install BUILD="$B" PREFIX="$LOG/inst" >"$LOG/install" 2>&1 &&
  "$LOG/inst/bin/symheap-conformance" --device host --only table >"$LOG/inst.out" 2>&1; then
  echo "PASS kit/installed: $(tail -n 1 "$LOG/inst.out")"
else
  echo "FAIL kit/installed: $(tail -n 3 "$LOG/install" "$LOG/inst.out" | tr '\n' ' ')"
fi

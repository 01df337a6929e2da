#!/usr/bin/env bash
# Runs every test of symheap and ends with "N passed, N failed".
#   test/run.sh            everything (what `make test` and CI run)
#   QUICK=1 test/run.sh    skip the sanitizer and valgrind passes
# Each test program prints "PASS <case>" / "FAIL <case> ..." lines; a case
# passes only if no rank failed it, and a program that exits non-zero without
# saying why counts as a failure too.
set -u
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
LOGDIR=build/test-logs
mkdir -p "$LOGDIR"
passed=0
failed=0
skipped=0
failures=()

# run LABEL COMMAND...: run one test program, count its cases.
run() {
  local label=$1
  shift
  local log="$LOGDIR/${label//[^A-Za-z0-9_.-]/_}.log"
  local start=$SECONDS
  "$@" >"$log" 2>&1
  local rc=$?
  local p f
  local ns
  ns=$(grep -c '^SKIP ' "$log")
  skipped=$((skipped + ns))
  # awk, not sed: a label may hold a '/' ("core/none/numa")
  grep '^SKIP ' "$log" | awk -v l="$label" '{ print "  " l ": " $0 }'
  p=$(awk '/^PASS /{print $2}' "$log" | sort -u)
  f=$(awk '/^FAIL /{print $2}' "$log" | sort -u)
  local np=0 nf=0
  for name in $p; do
    if ! grep -qx -- "$name" <<<"$f"; then np=$((np + 1)); fi
  done
  for name in $f; do
    nf=$((nf + 1))
    failures+=("$label: $(grep -m1 "^FAIL $name " "$log")")
  done
  if [ $rc -ne 0 ] && [ $nf -eq 0 ]; then
    nf=1
    failures+=("$label: exited with status $rc without a FAIL line; see $log: $(tail -n 3 "$log" | tr '\n' ' ')")
  fi
  if [ $rc -eq 0 ] && [ $np -eq 0 ] && [ $nf -eq 0 ] && [ "$ns" -eq 0 ]; then
    nf=1
    failures+=("$label: ran no test case")
  fi
  passed=$((passed + np))
  failed=$((failed + nf))
  printf '%-44s %3d passed %3d failed  (%ds)\n' "$label" $np $nf $((SECONDS - start))
}

# check LABEL COMMAND...: a single shell-level check.
check() {
  local label=$1
  shift
  local log="$LOGDIR/${label//[^A-Za-z0-9_.-]/_}.log"
  if "$@" >"$log" 2>&1; then
    passed=$((passed + 1))
    printf '%-44s %3d passed %3d failed\n' "$label" 1 0
  else
    failed=$((failed + 1))
    failures+=("$label: $(tail -n 3 "$log" | tr '\n' ' ')")
    printf '%-44s %3d passed %3d failed\n' "$label" 0 1
  fi
}

# log_lacks LABEL PATTERN RUN_LABEL: the log of an earlier run has no line
# with PATTERN (a fixed string).
log_lacks() {
  local log="$LOGDIR/${3//[^A-Za-z0-9_.-]/_}.log"
  check "$1" sh -c 'test -s "$2" && ! grep -F -- "$1" "$2"' _ "$2" "$log"
}

suite() { # suite PREFIX BUILD WRAPPER...
  local prefix=$1 b=$2
  shift 2
  run "$prefix unit" "$@" "$b/test/test_unit"
  for n in 2 4 8; do
    run "$prefix procs x$n" build/bin/symheap-run -n $n "$@" "$b/test/test_multirank"
    run "$prefix threads x$n" "$@" "$b/test/test_multirank" --threads $n
  done
  run "$prefix procs x2 threads x3" build/bin/symheap-run -n 2 "$@" "$b/test/test_multirank" --mixed 3
  run "$prefix faults" "$@" "$b/test/test_faults"
  run "$prefix hostile input" "$@" "$b/test/test_hostile"
  run "$prefix kill at each stage" "$@" "$b/test/test_kill"
  run "$prefix stall (SIGSTOP) at each stage" "$@" "$b/test/test_stall"
  run "$prefix exhaustion, concurrency" "$@" "$b/test/test_exhaust"
  # The symmetric heap: processes, threads, mixed; the recording adaptor's
  # cases (calls, faults in growth, variables); fake CUDA, fake HIP, the
  # example plugin.
  run "$prefix heap procs x4" build/bin/symheap-run -n 4 "$@" "$b/test/test_heap"
  run "$prefix heap threads x2" "$@" "$b/test/test_heap" --threads 2
  run "$prefix heap threads x8" "$@" "$b/test/test_heap" --threads 8
  run "$prefix heap procs x2 threads x2" build/bin/symheap-run -n 2 "$@" \
    "$b/test/test_heap" --mixed 2
  run "$prefix heap recording adaptor" "$@" "$b/test/test_heap" --record
  run "$prefix heap cuda(fake) threads x2" env SYMHEAP_DEVICE=cuda \
    SYMHEAP_CUDA_LIBRARY="$PWD/$b/fake_cuda/libcuda.so.1" \
    SYMHEAP_DISABLE_MULTICAST=1 "$@" "$b/test/test_heap" --threads 2
  run "$prefix heap hip(fake) procs x2" env SYMHEAP_DEVICE=hip \
    SYMHEAP_HIP_LIBRARY="$PWD/$b/fake_hip/libamdhip64.so" \
    build/bin/symheap-run -n 2 "$@" "$b/test/test_heap"
  run "$prefix heap example plugin procs x3" env SYMHEAP_PLUGIN_PATH="$PWD/$b/lib" \
    SYMHEAP_PLUGIN=example SYMHEAP_DEVICE=example \
    build/bin/symheap-run -n 3 "$@" "$b/test/test_heap"
  # How ranks wait in agreements over shared memory (yield, then a futex):
  # a late rank, a rank that exits or dies while its peers sleep.
  run "$prefix agreement wait procs x4" build/bin/symheap-run -n 4 "$@" "$b/test/test_agree_wait"
  run "$prefix agreement wait threads x4" "$@" "$b/test/test_agree_wait" --threads 4
  run "$prefix agreement wait procs x2 threads x2" build/bin/symheap-run -n 2 "$@" \
    "$b/test/test_agree_wait" --mixed 2
  run "$prefix agreement wait: exit, death" "$@" "$b/test/test_agree_wait" --forked
  # Two different calls never pair (issue 28), over shared memory and over
  # the ccl's sockets, as processes and threads.
  for ch in 1 0; do
    run "$prefix contracts shm=$ch procs x3" env SYMHEAP_AGREE_SHM=$ch SYMHEAP_TIMEOUT_MS=10000 \
      build/bin/symheap-run -n 3 "$@" "$b/test/test_contracts"
    run "$prefix contracts shm=$ch threads x2" env SYMHEAP_AGREE_SHM=$ch SYMHEAP_TIMEOUT_MS=10000 \
      "$@" "$b/test/test_contracts" --threads 2
  done
  # The cuda adaptor over the fake driver: the same multi-rank suite (multicast
  # off, as on the shared GPU machines), then its own fault and fallback tests.
  local fake="$PWD/$b/fake_cuda/libcuda.so.1"
  for n in 2 4; do
    run "$prefix cuda(fake) procs x$n" env SYMHEAP_DEVICE=cuda SYMHEAP_CUDA_LIBRARY="$fake" \
      SYMHEAP_DISABLE_MULTICAST=1 build/bin/symheap-run -n $n "$@" "$b/test/test_multirank"
    run "$prefix cuda(fake) threads x$n" env SYMHEAP_DEVICE=cuda SYMHEAP_CUDA_LIBRARY="$fake" \
      SYMHEAP_DISABLE_MULTICAST=1 "$@" "$b/test/test_multirank" --threads $n
  done
  run "$prefix cuda(fake) adaptor" "$@" "$b/test/test_cuda_fake" "$fake"
  run "$prefix cuda(fake) device proxy memory" "$@" "$b/test/test_cuda_proxy" "$fake"
  # The hip adaptor over the fake HIP runtime, likewise.
  local hip="$PWD/$b/fake_hip/libamdhip64.so"
  for n in 2 4; do
    run "$prefix hip(fake) procs x$n" env SYMHEAP_DEVICE=hip SYMHEAP_HIP_LIBRARY="$hip" \
      build/bin/symheap-run -n $n "$@" "$b/test/test_multirank"
    run "$prefix hip(fake) threads x$n" env SYMHEAP_DEVICE=hip SYMHEAP_HIP_LIBRARY="$hip" \
      "$@" "$b/test/test_multirank" --threads $n
  done
  run "$prefix hip(fake) adaptor" "$@" "$b/test/test_hip_fake" "$hip"
  # The mapping object's refcount contract (test/test_mapobj.c): the window
  # cache off, and a cache of 2 so that eviction shows.
  for cache in 0 2; do
    run "$prefix mappings cache=$cache procs x4" env SYMHEAP_WINDOW_CACHE=$cache \
      build/bin/symheap-run -n 4 "$@" "$b/test/test_mapobj"
    run "$prefix mappings cache=$cache threads x3" env SYMHEAP_WINDOW_CACHE=$cache \
      "$@" "$b/test/test_mapobj" --threads 3
  done
  # RDMA registration over the fake libibverbs: threads, two pretend hosts
  # as processes (with and without an RDMA device), device memory by dma-buf.
  local ibv="$PWD/$b/fake_ibverbs/libibverbs.so.1"
  run "$prefix rdma(fake ibverbs) threads" "$@" "$b/test/test_rdma" "$ibv"
  run "$prefix rdma(fake ibverbs) two hosts procs x4" build/bin/symheap-run -n 4 \
    "$@" "$b/test/test_rdma" "$ibv" --procs
  run "$prefix rdma(fake ibverbs) two hosts, no device" env FAKE_IBV_DEVICES=0 \
    build/bin/symheap-run -n 4 "$@" "$b/test/test_rdma" "$ibv" --procs-nodev
  run "$prefix rdma(fake ibverbs) cuda(fake) dma-buf" env SYMHEAP_DEVICE=cuda \
    SYMHEAP_CUDA_LIBRARY="$fake" SYMHEAP_DISABLE_MULTICAST=1 \
    "$@" "$b/test/test_rdma" "$ibv" --dmabuf
  # The one-sided API across two pretend hosts through the test net adaptor
  # "loop" (issue 27): processes, a host per process with thread-ranks, the
  # waits' progress alone, and the refusals without a net adaptor.
  run "$prefix net(loop) two hosts procs x4" build/bin/symheap-run -n 4 "$@" "$b/test/test_net"
  run "$prefix net(loop) two hosts procs x2 threads x2" build/bin/symheap-run -n 2 \
    "$@" "$b/test/test_net" --mixed 2
  run "$prefix net(loop) progress=none procs x4" env SYMHEAP_NET_PROGRESS=none \
    build/bin/symheap-run -n 4 "$@" "$b/test/test_net"
  run "$prefix net(loop) progress=thread procs x2" env SYMHEAP_NET_PROGRESS=thread \
    build/bin/symheap-run -n 2 "$@" "$b/test/test_net"
  run "$prefix net(loop_signal: adaptor put_signal) procs x4" env SYMHEAP_NET=loop_signal \
    build/bin/symheap-run -n 4 "$@" "$b/test/test_net"
  # The adaptor's wait fds (loop_wait): the progress thread sleeps on them,
  # a waiting rank sleeps, a sleeping target wakes for a get or atomic.
  run "$prefix net(loop_wait: progress thread sleeps) procs x4" env SYMHEAP_NET=loop_wait \
    build/bin/symheap-run -n 4 "$@" "$b/test/test_net"
  run "$prefix net(loop_wait) procs x2 threads x2" env SYMHEAP_NET=loop_wait \
    build/bin/symheap-run -n 2 "$@" "$b/test/test_net" --mixed 2
  # Without the thread the waits themselves sleep on the fds (and spin
  # while peers' operations arrive).
  run "$prefix net(loop_wait) progress=none procs x4" env SYMHEAP_NET=loop_wait \
    SYMHEAP_NET_PROGRESS=none build/bin/symheap-run -n 4 "$@" "$b/test/test_net"
  run "$prefix net(loop) open failure agreed procs x4" build/bin/symheap-run -n 4 \
    "$@" "$b/test/test_net" --open-failure
  run "$prefix net=none two hosts procs x4" env SYMHEAP_NET=none \
    build/bin/symheap-run -n 4 "$@" "$b/test/test_net" --no-net
  # symheap_signal_wait_until as a waiting call: it serves a peer's burst
  # at spin speed and sleeps on the engine's fds when idle, with its
  # progress thread and without; an adaptor without fds; one host, naps.
  run "$prefix net_wait(loop_wait) two hosts procs x4" build/bin/symheap-run -n 4 \
    "$@" "$b/test/test_net_wait"
  run "$prefix net_wait(loop_wait) progress=none procs x4" env SYMHEAP_NET_PROGRESS=none \
    build/bin/symheap-run -n 4 "$@" "$b/test/test_net_wait"
  run "$prefix net_wait(loop, no wait fds) procs x2" env SYMHEAP_NET=loop \
    build/bin/symheap-run -n 2 "$@" "$b/test/test_net_wait"
  run "$prefix net_wait one host procs x2" build/bin/symheap-run -n 2 "$@" \
    "$b/test/test_net_wait" --one-host
  # The device host proxy with the CPU as the kernel (issue 27 step 7).
  run "$prefix proxy(loop) two hosts procs x4" build/bin/symheap-run -n 4 "$@" "$b/test/test_proxy"
  run "$prefix proxy(loop) two hosts procs x2 threads x2" build/bin/symheap-run -n 2 \
    "$@" "$b/test/test_proxy" --mixed 2
  run "$prefix proxy off procs x4" build/bin/symheap-run -n 4 "$@" "$b/test/test_proxy" --off
  # Target-side staging (issue 27 step 7): device windows of the fake CUDA
  # driver (no CPU access) behind a net adaptor without HMEM ("loop").
  run "$prefix stage(loop) cuda(fake) two hosts procs x4" env SYMHEAP_CUDA_LIBRARY="$fake" \
    build/bin/symheap-run -n 4 "$@" "$b/test/test_stage"
  run "$prefix stage(loop) cuda(fake) two hosts procs x2" env SYMHEAP_CUDA_LIBRARY="$fake" \
    SYMHEAP_NET_PROGRESS=thread build/bin/symheap-run -n 2 "$@" "$b/test/test_stage"
  run "$prefix stage(loop_wait) cuda(fake) two hosts procs x4" env SYMHEAP_NET=loop_wait \
    SYMHEAP_CUDA_LIBRARY="$fake" build/bin/symheap-run -n 4 "$@" "$b/test/test_stage"
  # Plugins: refusals, the example vendor (byte handles) and the trace hooks
  # under the multi-rank suite, and the conformance kit on every adaptor.
  local plug="env SYMHEAP_PLUGIN_PATH=$PWD/$b/lib"
  run "$prefix embedding example (minicoll)" "$@" "$b/test/test_embed"
  run "$prefix vendor window path (ccl) procs x3" build/bin/symheap-run -n 3 \
    "$@" "$b/test/test_window_path"
  run "$prefix split of comms on a caller's runtime procs x4" build/bin/symheap-run -n 4 \
    "$@" "$b/test/test_split_ccl"
  # symheap_window_find (core/window_find.c): threads and processes.
  run "$prefix window_find threads x3" "$@" "$b/test/test_window_find" --threads 3
  run "$prefix window_find procs x2" build/bin/symheap-run -n 2 \
    "$@" "$b/test/test_window_find"
  # symheap_window_release_local (core/window_local.c): threads and processes.
  run "$prefix window_local threads x2" "$@" "$b/test/test_window_local" --threads 2
  run "$prefix window_local procs x3" build/bin/symheap-run -n 3 \
    "$@" "$b/test/test_window_local"
  run "$prefix plugins" "$@" "$b/test/test_plugins" "$PWD/$b/lib" "$PWD/$b/test/bad_plugins"
  run "$prefix net adaptor registry" "$@" "$b/test/test_net_registry"
  run "$prefix example plugin procs x4" $plug SYMHEAP_PLUGIN=example SYMHEAP_DEVICE=example \
    build/bin/symheap-run -n 4 "$@" "$b/test/test_multirank"
  run "$prefix ccl plugin (SYMHEAP_CCL=shmccl) procs x4" env \
    SYMHEAP_PLUGIN_PATH="$PWD/$b/test/plugins" SYMHEAP_PLUGIN=shmccl SYMHEAP_CCL=shmccl \
    build/bin/symheap-run -n 4 "$@" "$b/test/test_multirank"
  run "$prefix trace+example plugins threads x4" $plug SYMHEAP_PLUGIN=trace,example \
    SYMHEAP_DEVICE=example "$@" "$b/test/test_multirank" --threads 4
  run "$prefix conformance host" "$@" "$b/bin/symheap-conformance" --device host
  run "$prefix conformance cuda(fake)" env SYMHEAP_CUDA_LIBRARY="$fake" \
    SYMHEAP_DISABLE_MULTICAST=1 "$@" "$b/bin/symheap-conformance" --device cuda
  run "$prefix conformance hip(fake)" env SYMHEAP_HIP_LIBRARY="$hip" \
    "$@" "$b/bin/symheap-conformance" --device hip
  run "$prefix conformance example plugin" $plug SYMHEAP_PLUGIN=example \
    "$@" "$b/bin/symheap-conformance" --device example
  run "$prefix conformance trace plugin over host" $plug SYMHEAP_PLUGIN=trace \
    "$@" "$b/bin/symheap-conformance" --device host
  # The templates have no driver behind them: unavailable, which is exit 3
  # unless allowed.
  run "$prefix conformance stub templates" $plug SYMHEAP_PLUGIN=stub_vmm,stub_ipc \
    "$@" "$b/bin/symheap-conformance" --device stub_ipc --allow-unavailable
  # The net adaptor on libfabric between two processes of this host: tcp
  # (rxm) over loopback and shm; the plugin build of it through
  # SYMHEAP_PLUGIN.  A provider that is not here SKIPs, saying why.
  if ! have_tool libfabric; then
    skip_pass "$prefix conformance net ofi" "libfabric1 is not installed (see test/deps.sh)"
  else
    run "$prefix conformance net ofi tcp;ofi_rxm" env SYMHEAP_NET_DOMAIN=lo \
      "$@" "$b/bin/symheap-conformance" --net ofi --provider "tcp;ofi_rxm" --allow-unavailable
    # All but net_key_bounds, which hangs over shm (an access past a key's
    # region never completes there; the ofi adaptor's to answer).
    run "$prefix conformance net ofi shm" "$@" "$b/bin/symheap-conformance" \
      --net ofi --provider shm --allow-unavailable \
      --only net_available,net_unknown_provider,net_put,net_get,net_close_outstanding,net_timeout,net_atomic_ops,net_atomic_contention,net_put_signal,net_fence,net_keys
    # put_signal's other path (put, fence, atomic) on both providers; the
    # runs above take the one-message path (remote CQ data).
    run "$prefix conformance net ofi tcp;ofi_rxm put_signal=atomic" env \
      SYMHEAP_NET_DOMAIN=lo SYMHEAP_OFI_PUT_SIGNAL=atomic "$@" \
      "$b/bin/symheap-conformance" --net ofi --provider "tcp;ofi_rxm" \
      --allow-unavailable --only net_put_signal,net_keys
    run "$prefix conformance net ofi shm put_signal=atomic" env \
      SYMHEAP_OFI_PUT_SIGNAL=atomic "$@" "$b/bin/symheap-conformance" \
      --net ofi --provider shm --allow-unavailable --only net_put_signal
    # libfabric 1.17's provider net advertises FI_ATOMIC and implements no
    # atomic (-FI_ENOSYS): the adaptor finds out at open and reports no
    # atomics (the kit's atomic cases SKIP), put_signal in one message.
    if "$b/bin/symheap-info" 2>/dev/null | grep -Eq 'providers here[^:]*: (.*,)?net(,|$)'; then
      run "$prefix conformance net ofi net (no atomics)" env SYMHEAP_NET_DOMAIN=lo \
        "$@" "$b/bin/symheap-conformance" --net ofi --provider net --allow-unavailable
    else
      skip_pass "$prefix conformance net ofi net" "libfabric here has no provider 'net' (1.17 has it)"
    fi
    run "$prefix conformance net ofi as a plugin (shm)" $plug SYMHEAP_PLUGIN=ofi \
      "$@" "$b/bin/symheap-conformance" --net ofi_plugin --provider shm \
      --allow-unavailable --only net_put,net_atomic_ops,net_put_signal
    # The one-sided API across two pretend hosts over the real adaptor
    # (test_net, issue 27): tcp;ofi_rxm on loopback, with its progress
    # thread and with the waits' progress (the boot floor's idle hook) alone.
    run "$prefix net(ofi tcp;ofi_rxm) two hosts procs x4" env SYMHEAP_NET=ofi \
      SYMHEAP_NET_PROVIDER="tcp;ofi_rxm" SYMHEAP_NET_DOMAIN=lo \
      build/bin/symheap-run -n 4 "$@" "$b/test/test_net"
    run "$prefix net(ofi tcp;ofi_rxm) progress=none procs x4" env SYMHEAP_NET=ofi \
      SYMHEAP_NET_PROVIDER="tcp;ofi_rxm" SYMHEAP_NET_DOMAIN=lo \
      SYMHEAP_NET_PROGRESS=none build/bin/symheap-run -n 4 "$@" "$b/test/test_net"
    run "$prefix net_wait(ofi tcp;ofi_rxm) two hosts procs x4" env SYMHEAP_NET=ofi \
      SYMHEAP_NET_PROVIDER="tcp;ofi_rxm" SYMHEAP_NET_DOMAIN=lo \
      build/bin/symheap-run -n 4 "$@" "$b/test/test_net_wait"
    # Staging over the real adaptor: tcp;ofi_rxm has no FI_HMEM (as on the
    # lent GPU machines), the fake CUDA driver's windows are device memory.
    run "$prefix stage(ofi tcp;ofi_rxm) cuda(fake) two hosts procs x4" env SYMHEAP_NET=ofi \
      SYMHEAP_NET_PROVIDER="tcp;ofi_rxm" SYMHEAP_NET_DOMAIN=lo SYMHEAP_TIMEOUT_MS=15000 \
      SYMHEAP_CUDA_LIBRARY="$fake" build/bin/symheap-run -n 4 "$@" "$b/test/test_stage"
  fi
  # The net adaptor on UCX (UCP, adaptors/net/ucx) over UCX's tcp on
  # loopback (UCX_TLS=self,tcp: UCX's own variables choose transports):
  # the whole net section but net_keys, whose stale-key part UCX 1.13 over
  # tcp cannot pass (its software RMA checks no key at the target; the
  # adaptor refuses what lies outside a key's region before sending,
  # net_key_bounds, and the core never uses a freed window's keys;
  # docs/network.md, "The ucx adaptor").
  if ! have_tool libucx; then
    skip_pass "$prefix net ucx" "libucx0 is not installed (see test/deps.sh)"
  else
    run "$prefix conformance net ucx self,tcp" env UCX_TLS=self,tcp UCX_NET_DEVICES=lo \
      "$@" "$b/bin/symheap-conformance" --net ucx --allow-unavailable \
      --only net_available,net_unknown_provider,net_put,net_get,net_close_outstanding,net_timeout,net_atomic_ops,net_atomic_contention,net_put_signal,net_fence,net_key_bounds
    # sleeping_target_wakes is left out: a rank asleep on UCX 1.13's
    # worker event fd is not woken by a peer's get (its 20 ms sleep runs
    # out first; docs/network.md, "The ucx adaptor").
    local ucx_skip=(SYMHEAP_TEST_NET_SKIP=sleeping_target_wakes
      "SYMHEAP_TEST_NET_SKIP_WHY=a rank asleep on UCX 1.13's worker event fd is not woken by a peer's get (docs/network.md, ucx)")
    run "$prefix net(ucx self,tcp) two hosts procs x2" env SYMHEAP_NET=ucx "${ucx_skip[@]}" \
      UCX_TLS=self,tcp UCX_NET_DEVICES=lo build/bin/symheap-run -n 2 "$@" "$b/test/test_net"
    run "$prefix net(ucx self,tcp) two hosts procs x4" env SYMHEAP_NET=ucx "${ucx_skip[@]}" \
      UCX_TLS=self,tcp UCX_NET_DEVICES=lo build/bin/symheap-run -n 4 "$@" "$b/test/test_net"
    # Teardown is clean: every key the kit left imported is destroyed with
    # its context, and a peer that closes first does not make the others
    # leave their UCX worker behind (both once showed only in these logs).
    log_lacks "$prefix ucx: no key outlives its worker" "not returned to mpool" \
      "$prefix conformance net ucx self,tcp"
    log_lacks "$prefix ucx: comm destroy leaves no worker behind" \
      "left to the process's exit" "$prefix net(ucx self,tcp) two hosts procs x4"
  fi
}

mkdir -p build/test-logs
. test/deps.sh
deps_install

# skip_pass LABEL WHY: a whole pass that cannot run here, one SKIP line.
skip_pass() {
  echo "SKIP $1: $2"
  skipped=$((skipped + 1))
}

echo "== build"
if ! make -s -j"$JOBS" all tests >"$LOGDIR/build.log" 2>&1; then
  cat "$LOGDIR/build.log"
  echo "0 passed, 1 failed"
  exit 1
fi

if command -v nvcc >/dev/null || [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
  if ! make -s -j"$JOBS" gpu-tests >"$LOGDIR/build-gpu.log" 2>&1; then
    failed=$((failed + 1)); failures+=("GPU test build: see $LOGDIR/build-gpu.log")
  fi
fi

echo "== tests (gcc -O2)"
if [ -x build/test/test_cuda_abi ]; then
  run " cuda_api.h vs cuda.h" build/test/test_cuda_abi
else
  echo " cuda_api.h vs cuda.h: not built (no CUDA toolkit at \$CUDA_HOME)"
fi
# The ofi adaptor's declarations of libfabric's ABI (ofi_api.h) against
# libfabric's own headers; SKIP without libfabric-dev.
run " ofi_api.h vs libfabric's headers" test/ofi_api_check.sh build
# shm endpoints beside the files killed processes left at the same pids.
run " net ofi shm: leftovers of killed processes" test/shm_leftovers.sh build
suite "" build
# The kit proves itself: it FAILs each deliberately broken adaptor, naming
# the mistake, and passes the correct ones.
run " conformance kit on broken adaptors" test/conformance/run_broken.sh build
# The tuning tables' parser, lookup and choice: plain C, everywhere.
run " cuda collectives: tuning tables (host)" build/test/test_tune_table
if [ -x build/test/test_coll_tuning ]; then
  for m in forced forced_pipe table bad missing none; do
    run " cuda collectives: tuning $m" build/test/test_coll_tuning $m
  done
fi
# symheap.cuda's algorithm names against the header (no GPU, no torch).
if command -v python3 >/dev/null; then
  run " python: cuda algorithm names" env PYTHONPATH="$PWD/build/lib/python3/site-packages" \
    python3 test/python/test_cuda_algo.py
fi
if [ -x build/test/test_coll_api ]; then
  run " cuda collectives: host-side checks" build/test/test_coll_api
  run " cuda collectives: refused across hosts" build/bin/symheap-run -n 4 \
    build/test/test_coll_api --two-hosts
fi
if [ -x build/test/test_gpu ]; then
  export SYMHEAP_DISABLE_MULTICAST=1 NCCL_NVLS_ENABLE=0
  run " gpu procs x2" build/bin/symheap-run -n 2 build/test/test_gpu
  run " gpu threads x2" build/test/test_gpu --threads 2
  if [ -x build/test/test_coll ]; then
    run " gpu collectives procs x2" build/bin/symheap-run -n 2 build/test/test_coll
    run " gpu collectives threads x2" build/test/test_coll --threads 2
  fi
  if [ -x build/test/test_coll_xfer ]; then
    run " gpu reduce-scatter, all-to-all, broadcast procs x2" timeout 300 build/bin/symheap-run -n 2 build/test/test_coll_xfer
    run " gpu reduce-scatter, all-to-all, broadcast threads x2" timeout 300 build/test/test_coll_xfer --threads 2
  fi
  if [ -x build/test/test_coll_mid ]; then
    run " gpu push all-reduces procs x2" timeout 300 build/bin/symheap-run -n 2 build/test/test_coll_mid
    run " gpu push all-reduces threads x2" timeout 300 build/test/test_coll_mid --threads 2
  fi
  if [ -x build/test/test_coll_timeout ]; then
    run " gpu collectives, a rank missing: timeout procs x2" timeout 300 build/bin/symheap-run -n 2 build/test/test_coll_timeout
    run " gpu collectives, a rank missing: timeout threads x2" timeout 300 build/test/test_coll_timeout --threads 2
  fi
  if [ -x build/test/test_heap_gpu ]; then
    run " gpu heap procs x2" build/bin/symheap-run -n 2 build/test/test_heap_gpu
    run " gpu heap threads x2" build/test/test_heap_gpu --threads 2
  fi
  unset SYMHEAP_DISABLE_MULTICAST NCCL_NVLS_ENABLE
fi
# Across hosts (docs/network.md): the TCP bootstrap on one host (loopback,
# through symheap-run's agents), then two network namespaces as two hosts
# (test/netns.sh; one SKIP line where they cannot be made): the cross-host
# suite at 2 and 4 ranks, strangers, a link down, the launcher's signals.
run " bootstrap over TCP, one host: multi-rank procs x4" env SYMHEAP_BOOTSTRAP=tcp \
  build/bin/symheap-run -n 4 build/test/test_multirank
run " across hosts: namespaces (netns.sh)" test/netns.sh
run " across hosts: bootstrap, symheap-run --hosts" test/net_boot.sh build
# test_net over the ofi adaptor on shm (one host) and across the namespaces
# over tcp;ofi_rxm at 2 and 4 ranks; an unknown provider; a host that
# disappears mid one-sided operations (link down, ranks killed).
run " across hosts: one-sided over ofi (net_hosts.sh)" test/net_hosts.sh build
# The same across the namespaces over the ucx adaptor (UCX_TLS=self,tcp).
run " across hosts: one-sided over ucx (net_hosts.sh)" env NET=ucx test/net_hosts.sh build
# The ucx adaptor's declarations of UCP's ABI (ucx_api.h) against UCX's
# headers; SKIP without libucx-dev.
run " ucx_api.h vs UCX's headers" test/ucx_api_check.sh build
# The MPI ccl adaptor: the multi-rank suite joined through
# symheap_comm_init_env under mpirun (it recognises the launcher), and a
# program that hands symheap its own MPI communicators.
if [ -x build/test/test_mpi ]; then
  # One machine: the isolated launcher needs no ssh (CI runs as root).
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated
  MPIRUN="mpirun --oversubscribe --bind-to none -n 4"
  run " mpi: multi-rank suite (mpirun -n 4)" $MPIRUN build/test/test_multirank
  # (its last case: a rank in an MPI-ccl barrier serves another host's
  # gets and atomics through the services' wait_progress)
  run " mpi: symheap_comm_init_mpi (mpirun -n 4)" $MPIRUN build/test/test_mpi
  run " mpi: rdma(fake ibverbs) two hosts (mpirun -n 4)" $MPIRUN \
    build/test/test_rdma "$PWD/build/fake_ibverbs/libibverbs.so.1" --procs
else
  skip_pass "MPI tests" "no mpicc (apt-get install openmpi-bin libopenmpi-dev)"
fi
# The Python package (bindings/python, docs/python.md) on the host backend
# with NumPy, ranks as processes under symheap-run; then on cuda with torch
# (it skips, saying so, without torch, a GPU or libsymheap_cuda.so).
PYPATH="$PWD/build/lib/python3/site-packages"
py_with() { # py_with MODULE: the first interpreter that imports it
  for p in /usr/bin/python3 python3; do
    if command -v "$p" >/dev/null && "$p" -c "import $1" 2>/dev/null; then
      command -v "$p"
      return
    fi
  done
}
PY_NUMPY=$(py_with numpy)
if [ -n "$PY_NUMPY" ]; then
  for n in 2 4 8; do
    run " python (numpy, host) procs x$n" env PYTHONPATH="$PYPATH" SYMHEAP_DEVICE=host \
      build/bin/symheap-run -n $n "$PY_NUMPY" test/python/test_host.py
  done
  # make install: the package lands in PREFIX/lib/python3/site-packages, uses
  # PREFIX's library and symheap-info, and runs the README's Python example.
  py_installed() ( # a subshell: PYTHONPATH stays in it
    dir=$(mktemp -d)
    make -s install PREFIX="$dir" >/dev/null || return 1
    sed -n '/^```python$/,/^```$/p' README.md | sed '1d;$d' >"$dir/example.py"
    [ -s "$dir/example.py" ] || { echo "no Python example in README.md"; return 1; }
    export PYTHONPATH="$dir/lib/python3/site-packages"
    "$PY_NUMPY" -c "import symheap, sys; sys.exit(not symheap.library_path.startswith('$dir/lib/'))" ||
      { echo "not the installed library"; return 1; }
    "$PY_NUMPY" -m symheap | grep -q "device adaptors" || return 1
    SYMHEAP_DEVICE=host "$dir/bin/symheap-run" -n 3 "$PY_NUMPY" "$dir/example.py" || return 1
    rm -rf "$dir"
  )
  check " python: make install + README example" py_installed
  # The ctypes fallback of the hot path (symheap._fast not used).
  run " python (numpy, host, ctypes path) procs x2" env PYTHONPATH="$PYPATH" \
    SYMHEAP_DEVICE=host SYMHEAP_PYTHON_FAST=0 CYCLES=100 \
    build/bin/symheap-run -n 2 "$PY_NUMPY" test/python/test_host.py
  # pip (issue 30): `make install PREFIX=tmp`, then pip install of
  # bindings/python offline into a --target, found by SYMHEAP_PREFIX; the
  # host test runs on what pip installed (its library: PREFIX's).
  py_pip() { # one rank's PASS lines, or a FAIL line saying why
    local dir here=$PWD
    dir=$(mktemp -d)
    make -s install PREFIX="$dir" >/dev/null || { echo "FAIL python-pip make install"; return 1; }
    SYMHEAP_PREFIX="$dir" "$PY_NUMPY" -m pip install -q --no-build-isolation \
      --no-index --target "$dir/pip" ./bindings/python >"$dir/pip.log" 2>&1 ||
      { echo "FAIL python-pip pip install: $(tail -n 2 "$dir/pip.log" | tr '\n' ' ')"; return 1; }
    (cd "$dir" && PYTHONPATH="$dir/pip" "$PY_NUMPY" -c "import symheap, sys; sys.exit(not symheap.library_path.startswith('$dir/lib/'))") ||
      { echo "FAIL python-pip the pip package does not use PREFIX's library"; return 1; }
    (cd "$dir" && PYTHONPATH="$dir/pip" SYMHEAP_DEVICE=host CYCLES=100 \
      "$dir/bin/symheap-run" -n 2 "$PY_NUMPY" "$here/test/python/test_host.py") || return 1
    rm -rf "$dir"
  }
  if "$PY_NUMPY" -m pip --version >/dev/null 2>&1 && "$PY_NUMPY" -c 'import setuptools' 2>/dev/null; then
    run " python: pip install + host test procs x2" py_pip
  else
    skip_pass "python: pip install" "no pip/setuptools for $PY_NUMPY (apt-get install python3-pip python3-setuptools)"
  fi
else
  skip_pass "python (numpy, host)" "no python3 with NumPy (apt-get install python3-numpy)"
fi
PY_TORCH=$(py_with torch)
run " python (torch, cuda) procs x2" env PYTHONPATH="$PYPATH" SYMHEAP_DISABLE_MULTICAST=1 \
  NCCL_NVLS_ENABLE=0 build/bin/symheap-run -n 2 "${PY_TORCH:-${PY_NUMPY:-python3}}" \
  test/python/test_gpu.py
run " python torch.ops.symheap (cuda) procs x2" env PYTHONPATH="$PYPATH" SYMHEAP_DISABLE_MULTICAST=1 \
  NCCL_NVLS_ENABLE=0 build/bin/symheap-run -n 2 "${PY_TORCH:-${PY_NUMPY:-python3}}" \
  test/python/test_torch_ops.py
# symheap.torch: torch's SymmetricMemory on the SYMHEAP backend (needs
# `make python-torch`; SKIP without torch >= 2.9, a GPU or the extension).
run " python symheap.torch SYMHEAP backend (cuda) procs x2" env PYTHONPATH="$PYPATH" \
  SYMHEAP_DISABLE_MULTICAST=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 build/bin/symheap-run -n 2 "${PY_TORCH:-${PY_NUMPY:-python3}}" \
  test/python/test_torch_symm.py
# symheap.torch's extension against stand-ins for torch and CUDA on the
# host backend, ranks started like torchrun's (test/python/torch_stub;
# SKIP without g++, Python.h or pybind11).
run " python symheap.torch on stand-ins (torchrun-like) procs x3" \
  bash test/python/test_torch_stub.sh 3
# symheap-run's placement: core, none, numa (a fake sysfs: GPU NUMA nodes).
run "symheap-run binding (core/none/numa)" build/test/test_run_bind
. test/launcher_checks.sh
. test/shell_checks.sh
. test/shmem/run_shmem.sh
# OpenSHMEM across two network namespaces over tcp;ofi_rxm (issue 27 step
# 5; after run_shmem.sh, which built the specification's examples).
run " across hosts: OpenSHMEM (shmem_hosts.sh)" test/shmem_hosts.sh build

if [ "${QUICK:-0}" != 1 ]; then
  echo "== ASan + UBSan"
  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
  if make -s -j"$JOBS" BUILD=build/asan OPT="-O1 -g" SAN="$SAN" tests tools \
      >"$LOGDIR/build-asan.log" 2>&1; then
    SYMHEAP_TEST_UNDER_TOOL=asan ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=23 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      suite "asan" build/asan env
    shmem_sanitized build/asan
  else
    failed=$((failed + 1)); failures+=("asan build: see $LOGDIR/build-asan.log")
  fi

  echo "== valgrind (memcheck)"
  if command -v valgrind >/dev/null; then
    export SYMHEAP_TEST_UNDER_TOOL=valgrind
    VG="valgrind -q --error-exitcode=42 --leak-check=full --errors-for-leak-kinds=definite,indirect --track-fds=no"
    for n in 2 4 8; do
      run "valgrind procs x$n" build/bin/symheap-run -n $n $VG build/test/test_multirank
      run "valgrind threads x$n" $VG build/test/test_multirank --threads $n
    done
    run "valgrind unit" $VG build/test/test_unit
    run "valgrind faults" $VG --trace-children=yes build/test/test_faults
    run "valgrind exhaustion, concurrency" $VG build/test/test_exhaust
    run "valgrind window_find threads x2" $VG build/test/test_window_find --threads 2
    run "valgrind window_local threads x2" $VG build/test/test_window_local --threads 2
    run "valgrind cuda(fake) threads x2" env SYMHEAP_DEVICE=cuda \
      SYMHEAP_CUDA_LIBRARY="$PWD/build/fake_cuda/libcuda.so.1" SYMHEAP_DISABLE_MULTICAST=1 \
      $VG build/test/test_multirank --threads 2
    # A smaller heap reservation: valgrind does not give a process the
    # address space for the default 64 GiB per rank.
    run "valgrind cuda(fake) adaptor" env SYMHEAP_HEAP_RESERVE=4G $VG build/test/test_cuda_fake \
      "$PWD/build/fake_cuda/libcuda.so.1"
    run "valgrind rdma(fake ibverbs) threads" $VG build/test/test_rdma \
      "$PWD/build/fake_ibverbs/libibverbs.so.1"
    run "valgrind net(loop) procs x2 threads x2" build/bin/symheap-run -n 2 $VG \
      build/test/test_net --mixed 2
    run "valgrind proxy(loop) procs x2 threads x2" build/bin/symheap-run -n 2 $VG \
      build/test/test_proxy --mixed 2
    run "valgrind cuda(fake) device proxy memory" $VG build/test/test_cuda_proxy \
      "$PWD/build/fake_cuda/libcuda.so.1"
    run "valgrind heap threads x2" $VG build/test/test_heap --threads 2
    run "valgrind heap procs x2" build/bin/symheap-run -n 2 $VG build/test/test_heap
    run "valgrind mappings cache=2 threads x2" env SYMHEAP_WINDOW_CACHE=2 \
      SYMHEAP_HEAP_RESERVE=4G $VG build/test/test_mapobj --threads 2
    unset SYMHEAP_TEST_UNDER_TOOL
  else
    skip_pass "valgrind passes" "valgrind is not installed (apt-get install valgrind)"
  fi

  echo "== ThreadSanitizer (ranks as threads, comms from several threads)"
  if make -s -j"$JOBS" BUILD=build/tsan OPT="-O1 -g" SAN="-fsanitize=thread" tests \
      >"$LOGDIR/build-tsan.log" 2>&1; then
    export SYMHEAP_TEST_UNDER_TOOL=tsan TSAN_OPTIONS="halt_on_error=1 exitcode=66"
    for n in 2 4 8; do
      run "tsan threads x$n" build/tsan/test/test_multirank --threads $n
    done
    run "tsan comms from threads" build/tsan/test/test_exhaust --concurrency
    run "tsan agreement wait threads x4" build/tsan/test/test_agree_wait --threads 4
    run "tsan net(loop) procs x2 threads x2 (progress thread)" build/bin/symheap-run -n 2 \
      build/tsan/test/test_net --mixed 2
    run "tsan rdma(fake ibverbs) threads" build/tsan/test/test_rdma \
      "$PWD/build/tsan/fake_ibverbs/libibverbs.so.1"
    run "tsan cuda(fake) threads x2" env SYMHEAP_DEVICE=cuda SYMHEAP_DISABLE_MULTICAST=1 \
      SYMHEAP_CUDA_LIBRARY="$PWD/build/tsan/fake_cuda/libcuda.so.1" \
      build/tsan/test/test_multirank --threads 2
    unset SYMHEAP_TEST_UNDER_TOOL TSAN_OPTIONS
  else
    failed=$((failed + 1)); failures+=("tsan build: see $LOGDIR/build-tsan.log")
  fi

  echo "== fuzzing (libFuzzer, ${FUZZ_SECONDS:-30} s per target)"
  fuzz_one() { # fuzz_one NAME: on a copy of its corpus; any crash fails
    local dir=build/fuzz/corpus-$1
    rm -rf "$dir" && cp -r "test/fuzz/corpus/$1" "$dir" || return 1
    build/fuzz/bin/$1 -max_total_time="${FUZZ_SECONDS:-30}" -rss_limit_mb=2048 \
      -artifact_prefix=build/fuzz/crash-$1- -print_final_stats=1 "$dir" 2>&1 |
      grep -E '^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)'
    return "${PIPESTATUS[0]}"
  }
  if ! have_tool clang; then
    skip_pass "fuzzing" "clang is not installed (apt-get install clang)"
  elif make -s fuzz >"$LOGDIR/build-fuzz.log" 2>&1; then
    for f in fuzz_uid fuzz_config fuzz_msg; do
      check "fuzz $f" fuzz_one $f
      grep -h 'number_of_executed_units' "$LOGDIR/fuzz_$f.log" | sed "s/^/  $f: /"
    done
  else
    failed=$((failed + 1)); failures+=("fuzz build: see $LOGDIR/build-fuzz.log")
  fi

  echo "== clang -Werror"
  if command -v clang >/dev/null; then
    check "clang build" make -s -j"$JOBS" CC=clang BUILD=build/clang all tests
  else
    skip_pass "clang -Werror" "clang is not installed (apt-get install clang)"
  fi
fi

echo
for f in "${failures[@]+"${failures[@]}"}"; do echo "FAILED: $f"; done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

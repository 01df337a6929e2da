# OpenSHMEM over symheap (bindings/openshmem; docs/openshmem.md).  Sourced by
# test/run.sh after the build, with its run/check helpers.  The tests per
# feature area at 2, 4 and 8 PEs, one under mpirun, ending a job, refusal
# without host access, the header from C++, and the specification's example
# programs (../shared/openshmem, someone else's code: built from there with
# symheap-oshcc, never copied here) at 2 and 4 PEs, where that is present.
echo "== OpenSHMEM (symheap-shmem)"
for t in setup rma amo coll bcast team p2p compat zero; do
  for n in 2 4 8; do
    run " shmem $t procs x$n" build/bin/symheap-run -n $n build/test/shmem/test_shmem_$t
  done
done
# The RMA and AMO tests calling the exported functions (no inline paths).
for t in rma amo; do
  run " shmem $t without inline paths procs x4" build/bin/symheap-run -n 4 \
    build/test/shmem/test_shmem_${t}_noinline
done
# Large puts and gets with plain stores only (streaming ones are the default).
run " shmem rma SYMHEAP_SHMEM_STREAM_MIN=0 procs x2" env SYMHEAP_SHMEM_STREAM_MIN=0 \
  build/bin/symheap-run -n 2 build/test/shmem/test_shmem_rma
# The barrier forms of the collectives (SHMEM_THREAD_MULTIPLE: no eager ones).
run " shmem bcast THREAD_MULTIPLE procs x4" build/bin/symheap-run -n 4 \
  build/test/shmem/test_shmem_bcast --multiple
# Without pushing into the peers' dest, a program that reuses dest with no
# sync between its collectives gets every result (with it, the default, it
# does not: the specification has dest ready before any PE calls).
for n in 2 4; do
  run " shmem dest reused unsynced, SYMHEAP_SHMEM_PUSH=0 procs x$n" \
    env SYMHEAP_SHMEM_PUSH=0 build/bin/symheap-run -n $n \
    build/test/shmem/test_shmem_bcast --unsynced
done
# PEs whose SYMHEAP_SHMEM_PUSH differs refuse to start, every one, PE 0
# naming one; PEs asking for different thread levels agree on the barrier
# forms (before, the eager PEs and the one under SHMEM_THREAD_MULTIPLE
# waited for each other in their first broadcast until the job was killed).
shmem_collectives_differ() {
  local out rc
  out=$(timeout 60 build/bin/symheap-run -n 3 sh -c '[ "$SYMHEAP_RANK" != 1 ] ||
    export SYMHEAP_SHMEM_PUSH=0; exec "$0" --expect-refusal' \
    build/test/shmem/test_shmem_setup 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 0 ] && grep -q "PE 1's SYMHEAP_SHMEM_PUSH differs from PE 0's" <<<"$out" &&
    [ "$(grep -c '^PASS init_refused' <<<"$out")" -eq 3 ] || { echo "push: status $rc"; return 1; }
  out=$(timeout 60 build/bin/symheap-run -n 3 sh -c 'l=single
    [ "$SYMHEAP_RANK" != 2 ] || l=multiple; exec "$0" --level $l' \
    build/test/shmem/test_shmem_setup 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 0 ] && [ "$(grep -c '^PASS levels_mixed_agree' <<<"$out")" -eq 3 ] ||
    { echo "thread levels: status $rc"; return 1; }
}
check " shmem PEs' collective settings agreed or refused" shmem_collectives_differ
# Started by hand, without a launcher: one PE.
for t in setup rma amo coll bcast team p2p compat zero; do
  run " shmem $t one PE, no launcher" build/test/shmem/test_shmem_$t
done
if [ -e build/lib/libsymheap-ccl-mpi.so ]; then
  run " shmem coll (mpirun -n 4)" env OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated \
    mpirun --oversubscribe --bind-to none -n 4 build/test/shmem/test_shmem_coll
fi
# The example plugin's device: another CPU-accessible backend.
for t in setup coll; do
  run " shmem $t example plugin procs x2" env SYMHEAP_PLUGIN_PATH="$PWD/build/lib" \
    SYMHEAP_PLUGIN=example SYMHEAP_DEVICE=example \
    build/bin/symheap-run -n 2 build/test/shmem/test_shmem_$t
done
run " shmem init refused without host access" env SYMHEAP_DEVICE=cuda \
  SYMHEAP_CUDA_LIBRARY="$PWD/build/fake_cuda/libcuda.so.1" \
  build/bin/symheap-run -n 2 build/test/shmem/test_shmem_setup --expect-refusal

# The environment (issue 28 item 6, issue 31): SHMEM_SYMMETRIC_SIZE's
# syntax on its own, then through shmem_init.
run " shmem SHMEM_SYMMETRIC_SIZE syntax" build/test/shmem/test_shmem_env
# Which large puts and gets stream, and their bytes (copy.c on its own).
run " shmem large copies' stores" build/test/shmem/test_shmem_copy
# Page tables made at allocation (prefault.c): counted page faults of puts,
# gets and own writes into new objects under and over the limit (the test
# sets SYMHEAP_SHMEM_PREFAULT=8M), then with it 0 (--off: every object
# faults at its first use, as before).
for n in 1 2 4; do
  run " shmem objects prefaulted procs x$n" build/bin/symheap-run -n $n \
    build/test/shmem/test_shmem_prefault
done
run " shmem objects not prefaulted (SYMHEAP_SHMEM_PREFAULT=0) procs x2" \
  build/bin/symheap-run -n 2 build/test/shmem/test_shmem_prefault --off
# shmem_size_refused VAR VALUE: shmem_init refuses it, saying why.
shmem_size_refused() {
  env "$1=$2" build/bin/symheap-run -n 2 build/test/shmem/test_shmem_setup \
    --expect-refusal >"$LOGDIR/shmem-size.out" 2>&1
  local rc=$?
  cat "$LOGDIR/shmem-size.out"
  [ $rc -eq 0 ] && grep -q "$1=\"$2\" is not a size" "$LOGDIR/shmem-size.out"
}
for v in " 1G" 17179869185G 12x; do
  check " shmem SHMEM_SYMMETRIC_SIZE='$v' refused" shmem_size_refused \
    SHMEM_SYMMETRIC_SIZE "$v"
done
check " shmem SMA_SYMMETRIC_SIZE is read too" shmem_size_refused SMA_SYMMETRIC_SIZE bad
# symheap-shmem's own variables, malformed: shmem_init refuses on every PE,
# naming the variable (before: SYMHEAP_SHMEM_SPIN=abc spun 0 times, -1
# 4294967295 times, and SYMHEAP_SHMEM_DATA_SEGMENT=off kept the segment).
shmem_var_refused() {
  local kv out rc
  for kv in SYMHEAP_SHMEM_SPIN=abc SYMHEAP_SHMEM_SPIN=-1 SYMHEAP_SHMEM_SPIN=+5 \
    SYMHEAP_SHMEM_SPIN=99999999999 "SYMHEAP_SHMEM_SPIN= 8" \
    SYMHEAP_SHMEM_DATA_SEGMENT=off SYMHEAP_SHMEM_DATA_SEGMENT=2 \
    SYMHEAP_SHMEM_PUSH=off SYMHEAP_SHMEM_PUSH=2 SYMHEAP_SHMEM_STREAM_MIN=4K \
    SYMHEAP_SHMEM_STREAM_MIN=16383 SYMHEAP_SHMEM_STREAM_MIN=64Q \
    SYMHEAP_SHMEM_STREAM_MIN=-1 SYMHEAP_SHMEM_PREFAULT=64Q SYMHEAP_SHMEM_PREFAULT=-1 \
    SYMHEAP_SHMEM_PREFAULT=off SYMHEAP_SHMEM_PREFAULT=4095; do
    out=$(env "$kv" build/bin/symheap-run -n 2 build/test/shmem/test_shmem_setup \
      --expect-refusal 2>&1)
    rc=$?
    [ $rc -eq 0 ] && grep -q "${kv%%=*}=\"${kv#*=}\" is not" <<<"$out" ||
      { echo "$kv: status $rc: $out" | tail -n 4; return 1; }
  done
  out=$(env SYMHEAP_SHMEM_SPIN=1000 SYMHEAP_SHMEM_DATA_SEGMENT=1 SYMHEAP_SHMEM_PUSH=1 \
    SYMHEAP_SHMEM_STREAM_MIN=16K SYMHEAP_SHMEM_PREFAULT=2M build/bin/symheap-run \
    -n 2 build/test/shmem/test_shmem_zero 2>&1) || { echo "$out" | tail -n 4; return 1; }
}
check " shmem malformed SYMHEAP_SHMEM_* refused" shmem_var_refused
run " shmem SHMEM_SYMMETRIC_SIZE=.5m" env SHMEM_SYMMETRIC_SIZE=.5m \
  build/bin/symheap-run -n 2 build/test/shmem/test_shmem_zero
# A limit, not a cost: a 16 GiB heap per PE, an 8 GiB block, two pages
# touched, the resident set stays small (issue 31 item 4).
run " shmem SHMEM_SYMMETRIC_SIZE=16G costs what is touched procs x2" \
  env SHMEM_SYMMETRIC_SIZE=16G build/bin/symheap-run -n 2 build/test/shmem/test_shmem_reserve
# SHMEM_INFO names every variable the specification defines; SHMEM_VERSION
# (and SMA_VERSION) the version; PE 0 prints, once.
shmem_env_print() {
  local out
  out=$(env "$1=1" build/bin/symheap-run -n 2 build/test/shmem/test_shmem_zero) || return 1
  echo "$out"
  shift
  local w
  for w in "$@"; do
    [ "$(grep -c -- "$w" <<<"$out")" -eq 1 ] || { echo "want \"$w\" once"; return 1; }
  done
}
# The names SHMEM_INFO must list, from the code rather than from its help
# text (which is what the check compared before, so a variable read with no
# help line passed): every whole string literal in bindings/openshmem that
# names a variable (shm__getenv's SHMEM_ names, getenv's, init.c's table
# of launchers' variables), the SMA_ name of each SHMEM_ one (shm__getenv
# builds it), and every variable of symheap's core table.
shmem_info_expected() {
  {
    grep -ohE '"[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]"' bindings/openshmem/*.[ch] bindings/openshmem/mpp/*.h |
      tr -d '"' | sed -n 'p; s/^SHMEM_/SMA_/p'
    grep -ohE '^ *\{"[A-Z][A-Z0-9_]*", SYMHEAP_CFG_' core/base/config.c |
      sed -E 's/^ *\{"([A-Z0-9_]+)".*/\1/'
    printf '%s\n' SHMEM_SYMMETRIC_SIZE SHMEM_DEBUG SHMEM_VERSION SHMEM_INFO \
      SMA_SYMMETRIC_SIZE SMA_DEBUG SMA_VERSION SMA_INFO
  } | sort -u
}
# SHMEM_INFO (or SMA_INFO): PE 0 prints each expected name once, as the
# first word of an indented line with some help after it.
shmem_info_lists() {
  local out names v rc=0
  out=$(env "$1=1" build/bin/symheap-run -n 2 build/test/shmem/test_shmem_zero) || return 1
  echo "$out"
  names=$(shmem_info_expected)
  [ "$(wc -l <<<"$names")" -ge 30 ] || { echo "only $(wc -l <<<"$names") names found"; return 1; }
  for v in $names; do
    [ "$(awk -v v="$v" '/^  [A-Z]/ && $1 == v && NF > 1' <<<"$out" | wc -l)" -eq 1 ] ||
      { echo "$1: $v is read by the code, not listed once with help"; rc=1; }
  done
  grep -q "yields the CPU (default 3000, or 2 with" <<<"$out" || { echo "no SYMHEAP_SHMEM_SPIN help"; rc=1; }
  return $rc
}
check " shmem SHMEM_INFO lists every variable the code reads" shmem_info_lists SHMEM_INFO
# SHMEM_INFO says how the built library copies large puts and gets: the
# choice of stores reaches the library from SYMHEAP_SHMEM_STREAM_MIN (x86-64;
# elsewhere memcpy only, whatever is asked).
shmem_info_stream() {
  local out want1 want2
  if [ "$(uname -m)" = x86_64 ]; then
    want1="streaming stores from 16384 bytes" want2="streaming stores from 1048576 bytes"
  else
    want1="memcpy only" want2="memcpy only"
  fi
  out=$(env SHMEM_INFO=1 build/bin/symheap-run -n 2 build/test/shmem/test_shmem_zero) &&
    grep -q "^large puts and gets on one host: $want1" <<<"$out" &&
    out=$(env SHMEM_INFO=1 SYMHEAP_SHMEM_STREAM_MIN=1M build/bin/symheap-run -n 2 \
      build/test/shmem/test_shmem_zero) &&
    grep -q "^large puts and gets on one host: $want2" <<<"$out" &&
    out=$(env SHMEM_INFO=1 SYMHEAP_SHMEM_STREAM_MIN=0 build/bin/symheap-run -n 2 \
      build/test/shmem/test_shmem_zero) &&
    grep -q "^large puts and gets on one host: memcpy only" <<<"$out" ||
    { echo "$out" | tail -n 3; return 1; }
}
check " shmem SHMEM_INFO says how large puts and gets copy" shmem_info_stream
# ... and which objects get their page tables at allocation: the limit
# reaches the library from SYMHEAP_SHMEM_PREFAULT, over the host's PEs (a
# kernel without MADV_POPULATE_WRITE, Linux 5.14, gets its own line, also
# accepted).
shmem_info_prefault() {
  local out v want
  for v in "" 2M 0; do
    case $v in
    "") want="objects of [0-9]+ to 33554432 bytes \(67108864 over this host's 2 PEs\): pages and page tables made at allocation" ;;
    2M) want="objects of [0-9]+ to 1048576 bytes \(2097152 over this host's 2 PEs\): pages and page tables made at allocation" ;;
    0) want="objects' page tables: made at first use \(SYMHEAP_SHMEM_PREFAULT=0\)" ;;
    esac
    out=$(env SHMEM_INFO=1 ${v:+SYMHEAP_SHMEM_PREFAULT=$v} build/bin/symheap-run -n 2 \
      build/test/shmem/test_shmem_zero) || { echo "$out" | tail -n 3; return 1; }
    grep -qxE "$want" <<<"$out" ||
      { [ "$v" != 0 ] && grep -q "^objects' page tables: made at first use (this kernel" <<<"$out"; } ||
      { echo "SYMHEAP_SHMEM_PREFAULT=$v:"; echo "$out" | tail -n 3; return 1; }
  done
}
check " shmem SHMEM_INFO says which objects are prefaulted" shmem_info_prefault
check " shmem SMA_INFO lists every variable the code reads" shmem_info_lists SMA_INFO
# symheap-info -e (hence docs/env.md) gives the spin count's default the
# library uses (SHM_SPINS_DEFAULT; it said 64 after round 7 made it 3000).
shmem_spin_default_documented() {
  local want got
  want=$(sed -n 's/^#define SHM_SPINS_DEFAULT \([0-9]*\).*/\1/p' bindings/openshmem/shmem_internal.h)
  got=$(build/bin/symheap-info -e | awk '$1 == "SYMHEAP_SHMEM_SPIN" {f = 1} f && $1 == "default:" {print $2; exit}')
  echo "SHM_SPINS_DEFAULT $want, symheap-info -e: $got"
  [ -n "$want" ] && [ "$want" = "$got" ] && grep -q "SYMHEAP_SHMEM_SPIN\` | openshmem binding | $want |" docs/env.md
}
check " shmem SYMHEAP_SHMEM_SPIN's default documented" shmem_spin_default_documented
check " shmem SHMEM_VERSION prints the version" shmem_env_print SHMEM_VERSION \
  "(OpenSHMEM 1.5)"
check " shmem SMA_VERSION prints the version" shmem_env_print SMA_VERSION \
  "(OpenSHMEM 1.5)"
# shrealloc/shmem_realloc of a pointer that is not live (inside a block, a
# global, and with size 0, which ended the job through shmem_free's check):
# NULL and a message on each PE, the job goes on (test_shmem_compat's
# compat_invalid_realloc_gets_null checks the NULLs).
shmem_realloc_says_why() {
  local out
  out=$(build/bin/symheap-run -n 2 build/test/shmem/test_shmem_compat 2>&1) ||
    { echo "$out" | tail -n 4; return 1; }
  echo "$out"
  [ "$(grep -c 'shmem_realloc: .* is not a live symmetric allocation; returning NULL' <<<"$out")" -eq 6 ] &&
    grep -q '^PASS compat_invalid_realloc_gets_null' <<<"$out" && ! grep -q '^FAIL' <<<"$out"
}
check " shmem an invalid shrealloc says why, gets NULL" shmem_realloc_says_why
# SHMEM_DEBUG (and its deprecated SMA_DEBUG): every allocation that fails
# says why (test_shmem_compat's compat_alloc_sizes_that_do_not_fit makes
# two of each routine fail; shmem_calloc's overflow and shmem_realloc said
# nothing); unset, none does.
shmem_debug_says_why() {
  local var out f
  for var in SHMEM_DEBUG SMA_DEBUG; do
    out=$(env "$var=1" build/test/shmem/test_shmem_compat 2>&1 >/dev/null | grep -v "not a live")
    for f in shmem_malloc shmem_align shmem_calloc shmem_realloc; do
      [ "$(grep -c "^symheap-shmem: PE 0: $f: " <<<"$out")" -eq 2 ] ||
        { echo "$var=1: not two failures of $f explained: $out"; return 1; }
    done
  done
  out=$(build/test/shmem/test_shmem_compat 2>&1 >/dev/null)
  ! grep -q 'no free block\|more than a size_t' <<<"$out" || { echo "unset: $out"; return 1; }
}
check " shmem SHMEM_DEBUG explains every failed allocation" shmem_debug_says_why
# The last PE to reach a barrier releases everyone, even while the group's
# first PE is stopped (issue 31: waits with more PEs than CPUs).
for n in 2 4; do
  run " shmem barrier released by the last arriver procs x$n" \
    build/bin/symheap-run -n $n build/test/shmem/test_shmem_wake
done
# With more PEs than CPUs, the PEs a barrier releases run before the one
# that released them (OSU's broadcast loop with every PE on one CPU), and a
# PE alone on its CPU does not sleep in a short wait.  --bind none: the
# test places the PEs itself, on the CPUs it starts with (bound to one
# each, the second case would skip).
run " shmem waits, more PEs than CPUs procs x$(($(nproc --all) + 2))" \
  build/bin/symheap-run --bind none -n $(($(nproc --all) + 2)) \
  build/test/shmem/test_shmem_turns
# A PE that exited but is not reaped (another launcher): the others end.
run " shmem a zombie PE ends the job" build/test/shmem/test_shmem_zombie

# shmem_exit_status WANT ARGS...: the job ends with status WANT within 60 s,
# no PE gets past the barrier, and (for a dead PE) the survivors say why.
shmem_exit_status() {
  local want=$1
  shift
  timeout 60 build/bin/symheap-run -n 4 build/test/shmem/test_shmem_exit "$@" \
    >"$LOGDIR/shmem-exit.out" 2>&1
  local rc=$?
  cat "$LOGDIR/shmem-exit.out"
  [ "$rc" -eq "$want" ] || { echo "status $rc, want $want"; return 1; }
  ! grep -q '^FAIL' "$LOGDIR/shmem-exit.out"
}
check " shmem global_exit(0) during a barrier" shmem_exit_status 0 --global-exit 0
check " shmem global_exit(7) during a barrier" shmem_exit_status 7 --global-exit 7
shmem_dead_pe() {
  shmem_exit_status 1 --pe-dies && grep -q 'has exited' "$LOGDIR/shmem-exit.out"
}
check " shmem a PE dies: the others end" shmem_dead_pe
# A PE alive but stuck (pause()) while the others wait in a barrier: with
# SYMHEAP_SHMEM_TIMEOUT_MS=2000 they end the job, saying so (before: for
# ever; unset, they still wait as long as it takes, as the specification
# has it), and a malformed value is refused by shmem_init.
shmem_stuck_pe() {
  SYMHEAP_SHMEM_TIMEOUT_MS=2000 shmem_exit_status 1 --stuck-pe &&
    grep -q 'more than SYMHEAP_SHMEM_TIMEOUT_MS=2000' "$LOGDIR/shmem-exit.out" &&
    SYMHEAP_SHMEM_TIMEOUT_MS=2s shmem_exit_status 1 --stuck-pe &&
    grep -q 'SYMHEAP_SHMEM_TIMEOUT_MS="2s" is not a time' "$LOGDIR/shmem-exit.out"
}
check " shmem a stuck PE: the others end after SYMHEAP_SHMEM_TIMEOUT_MS" shmem_stuck_pe
# A loop on shmem_test that lasts past the bound is no wait: the job ends
# well (before the review's mend, the tests' turn state counted from the
# first failed test, and ended such a program).
shmem_poll_long() { SYMHEAP_SHMEM_TIMEOUT_MS=1000 shmem_exit_status 0 --poll-long; }
check " shmem polling shmem_test past SYMHEAP_SHMEM_TIMEOUT_MS" shmem_poll_long
shmem_before_init() {
  shmem_exit_status 1 --before-init && grep -q 'before shmem_init' "$LOGDIR/shmem-exit.out" &&
    shmem_exit_status 1 --before-init barrier &&
    grep -q 'shmem_barrier_all called before shmem_init' "$LOGDIR/shmem-exit.out"
}
check " shmem a call before shmem_init is refused" shmem_before_init
# An access that runs past the heap's or the data segment's end, or starts
# nowhere, on this PE or another: refused, saying which (test_shmem_exit
# --overrun).  Before, only the start was checked (and on this PE nothing).
shmem_overrun() {
  local what
  for what in heap get data iput iput_back self_null wait_null test_null signal_null \
    put_wrap ctx_put_wrap get_wrap signal_wrap bcast_wrap bcast_past fcollect_past \
    reduce_wrap reduce_past alltoall_wrap; do
    local says='run past the end of the\|is not symmetric'
    case $what in *_wrap) says='overflows size_t' ;; esac
    shmem_exit_status 1 --overrun $what &&
      grep -q "$says" "$LOGDIR/shmem-exit.out" ||
      { echo "--overrun $what"; return 1; }
  done
}
check " shmem an access past its region is refused" shmem_overrun
# A collect whose total (known once every PE posted its length) runs past
# dest: refused on every PE (before: written past the data segment).
shmem_collect_past() {
  shmem_exit_status 1 --collect-past &&
    grep -q 'run past the end of the' "$LOGDIR/shmem-exit.out"
}
check " shmem a collect past its dest is refused" shmem_collect_past
# A context or team used after its destruction, and a shmem_free of
# different objects on different PEs: the job ends saying so (before:
# freed memory was read; the heaps went asymmetric silently).
shmem_after_destroy() {
  shmem_exit_status 1 --ctx-after-destroy &&
    grep -q 'operation on a context after shmem_ctx_destroy' "$LOGDIR/shmem-exit.out" &&
    shmem_exit_status 1 --ctx-after-destroy twice &&
    grep -q 'the context was destroyed already' "$LOGDIR/shmem-exit.out" &&
    shmem_exit_status 1 --team-after-destroy &&
    grep -q 'collective on an invalid or destroyed team' "$LOGDIR/shmem-exit.out" &&
    shmem_exit_status 1 --ctx-team-destroyed &&
    grep -q 'operation on a context whose team was destroyed' "$LOGDIR/shmem-exit.out" &&
    shmem_exit_status 1 --free-mismatch &&
    grep -q 'shmem_free: the PEs freed different objects' "$LOGDIR/shmem-exit.out"
}
check " shmem a destroyed context or team, a mismatched free" shmem_after_destroy

shmem_cxx() {
  build/bin/symheap-oshc++ -O2 -Wall -Wextra -Werror test/shmem/cxx_check.cpp \
    -o build/test/shmem/cxx_check && build/bin/symheap-run -n 2 build/test/shmem/cxx_check
}
if command -v "${CXX:-c++}" >/dev/null; then
  check " shmem header from C++ (symheap-oshc++)" shmem_cxx
else
  skip_pass "shmem header from C++" "no C++ compiler (apt-get install g++)"
fi

# symheap-run binds rank r to the r-th allowed CPU when every rank gets one
# (issue 31 item 6), not with --bind none or SYMHEAP_RUN_BIND=none; with
# more ranks than CPUs, each to one CPU too, dealt out in turn (the ranks'
# own CPUs: test/test_run_bind.c).
run_bind_check() {
  local ncpu out
  ncpu=$(nproc)
  # shellcheck disable=SC2016 # the rank's shell expands it
  out=$(build/bin/symheap-run -n "$ncpu" "$@" sh -c \
    'echo "$SYMHEAP_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"') || return 1
  echo "$out"
  printf '%s\n' "$out" | awk '{print $2}' | sort -u | wc -l
}
shmem_run_binds() {
  local ncpu all out
  ncpu=$(nproc)
  all=$(grep Cpus_allowed_list /proc/self/status | cut -f2)
  out=$(run_bind_check) || return 1
  echo "$out"
  # one distinct CPU per rank, none of them the whole set (unless 1 CPU)
  [ "$(tail -n1 <<<"$out")" -eq "$ncpu" ] || return 1
  if [ "$ncpu" -gt 1 ]; then
    ! head -n "$ncpu" <<<"$out" | grep -q " $all\$" || return 1
  fi
  out=$(run_bind_check --bind none) || return 1
  echo "$out"
  [ "$(head -n "$ncpu" <<<"$out" | grep -c " $all\$")" -eq "$ncpu" ] || return 1
  out=$(SYMHEAP_RUN_BIND=none run_bind_check) || return 1
  [ "$(head -n "$ncpu" <<<"$out" | grep -c " $all\$")" -eq "$ncpu" ] || return 1
  out=$(build/bin/symheap-run -n $((ncpu + 1)) sh -c \
    'grep Cpus_allowed_list /proc/self/status | cut -f2') || return 1
  echo "$out"
  # one CPU each (a number alone), ncpu distinct ones among ncpu + 1 ranks
  [ "$(grep -c '^[0-9][0-9]*$' <<<"$out")" -eq $((ncpu + 1)) ] || return 1
  [ "$(sort -u <<<"$out" | wc -l)" -eq "$ncpu" ]
}
check " symheap-run binds ranks to CPUs (--bind none)" shmem_run_binds

# Every name OpenSHMEM 1.5 defines, deprecated ones included, from C11 (the
# generics with and without a context too), C99 and C++, each routine
# linked from the library (no inline paths: each must be exported), run at
# 2 PEs and alone (test/shmem/shmem_names.c, lists written from the
# specification).  A missing name fails the build: FAIL names it.  The
# headers also build under warnings programs turn on (-Wredundant-decls,
# C90's -Wdeclaration-after-statement, C++'s -Wuseless-cast: each failed).
shmem_names() { # VARIANT COMPILER FLAGS...
  local v=$1 cc=$2 out=build/test/shmem/shmem_names_$1 err
  shift 2
  if ! err=$("$cc" -Wall -Wextra -Werror -Wredundant-decls "$@" test/shmem/shmem_names.c -o "$out" 2>&1); then
    echo "FAIL shmem_names_build_$v $(grep -m3 -E "error|undefined reference" <<<"$err" | tr '\n' ' ')"
    return 1
  fi
  build/bin/symheap-run -n 2 "$out" && "$out"
}
run " shmem every 1.5 name, C11 procs x2" shmem_names c11 build/bin/symheap-oshcc \
  -std=c11 -pedantic -DSYMHEAP_SHMEM_NO_INLINE
run " shmem every 1.5 name, C11 inline paths" shmem_names c11_inline build/bin/symheap-oshcc -std=c11
run " shmem every 1.5 name, C99" shmem_names c99 build/bin/symheap-oshcc -std=c99 -pedantic \
  -Wdeclaration-after-statement
if command -v "${CXX:-c++}" >/dev/null; then
  run " shmem every 1.5 name, C++" shmem_names cxx build/bin/symheap-oshc++ -x c++ \
    -DSYMHEAP_SHMEM_NO_INLINE
  # -Wuseless-cast is g++'s (clang++ -Werror refuses a warning it lacks).
  useless_cast=$(echo 'int x;' | "${CXX:-c++}" -Werror -Wuseless-cast -x c++ -fsyntax-only - \
    2>/dev/null && echo -Wuseless-cast)
  # shellcheck disable=SC2086 # empty when the compiler lacks it
  run " shmem every 1.5 name, C++ inline paths" shmem_names cxx_inline \
    build/bin/symheap-oshc++ -x c++ $useless_cast
fi

# The compiler wrapper as a user's build meets it (test/shmem/oshcc_check.sh).
# shellcheck source=test/shmem/oshcc_check.sh
. test/shmem/oshcc_check.sh
check " shmem oshcc with CC=symheap-oshcc (no recursion)" oshcc_no_recursion
check " shmem oshcc --help and --showme" oshcc_help_showme
check " shmem oshcc linked from elsewhere, a copy as CC, options anywhere, -v" oshcc_edge_cases
if have_tool autoconf; then
  check " shmem oshcc as CC of ./configure" oshcc_autotools
else
  skip_pass "shmem oshcc as CC of ./configure" "no autoconf (apt-get install autoconf)"
fi
if have_tool cmake; then
  check " shmem oshcc as CMAKE_C_COMPILER" oshcc_cmake
  if command -v "${CXX:-c++}" >/dev/null; then
    check " shmem oshc++ as CMAKE_CXX_COMPILER" oshcxx_cmake
  fi
else
  skip_pass "shmem oshcc as CMAKE_C_COMPILER" "no cmake (apt-get install cmake)"
fi

SHMEM_SPEC=${SHMEM_SPEC:-../shared/openshmem/spec-examples}
if [ -d "$SHMEM_SPEC" ]; then
  mkdir -p build/shmem-spec
  for src in "$SHMEM_SPEC"/*.c; do
    name=$(basename "$src" .c)
    if ! build/bin/symheap-oshcc -O2 "$src" -o "build/shmem-spec/$name" \
        >"$LOGDIR/shmem-spec-$name.build.log" 2>&1; then
      failed=$((failed + 1))
      failures+=("shmem spec example $name: build failed, see $LOGDIR/shmem-spec-$name.build.log")
      continue
    fi
    for n in 2 4; do
      check " shmem spec example $name x$n" timeout 120 \
        build/bin/symheap-run -n $n "build/shmem-spec/$name"
    done
  done
else
  skip_pass "shmem spec examples" "$SHMEM_SPEC is not there (../shared beside the checkout)"
fi

# Across hosts (issue 27 steps 5 and 6; docs/openshmem.md, "PEs on several
# hosts"): 4 PEs on 2 pretend hosts (SYMHEAP_HOST_ID per rank through
# test/shmem/pretend_host.sh: PEs 0,1 on one, 2,3 on the other), other-host
# PEs reached through a net adaptor: the test adaptor "loop" (as a plugin,
# build/test/plugins/libsymheap-plugin-netloop.so), then libfabric's
# tcp;ofi_rxm on loopback.  The feature tests, the hosts test (shmem_ptr
# NULL for another host, globals reached) and the specification's examples.
# shmem_hosts_pass LABEL ENV...: the whole set with those variables.
shmem_hosts_pass() {
  local label=$1 t ex name
  shift
  for t in setup rma amo coll team p2p compat zero; do
    run " shmem $t 2 hosts x4 $label" env "$@" build/bin/symheap-run -n 4 \
      test/shmem/pretend_host.sh build/test/shmem/test_shmem_$t
  done
  run " shmem rma without inline paths 2 hosts x4 $label" env "$@" \
    build/bin/symheap-run -n 4 test/shmem/pretend_host.sh \
    build/test/shmem/test_shmem_rma_noinline
  run " shmem hosts 2 hosts x4 $label" env "$@" build/bin/symheap-run -n 4 \
    test/shmem/pretend_host.sh build/test/shmem/test_shmem_hosts
  for ex in build/shmem-spec/*; do
    [ -x "$ex" ] || continue
    name=$(basename "$ex")
    check " shmem spec example $name 2 hosts x4 $label" timeout 120 env "$@" \
      build/bin/symheap-run -n 4 test/shmem/pretend_host.sh "$ex"
  done
}
run " shmem hosts one host x4 (shmem_ptr everywhere)" build/bin/symheap-run -n 4 \
  build/test/shmem/test_shmem_hosts
# Across hosts without a net adaptor: shmem_init refuses, naming SYMHEAP_NET.
shmem_hosts_no_net() {
  env SYMHEAP_NET=none SYMHEAP_TEST_PER_HOST=1 build/bin/symheap-run -n 2 \
    test/shmem/pretend_host.sh build/test/shmem/test_shmem_setup --expect-refusal \
    >"$LOGDIR/shmem-hosts-no-net.out" 2>&1
  local rc=$?
  cat "$LOGDIR/shmem-hosts-no-net.out"
  [ $rc -eq 0 ] && grep -q "set SYMHEAP_NET" "$LOGDIR/shmem-hosts-no-net.out"
}
check " shmem init across hosts without SYMHEAP_NET refused" shmem_hosts_no_net
shmem_hosts_pass "net(loop)" SYMHEAP_PLUGIN_PATH="$PWD/build/test/plugins" \
  SYMHEAP_PLUGIN=netloop SYMHEAP_NET=loop
# The waits' own progress (no progress thread): barriers and collectives,
# and waits on user variables.
for t in coll p2p; do
  run " shmem $t 2 hosts x4 net(loop) progress=none" env \
    SYMHEAP_PLUGIN_PATH="$PWD/build/test/plugins" SYMHEAP_PLUGIN=netloop \
    SYMHEAP_NET=loop SYMHEAP_NET_PROGRESS=none build/bin/symheap-run -n 4 \
    test/shmem/pretend_host.sh build/test/shmem/test_shmem_$t
done
# Ending a job across hosts (a PE per host, 2 hosts): shmem_global_exit
# reaches the other host's PE through the network, and a PE that dies is
# noticed by the other host's PE (a get of its control block fails).
shmem_hosts_exit() { # WANT ARGS...
  local want=$1
  shift
  timeout 60 env SYMHEAP_PLUGIN_PATH="$PWD/build/test/plugins" SYMHEAP_PLUGIN=netloop \
    SYMHEAP_NET=loop SYMHEAP_TEST_PER_HOST=1 build/bin/symheap-run -n 2 \
    test/shmem/pretend_host.sh build/test/shmem/test_shmem_exit "$@" \
    >"$LOGDIR/shmem-hosts-exit.out" 2>&1
  local rc=$?
  cat "$LOGDIR/shmem-hosts-exit.out"
  [ "$rc" -eq "$want" ] || { echo "status $rc, want $want"; return 1; }
  ! grep -q '^FAIL' "$LOGDIR/shmem-hosts-exit.out"
}
check " shmem global_exit(7) across hosts net(loop)" shmem_hosts_exit 7 --global-exit 7
check " shmem global_exit(0) across hosts net(loop)" shmem_hosts_exit 0 --global-exit 0
shmem_hosts_dead_pe() {
  shmem_hosts_exit 1 --pe-dies && grep -q 'on another host does not answer' \
    "$LOGDIR/shmem-hosts-exit.out"
}
check " shmem a PE on another host dies net(loop)" shmem_hosts_dead_pe
if ! have_tool libfabric; then
  skip_pass "shmem across hosts net(ofi)" "libfabric1 is not installed (see test/deps.sh)"
else
  shmem_hosts_pass "net(ofi tcp;ofi_rxm)" SYMHEAP_NET=ofi \
    SYMHEAP_NET_PROVIDER="tcp;ofi_rxm" SYMHEAP_NET_DOMAIN=lo
fi
# And over UCX: its memory hooks interpose mremap and dropped the address
# the data segment's remap asked for, so every put to a global was lost
# with no error (test_shmem_hosts' hosts_put_to_global; before
# data_segment.c made the system call itself).
if ! have_tool libucx; then
  skip_pass "shmem across hosts net(ucx)" "libucx0 is not installed (see test/deps.sh)"
else
  shmem_hosts_pass "net(ucx self,tcp)" SYMHEAP_NET=ucx UCX_TLS=self,tcp \
    UCX_NET_DEVICES=lo
fi

# shmem_sanitized BUILD: the feature tests built with ASan + UBSan (run.sh's
# sanitizer pass calls it once BUILD's tests are built), at 2 and 4 PEs.
shmem_sanitized() {
  local b=$1 t n
  for t in setup rma amo coll bcast team p2p compat zero; do
    for n in 2 4; do
      run "asan shmem $t procs x$n" env ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=23 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        build/bin/symheap-run -n $n "$b/test/shmem/test_shmem_$t"
    done
  done
}

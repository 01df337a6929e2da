# Shell-level checks, sourced by test/run.sh (uses its `check`).

# check_needs "TOOL..." LABEL FUNC: a check that needs tools test/deps.sh may
# not have installed (not root): one SKIP line instead when one is missing.
check_needs() {
  local tools=$1 t
  shift
  for t in $tools; do
    have_tool "$t" || { skip_pass "$1" "needs $t (see test/deps.sh)"; return 0; }
  done
  check "$@"
}

# --hosts, followed literally with odd input: a host name that would be an
# option of the remote-start command is refused before anything runs; a
# rank 0 that ends (status 0) before joining is no success, since the other
# ranks never ran (before: exit 0).
run_hosts_odd_input() {
  local out rc dir
  out=$(build/bin/symheap-run --hosts "-oProxyCommand=false:1,b:1" \
    --rsh true true 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 2 ] && grep -q "no host name starts with '-'" <<<"$out" ||
    { echo "a '-' host: status $rc, expected 2"; return 1; }
  for a in " 2" "+2" "2x" "" 0 4097; do
    build/bin/symheap-run -n "$a" true >/dev/null 2>&1
    rc=$?
    [ $rc -eq 2 ] || { echo "-n '$a': status $rc, expected 2"; return 1; }
  done
  # Host counts take digits only, as -n does, and an empty entry is a
  # mistake (before: "+2" and " 2" ran 2 ranks, ",," was skipped).
  for a in "localhost:+2" "localhost: 2" "a:1,,b:1" "a:1," ",a:1" "a:4096,b:1" \
    "a:99999999999999999999" "a:0x2"; do
    out=$(timeout 30 build/bin/symheap-run --hosts "$a" --rsh true true 2>&1)
    rc=$?
    [ $rc -eq 2 ] && grep -q "hosts wants HOST:COUNT" <<<"$out" ||
      { echo "--hosts '$a': status $rc, expected 2: $out"; return 1; }
  done
  # An option that wants a value, given last: said so (before: "unknown
  # option -n").
  for a in -n --hosts --rsh --bind --bind-to; do
    out=$(build/bin/symheap-run "$a" 2>&1)
    rc=$?
    [ $rc -eq 2 ] && grep -q -- "$a needs a value" <<<"$out" ||
      { echo "symheap-run $a: status $rc: $out" | head -n 2; return 1; }
  done
  # An empty --rsh: refused (before: the host name ran as the command).
  out=$(timeout 30 build/bin/symheap-run --hosts echo:1 --rsh " " true 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 2 ] && grep -q "rsh needs a command" <<<"$out" ||
    { echo "an empty --rsh: status $rc, expected 2"; return 1; }
  out=$(timeout 30 build/bin/symheap-run --hosts a:1,b:1 --rsh true true 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 1 ] && grep -q "rank 0 ended before it joined" <<<"$out" ||
    { echo "rank 0 ended at once: status $rc, expected 1"; return 1; }
  dir=$(mktemp -d)
  printf '#!/bin/sh\nexit 5\n' >"$dir/rsh5"
  chmod +x "$dir/rsh5"
  out=$(timeout 30 build/bin/symheap-run --hosts a:1,b:1 --rsh "$dir/rsh5" true 2>&1)
  rc=$?
  rm -rf "$dir"
  echo "$out"
  [ $rc -eq 5 ] || { echo "rank 0's start command exited 5: status $rc"; return 1; }
  # A variable too long for the agent's line: refused, named (before: cut
  # short, and the rank ran with another value).
  out=$(SYMHEAP_TEST_LONG=$(head -c 5000 /dev/zero | tr '\0' a) timeout 30 \
    build/bin/symheap-run --hosts localhost:1 sh -c 'echo "len=${#SYMHEAP_TEST_LONG}"' 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 127 ] && grep -q "SYMHEAP_TEST_LONG is longer than" <<<"$out" ||
    { echo "a 5000-byte variable: status $rc, expected 127"; return 1; }
}
check "symheap-run --hosts: odd hosts and start commands" run_hosts_odd_input

# A host listed twice is one host: its ranks get local ranks 0 and 1 (before:
# 0 and 0, by their entry in --hosts, so both picked the same GPU).
run_hosts_twice() {
  local out
  out=$(timeout 60 build/bin/symheap-run --hosts localhost:1,localhost:1 sh -c \
    'echo "local=$SYMHEAP_LOCAL_RANK"; exec build/bin/symheap-bench --max-size 4096 --bw-size 4096 --count 1024 --iters 1' 2>&1)
  echo "$out"
  grep -q '^\[0\] local=0$' <<<"$out" && grep -q '^\[1\] local=1$' <<<"$out"
}
check "symheap-run --hosts: a host listed twice is one host" run_hosts_twice

# Strangers at rank 0's TCP port (loopback) while rank 1 is 5 s late: 40
# that connect and say nothing, one that sends a byte and stops, a header
# claiming 4 GiB, garbage.  Each is refused and logged with its address and
# the job joins within its timeout (10 s).  Before: the connections were
# heard one after the other, a second for each silent one, and the join
# timed out.
boot_strangers_side_by_side() {
  local dir log pid addr ip port i rc n start
  local -a knock=()
  dir=$(mktemp -d)
  log=$dir/log
  start=$SECONDS
  SYMHEAP_DEBUG=INFO SYMHEAP_BOOTSTRAP=tcp SYMHEAP_SOCKET_IFNAME==lo \
    SYMHEAP_TIMEOUT_MS=10000 SYMHEAP_TEST_JOIN_DELAY_MS=5000 timeout 60 \
    build/bin/symheap-run -n 2 build/test/test_net_boot join >"$log" 2>&1 &
  pid=$!
  for i in $(seq 200); do
    grep -q 'listening on [0-9.]*:[0-9]' "$log" && break
    sleep 0.1
  done
  addr=$(grep -o 'listening on [0-9.]*:[0-9]*' "$log" | head -n 1)
  addr=${addr#listening on }
  ip=${addr%:*} port=${addr##*:}
  if [ -z "$addr" ]; then
    wait $pid
    echo "rank 0 never said where it listens: $(tail -n 3 "$log")"
    rm -rf "$dir"
    return 1
  fi
  for i in $(seq 40); do
    bash -c "exec 3<>/dev/tcp/$ip/$port; sleep 15" 2>/dev/null &
    knock+=($!)
  done
  bash -c "exec 3<>/dev/tcp/$ip/$port; printf B >&3; sleep 15" 2>/dev/null &
  knock+=($!)
  bash -c "exec 3<>/dev/tcp/$ip/$port; printf 'BMHS\x01\x00\x01\x00\x00\x00\x00\x00\xff\xff\xff\xff' >&3; sleep 15" 2>/dev/null &
  knock+=($!)
  bash -c "exec 3<>/dev/tcp/$ip/$port; printf 'GET / HTTP/1.0\r\n\r\n' >&3; sleep 15" 2>/dev/null &
  knock+=($!)
  wait $pid
  rc=$?
  kill "${knock[@]}" 2>/dev/null
  wait "${knock[@]}" 2>/dev/null
  grep -v ' INFO: ' "$log" | tail -n 5
  n=$(grep -c "WARN: bootstrap: refused a connection from $ip:[0-9]*: it did not prove" "$log")
  rm -rf "$dir"
  [ $rc -eq 0 ] || { echo "the job exited $rc after $((SECONDS - start)) s"; return 1; }
  [ "$n" -ge 43 ] || { echo "$n of 43 strangers refused and logged"; return 1; }
}
check "bootstrap: 43 strangers at once do not stall the join" boot_strangers_side_by_side

exports_only_public() {
  local bad
  bad=$(nm -D --defined-only build/lib/libsymheap.so | awk '{print $3}' |
    grep -v '^symheap_[a-z]' | grep -v '^SYMHEAP_0$' || true)
  bad="$bad$(nm -D --defined-only build/lib/libsymheap.so | awk '{print $3}' | grep '^symheap__' || true)"
  [ -z "$bad" ] || { echo "unexpected exports: $bad"; return 1; }
  nm -D --defined-only build/lib/libsymheap.so | grep -q ' symheap_window_register'
}
check_needs nm "libsymheap.so exports only symheap_*" exports_only_public

# make install + pkg-config: the README's example builds and runs on 2 ranks.
install_and_build_client() {
  local dir
  dir=$(mktemp -d)
  make -s install PREFIX="$dir" || return 1
  sed -n '/^```c$/,/^```$/p' README.md | sed '1d;$d' >"$dir/example.c"
  [ -s "$dir/example.c" ] || { echo "no C example in README.md"; return 1; }
  PKG_CONFIG_PATH="$dir/lib/pkgconfig" cc -std=c11 "$dir/example.c" -o "$dir/example" \
    $(PKG_CONFIG_PATH="$dir/lib/pkgconfig" pkg-config --cflags --libs symheap) || return 1
  "$dir/bin/symheap-run" -n 2 "$dir/example" || return 1
  "$dir/bin/symheap-info" | grep -q "host" || return 1
  rm -rf "$dir"
}
check_needs pkg-config "install + pkg-config + README example" install_and_build_client

# The demo (make demo's benchmark) runs on 4 ranks and checks its all-reduce.
demo_runs() {
  build/bin/symheap-run -n 4 build/bin/symheap-bench --max-size 16M \
    --bw-size 8M --count 262144 --iters 5
}
check "symheap-bench (small) on 4 ranks" demo_runs

# A malformed variable fails comm init on every rank, naming it.
bad_env_named() {
  local out
  out=$(SYMHEAP_TIMEOUT_MS=soon build/bin/symheap-run -n 2 build/bin/symheap-bench 2>&1)
  [ $? -ne 0 ] && grep -q "SYMHEAP_TIMEOUT_MS='soon'" <<<"$out"
}
check "malformed SYMHEAP_TIMEOUT_MS is named" bad_env_named

# An adaptor's variable (declared when the adaptors are admitted) malformed:
# the process's first comm init fails naming it, as symheap-info -e does
# (before: only the core's table was checked then, and the comm was made).
bad_adaptor_env_named() {
  local out kv
  for kv in SYMHEAP_CUDA_DEVICE=abc SYMHEAP_NET_HMEM=2; do
    out=$(env "$kv" build/bin/symheap-run -n 2 build/bin/symheap-bench \
      --max-size 4096 --bw-size 4096 --count 1024 --iters 1 2>&1)
    [ $? -ne 0 ] && grep -q "${kv%%=*}='${kv#*=}'" <<<"$out" ||
      { echo "$kv: $out" | tail -n 3; return 1; }
  done
}
check "a malformed adaptor variable fails the first comm init" bad_adaptor_env_named

# docs/env.md carries the variable table exactly as the library declares it.
env_doc_current() {
  diff <(build/bin/symheap-info -e --markdown) \
    <(grep '^|' docs/env.md)
}
check "docs/env.md matches the variable table" env_doc_current

# What a newcomer trips on (issue 28): every tool says its version; each has
# a man page that make install installs; symheap-info -e names the
# bindings' variables too; a missing MPI module is looked for in lib/, and
# said so; a healthy run logs no failed notice of a freed allocation.
tools_have_version() {
  local t v
  v=$(sed -n 's/#define SYMHEAP_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' include/symheap.h | paste -sd.)
  for t in symheap-run symheap-info symheap-bench symheap-conformance; do
    build/bin/$t --version | grep -qx "$t $v" || { echo "$t --version: not '$t $v'"; return 1; }
    [ -s "docs/man/$t.1" ] || { echo "no docs/man/$t.1"; return 1; }
  done
}
check "every tool has --version and a man page" tools_have_version

man_pages_installed() {
  local dir t
  dir=$(mktemp -d)
  make -s install PREFIX="$dir" >/dev/null || return 1
  for t in symheap-run symheap-info symheap-bench symheap-conformance; do
    [ -s "$dir/share/man/man1/$t.1" ] || { echo "$t.1 not installed"; rm -rf "$dir"; return 1; }
  done
  rm -rf "$dir"
}
check "make install installs the man pages" man_pages_installed

info_lists_binding_vars() {
  local out v
  out=$(build/bin/symheap-info -e)
  for v in SHMEM_SYMMETRIC_SIZE SYMHEAP_SHMEM_SPIN SYMHEAP_SHMEM_DATA_SEGMENT \
    SYMHEAP_LIBRARY SYMHEAP_CUDA_COLL_LIBRARY; do
    grep -q "^$v\$" <<<"$out" || { echo "symheap-info -e does not list $v"; return 1; }
  done
}
check "symheap-info -e lists the OpenSHMEM and Python variables" info_lists_binding_vars

# Every SYMHEAP_ variable the code reads by getenv (symheap-run's, the
# bindings', not only the core table's) is in symheap-info -e, hence in
# docs/env.md (SYMHEAP_RUN_BIND and SYMHEAP_RUN_SYSFS were not).
info_lists_every_getenv() {
  local out v missing=0
  out=$(build/bin/symheap-info -e) || return 1
  for v in $(grep -rhoE 'getenv\("SYMHEAP_[A-Z0-9_]+"\)' core tools adaptors bindings plugins |
    sed -E 's/getenv\("(.*)"\)/\1/' | sort -u); do
    grep -q "^$v\$" <<<"$out" || { echo "symheap-info -e does not list $v"; missing=1; }
  done
  return $missing
}
check "symheap-info -e lists every SYMHEAP_ variable read by getenv" info_lists_every_getenv

info_mpi_missing_names_lib() {
  local dir out
  dir=$(mktemp -d)
  mkdir -p "$dir/bin" "$dir/lib"
  # symheap-info links the shared library (found at its ../lib, as
  # installed): the library comes along, the MPI module does not.
  cp build/bin/symheap-info "$dir/bin/" && cp build/lib/libsymheap.so.0 "$dir/lib/" || return 1
  out=$("$dir/bin/symheap-info" 2>&1 | grep '^  mpi ')
  rm -rf "$dir"
  echo "$out"
  grep -q "$dir/lib" <<<"$out" && grep -q "libopenmpi-dev" <<<"$out" &&
    ! grep -q "($dir/bin)" <<<"$out"
}
check "symheap-info: a missing MPI module is looked for in lib/" info_mpi_missing_names_lib

healthy_run_quiet() {
  local out
  out=$(SYMHEAP_DEBUG=INFO build/bin/symheap-run -n 3 build/bin/symheap-bench \
    --max-size 1M --bw-size 1M --count 1024 --iters 2 2>&1) || { echo "$out" | tail -3; return 1; }
  ! grep "could not tell rank" <<<"$out"
}
check "a healthy run logs no failed free notice" healthy_run_quiet

# The CUDA collectives library (built wherever nvcc is) exports its C API
# only, and installs with its headers.
cuda_lib_exports() {
  local bad
  bad=$(nm -D --defined-only build/lib/libsymheap_cuda.so | awk '{print $3}' |
    grep -v '^symheap_cuda_[a-z]' || true)
  [ -z "$bad" ] || { echo "unexpected exports: $bad"; return 1; }
  local dir
  dir=$(mktemp -d)
  make -s install PREFIX="$dir" >/dev/null || return 1
  for f in lib/libsymheap_cuda.so include/symheap_cuda.h \
      include/symheap_device.cuh bin/symheap-bench-cuda; do
    [ -e "$dir/$f" ] || { echo "not installed: $f"; return 1; }
  done
  rm -rf "$dir"
}
if [ -e build/lib/libsymheap_cuda.so ]; then
  check_needs nm "libsymheap_cuda.so: exports, install" cuda_lib_exports
fi

# The MPI ccl lives in its own object: libsymheap needs no MPI, the object
# exports its two entries only, and an installed client builds against it
# and runs under mpirun.
mpi_ccl_separate() {
  if readelf -d build/lib/libsymheap.so | grep NEEDED | grep -qi mpi; then
    echo "libsymheap.so links MPI"; return 1
  fi
  local ex
  ex=$(nm -D --defined-only build/lib/libsymheap-ccl-mpi.so | awk '{print $3}' | sort | tr '\n' ' ')
  [ "$ex" = "symheap_ccl_mpi_open_world symheap_comm_init_mpi " ] ||
    { echo "libsymheap-ccl-mpi.so exports: $ex"; return 1; }
  local dir
  dir=$(mktemp -d)
  make -s install PREFIX="$dir" >/dev/null || return 1
  cat >"$dir/client.c" <<'C'
#include <stdio.h>
#include <symheap_mpi.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  symheap_comm_t c;
  symheap_window_t w;
  int n = 0;
  if (symheap_comm_init_mpi(&c, MPI_COMM_WORLD) != SYMHEAP_SUCCESS ||
      symheap_malloc(c, 1 << 20, 0, &w) != SYMHEAP_SUCCESS ||
      symheap_comm_size(c, &n) != SYMHEAP_SUCCESS || n != 2 ||
      symheap_free(c, w) != SYMHEAP_SUCCESS ||
      symheap_comm_destroy(c) != SYMHEAP_SUCCESS) {
    printf("client: %s\n", symheap_last_error());
    return 1;
  }
  MPI_Finalize();
  return 0;
}
C
  mpicc -std=c11 -I"$dir/include" "$dir/client.c" -o "$dir/client" -L"$dir/lib" \
    -lsymheap-ccl-mpi -lsymheap -Wl,-rpath,"$dir/lib" || return 1
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated \
    mpirun --oversubscribe --bind-to none -n 2 "$dir/client" || return 1
  rm -rf "$dir"
}
if [ -e build/lib/libsymheap-ccl-mpi.so ]; then
  check_needs "nm pkg-config" "MPI ccl: own object, exports, installed client" mpi_ccl_separate
fi

# symheap-info --stats: a window shows up in the accounting and goes again.
info_stats() {
  local out
  out=$(build/bin/symheap-info --stats 65536) || return 1
  echo "$out"
  # columns: fresh comm, with the window, window freed, heap trimmed
  grep -Eq '^windows_live +0 +1 +0 +0$' <<<"$out" &&
    grep -Eq '^bytes_registered +0 +65536 +0 +0$' <<<"$out" &&
    grep -Eq '^heap_(allocations +0 +1 +0 +0|reserved +0 +0 +0 +0)$' <<<"$out" &&
    grep -Eq '^heap_committed +0 +[1-9][0-9]* +[1-9][0-9]* +0$|^heap_committed +0 +0 +0 +0$' <<<"$out"
}
check "symheap-info --stats" info_stats

# Odd arguments to symheap-info: a usage error (2), never a default taken
# silently or a size of 2^64 - 5.
info_odd_args() {
  local a rc
  for a in "--stats abc" "--stats 0" "--stats -5" "--stats 1x" \
    "--stats 99999999999999999999" "--stats 65536 extra" "-e extra" \
    "-e --markdown x"; do
    # shellcheck disable=SC2086 # the words are the arguments
    build/bin/symheap-info $a >/dev/null 2>&1
    rc=$?
    [ $rc -eq 2 ] || { echo "symheap-info $a: status $rc, expected 2"; return 1; }
  done
}
check "symheap-info: odd arguments are usage errors" info_odd_args

# Shared-memory names made by the example plugin and the fake HIP runtime
# are all gone once their owners let go (the suites above used both).
no_shm_left() {
  local left
  left=$(ls /dev/shm 2>/dev/null | grep -E '^(symheap-example|fake-hip)-' || true)
  [ -z "$left" ] || { echo "left in /dev/shm: $left"; return 1; }
}
check "no shared-memory names left behind" no_shm_left

# The example plugin's memory is never named in /dev/shm: a rank SIGKILLed
# mid-job leaves nothing there (it once left its 3 MiB pads, named).
example_kill_leaves_nothing() {
  local before after
  before=$(ls /dev/shm | wc -l)
  SYMHEAP_PLUGIN_PATH="$PWD/build/lib" SYMHEAP_PLUGIN=example SYMHEAP_DEVICE=example \
    SYMHEAP_TIMEOUT_MS=3000 build/bin/symheap-run -n 3 sh -c \
    'if [ "$SYMHEAP_RANK" = 1 ]; then (sleep 1; kill -9 $$) & fi; exec build/test/test_multirank' \
    >/dev/null 2>&1
  after=$(ls /dev/shm | wc -l)
  [ "$after" -le "$before" ] || { echo "/dev/shm went from $before to $after entries:"; ls /dev/shm; return 1; }
}
check "example plugin: a killed rank leaves nothing in /dev/shm" example_kill_leaves_nothing

# The vendor contract: an in-tree adaptor copied out of the tree, renamed,
# built as a plugin against the installed headers exactly as
# docs/writing-a-plugin.md says, passes the kit and the multi-rank suite.
host_adaptor_out_of_tree() {
  local dir src
  dir=$(mktemp -d)
  make -s install PREFIX="$dir/prefix" >/dev/null || return 1
  mkdir "$dir/src" && cp adaptors/device/host.c "$dir/src/"
  src="$dir/src/host.c"
  grep -q '"host"' "$src" || { echo "no \"host\" name string in host.c"; return 1; }
  sed -i 's/"host"/"hostcopy"/g' "$src"
  (cd "$dir/src" && PKG_CONFIG_PATH="$dir/prefix/lib/pkgconfig" \
    cc -shared -fPIC -fvisibility=hidden -DSYMHEAP_PLUGIN_BUILD \
    $(PKG_CONFIG_PATH="$dir/prefix/lib/pkgconfig" pkg-config --cflags symheap) \
    host.c -o libhostcopy.so) || return 1
  export SYMHEAP_PLUGIN="$dir/src/libhostcopy.so" SYMHEAP_DEVICE=hostcopy
  "$dir/prefix/bin/symheap-info" | grep -q "hostcopy" || { echo "symheap-info does not list hostcopy"; return 1; }
  "$dir/prefix/bin/symheap-conformance" --device hostcopy || return 1
  build/bin/symheap-run -n 4 build/test/test_multirank || return 1
  build/test/test_multirank --threads 3 || return 1
  unset SYMHEAP_PLUGIN SYMHEAP_DEVICE
  rm -rf "$dir"
}
check_needs pkg-config "host.c copied out of the tree: kit + multi-rank pass" host_adaptor_out_of_tree

# cuda.c and hip.c, with their own cuda_*.[ch] / hip_*.[ch] and the files
# beside them, compile out of the tree as plugins against the installed
# headers (no GPU to run them on here).
gpu_adaptors_out_of_tree() {
  local dir a
  dir=$(mktemp -d)
  make -s install PREFIX="$dir/prefix" >/dev/null || return 1
  for a in cuda hip; do
    mkdir "$dir/$a"
    cp adaptors/device/$a.c adaptors/device/${a}_*.[ch] adaptors/device/ipc_table.[ch] adaptors/common/dl.[ch] adaptors/common/vendor_error.[ch] "$dir/$a/"
    [ $a = cuda ] && cp adaptors/common/cuda_api.h adaptors/common/cuda_driver.[ch] "$dir/$a/"
    (cd "$dir/$a" && cc -std=c11 -Wall -Wextra -Werror -shared -fPIC \
      -fvisibility=hidden -DSYMHEAP_PLUGIN_BUILD \
      $(PKG_CONFIG_PATH="$dir/prefix/lib/pkgconfig" pkg-config --cflags symheap) \
      *.c -o lib$a.so -ldl) || return 1
    nm -D --defined-only "$dir/$a/lib$a.so" | grep -q ' symheap_plugin_v1$' ||
      { echo "lib$a.so does not export symheap_plugin_v1"; return 1; }
  done
  rm -rf "$dir"
}
check_needs "nm pkg-config" "cuda.c, hip.c build out of the tree as plugins" gpu_adaptors_out_of_tree

# Every C code block of the docs (and the README) compiles as written, as a
# translation unit of its own, against the headers the docs point at.
docs_c_blocks_compile() {
  local dir n=0 bad=0 f cc
  dir=$(mktemp -d)
  for md in README.md docs/*.md; do
    awk -v out="$dir/$(basename "$md" .md)" \
      '/^```c$/{f=1; n++; file=out "_" n ".c"; next} /^```$/{f=0} f{print > file}' "$md"
  done
  for f in "$dir"/*.c; do
    [ -e "$f" ] || continue
    cc=cc
    if grep -q '#include <mpi.h>' "$f"; then
      command -v mpicc >/dev/null || { echo "SKIP $(basename "$f"): no mpicc"; continue; }
      cc=mpicc
    fi
    if grep -q '#include <\(nccl\|cuda_runtime\).h>' "$f" &&
      [ ! -e "${CUDA_HOME:-/usr/local/cuda}/include/nccl.h" ]; then
      echo "SKIP $(basename "$f"): no CUDA toolkit with nccl.h"
      continue
    fi
    n=$((n + 1))
    $cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-function -c "$f" -o "$f.o" \
      -Iinclude -Ikernels -Ibindings/openshmem -I"${CUDA_HOME:-/usr/local/cuda}/include" ||
      { echo "does not compile: $(basename "$f") (from docs)"; bad=$((bad + 1)); }
  done
  echo "$n C blocks compiled, $bad failed"
  rm -rf "$dir"
  [ $bad -eq 0 ] && [ $n -gt 0 ]
}
check "every C block of docs/ compiles" docs_c_blocks_compile

# docs/openshmem.md's first program (its first C block, hello.c), built and
# run as the page says: symheap-oshcc, symheap-run -n 4, and alone (one PE).
docs_shmem_hello() (
  dir=$(mktemp -d)
  awk '/^```c$/{f=1; next} /^```$/{if (f) exit} f' docs/openshmem.md >"$dir/hello.c"
  grep -q shmem_init "$dir/hello.c" || { echo "no hello.c in docs/openshmem.md"; exit 1; }
  build/bin/symheap-oshcc -O2 "$dir/hello.c" -o "$dir/hello" || exit 1
  build/bin/symheap-run -n 4 "$dir/hello" >"$dir/out4" 2>&1 || { cat "$dir/out4"; exit 1; }
  "$dir/hello" >"$dir/out1" 2>&1 || { cat "$dir/out1"; exit 1; }
  cat "$dir/out4" "$dir/out1"
  [ "$(grep -c 'PE [0-3] of 4 got 10[0-3] from PE [0-3]' "$dir/out4")" -eq 4 ] &&
    grep -q 'PE 0 of 1 got 100 from PE 0' "$dir/out1" || exit 1
  rm -rf "$dir"
)
check "docs/openshmem.md: hello.c, symheap-oshcc, symheap-run" docs_shmem_hello

# Every file of kernels is a module of its own (nvcc without -rdc), and
# symheap_cuda_preload loads the modules named in module_anchors: a file of
# kernels without an anchor there would be left to lazy loading, the hazard
# of thread-ranks on one GPU (kernels/symheap_cuda_load.h).
kernel_files_anchored() {
  local f b bad=0
  for f in kernels/*.cu; do
    grep -q '__global__' "$f" || continue
    b=$(basename "$f" .cu)
    grep -q "const void \*anchor_$b()" "$f" ||
      { echo "$f: no anchor_$b()"; bad=1; }
    sed -n '/module_anchors/,/};/p' kernels/coll_launch.h | grep -q "anchor_$b()" ||
      { echo "kernels/coll_launch.h: module_anchors lacks anchor_$b()"; bad=1; }
  done
  return $bad
}
check "every file of CUDA kernels is preloaded (module_anchors)" kernel_files_anchored

# SYMHEAP_CCL names a ccl that is not loaded: refused at once, listing what is.
ccl_name_refused() {
  local out
  out=$(SYMHEAP_CCL=nosuch build/bin/symheap-run -n 2 build/test/test_multirank 2>&1)
  grep -q "SYMHEAP_CCL='nosuch' is not valid.*loaded: none" <<<"$out" ||
    { echo "$out" | head -3; return 1; }
  out=$(SYMHEAP_PLUGIN_PATH="$PWD/build/test/plugins" SYMHEAP_PLUGIN=shmccl SYMHEAP_CCL=nosuch \
    build/bin/symheap-run -n 2 build/test/test_multirank 2>&1)
  grep -q "loaded: shmccl" <<<"$out" || { echo "$out" | head -3; return 1; }
}
check "SYMHEAP_CCL: an unknown ccl is refused, naming the loaded ones" ccl_name_refused

# symheap-info exits non-zero, saying why, when the environment as set would
# make comm init fail; 0 when it would work.
info_exit_status() {
  local v out
  build/bin/symheap-info >/dev/null || { echo "plain symheap-info failed"; return 1; }
  for v in SYMHEAP_TIMEOUT_MS=abc SYMHEAP_PLUGIN=nosuch SYMHEAP_CCL=nosuch \
    SYMHEAP_DEVICE=nosuch SYMHEAP_CUDA_DEVICE=x SYMHEAP_NET=nosuch; do
    out=$(env "$v" build/bin/symheap-info 2>&1) && { echo "$v: exit 0"; return 1; }
    grep -q "comm init would fail" <<<"$out" || { echo "$v: no reason given"; return 1; }
  done
}
check "symheap-info: non-zero exit when comm init would fail" info_exit_status

# Errors keep their cause, and a job launched wrong fails at once on every
# rank, saying why, instead of waiting out the timeout for a "missing" rank.
launch_errors_early() {
  local out start case_cmd
  for case_cmd in \
    'if [ $SYMHEAP_RANK = 2 ]; then export SYMHEAP_NRANKS=4; fi|claims rank 2 of 4' \
    'if [ $SYMHEAP_RANK = 2 ]; then export SYMHEAP_RANK=1; fi|joined already' \
    'if [ $SYMHEAP_RANK = 1 ]; then export SYMHEAP_TIMEOUT_MS=abc; fi|SYMHEAP_TIMEOUT_MS=.abc. is not valid'; do
    start=$SECONDS
    # SIGTERM ignored: symheap-run stops the others when rank 0 fails, and
    # every rank must get to say what it was told.
    out=$(SYMHEAP_TIMEOUT_MS=30000 build/bin/symheap-run -n 3 sh -c \
      "trap '' TERM; ${case_cmd%%|*}; exec build/test/test_multirank" 2>&1)
    grep -q "${case_cmd#*|}" <<<"$out" || { echo "no '${case_cmd#*|}' in:"; echo "$out" | head -5; return 1; }
    # Under the 30 s a rank would wait for a missing one (before: 10 s,
    # which a stalled CI machine broke in a check of the same shape).
    [ $((SECONDS - start)) -lt 25 ] || { echo "took $((SECONDS - start)) s: ${case_cmd%%|*}"; return 1; }
    # Every rank reports it, not only the one launched wrong.
    [ "$(grep -c "${case_cmd#*|}" <<<"$out")" -ge 3 ] ||
      { echo "only one rank was told: ${case_cmd#*|}"; echo "$out" | head; return 1; }
  done
  # Rank 0 out of descriptors: its own cause, named, on every rank.
  start=$SECONDS
  out=$(SYMHEAP_TIMEOUT_MS=30000 build/bin/symheap-run -n 24 sh -c \
    "trap '' TERM; if [ \$SYMHEAP_RANK = 0 ]; then ulimit -n 16; fi; exec build/test/test_multirank" 2>&1)
  [ "$(grep -c 'out of file descriptors' <<<"$out")" -ge 8 ] ||
    { echo "EMFILE not named on every rank:"; echo "$out" | head -5; return 1; }
  [ $((SECONDS - start)) -lt 25 ] || { echo "EMFILE case took $((SECONDS - start)) s"; return 1; }
}
check "launch errors: every rank told why, at once" launch_errors_early

# The net adaptor: libfabric missing names the Debian package (symheap-info
# and the kit say why, the kit exits 3 for "nothing checked"); symheap-info
# lists the providers where it is there.  The adaptor is built everywhere
# (ofi_api.h), so the first check needs no libfabric.
net_ofi_missing_named() {
  local out rc
  out=$(SYMHEAP_OFI_LIBRARY=libfabric-missing.so.1 build/bin/symheap-info) || true
  grep -q "ofi .*unavailable: SYMHEAP_OFI_LIBRARY=libfabric-missing.so.1 cannot be loaded: .*(libfabric itself is Debian package libfabric1)" <<<"$out" ||
    { echo "symheap-info:"; echo "$out" | sed -n '/^net adaptors/,/^$/p'; return 1; }
  out=$(SYMHEAP_OFI_LIBRARY=libfabric-missing.so.1 build/bin/symheap-conformance --net ofi 2>&1)
  rc=$?
  [ $rc -eq 3 ] && grep -q "^SKIP conformance/net_available: .*libfabric1" <<<"$out" ||
    { echo "kit exit $rc:"; echo "$out" | head -3; return 1; }
}
check "net adaptor: libfabric missing names libfabric1" net_ofi_missing_named

# A library the user names (SYMHEAP_OFI_LIBRARY, SYMHEAP_UCX_LIBRARY) that
# cannot be loaded is named first, not reported as the package missing.
net_named_library_named() {
  local v out
  for v in SYMHEAP_OFI_LIBRARY SYMHEAP_UCX_LIBRARY; do
    out=$(env "$v=/proc/version" build/bin/symheap-info 2>&1) || true
    grep -q "unavailable: $v=/proc/version cannot be loaded: .*(.* itself is Debian package" <<<"$out" ||
      { echo "$v=/proc/version, symheap-info:"; echo "$out" | sed -n '/^net adaptors/,/^$/p'; return 1; }
    ! grep -q "unavailable: .*is not installed.*/proc/version" <<<"$out" ||
      { echo "$v=/proc/version reported as not installed"; return 1; }
  done
}
check "net adaptor: a named library that cannot load is named" net_named_library_named

net_providers_listed() {
  build/bin/symheap-info | grep -q "^  ofi      available; providers here:\? .*tcp;ofi_rxm" ||
    { build/bin/symheap-info | sed -n '/^net adaptors/,/^$/p'; return 1; }
}
check_needs "libfabric" "symheap-info lists libfabric's providers" net_providers_listed

# The floors check (test/floors.sh, run by make) refuses a core file that
# includes a higher floor's header or calls into a higher floor, naming the
# file and the symbol.
floors_refuse_upward() {
  local dir out
  dir=$(mktemp -d)
  cp -r core include test "$dir/" && mkdir -p "$dir/obj" && cp -r build/obj/core "$dir/obj/" || return 1
  (cd "$dir" && sh test/floors.sh obj/core) || { echo "the tree as it is fails"; return 1; }
  sed -i '1i #include "win/window.h"' "$dir/core/mem/alloc.c"
  out=$(cd "$dir" && sh test/floors.sh obj/core 2>&1) && { echo "an upward include passed"; return 1; }
  grep -q 'core/mem/alloc.c:1: includes "win/window.h", of floor win, above mem' <<<"$out" ||
    { echo "$out"; return 1; }
  sed -i '1d' "$dir/core/mem/alloc.c"
  # An object of the memory floor that calls a function of the window floor.
  printf 'void symheap__window_free(void *w);\nvoid up(void) { symheap__window_free(0); }\n' >"$dir/up.c"
  cc -c "$dir/up.c" -o "$dir/obj/core/mem/up.o" || return 1
  out=$(cd "$dir" && sh test/floors.sh obj/core 2>&1) && { echo "an upward call passed"; return 1; }
  grep -q 'core/mem/up.c calls symheap__window_free, defined in core/win/window.c' <<<"$out" ||
    { echo "$out"; return 1; }
  rm -rf "$dir"
}
check_needs nm "floors: an upward include or call fails the build, named" floors_refuse_upward

# The GPU machine's script (bench/tune_gpu.sh) without a GPU: it parses, its
# dry run lists every step at 2 and 4 ranks within its budget, and the
# report it ends with writes scale.md's measured part from raw files.
tune_gpu_dry_run() {
  local dir out
  dir=$(mktemp -d)
  bash -n bench/tune_gpu.sh || return 1
  out=$(DRY_RUN=1 GPUS=4 bash bench/tune_gpu.sh "$dir" 2>&1)
  for s in "build (" "tune.n2" "tune.n4" "coll.n4" "baseline.n4" "suite coll.threads4" \
    "suite python.procs2" "reg.n2" "pcoll.n4" "scale_report.py"; do
    grep -qF "$s" <<<"$out" || { echo "dry run lacks '$s':"; echo "$out" | head; return 1; }
  done
  mkdir -p "$dir/d/n2"
  printf '{"allreduce_auto_us_4096": 5.0, "peer_put_GBps": 392.0}' >"$dir/d/n2/coll.json"
  printf '{"nccl_allreduce_us_4096": 20.0, "torch_two_shot_us_4096": 8.0}' >"$dir/d/n2/baseline.json"
  printf 'collective\tranks\ttopology\tbytes\tvariant\tus\nall_reduce\t2\tnvlink\t4096\tone_shot\t4.9\n' \
    >"$dir/d/n2/tune-all.tsv"
  python3 bench/scale_report.py "$dir/d" docs/perf/scale.md "$dir/scale.md" >/dev/null || return 1
  grep -q '^| 4 KiB | 5.00 | 4.90 one_shot | 20.00 | 8.00 | 1.02 | 0.62 |$' "$dir/scale.md" ||
    { sed -n '/BEGIN measured/,/END measured/p' "$dir/scale.md" | head -20; return 1; }
  grep -q '4 KiB *5.00  4.90 one_shot' "$dir/d/summary.txt" || { cat "$dir/d/summary.txt"; return 1; }
  rm -rf "$dir"
}
check "bench/tune_gpu.sh: dry run and its report" tune_gpu_dry_run

# bench/gpu_step.sh, the bounded steps of the GPU machine's scripts, without
# a GPU: a step's summary line counts its PASS and FAIL lines and quotes the
# first FAIL; a step past its limit ends with 124; one the budget cannot
# hold is skipped (99); step_finish packs the files and prints the short
# table, here bench/gpumid_table.py's (through bench/tune_all.py) of a
# made-up tuning file: the best push and other variant at 64 KiB.
bench_gpu_step() {
  local dir out rc
  dir=$(mktemp -d)
  mkdir -p "$dir/w" "$dir/out"
  out=$(
    BUDGET=$((SECONDS + 100)) STEP_DIR=$dir/w
    . bench/gpu_step.sh
    step "two pass one fail" 10 a.log sh -c 'echo PASS x; echo PASS y; echo "FAIL z why"; exit 3'
    echo "rc=$?"
    step "too long" 1 b.log sleep 10
    echo "rc=$?"
    BUDGET=$((SECONDS + 5))
    step "no budget left" 10 c.log true
    echo "rc=$?"
    { printf 'collective\tranks\ttopology\tbytes\tvariant\tus\n'
      printf 'all_reduce\t2\tnvlink\t65536\t%s\t%s\n' one_shot 9.0 two_shot/b64 7.5 \
        one_shot_push 5.25 ll128/t256 0
    } >"$STEP_DIR/tune_eager_n2.tsv"
    step_finish "$dir/out" t.tgz bench/gpumid_table.py
  )
  rc=0
  grep -qE '^two pass one fail +rc=3 +[0-9]+s PASS 2 FAIL 1 FAIL z why $' <<<"$out" || rc=1
  grep -q '^rc=3$' <<<"$out" && grep -q '^rc=124$' <<<"$out" && grep -q '^rc=99$' <<<"$out" || rc=1
  grep -qE '^too long +rc=124 ' <<<"$out" && grep -q '^skipped (budget): no budget left$' <<<"$out" || rc=1
  grep -qE '^eager \| 2 +65536 \| +7\.50 two_shot/b64 +\| +5\.25 one_shot_push +\| +- +\| ' <<<"$out" || rc=1
  tar tzf "$dir/out/t.tgz" | grep -q '^\./a\.log$' && [ -f "$dir/out/summary.txt" ] &&
    [ -f "$dir/out/table.txt" ] || rc=1
  [ $rc = 0 ] || echo "$out"
  rm -rf "$dir"
  return $rc
}
check "bench/gpu_step.sh: bounded steps, the summary, the table" bench_gpu_step

# bench/tune_both.py (one all-reduce table for eager and graph) and
# bench/merge_table.py (one rank count's rows into the shipped table), on
# made-up timings: at 64 KiB the eager winner (b) loses by 25% in graphs, so
# the row takes a (5% behind eager, best in graphs); equal neighbours make
# one row; the graph-less 1 MiB keeps the eager choice; other collectives'
# rows and the 4-rank rows stay.
tune_both_and_merge() {
  local dir
  dir=$(mktemp -d)
  { printf 'collective\tranks\ttopology\tbytes\tvariant\tus\n'
    printf 'all_reduce\t2\tnvlink\t%s\t%s\t%s\n' 4096 one_shot 4.0 4096 ll128 5.0 \
      65536 one_shot 4.2 65536 ll128/t128 4.0 1048576 ll128 7.0 1048576 two_shot 9.0
  } >"$dir/e.tsv"
  { printf 'collective\tranks\ttopology\tbytes\tvariant\tus\n'
    printf 'all_reduce\t2\tnvlink\t%s\t%s\t%s\n' 4096 one_shot 2.6 4096 ll128 3.0 \
      65536 one_shot 3.0 65536 ll128/t128 3.75
  } >"$dir/g.tsv"
  printf '# t\ngpu\tX\nall_reduce\t2\tnvlink\t0\tmax\tll128\t0\t0\t1\nbroadcast\t2\tnvlink\t0\tmax\tsm\t0\t0\t1\n' \
    >"$dir/et.tsv"
  python3 bench/tune_both.py "$dir/e.tsv" "$dir/g.tsv" "$dir/et.tsv" "$dir/both.tsv" >/dev/null ||
    return 1
  printf '%s\n' "all_reduce	2	nvlink	0	65536	one_shot	0	0	4.20" \
    "all_reduce	2	nvlink	65537	max	ll128	0	0	7.00" >"$dir/want"
  diff <(grep '^all_reduce' "$dir/both.tsv") "$dir/want" || return 1
  grep -q '^broadcast	2	nvlink	0	max	sm' "$dir/both.tsv" || return 1
  printf '# s\ngpu\tX\nall_reduce\t2\tnvlink\t0\tmax\ttwo_shot\t0\t0\t1\nall_reduce\t4\tnvlink\t0\tmax\ttwo_shot\t0\t0\t1\n' \
    >"$dir/shipped.tsv"
  python3 bench/merge_table.py "$dir/shipped.tsv" "$dir/both.tsv" "$dir/m.tsv" "why" >/dev/null ||
    return 1
  [ "$(grep -c '^all_reduce	2' "$dir/m.tsv")" = 2 ] && grep -q '^all_reduce	4	nvlink	0	max	two_shot' "$dir/m.tsv" &&
    grep -q '^broadcast	2' "$dir/m.tsv" && grep -q '^# why$' "$dir/m.tsv" || { cat "$dir/m.tsv"; return 1; }
  rm -rf "$dir"
}
check "bench/tune_both.py and merge_table.py: eager and graph rows, merged" tune_both_and_merge

# Shell-level checks, sourced by test/run.sh (uses its `check`).

# symheap-run stops the job when a rank fails and returns that rank's status.
run_propagates_failure() {
  local start=$SECONDS out rc
  out=$(build/bin/symheap-run -n 3 sh -c \
    'if [ "$SYMHEAP_RANK" = 1 ]; then exit 7; fi; sleep 30' 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 7 ] || { echo "status $rc, expected 7"; return 1; }
  grep -q "rank 1 exited with status 7" <<<"$out" || return 1
  [ $((SECONDS - start)) -lt 10 ] || { echo "the other ranks were not stopped"; return 1; }
}
check "symheap-run: failing rank ends the job" run_propagates_failure

run_reports_signal() {
  local out rc
  out=$(build/bin/symheap-run -n 2 sh -c \
    'if [ "$SYMHEAP_RANK" = 0 ]; then kill -9 $$; fi; sleep 30' 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 137 ] && grep -q "rank 0 was killed by signal 9" <<<"$out"
}
check "symheap-run: killed rank is reported" run_reports_signal

exports_only_public() {
  local bad
  bad=$(nm -D --defined-only build/lib/libsymheap.so | awk '{print $3}' |
    grep -v '^symheap_[a-z]' | grep -v '^SYMHEAP_0$' || true)
  bad="$bad$(nm -D --defined-only build/lib/libsymheap.so | awk '{print $3}' | grep '^symheap__' || true)"
  [ -z "$bad" ] || { echo "unexpected exports: $bad"; return 1; }
  nm -D --defined-only build/lib/libsymheap.so | grep -q ' symheap_window_register'
}
check "libsymheap.so exports only symheap_*" exports_only_public

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
check "install + pkg-config + README example" install_and_build_client

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

# docs/env.md carries the variable table exactly as the library declares it.
env_doc_current() {
  diff <(build/bin/symheap-info -e --markdown) \
    <(grep '^|' docs/env.md)
}
check "docs/env.md matches the variable table" env_doc_current

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
  check "libsymheap_cuda.so: exports, install" cuda_lib_exports
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
  check "MPI ccl: own object, exports, installed client" mpi_ccl_separate
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

# Shared-memory names made by the example plugin and the fake HIP runtime
# are all gone once their owners let go (the suites above used both).
no_shm_left() {
  local left
  left=$(ls /dev/shm 2>/dev/null | grep -E '^(symheap-example|fake-hip)-' || true)
  [ -z "$left" ] || { echo "left in /dev/shm: $left"; return 1; }
}
check "no shared-memory names left behind" no_shm_left

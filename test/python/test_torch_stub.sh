#!/bin/bash
# symheap.torch's extension (bindings/python/symheap/torch/allocator.cpp,
# unchanged) built against the stand-ins of test/python/torch_stub (its
# README says what they are) and run on the host backend with ranks started
# like torchrun's: the lazy comm through the Python bootstrap hook and
# torch's store, rendezvous (every peer's buffer and pad, the device tables),
# frees in a different order on each rank, the pool and a cached
# re-registration, an explicit init, and the refusal with no job.  Prints
# PASS/FAIL lines; SKIP without a C++ compiler, Python.h or pybind11.
#   bash test/python/test_torch_stub.sh [RANKS]   (in the tree, after make)
N=${1:-3}
PY=${PY:-/usr/bin/python3}
root=$PWD
stub=$root/test/python/torch_stub
inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
ext=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
pyb=/usr/include
[ -e "$pyb/pybind11/pybind11.h" ] || pyb=$("$PY" -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null)
skip() { echo "SKIP torch-stub $1"; exit 0; }
command -v c++ >/dev/null || skip "no C++ compiler (Debian: g++)"
[ -e "$inc/Python.h" ] || skip "no Python.h for $PY (Debian: python3-dev)"
[ -n "$pyb" ] && [ -e "$pyb/pybind11/pybind11.h" ] || skip "no pybind11 headers (Debian: pybind11-dev)"
[ -d "$root/build/lib/python3/site-packages/symheap" ] || skip "build the package first (make python)"

d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
# The build's package, with the stand-in-built _C beside it (never in the
# build tree: other tests would import it there).
cp -r "$root/build/lib/python3/site-packages/symheap" "$d/symheap"
so=$d/symheap/torch/_C$ext
if c++ -std=c++17 -O1 -g -shared -fPIC -Wall -Wextra -Werror -I"$stub/include" \
  -I"$root/bindings/python/symheap/torch" -I"$root/include" -I"$pyb" -I"$inc" \
  -DTORCH_EXTENSION_NAME=_C "$root/bindings/python/symheap/torch/allocator.cpp" \
  "$stub/stub.cpp" -L"$root/build/lib" -lsymheap -Wl,-rpath,"$root/build/lib" \
  -o "$so" 2>"$d/cc.log"; then
  echo "PASS torch-stub-build"
else
  echo "FAIL torch-stub-build $(grep -m2 error "$d/cc.log" | tr '\n' ' ' | cut -c1-400)"
  exit 1
fi

status=0
ranks() { # ranks MODE N VAR=VALUE...: N processes started like torchrun's
  local mode=$1 n=$2 r pids=() bad=0
  shift 2
  mkdir "$d/store-$mode"
  for ((r = 0; r < n; r++)); do
    env -u SYMHEAP_UNIQUE_ID -u SYMHEAP_RANK -u SYMHEAP_NRANKS -u SYMHEAP_CCL \
      -u MASTER_ADDR -u MASTER_PORT SYMHEAP_DEVICE=host \
      SYMHEAP_LIBRARY="$root/build/lib/libsymheap.so.0" \
      PYTHONPATH="$stub/fake:$d" RANK=$r FAKE_STORE="$d/store-$mode" "$@" \
      timeout 60 "$PY" "$root/test/python/test_torch_stub.py" "$mode" "$so" \
      >"$d/$mode.$r.log" 2>&1 &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || bad=1; done
  if [ $bad = 0 ] && [ "$(cat "$d/$mode".*.log | grep -c "^OK $mode ")" = "$n" ]; then
    echo "PASS torch-stub-$mode"
  else
    echo "FAIL torch-stub-$mode $(grep -h -m1 -E '^[A-Za-z.]*(Error|Exception)|stub_' "$d/$mode".*.log | tr '\n' ' ' | cut -c1-400)"
    status=1
  fi
}
ranks lazy "$N" WORLD_SIZE="$N" FAKE_DIST=1
ranks explicit 2 WORLD_SIZE=2 FAKE_DIST=1
ranks nojob 1 WORLD_SIZE= FAKE_DIST=0
exit $status

# What `make test` needs beyond gcc and make, sourced by test/run.sh.
# As root with apt-get (a fresh Debian machine, CI), it installs what is
# missing; otherwise it prints the one command that would, and the passes
# that need a missing tool are skipped, one SKIP line each (have_tool says).

# command-on-PATH  Debian-package(s)
deps_table() {
  cat <<'LIST'
valgrind valgrind
clang clang
pkg-config pkg-config
nm binutils
mpicc openmpi-bin libopenmpi-dev
py-numpy python3-numpy
py-pip python3-pip python3-setuptools
py-dev python3-dev
pybind11 pybind11-dev
c++ g++
autoconf autoconf
cmake cmake
libfabric libfabric1
libfabric-dev libfabric-dev
libucx libucx0
libucx-dev libucx-dev
ip iproute2
LIST
}

deps_missing_packages() {
  local cmd pkgs
  deps_table | while read -r cmd pkgs; do
    have_tool "$cmd" || echo "$pkgs"
  done | tr '\n' ' '
}

deps_install() {
  local need
  need=$(deps_missing_packages)
  [ -n "${need// /}" ] || return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing what the tests need: $need"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends $need; } \
      >build/test-logs/apt.log 2>&1; then
      echo "apt-get failed (see build/test-logs/apt.log); the passes that need them are skipped"
    fi
  else
    echo "== not installed: $need"
    echo "   to run every pass: sudo apt-get install -y $need"
  fi
}

# have_tool CMD: is CMD usable now?  py-numpy: Debian's python3 imports
# numpy (the Python tests' interpreter); py-pip: it has pip and setuptools
# (the pip test); py-dev: its Python.h (symheap._fast); pybind11: its
# headers; libfabric: its run-time library; libfabric-dev: its headers.
have_tool() {
  case $1 in
  py-numpy) /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 ;;
  # setuptools first: importing pip first trips setuptools' distutils check.
  py-pip) /usr/bin/python3 -c 'import setuptools, pip' >/dev/null 2>&1 ;;
  py-dev) [ -e "$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)/Python.h" ] ;;
  # pybind11: its headers (symheap.torch's extension on stand-ins).
  pybind11) [ -e /usr/include/pybind11/pybind11.h ] ;;
  # libfabric: the run-time library the ofi net adaptor opens (the adaptor
  # builds without libfabric's headers: adaptors/net/ofi/ofi_api.h).
  libfabric) ldconfig -p 2>/dev/null | grep -q 'libfabric\.so\.1 ' ;;
  # libfabric-dev: the headers test/ofi_api_check.sh compares ofi_api.h
  # with, and bench/net_raw.c (the raw floor) compiles against.
  libfabric-dev) [ -e /usr/include/rdma/fabric.h ] ;;
  # libucx: the run-time library the ucx net adaptor opens (it builds
  # without UCX's headers: adaptors/net/ucx/ucx_api.h); libucx-dev: the
  # headers test/ucx_api_check.sh compares ucx_api.h with.
  libucx) ldconfig -p 2>/dev/null | grep -q 'libucp\.so\.0 ' ;;
  libucx-dev) [ -e /usr/include/ucp/api/ucp.h ] ;;
  *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

# symheap-oshcc as a user's build meets it (issue 31 item 5), sourced by
# test/shmem/run_shmem.sh: the wrapper never runs itself (CC naming it, as
# ./configure CC=symheap-oshcc sets up, used to recurse forever), --help and
# --showme, and the wrapper as CC of an autotools and a CMake project, whose
# programs then run at 2 PEs.  Each function prints what it saw; status 0
# when it holds.

OSHCC=$PWD/build/bin/symheap-oshcc

oshcc_no_recursion() {
  local d=build/test/shmem/oshcc
  mkdir -p "$d"
  printf '#include <shmem.h>\nint main(void){shmem_init();shmem_finalize();return 0;}\n' >"$d/t.c"
  CC=$OSHCC timeout 60 "$OSHCC" "$d/t.c" -o "$d/t" || return 1
  timeout 60 env CC="$OSHCC -O2" "$OSHCC" -c "$d/t.c" -o "$d/t.o" || return 1
  SYMHEAP_OSHCC_CC=$PWD/build/bin/symheap-oshc++ timeout 60 "$OSHCC" -c "$d/t.c" \
    -o "$d/t2.o" || return 1
  build/bin/symheap-run -n 2 "$d/t"
}

oshcc_help_showme() {
  local out
  out=$("$OSHCC" --help) || return 1
  grep -q -- '--showme' <<<"$out" || { echo "--help does not mention --showme"; return 1; }
  out=$("$OSHCC" --showme -O2 prog.c -o prog) || return 1
  echo "$out"
  grep -q -- '-lsymheap-shmem' <<<"$out" && grep -q 'prog.c' <<<"$out" || return 1
  [ ! -e prog ] || return 1
  out=$("$OSHCC" --showme -c prog.c)
  ! grep -q -- '-lsymheap-shmem' <<<"$out" || { echo "links with -c"; return 1; }
  "$OSHCC" --showme:compile | grep -q -- '-I.*symheap-shmem' &&
    "$OSHCC" --showme:link | grep -q -- '-lsymheap-shmem'
}

# ./configure CC=symheap-oshcc: the checks for the headers and functions an
# OpenSHMEM program's configure makes, then make, then a run.
oshcc_autotools() {
  local d=build/test/shmem/oshcc-autotools
  rm -rf "$d" && mkdir -p "$d" || return 1
  cat >"$d/configure.ac" <<'AC'
AC_INIT([oshcc-check], [1.0])
AC_PROG_CC
AC_CHECK_HEADERS([shmem.h mpp/shmem.h shmemx.h], [], [AC_MSG_ERROR([no $ac_header])])
AC_CHECK_FUNCS([shmem_init shmemalign shrealloc], [], [AC_MSG_ERROR([no $ac_func])])
AC_CONFIG_FILES([Makefile])
AC_OUTPUT
AC
  # shellcheck disable=SC2016
  printf 'CC = @CC@\nCFLAGS = @CFLAGS@\nhello: hello.c\n\t$(CC) $(CFLAGS) -o hello hello.c\n' >"$d/Makefile.in"
  cat >"$d/hello.c" <<'C'
#include <mpp/shmem.h>
#include <stdio.h>
int main(void) {
  shmem_init();
  long *p = shmemalign(64, sizeof(long));
  *p = shmem_my_pe();
  shmem_barrier_all();
  printf("%s oshcc_autotools_program PE %d\n",
         shmem_long_g(p, 0) == 0 ? "PASS" : "FAIL", shmem_my_pe());
  shmem_free(p);
  shmem_finalize();
  return 0;
}
C
  (cd "$d" && autoconf && timeout 300 ./configure CC="$OSHCC" >configure.out 2>&1 &&
    make) || { tail -20 "$d/config.log"; return 1; }
  build/bin/symheap-run -n 2 "$d/hello"
}

oshcc_cmake() {
  local d=build/test/shmem/oshcc-cmake
  rm -rf "$d" && mkdir -p "$d/src" || return 1
  cat >"$d/src/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.10)
project(oshcc_check C)
include(CheckIncludeFile)
check_include_file(shmem.h HAVE_SHMEM_H)
if(NOT HAVE_SHMEM_H)
  message(FATAL_ERROR "no shmem.h")
endif()
add_executable(hello hello.c)
CM
  cat >"$d/src/hello.c" <<'C'
#include <shmem.h>
#include <stdio.h>
int main(void) {
  shmem_init();
  printf("PASS oshcc_cmake_program PE %d\n", shmem_my_pe());
  shmem_finalize();
  return 0;
}
C
  (cd "$d" && timeout 300 cmake -S src -B bld -DCMAKE_C_COMPILER="$OSHCC" >cmake.out 2>&1 &&
    timeout 300 cmake --build bld >>cmake.out 2>&1) || { tail -20 "$d/cmake.out"; return 1; }
  build/bin/symheap-run -n 2 "$d/bld/hello"
}

# What a user's setup and build tools do with the wrapper: a link to it from
# another directory (an oshcc in the PATH) finds the library beside the
# wrapper itself, not beside the link; a copy of the wrapper named as CC is
# not run (it would look for the library beside itself); --showme and
# --help anywhere among the arguments, as Open MPI's wrappers take them;
# "-v" (or -V, --version) alone asks the compiler its version, as
# autotools do, instead of linking nothing (which failed); -fsyntax-only
# gets no link flags.
oshcc_edge_cases() {
  local d=build/test/shmem/oshcc-edge out
  rm -rf "$d" && mkdir -p "$d/bin" "$d/copy/bin" || return 1
  printf '#include <shmem.h>\nint main(void){shmem_init();shmem_finalize();return 0;}\n' >"$d/t.c"
  ln -s "$OSHCC" "$d/bin/oshcc"
  ln -s "$PWD/build/bin/symheap-oshc++" "$d/bin/oshc++"
  PATH="$PWD/$d/bin:$PATH" CC=oshcc timeout 60 oshcc "$d/t.c" -o "$d/t1" ||
    { echo "a link to the wrapper (CC=oshcc) failed"; return 1; }
  cp "$d/t.c" "$d/t.cpp"
  if command -v "${CXX:-c++}" >/dev/null; then
    CXX="$PWD/$d/bin/oshc++" timeout 60 "$d/bin/oshc++" "$d/t.cpp" -o "$d/t2" ||
      { echo "a link to symheap-oshc++ (CXX naming it) failed"; return 1; }
  fi
  cp "$OSHCC" "$d/copy/bin/mycc"
  CC="$PWD/$d/copy/bin/mycc" timeout 60 "$OSHCC" "$d/t.c" -o "$d/t3" ||
    { echo "CC naming a copy of the wrapper failed"; return 1; }
  build/bin/symheap-run -n 2 "$d/t1" || return 1
  out=$("$OSHCC" -O2 --showme "$d/t.c" -o "$d/never") || { echo "--showme after -O2 failed"; return 1; }
  echo "$out"
  if ! grep -q -- '-O2 .*t\.c.*-lsymheap-shmem' <<<"$out" || grep -q -- '--showme' <<<"$out" ||
    [ -e "$d/never" ]; then
    echo "--showme after -O2: not the command"
    return 1
  fi
  "$OSHCC" -c --showme:compile | grep -q -- '-I.*symheap-shmem' || { echo "--showme:compile later"; return 1; }
  # -fsyntax-only links nothing: clang -Werror refused the unused libraries.
  out=$("$OSHCC" --showme -fsyntax-only -Werror "$d/t.c")
  ! grep -q -- '-lsymheap-shmem' <<<"$out" || { echo "-fsyntax-only got the link flags: $out"; return 1; }
  "$OSHCC" -O2 --help | grep -q -- '--showme' || { echo "--help after -O2"; return 1; }
  "$OSHCC" -v >"$d/v.out" 2>&1 || { tail -n 3 "$d/v.out"; echo "symheap-oshcc -v failed"; return 1; }
  grep -qi 'version' "$d/v.out"
}

# symheap-oshc++ as CMAKE_CXX_COMPILER (and CXX naming it: no recursion).
oshcxx_cmake() {
  local d=build/test/shmem/oshcxx-cmake cxx=$PWD/build/bin/symheap-oshc++
  rm -rf "$d" && mkdir -p "$d/src" || return 1
  printf 'cmake_minimum_required(VERSION 3.10)\nproject(oshcxx_check CXX)\nadd_executable(hello hello.cpp)\n' \
    >"$d/src/CMakeLists.txt"
  cat >"$d/src/hello.cpp" <<'CXX'
#include <shmem.h>
#include <cstdio>
int main() {
  shmem_init();
  std::printf("PASS oshcxx_cmake_program PE %d\n", shmem_my_pe());
  shmem_finalize();
  return 0;
}
CXX
  (cd "$d" && CXX=$cxx timeout 300 cmake -S src -B bld -DCMAKE_CXX_COMPILER="$cxx" \
    >cmake.out 2>&1 &&
    timeout 300 cmake --build bld >>cmake.out 2>&1) || { tail -20 "$d/cmake.out"; return 1; }
  build/bin/symheap-run -n 2 "$d/bld/hello"
}

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

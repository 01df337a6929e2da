#!/usr/bin/env bash
# OpenSHMEM (symheap-shmem) beside MPI-3 RMA on shared-memory windows, from
# one run: put/get latency 8 B..1 MiB, put bandwidth, fetch-add latency and
# barrier latency at 2, 4 and 8 PEs (N/2 pairs at once), each also through a
# plain peer pointer.  Prints the rows of both programs, then markdown tables
# (docs/perf/openshmem.md).  Usage: bench/openshmem.sh [NPES...] (default
# 2 4 8).  Needs `make` and, for the MPI side, mpicc/mpirun (Open MPI).
#
# bench/openshmem.sh osu: OSU's OpenSHMEM benchmarks (OSU_OSHM, default
# ../shared/osu-oshm: someone else's BSD code, run from there with its
# run.sh, never copied here), in one run: symheap-shmem as a user runs it
# (symheap-run -n N: its default binding, a CPU each when there are enough),
# symheap-shmem pinned (run.sh's PIN=1: PE r on CPU r mod nproc, two PEs a
# CPU at 4 PEs on 2), Open MPI's oshmem (oshrun --mca osc ^rdma
# --oversubscribe, its default binding) and MPI-3 RMA (osc/sm), at 2 and 4
# PEs.  The uptime before and after each part goes into the output (the load
# decides these numbers on a shared machine).  Raw output in
# build/bench/osu-{symheap,pinned,oshmem}.txt, then one markdown table per
# benchmark (docs/perf/openshmem.md) and build/bench/osu.svg (bench/osu_plot.py).
set -eu
cd "$(dirname "$0")/.."
# bench/openshmem.sh osu-coll [REPS]: OSU's collective benchmarks alone
# (barrier, broadcast, reduce, fcollect, collect up to OSU_MAX bytes,
# default 1 MiB), built from OSU_OSHM into a temporary directory, run REPS
# times (default 3) at OSU_PES PEs (default "2 4") with the three
# implementations interleaved (symheap-run -n N, the
# same pinned one PE per CPU mod nproc, oshrun), then the median of each
# cell (bench/osu_median.py); build/bench/osu-coll.txt keeps every run.
# OSU_BASE=DIR (another checkout's build directory, e.g. an earlier commit's)
# adds its symheap-shmem as a fourth, "base", interleaved with the others:
# a before/after in the same minutes.  OSU_COLLS picks the collectives
# (default "barrier broadcast reduce fcollect collect"); OSU_ARGS adds
# arguments to every OSU program (e.g. "-i 300 -x 30": fewer iterations).
if [ "${1:-}" = osu-coll ]; then
  OSU=${OSU_OSHM:-../shared/osu-oshm}
  [ -d "$OSU/c/openshmem" ] || { echo "no $OSU (set OSU_OSHM)" >&2; exit 2; }
  reps=${2:-3}
  make -s shmem tools
  mkdir -p build/bench
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export SHMEM_SYMMETRIC_SIZE=512M
  w=$(mktemp -d /tmp/osu-coll.XXXXXX)
  trap 'rm -rf "$w"' EXIT
  U=$OSU/c/util
  # nproc --all: inside a rank symheap-run has bound, nproc says 1.
  printf '#!/bin/sh\nexec taskset -c $(( ${SYMHEAP_LOCAL_RANK:-0} %% $(nproc --all) )) "$@"\n' \
    >"$w/pin.sh"
  chmod +x "$w/pin.sh"
  colls=${OSU_COLLS:-barrier broadcast reduce fcollect collect}
  impls="symheap pinned oshmem${OSU_BASE:+ base}"
  for b in $colls; do
    build/bin/symheap-oshcc -O2 -DPACKAGE_VERSION=\"6.0\" -I"$U" -o "$w/sym-$b" \
      "$OSU/c/openshmem/osu_oshm_$b.c" "$U/osu_util.c" "$U/osu_util_pgas.c" -lm
    if [ -n "${OSU_BASE:-}" ]; then
      "$OSU_BASE/bin/symheap-oshcc" -O2 -DPACKAGE_VERSION=\"6.0\" -I"$U" -o "$w/base-$b" \
        "$OSU/c/openshmem/osu_oshm_$b.c" "$U/osu_util.c" "$U/osu_util_pgas.c" -lm
    fi
    oshcc -O2 -DPACKAGE_VERSION=\"6.0\" -I"$U" -o "$w/omp-$b" \
      "$OSU/c/openshmem/osu_oshm_$b.c" "$U/osu_util.c" "$U/osu_util_pgas.c" -lm
  done
  out=build/bench/osu-coll.txt
  : >"$out"
  for rep in $(seq "$reps"); do
    for n in ${OSU_PES:-2 4}; do
      for b in $colls; do
        for impl in $impls; do
          case $impl in
          symheap) cmd="build/bin/symheap-run -n $n $w/sym-$b" ;;
          pinned) cmd="build/bin/symheap-run -n $n $w/pin.sh $w/sym-$b" ;;
          base) cmd="$OSU_BASE/bin/symheap-run -n $n $w/base-$b" ;;
          *) cmd="oshrun --mca osc ^rdma --oversubscribe -n $n $w/omp-$b" ;;
          esac
          echo "## $rep $impl $b $n load $(cut -d' ' -f1 /proc/loadavg)" >>"$out"
          # shellcheck disable=SC2086 # OSU_ARGS: several arguments
          timeout -k 5 120 $cmd -m "${OSU_MAX:-1048576}" ${OSU_ARGS:-} </dev/null >>"$out" 2>&1 ||
            echo "## failed" >>"$out"
        done
      done
    done
  done
  python3 bench/osu_median.py "$out"
  exit 0
fi
if [ "${1:-}" = osu ]; then
  OSU=${OSU_OSHM:-../shared/osu-oshm}
  [ -x "$OSU/run.sh" ] || { echo "no $OSU/run.sh (set OSU_OSHM)" >&2; exit 2; }
  make -s shmem tools
  mkdir -p build/bench
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  part() { # part NAME [ENV...] -- run.sh ARGS: one implementation's run
    local name=$1 out=build/bench/osu-$1.txt
    shift
    { echo "# $(date -u +%FT%TZ) $(uptime)"; } >"$out"
    env "$@" >>"$out" 2>&1 || true
    { echo "# $(date -u +%FT%TZ) $(uptime)"; } >>"$out"
    echo "$name: $(tail -n 2 "$out" | head -n 1)"
  }
  # run.sh takes an installed prefix: build/ has the same layout.
  part symheap MPI=1 "$OSU/run.sh" "$PWD/build"
  part oshmem OSHCC=oshcc OSHRUN="oshrun --mca osc ^rdma --oversubscribe -n" \
    "$OSU/run.sh" -
  part pinned PIN=1 "$OSU/run.sh" "$PWD/build"
  python3 bench/osu_tables.py symheap-shmem=build/bench/osu-symheap.txt \
    "symheap-shmem pinned=build/bench/osu-pinned.txt" \
    "Open MPI oshmem=build/bench/osu-oshmem.txt"
  python3 bench/osu_plot.py build/bench/osu.svg \
    symheap-shmem=build/bench/osu-symheap.txt \
    "symheap-shmem pinned=build/bench/osu-pinned.txt" \
    "Open MPI oshmem=build/bench/osu-oshmem.txt"
  exit 0
fi
make -s shmem
mkdir -p build/bench
build/bin/symheap-oshcc -O2 -o build/bench/shmem_bench bench/shmem_bench.c
have_mpi=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  mpicc -O2 -o build/bench/mpi_rma_bench bench/mpi_rma_bench.c && have_mpi=1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated
out=build/bench/openshmem.txt
: >"$out"
for n in "${@:-2 4 8}"; do
  for n1 in $n; do
    build/bin/symheap-run -n "$n1" build/bench/shmem_bench | tee -a "$out"
    if [ $have_mpi = 1 ]; then
      mpirun --oversubscribe --bind-to none -n "$n1" build/bench/mpi_rma_bench | tee -a "$out"
    fi
  done
done
# Tables: one per measure, a column per (implementation, op, PEs).
python3 - "$out" <<'PY'
import sys, collections
rows = [l.split() for l in open(sys.argv[1]) if l.count(" ") == 5]
t = collections.defaultdict(dict)
for impl, op, b, n, v, u in rows:
    t[(op.replace("ptr_", "").replace("shq_", ""), int(n), u)][(impl + (" ptr" if op.startswith("ptr_") else " load/store" if op.startswith("shq_") else ""), int(b))] = float(v)
for (op, n, u), cells in sorted(t.items()):
    cols = sorted({c for c, _ in cells})
    sizes = sorted({b for _, b in cells})
    print(f"\n{op}, {n} PEs ({u})\n")
    print("| bytes | " + " | ".join(cols) + " |")
    print("|---:|" + "---:|" * len(cols))
    for b in sizes:
        print(f"| {b} | " + " | ".join(f"{cells.get((c, b), float('nan')):.3f}" for c in cols) + " |")
PY

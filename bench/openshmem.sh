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
# run.sh, never copied here) against symheap-shmem (symheap-run -n N, as a
# user runs it: ranks bound by default) and Open MPI's oshmem (oshrun --mca
# osc ^rdma, --oversubscribe for more PEs than cores), and MPI-3 RMA (osc/sm)
# in the same run, at 2 and 4 PEs; raw output in build/bench/osu-*.txt, then
# one markdown table per benchmark (docs/perf/openshmem.md).
set -eu
cd "$(dirname "$0")/.."
if [ "${1:-}" = osu ]; then
  OSU=${OSU_OSHM:-../shared/osu-oshm}
  [ -x "$OSU/run.sh" ] || { echo "no $OSU/run.sh (set OSU_OSHM)" >&2; exit 2; }
  make -s shmem tools
  mkdir -p build/bench
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # run.sh takes an installed prefix: build/ has the same layout.
  MPI=1 "$OSU/run.sh" "$PWD/build" >build/bench/osu-symheap.txt 2>&1 || true
  OSHCC=oshcc OSHRUN="oshrun --mca osc ^rdma --oversubscribe -n" "$OSU/run.sh" - \
    >build/bench/osu-oshmem.txt 2>&1 || true
  python3 bench/osu_tables.py build/bench/osu-symheap.txt build/bench/osu-oshmem.txt
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

#!/usr/bin/env bash
# OpenSHMEM (symheap-shmem) beside MPI-3 RMA on shared-memory windows, from
# one run: put/get latency 8 B..1 MiB, put bandwidth, fetch-add latency and
# barrier latency at 2, 4 and 8 PEs (N/2 pairs at once), each also through a
# plain peer pointer.  Prints the rows of both programs, then markdown tables
# (docs/perf/openshmem.md).  Usage: bench/openshmem.sh [NPES...] (default
# 2 4 8).  Needs `make` and, for the MPI side, mpicc/mpirun (Open MPI).
set -eu
cd "$(dirname "$0")/.."
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

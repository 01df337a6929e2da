#!/usr/bin/env bash
# The heap's symmetric allocation beside the peer's, in one run on one
# machine (docs/perf/heap.md): symheap_malloc + symheap_free from the heap,
# the same with SYMHEAP_HEAP=0 (one registration per allocation), and Open
# MPI's MPI_Win_allocate_shared + MPI_Win_free.  4 ranks unless N is given.
#   make all mpi-win-bench && bench/heap_vs_mpi.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-4}
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p')"
echo "== symheap heap: symheap-run -n $n symheap-bench --heap --max-size 64M"
build/bin/symheap-run -n "$n" build/bin/symheap-bench --heap --max-size 64M
echo "== symheap without the heap: SYMHEAP_HEAP=0 symheap-run -n $n symheap-bench --max-size 64M (malloc, free columns)"
SYMHEAP_HEAP=0 build/bin/symheap-run -n "$n" build/bin/symheap-bench --max-size 64M |
  sed -n '1,/^64 MiB/p'
echo "== Open MPI: mpirun -n $n build/bin/mpi-win-bench"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated \
  mpirun --oversubscribe --bind-to none -n "$n" build/bin/mpi-win-bench --max-size $((64 << 20))

# A/B of an osu-pt run with OSU_IMPLS="symheap oshmem" and OSU_BASE: columns symheap, oshmem, base.
# Lists the cells where the change (symheap) or the base is behind Open MPI, and the change over
# the base per benchmark from 16 KiB.  The tables are read by round 14's ptstatus.py.
import os, sys, statistics
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'openshmem-r14-2026-11-27'))
from ptstatus import rows as cells
rows = cells(sys.argv[1])  # (key, size, change, Open MPI, base, higher)
def behind(v, o, h): return v is not None and o is not None and (v <= o if h else v >= o) and not (v == o == 0)
bn = [r for r in rows if behind(r[2], r[3], r[5])]
bb = [r for r in rows if behind(r[4], r[3], r[5])]
print("cells", len(rows), "behind Open MPI: change", len(bn), "base", len(bb))
for r in bn: print("  change behind", r[0], r[1], "change", r[2], "omp", r[3], "base", r[4])
for r in bb: print("  base behind", r[0], r[1], "base", r[4], "omp", r[3])
big = [r for r in rows if r[2] and r[4] and r[1].isdigit() and int(r[1]) >= 16384]
for key in sorted(set(r[0] for r in big)):
    rs = [r for r in big if r[0] == key]
    ratio = [(r[2] / r[4] if r[5] else r[4] / r[2]) for r in rs]
    print(key, ">=16KiB change speed over base: median %.2f [%.2f-%.2f]" % (statistics.median(ratio), min(ratio), max(ratio)))

#!/usr/bin/env python3
"""Medians of bench/openshmem.sh osu-coll's (or osu-pt's) interleaved repetitions.

Usage: osu_median.py build/bench/osu-coll.txt (or osu-pt.txt)

The file holds "## REP IMPL BENCH NPES load LOAD" before each run's OSU
output.  Prints, per (benchmark, PEs), a markdown table: size, then for
each implementation present (OSU_BASE's "base" too) the median latency (us) over the repetitions and, in
brackets, the lowest and highest; then the load averages seen.  For
put_overlap the latency is its "Pure Comm." column (a put and a quiet): its
first column, "Compute", is the time of OSU's dummy compute loop, aimed at
that latency but below gettimeofday's 1 us resolution for both
implementations, so it times the clock's tick rather than the library."""
import collections
import re
import statistics
import sys

ORDER = ["symheap", "pinned", "oshmem", "base"]
OPS = []  # the atomics benchmark's operations, in the order seen
NAMES = {"symheap": "symheap-shmem (symheap-run -n N)",
         "pinned": "symheap-shmem pinned",
         "oshmem": "Open MPI oshmem",
         "base": "symheap-shmem OSU_BASE (symheap-run -n N)"}


def main():
    cells = collections.defaultdict(list)  # (bench, n, size, impl) -> [us]
    loads, cur = [], None
    for line in open(sys.argv[1], errors="replace"):
        t = line.split()
        if line.startswith("## ") and len(t) >= 7:
            cur = (t[2], t[3], int(t[4]))
            loads.append(float(t[6]))
            continue
        if line.startswith("## failed") or cur is None or not t:
            continue
        impl, bench, n = cur
        if bench.startswith("put_overlap") and re.fullmatch(r"[0-9]+", t[0]) and len(t) >= 6:
            # "size Compute Init Wait PureComm Overlap%": the put's latency
            # (Pure Comm.); Compute is OSU's dummy loop, not the put's cost
            cells[(bench, n, int(t[0]), impl)].append(float(t[4]))
        elif re.fullmatch(r"[0-9]+", t[0]) and len(t) >= 2:
            cells[(bench, n, int(t[0]), impl)].append(float(t[1]))
        elif bench == "barrier" and re.fullmatch(r"[0-9.]+", t[0]) and len(t) == 1:
            cells[(bench, n, 0, impl)].append(float(t[0]))
        elif bench.startswith("atomics") and t[0].startswith("shmem_") and len(t) >= 3:
            # "operation  Mops/s  latency (us)": the latency
            if t[0] not in OPS:
                OPS.append(t[0])
            cells[(bench, n, OPS.index(t[0]), impl)].append(float(t[2]))
    present = {i for _, _, _, i in cells}
    impls = [i for i in ORDER if i in present]
    keys = sorted({(b, n) for b, n, _, _ in cells})
    for b, n in keys:
        unit = ("messages/s, higher is better" if "_mr" in b else
                "Pure Comm. us: put + quiet" if b.startswith("put_overlap") else "us")
        print(f"\n#### {b}, {n} PEs ({unit}: median [min-max])\n")
        print("| size | " + " | ".join(NAMES[i] for i in impls) + " |")
        print("|---:|" + "---:|" * len(impls))
        for s in sorted({s for bb, nn, s, _ in cells if (bb, nn) == (b, n)}):
            row = []
            for i in impls:
                v = cells.get((b, n, s, i), [])
                row.append(f"{statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]"
                           if v else "-")
            label = "-" if b == "barrier" else OPS[s] if b.startswith("atomics") else s
            print(f"| {label} | " + " | ".join(row) + " |")
    if loads:
        print(f"\nload average (1 min) before each run: {min(loads):.1f} to "
              f"{max(loads):.1f}, median {statistics.median(loads):.1f}")


if __name__ == "__main__":
    main()

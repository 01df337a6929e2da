#!/usr/bin/env python3
"""Markdown tables from OSU run.sh outputs (bench/openshmem.sh osu).

Usage: osu_tables.py SYMHEAP.txt OSHMEM.txt

Each file is run.sh's output: a "### <benchmark> [arg]@<PEs>" line before
each benchmark's own output.  A data line is a size (or an AMO's name) and
the benchmark's first figure; the last "# ..." line before the data names
the unit.  One table per benchmark, a column per implementation, sizes in
rows; MPI-3 RMA (osu_put_latency ...) comes from the symheap file's MPI=1
part and gets its own tables."""
import re
import sys


def parse(path):
    out, order = {}, []
    sec, unit = None, ""
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("### "):
            sec = line[4:].strip()
            unit = ""
            if sec not in out:
                out[sec] = {"unit": "", "rows": {}}
                order.append(sec)
            continue
        if line.startswith("---"):
            sec = None  # run.sh's summary follows
        if sec is None or not line.strip():
            continue
        if line.startswith("#"):
            unit = line.lstrip("# ").strip()
            continue
        toks = line.split()
        nums = [t for t in toks if re.fullmatch(r"-?[0-9.]+(e[-+]?[0-9]+)?", t)]
        if not nums:
            continue
        if len(toks) == 1:
            key = "-"
        elif re.fullmatch(r"[0-9]+", toks[0]) and len(nums) >= 2:
            key = toks[0]
            nums = nums[1:]
        elif toks[0].startswith("shmem_"):
            key = toks[0]  # an AMO's row
        else:
            continue  # a launcher's or an error's text
        out[sec]["rows"][key] = nums[0]
        out[sec]["unit"] = unit
    return out, order


def main():
    sym, order = parse(sys.argv[1])
    osh, order2 = parse(sys.argv[2])
    for s in order2:
        if s not in order:
            order.append(s)
    for sec in order:
        a = sym.get(sec, {"rows": {}, "unit": ""})
        b = osh.get(sec, {"rows": {}, "unit": ""})
        if not a["rows"] and not b["rows"]:
            continue
        mpi = not sec.startswith("osu_oshm")
        keys = list(a["rows"]) + [k for k in b["rows"] if k not in a["rows"]]
        print(f"\n#### {sec}" + ("" if "@" in sec else " @2"))
        print(f"\n{a['unit'] or b['unit']}\n")
        if mpi:
            print("| size | MPI-3 RMA (Open MPI osc/sm) |\n|---:|---:|")
            for k in keys:
                print(f"| {k} | {a['rows'].get(k, '')} |")
            continue
        print("| size | symheap-shmem | Open MPI oshmem |\n|---:|---:|---:|")
        for k in keys:
            print(f"| {k} | {a['rows'].get(k, '-')} | {b['rows'].get(k, '-')} |")


if __name__ == "__main__":
    main()

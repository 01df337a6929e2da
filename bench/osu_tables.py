#!/usr/bin/env python3
"""Markdown tables from OSU run.sh outputs (bench/openshmem.sh osu).

Usage: osu_tables.py [LABEL=]FILE...  (the first: symheap-shmem's run with
MPI=1; default labels: symheap-shmem, Open MPI oshmem, then the file names)

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


def runs(args):
    """[(label, path)] from LABEL=FILE (or FILE) arguments."""
    default = ["symheap-shmem", "Open MPI oshmem"]
    out = []
    for i, a in enumerate(args):
        label, sep, path = a.partition("=")
        if not sep:
            label, path = (default[i] if i < len(default) else a), a
        out.append((label, path))
    return out


def main():
    parsed, order = [], []
    for label, path in runs(sys.argv[1:]):
        d, o = parse(path)
        parsed.append((label, d))
        order += [s for s in o if s not in order]
    for sec in order:
        cols = [(l, d.get(sec, {"rows": {}, "unit": ""})) for l, d in parsed]
        if not any(c["rows"] for _, c in cols):
            continue
        mpi = not sec.startswith("osu_oshm")
        keys = []
        for _, c in cols:
            keys += [k for k in c["rows"] if k not in keys]
        unit = next((c["unit"] for _, c in cols if c["unit"]), "")
        print(f"\n#### {sec}" + ("" if "@" in sec else " @2"))
        print(f"\n{unit}\n")
        if mpi:
            print("| size | MPI-3 RMA (Open MPI osc/sm) |\n|---:|---:|")
            for k in keys:
                print(f"| {k} | {cols[0][1]['rows'].get(k, '')} |")
            continue
        print("| size | " + " | ".join(l for l, _ in cols) + " |")
        print("|---:|" + "---:|" * len(cols))
        for k in keys:
            print(f"| {k} | " + " | ".join(c["rows"].get(k, "-") for _, c in cols) + " |")


if __name__ == "__main__":
    main()

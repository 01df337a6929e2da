"""The short table of bench/gpularge_check.sh: issue 29's large-size goals
from one run's files in DIR.
  python3 bench/gpularge_table.py DIR
All-reduce (bf16 sum, symheap-tune's times: slowest rank's median): the best
variant of each algorithm, its bus bandwidth (2 (n-1)/n bytes / t) and that
over the copy-engine peer put rate of the same run (symheap-bench: 2 ranks
every rank to the next, 4 ranks every peer at once); NCCL beside it.
Broadcast and all-to-all at 4 ranks: each algorithm against NCCL
(peers_collectives.py)."""
import json
import os
import re
import sys

from tune_all import algo, best


def tune_rows(path):
    """{(coll, n, bytes): {variant: us}} from symheap-tune's output."""
    rows = {}
    if not os.path.exists(path):
        return rows
    for line in open(path):
        m = re.match(r"(\w+)\s+(\d+)\s+(\d+)\s+best\s+\S+\s+(.*)", line)
        if not m:
            continue
        toks = m.group(4).split()
        rows[(m.group(1), int(m.group(2)), int(m.group(3)))] = {
            toks[i]: float(toks[i + 1]) for i in range(0, len(toks) - 1, 2)}
    return rows


def ce_rate(path, n):
    if not os.path.exists(path):
        return None
    text = open(path).read()
    m = (re.search(r"every peer at once .*?put ([\d.]+) GB/s", text) if n > 2
         else re.search(r"symheap_cuda_put ([\d.]+) GB/s", text))
    return float(m.group(1)) if m else None


def load_json(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return {}


def main(d):
    nccl = load_json(os.path.join(d, "nccl4", "baseline.json"))
    pcoll = load_json(os.path.join(d, "nccl4", "peers_collectives.json"))
    print("# all-reduce bf16: us (bus GB/s, x the copy-engine put rate)")
    algos = ["two_shot", "rs_ce", "rs_ce_pipe"]
    print("%-2s %-8s %-6s %s %s" % ("n", "size", "CE", "  ".join(
        "%-28s" % a for a in algos), "NCCL"))
    for n in (2, 4):
        rows = tune_rows(os.path.join(d, "tune.n%d.txt" % n))
        ce = ce_rate(os.path.join(d, "bench.n%d.txt" % n), n)
        for b in (64 << 20, 256 << 20, 1 << 30):
            v = rows.get(("all_reduce", n, b))
            if not v:
                continue
            cells = []
            for a in algos:
                x = best(v, algo(a))
                if not x:
                    cells.append("%-28s" % "-")
                    continue
                bw = 2 * (n - 1) / n * b / (x[0] * 1e-6) / 1e9
                r = " x%.3f" % (bw / ce) if ce else ""
                cells.append("%-28s" % ("%.1f %s (%.1f%s)" % (x[0], x[1], bw, r)))
            nc = nccl.get("nccl_allreduce_us_%d" % b) if n == 4 else None
            print("%-2d %-8s %-6s %s %s" % (n, "%dM" % (b >> 20),
                                            "%.1f" % ce if ce else "-",
                                            "  ".join(cells),
                                            "%.1f" % nc if nc else "-"))
    for f in sorted(os.listdir(d)):
        m = re.match(r"tune\.n4\.chunk(\d+)\.txt$", f)
        if not m:
            continue
        rows = tune_rows(os.path.join(d, f))
        cells = []
        for b in (64 << 20, 256 << 20, 1 << 30):
            v = rows.get(("all_reduce", 4, b)) or {}
            x, y = best(v, algo("rs_ce_pipe")), best(v, algo("rs_ce"))
            cells.append("%dM %s / rs_ce %s" % (
                b >> 20, "%.1f" % x[0] if x else "-", "%.1f" % y[0] if y else "-"))
        print("# 4 ranks, rs_ce_pipe chunk %s bytes: %s" % (m.group(1),
                                                          "; ".join(cells)))
    rows = tune_rows(os.path.join(d, "tune.n4.txt"))
    for coll, key in (("broadcast", "broadcast"), ("all_to_all", "alltoall")):
        print("# %s at 4 ranks: us (symheap-tune; all-to-all: bytes per block) "
              "vs NCCL" % coll)
        for b in (1 << 20, 16 << 20, 64 << 20, 256 << 20):
            v = rows.get((coll, 4, b)) or {}
            nc = pcoll.get("nccl_%s_us_%d" % (key, b))
            print("%-6s %s  NCCL %s" % ("%dM" % (b >> 20), "  ".join(
                "%s %.1f" % (a, us) for a, us in sorted(v.items())),
                "%.1f" % nc if nc else "-"))

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")

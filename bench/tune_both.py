"""One all-reduce table for eager calls and CUDA graphs alike: from a tuning
run's eager and graph timings (symheap-tune --all, the same rank count),
take at each size the variant whose worse ratio to that mode's best is the
smallest (so AUTO is near the best in both where one variant allows it),
and put its rows in place of the all_reduce rows of the eager run's table
(symheap-tune --out); sizes the graph run did not time keep the eager
choice.  Prints each size's choice and its two ratios.
  python3 bench/tune_both.py EAGER_ALL.tsv GRAPH_ALL.tsv EAGER_TABLE.tsv OUT.tsv"""
import csv
import sys


def load(path):
    """{bytes: {variant: us}} of all_reduce (right results only), topology."""
    out, topo, ranks = {}, None, None
    with open(path) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["collective"] != "all_reduce":
                continue
            topo, ranks = r["topology"], r["ranks"]
            us = float(r["us"])
            if us > 0:
                out.setdefault(int(r["bytes"]), {})[r["variant"]] = us
    return out, topo, ranks


def split(v):
    """'ll128/b64/t256' -> ('ll128', 64, 256)."""
    parts = v.split("/")
    b = t = 0
    for p in parts[1:]:
        if p[0] == "b":
            b = int(p[1:])
        elif p[0] == "t":
            t = int(p[1:])
    return parts[0], b, t


def choose(E, G):
    """[(bytes, variant, eager us, eager ratio, graph ratio)] per size."""
    out = []
    for nb in sorted(E):
        e, g = E[nb], G.get(nb, {})
        be = min(e.values())
        bg = min(g.values()) if g else None
        cands = []
        for v, us in e.items():
            re_ = us / be
            rg = g[v] / bg if g and v in g else (None if g else 1.0)
            if rg is None:
                continue
            cands.append((max(re_, rg), re_, v, us, rg))
        cands.sort()
        worst, re_, v, us, rg = cands[0]
        out.append((nb, v, us, re_, rg))
    return out


def main(eall, gall, etable, outp):
    E, topo, ranks = load(eall)
    G, _, _ = load(gall)
    picks = choose(E, G)
    rows, lo = [], 0
    for i, (nb, v, us, re_, rg) in enumerate(picks):
        print("%10d %-22s eager x%.3f graph x%.3f" % (nb, v, re_, rg))
        if i + 1 < len(picks) and split(picks[i + 1][1]) == split(v):
            continue
        a, b, t = split(v)
        hi = "max" if i + 1 == len(picks) else str(nb)
        rows.append("all_reduce\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%.2f" % (
            ranks, topo, lo, hi, a, b, t, us))
        lo = nb + 1
    with open(etable) as f:
        lines = [l.rstrip("\n") for l in f]
    out, done = [], False
    for l in lines:
        if l.startswith("all_reduce\t"):
            if not done:
                out.extend(rows)
                done = True
            continue
        out.append(l)
    if not done:
        out.extend(rows)
    with open(outp, "w") as f:
        f.write("\n".join(out) + "\n")
    print("tune_both: %d all_reduce rows (eager and graph) into %s" % (
        len(rows), outp))


if __name__ == "__main__":
    main(*sys.argv[1:5])

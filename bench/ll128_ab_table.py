"""The short table of bench/ll128_ab.sh, from the files in DIR.
  python3 bench/ll128_ab_table.py DIR
1. bf16 all-reduce at 2 ranks, us per call (symheap-tune: C, slowest rank's
   median): the best ll128 variant of this tree ("new") and of BASE, each
   run's best of symheap's other algorithms, graph and eager, two runs each.
2. From Python (python_peers.py, each run): symheap AUTO against PyTorch's
   one-shot and two-shot, eager / graph, and symheap's graph over the
   better PyTorch graph (issue 30's goal: <= 0.6).
3. With the tuning run: its table's rows, and the large all-reduce's bus
   bandwidth over the copy-engine put rate (issue 29's goal: >= 0.95)."""
import glob
import json
import os
import sys

from tune_all import algo, all_reduce as tune, best


def cell(b):
    return "%6.2f %-14s" % b if b else "%6s %-14s" % ("-", "")


def ab(d):
    names = sorted({os.path.basename(f)[len("tune_graph_"):-5]
                    for f in glob.glob(os.path.join(d, "tune_graph_*[12].tsv"))})
    trees = ["new"] + sorted({n for n in names if n != "new"})
    for mode in ("graph", "eager"):
        runs = {(t, k): tune(os.path.join(d, "tune_%s_%s%d.tsv" % (mode, t, k)))
                for t in trees for k in (1, 2)}
        print("%s, 2 ranks, best ll128 variant per tree (run 1 | run 2), "
              "then the best other algorithm (new, run 1)" % mode)
        print("   bytes | " + " | ".join("%-37s" % t for t in trees) +
              " | other")
        for nb in sorted(runs[("new", 1)]):
            cells = []
            for t in trees:
                xs = [best(runs[(t, k)].get(nb, {}),
                           lambda v: v.startswith("ll128")) for k in (1, 2)]
                cells.append(" ".join(cell(x) for x in xs))
            other = best(runs[("new", 1)].get(nb, {}),
                         lambda v: not v.startswith("ll128"))
            print("%8d | %s | %s" % (nb, " | ".join(cells), cell(other)))
        print()


def peers(d):
    for p in sorted(glob.glob(os.path.join(d, "peers*", "python_peers.json"))):
        R = json.load(open(p))
        print("python_peers %s (%s): us eager / graph; goal graph <= 0.6x "
              "the better PyTorch graph" % (os.path.basename(os.path.dirname(p)),
                                           R.get("device")))
        print("   bytes | symheap (algo) | torch 1shot | torch 2shot | NCCL |"
              " g/1shot | g/2shot | g/best")
        f = lambda v: "%6.2f" % v if v else "%6s" % "-"
        for nb in R.get("sizes", []):
            g = lambda k, m: R.get("%s_%d_%s_us" % (k, nb, m))
            sg, t1, t2 = g("symheap", "graph"), g("torch_one_shot", "graph"), \
                g("torch_two_shot", "graph")
            bt = min([t for t in (t1, t2) if t] or [0])
            r = lambda a, b: "%.2f" % (a / b) if a and b else "-"
            print("%8d | %s %s (%s) | %s %s | %s %s | %s %s | %s | %s | %s" % (
                nb, f(g("symheap", "eager")), f(sg),
                R.get("symheap_algo_%d" % nb), f(g("torch_one_shot", "eager")),
                f(t1), f(g("torch_two_shot", "eager")), f(t2),
                f(g("nccl", "eager")), f(g("nccl", "graph")), r(sg, t1),
                r(sg, t2), r(sg, bt)))
        print("symheap correct on every rank:", R.get("symheap_ok_all_ranks"))
        print()


def large(d):
    bj = {}
    try:
        bj = json.load(open(os.path.join(d, "bench.json")))
    except (OSError, ValueError):
        pass
    ce = bj.get("peer_put_GBps")
    T = tune(os.path.join(d, "tune_all_eager.tsv"))
    if not T:
        return
    print("large all-reduce, 2 ranks, eager (bus GB/s = bytes / t; x the "
          "copy-engine put rate %s GB/s)" % ce)
    for nb in (64 << 20, 256 << 20, 1 << 30):
        vs = T.get(nb, {})
        cells = []
        for a in ("two_shot", "rs_ce", "rs_ce_pipe"):
            b = best(vs, algo(a))
            if b:
                bw = nb / (b[0] * 1e-6) / 1e9
                cells.append("%s %.1f (%.1f%s)" % (
                    b[1], b[0], bw, " x%.3f" % (bw / ce) if ce else ""))
        print("  %5d MiB: %s" % (nb >> 20, "; ".join(cells)))
    for mode in ("eager", "graph"):
        p = os.path.join(d, "table_%s.tsv" % mode)
        if os.path.exists(p):
            print("tuning table (%s timing), all_reduce rows:" % mode)
            for line in open(p):
                if line.startswith("all_reduce"):
                    print("  " + line.rstrip())


def table_choice(path, nb):
    """The variant name the merged table's 2-rank all_reduce row picks."""
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) < 8 or f[0] != "all_reduce" or f[1] != "2":
            continue
        hi = float("inf") if f[4] == "max" else int(f[4])
        if int(f[3]) <= nb <= hi:
            v = f[5]
            if f[6] != "0":
                v += "/b" + f[6]
            if f[7] != "0":
                v += "/t" + f[7]
            return v
    return None


def auto(d):
    """AUTO's choice (the merged table) against the best variant of the
    tuning run at each size, eager and graph (goal: within 3%)."""
    tabs = glob.glob(os.path.join(d, "tuning", "*.tsv"))
    if not tabs:
        return
    print("AUTO (merged table) vs the best of symheap's variants, 2 ranks, "
          "all-reduce (us; ratio)")
    for mode in ("eager", "graph"):
        T = tune(os.path.join(d, "tune_all_%s.tsv" % mode))
        worst = []
        for nb in sorted(T):
            v = table_choice(tabs[0], nb)
            b = best(T[nb], lambda x: True)
            t = T[nb].get(v)
            r = t / b[0] if t and b else None
            worst.append((r or 0, nb))
            print("  %s %10d  auto %-18s %8s  best %-18s %8.2f  %s" % (
                mode, nb, v, "%.2f" % t if t else "-", b[1], b[0],
                "%.3f" % r if r else "-"))
        print("  %s: worst %.3f at %d bytes" % ((mode,) + max(worst)))
    # an independent measure: symheap-bench --collectives with the merged
    # table (its own launch loop and graph) against the tuning run's best
    try:
        B = json.load(open(os.path.join(d, "bench_merged.json")))
    except (OSError, ValueError):
        return
    for mode, key in (("eager", "allreduce_auto_us_%d"),
                      ("graph", "allreduce_graph_us_%d")):
        T = tune(os.path.join(d, "tune_all_%s.tsv" % mode))
        cells = []
        for nb in sorted(T):
            a = B.get(key % nb)
            if a:
                cells.append("%d: %.2f/%.2f=%.3f" % (
                    nb, a, min(T[nb].values()), a / min(T[nb].values())))
        print("  symheap-bench auto (%s) / tuning best: %s" % (
            mode, "; ".join(cells)))


def main(d):
    ab(d)
    peers(d)
    large(d)
    auto(d)


if __name__ == "__main__":
    main(sys.argv[1])

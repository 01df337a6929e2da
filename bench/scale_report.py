"""The tables of one tuning and scale run (bench/tune_gpu.sh), from its raw
files, in three forms:
  - DATA/summary.txt: the short table the script prints last (per rank
    count and size: symheap auto, the best of its own algorithms from the
    tuning run, NCCL, PyTorch; and the ratio of auto to each);
  - SCALE_MD (a copy of docs/perf/scale.md) with the part between
    "<!-- BEGIN measured" and "<!-- END measured -->" replaced by the
    measured tables;
  - DATA/scale.png: all-reduce time against size, per rank count (when
    matplotlib is there; said otherwise).
Usage: python3 bench/scale_report.py DATA_DIR SCALE_MD_IN SCALE_MD_OUT
DATA_DIR holds n2/, n4/, ... each with coll.json (symheap-bench
--collectives), baseline.json (peers_baseline_n.py), tune-all.tsv
(symheap-tune --all), and optionally peers_collectives.json, reg.txt,
suites.txt, table-used.txt."""
import json
import os
import re
import sys

SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20,
         16 << 20, 64 << 20, 256 << 20, 1 << 30]


def human(b):
    return ("%d GiB" % (b >> 30) if b >= 1 << 30 else
            "%d MiB" % (b >> 20) if b >= 1 << 20 else "%d KiB" % (b >> 10))


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def load_tune(path):
    """{(collective, bytes): [(variant, us)]} of symheap-tune --all."""
    out = {}
    try:
        with open(path) as f:
            next(f)
            for line in f:
                c, _, _, b, v, us = line.rstrip("\n").split("\t")
                if float(us) >= 0:
                    out.setdefault((c, int(b)), []).append((v, float(us)))
    except (OSError, ValueError, StopIteration):
        pass
    return out


def num(d, k):
    v = d.get(k)
    return v if isinstance(v, (int, float)) and v > 0 else None


def fmt(v, digits=2):
    return "-" if v is None else ("%.*f" % (digits, v))


def best_own(tune, coll, b):
    rows = tune.get((coll, b), [])
    return min(rows, key=lambda r: r[1]) if rows else (None, None)


def ratio(a, b):
    return "-" if a is None or b is None else "%.2f" % (a / b)


class Run:
    def __init__(self, data, n):
        d = os.path.join(data, "n%d" % n)
        self.n = n
        self.coll = load_json(os.path.join(d, "coll.json"))
        self.base = load_json(os.path.join(d, "baseline.json"))
        self.pcoll = load_json(os.path.join(d, "peers_collectives.json"))
        self.tune = load_tune(os.path.join(d, "tune-all.tsv"))
        self.dir = d

    def text(self, name):
        try:
            with open(os.path.join(self.dir, name)) as f:
                return f.read()
        except OSError:
            return ""

    def torch_best(self, b):
        vals = [num(self.base, "torch_%s_us_%d" % (k, b))
                for k in ("one_shot", "two_shot")]
        vals = [v for v in vals if v]
        return min(vals) if vals else None


def all_reduce_rows(r):
    """(size, auto, best own (name), NCCL, PyTorch best, auto/own,
    auto/min(NCCL, PyTorch)) for sizes the sweep measured."""
    rows = []
    for b in SIZES:
        auto = num(r.coll, "allreduce_auto_us_%d" % b)
        if auto is None:
            continue
        vname, vus = best_own(r.tune, "all_reduce", b)
        nccl = num(r.base, "nccl_allreduce_us_%d" % b)
        tb = r.torch_best(b)
        peers = [v for v in (nccl, tb) if v]
        rows.append((human(b), fmt(auto), "%s %s" % (fmt(vus), vname or ""),
                     fmt(nccl), fmt(tb), ratio(auto, vus),
                     ratio(auto, min(peers) if peers else None)))
    return rows


def other_rows(r, coll, key, nccl_key):
    rows = []
    for b in SIZES:
        auto = num(r.coll, "%s_us_%d" % (key, b))
        if auto is None:
            continue
        vname, vus = best_own(r.tune, coll, b)
        nccl = num(r.pcoll, "%s_us_%d" % (nccl_key, b)) if nccl_key else None
        rows.append((human(b), fmt(auto), "%s %s" % (fmt(vus), vname or ""),
                     fmt(nccl), ratio(auto, vus), ratio(auto, nccl)))
    return rows


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def busbw(r, b):
    t = num(r.coll, "allreduce_auto_us_%d" % b)
    return None if t is None else 2.0 * (r.n - 1) / r.n * b / (t * 1e-6) / 1e9


def registration(r):
    """{size: (first, again)} from reg.txt's registration table only (it
    starts at the 'window ... first reg' header and ends at the blank line
    before the heap table, whose rows have the same shape)."""
    regs, on = {}, False
    for line in r.text("reg.txt").splitlines():
        if line.startswith("window") and "first reg" in line:
            on = True
            continue
        if on and not line.strip():
            break
        m = re.match(r"(\d+ [KMG]iB)\s+([\d.]+)\s+([\d.]+)", line)
        if on and m:
            regs[m.group(1)] = (m.group(2), m.group(3))
    return regs


def measured_md(runs, data):
    md = []
    md.append("Raw files: `%s/` (per rank count: coll.json, baseline.json, "
              "tune-all.tsv, tune.txt, peers_collectives.json, reg.txt, "
              "suites.txt); the tables AUTO used: `tuning/`." %
              os.path.basename(os.path.normpath(data)))
    for r in runs:
        used = r.text("table-used.txt").strip().splitlines()
        md.append("\n### %d ranks\n" % r.n)
        md.append("Table used by the sweep: %s\n" %
                  (used[0].strip() if used else "(not recorded)"))
        md.append("All-reduce bf16 sum, us per op, eager (best own: the "
                  "fastest of symheap's algorithms and launch variants in "
                  "the tuning run; PyTorch: the better of its one-shot and "
                  "two-shot):\n")
        md.append(table(["size", "symheap auto", "best own", "NCCL",
                         "PyTorch", "auto / own", "auto / best peer"],
                        all_reduce_rows(r)))
        g = [(human(b), fmt(num(r.coll, "allreduce_graph_us_%d" % b)))
             for b in SIZES if num(r.coll, "allreduce_graph_us_%d" % b)]
        if g:
            md.append("\nAll-reduce auto in a CUDA graph, us per op: " +
                      ", ".join("%s %s" % x for x in g) + ".")
        for title, coll, key, nk in (
                ("Reduce-scatter (bytes: each rank's output block)",
                 "reduce_scatter", "reducescatter", "nccl_reducescatter"),
                ("All-gather (bytes per rank)", "all_gather", "allgather",
                 "nccl_allgather"),
                ("Broadcast", "broadcast", "broadcast", "nccl_broadcast"),
                ("All-to-all (bytes: each block)", "all_to_all", "alltoall",
                 "nccl_alltoall")):
            rows = other_rows(r, coll, key, nk)
            if rows:
                md.append("\n%s, us per op:\n" % title)
                md.append(table(["size", "symheap auto", "best own", "NCCL",
                                 "auto / own", "auto / NCCL"], rows))
        put = num(r.coll, "peer_put_GBps")
        allp = num(r.coll, "allpeers_put_GBps")
        for b in (256 << 20, 1 << 30):
            bw = busbw(r, b)
            if bw:
                md.append("\nAll-reduce %s: bus bandwidth %.1f GB/s; copy-"
                          "engine put to one peer %s GB/s, to every peer at "
                          "once %s GB/s out of each rank: %s of the one-peer "
                          "rate." % (human(b), bw, fmt(put, 1), fmt(allp, 1),
                                     ratio(bw, put)))
        regs = registration(r)
        if regs:
            md.append("\nRegistration, ms (slowest rank, median): first / "
                      "again: " + "; ".join(
                          "%s %s / %s" % (k, *regs[k]) for k in
                          ("1 MiB", "64 MiB", "256 MiB", "1 GiB")
                          if k in regs) +
                      ". PyTorch empty + rendezvous 1 MiB / 64 MiB / 1 GiB: "
                      + " / ".join(fmt(num(r.base, "torch_symm_setup_ms_%d"
                                               % b))
                                   for b in (1 << 20, 64 << 20, 1 << 30)) +
                      ".")
        suites = r.text("suites.txt").strip()
        if suites:
            md.append("\nGPU suites at %d ranks (same run):\n\n```\n%s\n```"
                      % (r.n, suites))
    return "\n".join(md) + "\n"


def summary(runs):
    out = []
    for r in runs:
        out.append("== %d ranks: all-reduce bf16, us (auto / best own / "
                   "NCCL / PyTorch; auto/own, auto/best peer)" % r.n)
        for row in all_reduce_rows(r):
            out.append("  %-8s %9s  %-22s %9s %9s   %5s %5s" % row)
        for coll, key, nk in (("reduce_scatter", "reducescatter",
                               "nccl_reducescatter"),
                              ("all_gather", "allgather", "nccl_allgather"),
                              ("broadcast", "broadcast", "nccl_broadcast"),
                              ("all_to_all", "alltoall", "nccl_alltoall")):
            rows = other_rows(r, coll, key, nk)
            if rows:
                out.append("  %s (auto / best own / NCCL; auto/own, "
                           "auto/NCCL)" % coll)
                for row in rows:
                    out.append("    %-8s %9s  %-22s %9s   %5s %5s" % row)
    return "\n".join(out) + "\n"


def series(r):
    """(label, [(bytes, us)]) of each line of a rank count's plot."""
    out = []
    for label, src, key in (("symheap auto", r.coll, "allreduce_auto_us_%d"),
                            ("NCCL", r.base, "nccl_allreduce_us_%d")):
        out.append((label, [(b, num(src, key % b)) for b in SIZES
                            if num(src, key % b)]))
    out.append(("PyTorch (best)", [(b, r.torch_best(b)) for b in SIZES
                                   if r.torch_best(b)]))
    out.append(("symheap best own", [
        (b, best_own(r.tune, "all_reduce", b)[1]) for b in SIZES
        if best_own(r.tune, "all_reduce", b)[1]]))
    return out


def plot_svg(runs, path):
    """The same plot without matplotlib: log-log lines in plain SVG."""
    import math
    W, H, M = 460, 340, 60
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#7f7f7f"]
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" '
             'height="%d" font-family="sans-serif" font-size="11">'
             % (W * len(runs), H)]
    for i, r in enumerate(runs):
        ss = [(lab, pts) for lab, pts in series(r) if pts]
        ys = [us for _, pts in ss for _, us in pts]
        if not ys:
            continue
        lo, hi = math.log10(min(ys)), math.log10(max(ys))
        hi = hi if hi > lo else lo + 1
        x0, x1 = math.log2(SIZES[0]), math.log2(SIZES[-1])

        def xy(b, us, i=i, lo=lo, hi=hi, x0=x0, x1=x1):
            x = i * W + M + (math.log2(b) - x0) / (x1 - x0) * (W - 1.5 * M)
            y = H - M + (lo - math.log10(us)) / (hi - lo) * (H - 1.5 * M)
            return "%.1f,%.1f" % (x, y)
        parts.append('<text x="%d" y="20">%d ranks: all-reduce bf16, us per '
                     'op (log-log, %s to %s)</text>' %
                     (i * W + M, r.n, human(SIZES[0]), human(SIZES[-1])))
        parts.append('<text x="%d" y="%d">%.3g us</text><text x="%d" y="%d">'
                     '%.3g us</text>' % (i * W + 2, H - M, 10 ** lo,
                                         i * W + 2, M / 2 + 8, 10 ** hi))
        for k, (lab, pts) in enumerate(ss):
            c = colors[k % len(colors)]
            parts.append('<polyline fill="none" stroke="%s" points="%s"/>'
                         % (c, " ".join(xy(b, us) for b, us in pts)))
            parts.append('<text x="%d" y="%d" fill="%s">%s</text>' %
                         (i * W + 10 + 110 * k, H - 12, c, lab))
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))
    return "plot: %s (SVG: matplotlib is not installed)" % path


def plot(runs, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return plot_svg(runs, path[:-4] + ".svg")
    fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4.5),
                             squeeze=False)
    for ax, r in zip(axes[0], runs):
        for label, key in (("symheap auto", "allreduce_auto_us_%d"),
                           ("NCCL", "nccl_allreduce_us_%d")):
            src = r.coll if key.startswith("allreduce") else r.base
            pts = [(b, num(src, key % b)) for b in SIZES if num(src, key % b)]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=label)
        pts = [(b, r.torch_best(b)) for b in SIZES if r.torch_best(b)]
        if pts:
            ax.plot(*zip(*pts), marker="s", label="PyTorch (best)")
        pts = [(b, best_own(r.tune, "all_reduce", b)[1]) for b in SIZES
               if best_own(r.tune, "all_reduce", b)[1]]
        if pts:
            ax.plot(*zip(*pts), linestyle=":", label="symheap best own")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes")
        ax.set_ylabel("us per all-reduce (bf16)")
        ax.set_title("%d ranks" % r.n)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return "plot: %s" % path


def main():
    data, md_in, md_out = sys.argv[1:4]
    ns = sorted(int(d[1:]) for d in os.listdir(data)
                if re.fullmatch(r"n\d+", d))
    runs = [Run(data, n) for n in ns]
    with open(os.path.join(data, "summary.txt"), "w") as f:
        f.write(summary(runs))
    text = open(md_in).read()
    begin = text.find("<!-- BEGIN measured")
    end = text.find("<!-- END measured -->")
    if begin < 0 or end < begin:
        sys.exit("scale_report: %s has no BEGIN/END measured markers" % md_in)
    begin = text.index("\n", begin) + 1
    os.makedirs(os.path.dirname(os.path.abspath(md_out)), exist_ok=True)
    with open(md_out, "w") as f:
        f.write(text[:begin] + measured_md(runs, data) + text[end:])
    print(plot(runs, os.path.join(data, "scale.png")))


if __name__ == "__main__":
    main()

# The table and plot of bench/net.sh's run (docs/perf/net.md): for each
# engine, operation and size, the median over rounds of each round's median;
# symheap's ratio to the raw libfabric floor, and whether it is ahead of
# OSHMEM and MPI RMA.  The plot is an SVG written by hand (no matplotlib
# on the machines this runs on).
#   python3 bench/net_table.py DIR [OUT.svg]
import collections, glob, math, os, re, statistics, sys

d = sys.argv[1]
svg_out = sys.argv[2] if len(sys.argv) > 2 else None
# raw: the probe's target sleeps on libfabric's wait object (--passive), as
# symheap's does (the floor the goal is measured against); raw_spin: its
# target spins, shown beside it.
ENG = ["raw", "raw_spin", "adaptor", "symheap", "symheap_ucx", "oshmem", "mpi"]
NAME = {"raw": "raw libfabric", "raw_spin": "raw, spinning target",
        "adaptor": "ofi adaptor table",
        "symheap": "symheap", "symheap_ucx": "symheap (ucx adaptor)",
        "oshmem": "OSHMEM (UCX)", "mpi": "MPI RMA (UCX)"}
vals = collections.defaultdict(list)  # (engine, op, size) -> per-round
for f in sorted(glob.glob(os.path.join(d, "round*-*.txt"))):
    e = re.match(r"round\d+-(\w+)\.txt", os.path.basename(f)).group(1)
    for line in open(f):
        p = line.split()
        if len(p) == 3 and p[1].isdigit():
            try:
                vals[(e, p[0], int(p[1]))].append(float(p[2]))
            except ValueError:
                pass
med = {k: statistics.median(v) for k, v in vals.items()}
rounds = {k: len(v) for k, v in vals.items()}


def cell(e, op, s):
    v = med.get((e, op, s))
    return "-" if v is None else ("%.1f" % v if v < 1000 else "%.0f" % v)


def size(s):
    return "%d MiB" % (s >> 20) if s >= 1 << 20 else \
        "%d KiB" % (s >> 10) if s >= 1024 else "%d B" % s


OPS = [("put_quiet", "put + quiet latency (us, lower is better)", 0),
       ("get", "get latency (us, lower is better)", 0),
       ("fetch_add", "fetch-add latency (us, lower is better)", 0),
       ("put_bw", "put bandwidth (MB/s, higher is better)", 1)]
met = collections.Counter()
for op, title, higher in OPS:
    sizes = sorted({s for (e, o, s) in med if o == op})
    if not sizes:
        continue
    print("\n**%s**\n" % title)
    print("| size | " + " | ".join(NAME[e] for e in ENG) +
          " | symheap / raw | goal | ahead of OSHMEM, MPI |")
    print("|" + "---|" * (len(ENG) + 4))
    for s in sizes:
        sym, raw = med.get(("symheap", op, s)), med.get(("raw", op, s))
        ratio = sym / raw if sym and raw else None
        goal = "-" if ratio is None else (
            "met" if (ratio >= 0.9 if higher else ratio <= 1.1) else "missed")
        ahead = []
        for e in ("oshmem", "mpi"):
            o = med.get((e, op, s))
            if sym is None or o is None:
                ahead.append("-")
            else:
                ahead.append("yes" if (sym > o if higher else sym < o)
                             else "no")
        met[(op, goal)] += 1
        for e, a in zip(("oshmem", "mpi"), ahead):
            met[(op, e, a)] += 1
        print("| %s | %s | %s | %s | %s |" % (
            size(s), " | ".join(cell(e, op, s) for e in ENG),
            "-" if ratio is None else "%.2f" % ratio, goal, ", ".join(ahead)))
print("\nSummary (sizes where the goal was met / missed; ahead of OSHMEM, MPI):")
for op, _, _ in OPS:
    print("- %s: goal met %d, missed %d; ahead of OSHMEM %d/%d, of MPI %d/%d" % (
        op, met[(op, "met")], met[(op, "missed")],
        met[(op, "oshmem", "yes")],
        met[(op, "oshmem", "yes")] + met[(op, "oshmem", "no")],
        met[(op, "mpi", "yes")], met[(op, "mpi", "yes")] + met[(op, "mpi", "no")]))
print("\nRounds per cell: %s" % sorted(set(rounds.values())))

# --- the plot ---------------------------------------------------------------
COL = {"raw": "#000000", "raw_spin": "#9467bd", "adaptor": "#7f7f7f", "symheap": "#d62728",
       "symheap_ucx": "#ff7f0e", "oshmem": "#1f77b4", "mpi": "#2ca02c"}
DASH = {"raw": "", "raw_spin": "2,3", "adaptor": "2,3", "symheap": "", "symheap_ucx": "", "oshmem": "6,3",
        "mpi": "6,3"}


def panel(x0, op, title, higher):
    W, H, L, T = 380, 300, 55, 30
    pts = {e: sorted((s, v) for (ee, o, s), v in med.items()
                     if ee == e and o == op and v > 0) for e in ENG}
    allv = [v for p in pts.values() for _, v in p]
    alls = [s for p in pts.values() for s, _ in p]
    if not allv:
        return ""
    lo, hi = math.log10(min(allv)), math.log10(max(allv))
    lo, hi = math.floor(lo), math.ceil(hi) if hi > lo else lo + 1
    sl, sh = math.log2(min(alls)), math.log2(max(alls))
    X = lambda s: x0 + L + (math.log2(s) - sl) / max(sh - sl, 1) * (W - L - 10)
    Y = lambda v: T + (hi - math.log10(v)) / (hi - lo) * (H - T - 40)
    o = ['<text x="%d" y="18" font-size="13" font-weight="bold">%s</text>'
         % (x0 + L, title)]
    for k in range(int(lo), int(hi) + 1):
        y = Y(10 ** k)
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                 % (x0 + L, x0 + W - 10, y, y))
        o.append('<text x="%d" y="%.1f" font-size="10" text-anchor="end">%g'
                 '</text>' % (x0 + L - 4, y + 3, 10 ** k))
    for s in sorted(set(alls))[::2]:
        o.append('<text x="%.1f" y="%d" font-size="9" text-anchor="middle">'
                 '%s</text>' % (X(s), H - 25, size(s).replace(" ", "")))
    o.append('<text x="%d" y="%d" font-size="10">%s</text>' % (
        x0 + L, H - 8, "message size; " + ("MB/s, higher is better" if higher
                                           else "us, lower is better")))
    for e in ENG:
        if not pts[e]:
            continue
        o.append('<polyline fill="none" stroke="%s" stroke-width="%s" '
                 'stroke-dasharray="%s" points="%s"/>' % (
                     COL[e], 2.5 if e == "symheap" else 1.5, DASH[e],
                     " ".join("%.1f,%.1f" % (X(s), Y(v)) for s, v in pts[e])))
    return "\n".join(o)


if svg_out:
    body = [panel(0, "put_quiet", "put + quiet latency", 0),
            panel(390, "get", "get latency", 0),
            panel(780, "put_bw", "put bandwidth", 1)]
    leg = []
    for i, e in enumerate(ENG):
        leg.append('<line x1="%d" x2="%d" y1="318" y2="318" stroke="%s" '
                   'stroke-width="2" stroke-dasharray="%s"/><text x="%d" '
                   'y="322" font-size="11">%s</text>' % (
                       20 + i * 190, 50 + i * 190, COL[e], DASH[e],
                       55 + i * 190, NAME[e]))
    with open(svg_out, "w") as f:
        f.write('<svg xmlns="http://www.w3.org/2000/svg" width="1170" '
                'height="335" font-family="sans-serif">\n<rect width="100%" '
                'height="100%" fill="white"/>\n' + "\n".join(body + leg) +
                "\n</svg>\n")

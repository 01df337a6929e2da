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
# target spins, shown beside it; raw_idle: its target never calls
# libfabric (the floor where the provider progresses by itself, net).
# An engine may carry a provider after '@' (raw_idle@net): bench/net.sh
# ran it on that provider instead of the run's own.
BASE = ["raw", "raw_idle", "raw_spin", "adaptor", "symheap", "symheap_noprog",
        "symheap_x", "symheap_ucx", "symheap_ucx_noprog", "oshmem", "mpi"]
NAME = {"raw": "raw libfabric", "raw_spin": "raw, spinning target",
        "raw_idle": "raw, idle target",
        "adaptor": "ofi adaptor table",
        "symheap": "symheap", "symheap_ucx": "symheap (ucx adaptor)",
        "symheap_noprog": "symheap, no progress thread",
        "symheap_ucx_noprog": "symheap (ucx adaptor), no progress thread",
        "symheap_x": "symheap, NET_BENCH_X_ENV", "oshmem": "OSHMEM (UCX)", "mpi": "MPI RMA (UCX)"}
vals = collections.defaultdict(list)  # (engine, op, size) -> per-round
for f in sorted(glob.glob(os.path.join(d, "round*-*.txt"))):
    m = re.match(r"round\d+-([\w@+.-]+)\.txt", os.path.basename(f))
    if not m:
        continue
    e = m.group(1).replace("+", ";")
    for line in open(f):
        p = line.split()
        if len(p) == 3 and p[1].isdigit():
            try:
                vals[(e, p[0], int(p[1]))].append(float(p[2]))
            except ValueError:
                pass
med = {k: statistics.median(v) for k, v in vals.items()}
rounds = {k: len(v) for k, v in vals.items()}


def split(e):
    return (e.split("@", 1) + [""])[:2]


ENG = sorted({e for (e, o, s) in med},
             key=lambda e: (BASE.index(split(e)[0]) if split(e)[0] in BASE
                            else 99, split(e)[1]))
PROVS = sorted({split(e)[1] for e in ENG})


def label(e):
    b, p = split(e)
    n = NAME.get(b, b)
    return n + (" [%s]" % p if p and len(PROVS) > 1 else "")


def floor(prov):
    """The raw floor symheap on `prov` is held to: an idle target where
    one was measured (a provider that progresses by itself), else the
    passive one (symheap's target sleeps on the wait object)."""
    at = "@" + prov if prov else ""
    for b in ("raw_idle", "raw"):
        if any(e == b + at for e in ENG):
            return b + at
    return None


SYMS = [e for e in ENG if split(e)[0] == "symheap"]


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
    extra = []
    for y in SYMS:
        t = label(y)
        extra += ["%s / %s" % (t, label(floor(split(y)[1]) or "raw")),
                  "goal", "ahead of OSHMEM, MPI"]
    print("| size | " + " | ".join(label(e) for e in ENG) + " | " +
          " | ".join(extra) + " |")
    print("|" + "---|" * (len(ENG) + 1 + len(extra)))
    for s in sizes:
        row = []
        for y in SYMS:
            f = floor(split(y)[1])
            sym, raw = med.get((y, op, s)), med.get((f, op, s))
            ratio = sym / raw if sym and raw else None
            goal = "-" if ratio is None else (
                "met" if (ratio >= 0.9 if higher else ratio <= 1.1)
                else "missed")
            ahead = []
            for e in ("oshmem", "mpi"):
                o = med.get((e, op, s))
                if sym is None or o is None:
                    ahead.append("-")
                else:
                    ahead.append("yes" if (sym > o if higher else sym < o)
                                 else "no")
            met[(y, op, goal)] += 1
            for e, a in zip(("oshmem", "mpi"), ahead):
                met[(y, op, e, a)] += 1
            row += ["-" if ratio is None else "%.2f" % ratio, goal,
                    ", ".join(ahead)]
        print("| %s | %s | %s |" % (
            size(s), " | ".join(cell(e, op, s) for e in ENG), " | ".join(row)))
print("\nSummary (sizes where the goal was met / missed; ahead of OSHMEM, MPI):")
for y in SYMS:
    for op, _, _ in OPS:
        print("- %s%s: goal met %d, missed %d; ahead of OSHMEM %d/%d, of MPI "
              "%d/%d" % (label(y) + " " if len(SYMS) > 1 else "", op,
                         met[(y, op, "met")], met[(y, op, "missed")],
                         met[(y, op, "oshmem", "yes")],
                         met[(y, op, "oshmem", "yes")] +
                         met[(y, op, "oshmem", "no")],
                         met[(y, op, "mpi", "yes")],
                         met[(y, op, "mpi", "yes")] + met[(y, op, "mpi", "no")]))
print("\nRounds per cell: %s" % sorted(set(rounds.values())))

# --- the plot ---------------------------------------------------------------
COLS = {"raw": "#000000", "raw_idle": "#8c564b", "raw_spin": "#9467bd",
        "adaptor": "#7f7f7f", "symheap": "#d62728",
        "symheap_noprog": "#ff7f0e", "symheap_x": "#17becf", "symheap_ucx": "#e377c2",
        "symheap_ucx_noprog": "#e377c2", "oshmem": "#1f77b4", "mpi": "#2ca02c"}
DASHES = {"raw": "", "raw_idle": "", "raw_spin": "2,3", "adaptor": "2,3",
          "symheap": "", "symheap_noprog": "2,3", "symheap_x": "4,2", "symheap_ucx": "",
          "symheap_ucx_noprog": "2,3", "oshmem": "6,3", "mpi": "6,3"}
# A second provider's lines: the same colour, lighter and dotted.
COL = {e: COLS.get(split(e)[0], "#bcbd22") for e in ENG}
DASH = {e: (DASHES.get(split(e)[0], "") if not split(e)[1] or
            split(e)[1] == PROVS[0] else "1,2") for e in ENG}


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
                     COL[e], 2.5 if split(e)[0] == "symheap" else 1.5, DASH[e],
                     " ".join("%.1f,%.1f" % (X(s), Y(v)) for s, v in pts[e])))
    return "\n".join(o)


if svg_out:
    body = [panel(0, "put_quiet", "put + quiet latency", 0),
            panel(390, "get", "get latency", 0),
            panel(780, "put_bw", "put bandwidth", 1)]
    leg = []
    for i, e in enumerate(ENG):
        x, y = 20 + i % 6 * 190, 318 + i // 6 * 16  # six a line
        leg.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" '
                   'stroke-width="2" stroke-dasharray="%s"/><text x="%d" '
                   'y="%d" font-size="11">%s</text>' % (
                       x, x + 30, y, y, COL[e], DASH[e], x + 35, y + 4,
                       label(e)))
    with open(svg_out, "w") as f:
        f.write('<svg xmlns="http://www.w3.org/2000/svg" width="1170" '
                'height="%d" font-family="sans-serif">\n<rect width="100%%" '
                'height="100%%" fill="white"/>\n' % (335 + (len(ENG) - 1) // 6
                                                     * 16) +
                "\n".join(body + leg) + "\n</svg>\n")

#!/usr/bin/env python3
"""An SVG plot of OSU run.sh outputs (bench/openshmem.sh osu), written by
hand: the project adds no plotting dependency (matplotlib is not installed
where the benchmarks run).

Usage: osu_plot.py OUT.svg LABEL=FILE...

One panel per (benchmark, PEs): put and get latency (heap) at 2 PEs, then
broadcast, reduce, fcollect and collect at 2 and 4 PEs; latency (us)
against size (bytes), both axes logarithmic, a line per run."""
import math
import sys

from osu_tables import parse, runs

PANELS = [("osu_oshm_put heap@2", "put (heap), 2 PEs"),
          ("osu_oshm_get heap@2", "get (heap), 2 PEs")]
for b in ("broadcast", "reduce", "fcollect", "collect"):
    for n in (2, 4):
        PANELS.append((f"osu_oshm_{b}@{n}", f"{b}, {n} PEs"))
COLOURS = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e"]
W, H, PAD_L, PAD_B, PAD_T, PAD_R = 330, 230, 52, 34, 22, 10


def points(rows):
    pts = []
    for k, v in rows.items():
        try:
            x, y = int(k), float(v)
        except ValueError:
            continue
        if x > 0 and y > 0:
            pts.append((x, y))
    return sorted(pts)


def panel(ox, oy, title, series):
    out = [f'<text x="{ox + W / 2}" y="{oy + 14}" text-anchor="middle" '
           f'font-size="12">{title}</text>']
    allp = [p for _, pts in series for p in pts]
    if not allp:
        return out
    lx = [math.log10(x) for x, _ in allp]
    ly = [math.log10(y) for _, y in allp]
    x0, x1 = math.floor(min(lx)), math.ceil(max(lx))
    y0, y1 = math.floor(min(ly)), math.ceil(max(ly))
    x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)
    pw, ph = W - PAD_L - PAD_R, H - PAD_T - PAD_B

    def px(x):
        return ox + PAD_L + (math.log10(x) - x0) / (x1 - x0) * pw

    def py(y):
        return oy + PAD_T + ph - (math.log10(y) - y0) / (y1 - y0) * ph
    out.append(f'<rect x="{ox + PAD_L}" y="{oy + PAD_T}" width="{pw}" '
               f'height="{ph}" fill="none" stroke="#888"/>')
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{ox + PAD_L}" x2="{ox + PAD_L + pw}" y1="{y:.1f}" '
                   f'y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{ox + PAD_L - 4}" y="{y + 4:.1f}" text-anchor="end" '
                   f'font-size="10">{10.0 ** e:g}</text>')
    for e in range(x0, x1 + 1, max(1, (x1 - x0) // 4)):
        x = px(10 ** e)
        out.append(f'<text x="{x:.1f}" y="{oy + PAD_T + ph + 13}" '
                   f'text-anchor="middle" font-size="10">{10 ** e:g}</text>')
    out.append(f'<text x="{ox + PAD_L + pw / 2}" y="{oy + H - 4}" '
               f'text-anchor="middle" font-size="10">bytes</text>')
    out.append(f'<text x="{ox + 12}" y="{oy + PAD_T + ph / 2}" font-size="10" '
               f'transform="rotate(-90 {ox + 12} {oy + PAD_T + ph / 2})" '
               f'text-anchor="middle">us</text>')
    for i, (_, pts) in enumerate(series):
        if pts:
            d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{d}" fill="none" stroke-width="1.5" '
                       f'stroke="{COLOURS[i % len(COLOURS)]}"/>')
    return out


def main():
    outp = sys.argv[1]
    data = [(label, parse(path)[0]) for label, path in runs(sys.argv[2:])]
    cols = 2
    nrows = (len(PANELS) + cols - 1) // cols
    legend_h = 20 * len(data) + 10
    total_w, total_h = cols * W, nrows * H + legend_h
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" '
           f'height="{total_h}" font-family="sans-serif">',
           f'<rect width="{total_w}" height="{total_h}" fill="white"/>']
    for i, (label, _) in enumerate(data):
        y = 16 + 20 * i
        svg.append(f'<line x1="20" x2="50" y1="{y - 4}" y2="{y - 4}" '
                   f'stroke="{COLOURS[i % len(COLOURS)]}" stroke-width="2"/>')
        svg.append(f'<text x="56" y="{y}" font-size="12">{label}</text>')
    for k, (sec, title) in enumerate(PANELS):
        series = [(label, points(d.get(sec, {"rows": {}})["rows"]))
                  for label, d in data]
        svg += panel((k % cols) * W, legend_h + (k // cols) * H, title, series)
    svg.append("</svg>")
    with open(outp, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()

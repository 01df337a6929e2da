# Plot all-reduce latency and bus bandwidth against size: symheap (from
# symheap-bench --collectives --json) beside NCCL and PyTorch symmetric memory
# (from peers_baseline.py's baseline.json), measured in the same run.
#   python3 bench/plot_coll.py coll.json baseline.json out.png "2x H200, 2026-11-22"
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

ours = json.load(open(sys.argv[1]))
base = json.load(open(sys.argv[2]))
out, title = sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else ""
n = 2

def series(d, prefix):
    pts = sorted((int(k[len(prefix):]), v) for k, v in d.items()
                 if k.startswith(prefix) and isinstance(v, (int, float)) and v > 0)
    return [p[0] for p in pts], [p[1] for p in pts]

lines = [
    ("symheap (auto)", ours, "allreduce_auto_us_", "o-"),
    ("symheap two-shot", ours, "allreduce_two_us_", "x:"),
    ("NCCL", base, "nccl_allreduce_us_", "s-"),
    ("PyTorch one-shot", base, "torch_one_shot_us_", "^--"),
    ("PyTorch two-shot", base, "torch_two_shot_us_", "v--"),
]
fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
for name, d, prefix, style in lines:
    xs, ys = series(d, prefix)
    if not xs:
        continue
    a1.plot(xs, ys, style, label=name)
    a2.plot(xs, [2 * (n - 1) / n * x / (y * 1e-6) / 1e9 for x, y in zip(xs, ys)],
            style, label=name)
for a in (a1, a2):
    a.set_xscale("log", base=2)
    a.set_xlabel("all-reduce size (bytes, bf16 sum)")
    a.grid(True, which="both", alpha=0.3)
a1.set_yscale("log")
a1.set_ylabel("time per op (us, lower is better)")
a2.set_ylabel("bus bandwidth (GB/s, higher is better)")
a1.legend()
a2.legend()
fig.suptitle("all-reduce, " + title)
fig.tight_layout()
fig.savefig(out, dpi=110)
print("wrote", out)

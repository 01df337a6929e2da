"""The short table of bench/gpumid_check.sh: bf16 all-reduce, us per call,
eager and in a CUDA graph, at each rank count and size: the best of
symheap's barrier-framed kernels (one_shot / two_shot / rs_ce, any launch
variant), the best push kernel (one_shot_push / two_shot_push), both from
symheap-tune (C, slowest rank's median), and PyTorch's
torch.ops.symm_mem one_shot / two_shot (bench/python_peers.py, from Python).
    python3 bench/gpumid_table.py DIR"""
import json
import os
import sys

from tune_all import all_reduce as tune, best


def kind(v):
    return "ll128" if v.startswith("ll128") else \
        "push" if "push" in v else "old"


def fmt(b):
    return "%7.2f %-22s" % b if b else "%7s %-22s" % ("-", "")


def main(d):
    print("bf16 all-reduce, us per call (symheap: symheap-tune, C; torch: "
          "python_peers.py, Python)")
    for mode in ("eager", "graph"):
        print("\n%s | ranks bytes | old best (variant) | push best (variant)"
              " | ll128 best (variant) | torch 1shot | torch 2shot | best/old"
              " | best/min(torch) | best/torch 1shot" % mode)
        for n in (2, 4):
            T = tune(os.path.join(d, "tune_%s_n%d.tsv" % (mode, n)))
            J = {}
            p = os.path.join(d, "torch_n%d" % n, "python_peers.json")
            if os.path.exists(p):
                J = json.load(open(p))
            for nb in sorted(T):
                o, q, l = (best(T[nb], lambda v, k=k: kind(v) == k)
                               for k in ("old", "push", "ll128"))
                t1 = J.get("torch_one_shot_%d_%s_us" % (nb, mode))
                t2 = J.get("torch_two_shot_%d_%s_us" % (nb, mode))
                ts = [t for t in (t1, t2) if t]
                b = min(x for x in (o, q, l) if x) if (o or q or l) else None
                r1 = "%.2f" % (b[0] / o[0]) if o and b else "-"
                r2 = "%.2f" % (b[0] / min(ts)) if b and ts else "-"
                r3 = "%.2f" % (b[0] / t1) if b and t1 else "-"
                print("%s | %d %8d | %s | %s | %s | %6s | %6s | %s | %s | %s" % (
                    mode, n, nb, fmt(o), fmt(q), fmt(l),
                    "%.2f" % t1 if t1 else "-", "%.2f" % t2 if t2 else "-",
                    r1, r2, r3))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")

"""What the bench tables read of symheap-tune --all files (a module, run by
nothing itself: bench/gpumid_table.py, bench/ll128_ab_table.py and
bench/gpularge_table.py import it)."""
import csv
import os


def all_reduce(path):
    """{bytes: {variant: us}} of the all_reduce rows of a symheap-tune --all
    file, those with right results only (us > 0); {} where there is none."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["collective"] != "all_reduce":
                continue
            us = float(r["us"])
            if us > 0:
                out.setdefault(int(r["bytes"]), {})[r["variant"]] = us
    return out


def best(vs, pred):
    """(us, variant) of the fastest of {variant: us} that pred(variant)
    accepts; None where it accepts none."""
    c = [(us, v) for v, us in vs.items() if pred(v)]
    return min(c) if c else None


def algo(a):
    """A pred for best: the variants of algorithm a ("rs_ce", "rs_ce/b64")."""
    return lambda v: v == a or v.startswith(a + "/")

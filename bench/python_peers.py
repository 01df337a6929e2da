"""symheap's all-reduce from Python next to PyTorch symmetric memory's
one-shot/two-shot all-reduce (on PyTorch's default backend, and on the
"SYMHEAP" backend: PyTorch's own kernels on symheap memory, symheap.torch)
and NCCL's all_reduce, in ONE Python process per rank, on the same sizes
(bf16, 4 KiB to 256 MiB), each eager (a launch loop) and inside a CUDA graph
(CALLS calls captured once, replayed), so that the Python launch overhead is
the same for all.  Median of 5 repeats, in us per call.  Also a warm
symm_mem.empty + rendezvous of 64 MiB on both backends (ms, median of 10).
NVLink multicast stays off.

    python3 bench/python_peers.py [--ranks N] [--sizes 4K,64K,...] [--quick]
                                  [--no-symheap-backend]

A process can use one SymmetricMemory backend only, so the ranks are spawned
twice: the default backend's run (symheap, PyTorch default, NCCL), then the
SYMHEAP backend's (PyTorch's ops on symheap memory; its comm joins through
torch.distributed's store: no symheap-run).  Without symheap.torch built, the
second run's columns say why.

Spawns N ranks (default: one per GPU, at least 2) with torch.multiprocessing.
With fewer GPUs than ranks, ranks share GPUs: NCCL refuses that, so its rows
say so, and the times measure nothing but correctness (symheap's results are
checked in every configuration).  Prints a table; writes JSON to
$OUT/python_peers.json (OUT defaults to /tmp).  PYTHONPATH must reach the
symheap package (build/lib/python3/site-packages).
"""
import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time

for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST",
               "1"), ("NVSHMEM_DISABLE_NVLS", "1"),
               ("SYMHEAP_DISABLE_MULTICAST", "1")):
    os.environ[_k] = _v

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

CALLS = 20  # calls captured in one graph


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1].upper()] if s[-1].upper() in mult \
        else int(s)


def timeit(fn, iters, reps=5):
    """Median us per fn() over reps timed loops of iters calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    out = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        dist.barrier()
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e) * 1000 / iters)
    return statistics.median(out)


def graphed(fn):
    """A replay of CALLS fn() captured in one CUDA graph, and the graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # warm outside the capture (lazy setup)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(CALLS):
            fn()
    return g


def measure(R, key, fn, iters):
    """Eager and graph times of fn into R[key + "_eager_us"/"_graph_us"];
    an error is recorded instead of a time."""
    try:
        R[key + "_eager_us"] = timeit(fn, iters)
    except Exception as e:  # a method unavailable here: say why
        R[key + "_eager_err"] = repr(e)[:200]
        return
    try:
        g = graphed(fn)
        R[key + "_graph_us"] = timeit(g.replay, max(1, iters // CALLS)) / CALLS
        del g
    except Exception as e:
        R[key + "_graph_err"] = repr(e)[:200]


def bench_symheap(R, comm, nb, iters):
    import symheap
    n = nb // 2
    with comm.empty((2, n), "bfloat16") as w:
        inp, out = w.local[0], w.local[1]
        # Correctness first: small integers, exact in bf16.
        g = torch.Generator().manual_seed(comm.rank)
        x = torch.randint(-8, 9, (n,), generator=g).to(torch.bfloat16)
        inp.copy_(x.cuda())
        symheap.cuda.all_reduce(inp, out=out)
        torch.cuda.synchronize()
        ref = x.float()  # the reference: torch.distributed's sum
        if dist.get_backend() == "nccl":
            ref = ref.cuda()
        dist.all_reduce(ref)
        ref = ref.cuda()
        R["symheap_ok_%d" % nb] = bool(torch.equal(out.float(), ref))
        inp.normal_()  # never time on zeros
        try:
            R["symheap_algo_%d" % nb] = symheap.cuda.all_reduce_algo(inp)
        except Exception as e:  # noqa: BLE001 -- an algo this table lacks
            R["symheap_algo_%d" % nb] = "? (%s)" % repr(e)[:40]
        fn = functools.partial(symheap.cuda.all_reduce, inp, out=out)
        measure(R, "symheap_%d" % nb, fn, iters)
        R["symheap_path"] = symheap._hot.path()
        if symheap.cuda._bound():  # the same call through ctypes, eager
            symheap.cuda._fast_bound = False
            try:
                R["symheap_ctypes_%d_eager_us" % nb] = timeit(fn, iters)
            finally:
                symheap.cuda._fast_bound = True
        torch.cuda.synchronize()
        del fn, inp, out  # free() refuses while tensors over it live


def bench_torch_symm(R, rank, nb, iters, gname, tag="torch"):
    """PyTorch's one-shot (out variant where there is one) and two-shot on
    the backend this process set; `tag` names the keys."""
    import torch.distributed._symmetric_memory as symm_mem
    n = nb // 2
    try:
        t = symm_mem.empty(n, dtype=torch.bfloat16, device="cuda")
        # Correctness: small integers, exact in bf16; the sum is known.
        t.fill_(rank + 1)
        symm_mem.rendezvous(t, gname)
        torch.cuda.synchronize()
        dist.barrier()
        got = torch.ops.symm_mem.one_shot_all_reduce(t, "sum", gname) \
            if nb <= (4 << 20) else None
        want = dist.get_world_size() * (dist.get_world_size() + 1) // 2
        if got is not None:
            R["%s_ok_%d" % (tag, nb)] = bool((got == want).all())
        torch.cuda.synchronize()
        dist.barrier()
        t.normal_()
    except Exception as e:
        R["%s_symm_err_%d" % (tag, nb)] = repr(e)[:200]
        return
    ops = torch.ops.symm_mem
    if nb <= (4 << 20):
        out = torch.empty_like(t)
        if hasattr(ops, "one_shot_all_reduce_out"):
            fn = (lambda: ops.one_shot_all_reduce_out(t, "sum", gname, out))
        else:
            fn = (lambda: ops.one_shot_all_reduce(t, "sum", gname))
        measure(R, "%s_one_shot_%d" % (tag, nb), fn, iters)
    measure(R, "%s_two_shot_%d" % (tag, nb),
            lambda: ops.two_shot_all_reduce_(t, "sum", gname), iters)


def empty_rendezvous(R, tag, gname, nbytes=64 << 20, runs=12):
    """A warm symm_mem.empty + rendezvous of nbytes (the first two runs are
    the warm-up): median and min ms into R[tag + "_empty_rdv_ms"/_min]."""
    import torch.distributed._symmetric_memory as symm_mem
    times = []
    try:
        for i in range(runs):
            dist.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            t = symm_mem.empty(nbytes // 2, dtype=torch.bfloat16,
                               device="cuda")
            h = symm_mem.rendezvous(t, gname)
            torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            del h, t
            if i >= 2:
                times.append(dt * 1e3)
    except Exception as e:  # noqa: BLE001
        R[tag + "_empty_rdv_err"] = repr(e)[:200]
        return
    R[tag + "_empty_rdv_ms"] = statistics.median(times)
    R[tag + "_empty_rdv_min_ms"] = min(times)


def worker_symheap_backend(rank, world, sizes, quick, gname, res_path):
    """The SYMHEAP backend's run: PyTorch's ops on symheap memory."""
    R = {}
    try:
        import symheap.torch as sht
        import torch.distributed._symmetric_memory as symm_mem
        symm_mem.set_backend("SYMHEAP")
        sht.init(torch.cuda.current_device())  # through torch's store
        try:
            symm_mem.enable_symm_mem_for_group(gname)
        except Exception:  # noqa: BLE001 -- newer torch: every group is
            pass
    except Exception as e:  # noqa: BLE001 -- not built here: say why
        R["sh_err"] = repr(e)[:300]
        sizes = []
    for nb in sizes:
        iters = (20 if nb <= (1 << 20) else 5) if quick else \
            (200 if nb <= (1 << 20) else 20)
        bench_torch_symm(R, rank, nb, iters, gname, tag="sh")
        torch.cuda.synchronize()
        dist.barrier()
    if sizes:
        empty_rendezvous(R, "sh", gname)
    if rank == 0:
        with open(res_path, "w") as f:
            json.dump(R, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def worker(rank, world, sizes, quick, path, res_path, symm_backend):
    ndev = torch.cuda.device_count()
    torch.cuda.set_device(rank % ndev)
    shared = ndev < world
    backend = "gloo" if shared else "nccl"
    kw = {} if shared else {"device_id": torch.device("cuda", rank % ndev)}
    dist.init_process_group(backend, init_method="file://" + path, rank=rank,
                            world_size=world, **kw)
    gname = dist.group.WORLD.group_name
    if symm_backend == "SYMHEAP":
        return worker_symheap_backend(rank, world, sizes, quick, gname,
                                      res_path)
    import symheap
    comm = symheap.init_torch()
    try:
        import torch.distributed._symmetric_memory as symm_mem
        symm_mem.enable_symm_mem_for_group(gname)
    except Exception:
        pass
    R = {"ranks": world, "gpus": ndev, "backend": backend,
         "device": torch.cuda.get_device_name(), "torch": torch.__version__,
         "sizes": sizes}
    for nb in sizes:
        iters = (20 if nb <= (1 << 20) else 5) if quick else \
            (200 if nb <= (1 << 20) else 20)
        bench_symheap(R, comm, nb, iters)
        bench_torch_symm(R, rank, nb, iters, gname)
        if shared:
            R["nccl_err_%d" % nb] = "ranks share a GPU: NCCL refuses"
        else:
            x = torch.randn(nb // 2, dtype=torch.bfloat16, device="cuda")
            measure(R, "nccl_%d" % nb, lambda: dist.all_reduce(x), iters)
        torch.cuda.synchronize()
        dist.barrier()
    empty_rendezvous(R, "torch", gname)
    ok = [bool(v) for k, v in R.items() if k.startswith("symheap_ok_")]
    flags = [None] * world
    dist.all_gather_object(flags, all(ok))
    R["symheap_ok_all_ranks"] = all(flags)
    if rank == 0:
        with open(res_path, "w") as f:
            json.dump(R, f, indent=1)
    comm.destroy()
    dist.barrier()
    dist.destroy_process_group()


def table(R):
    def cell(key, w=7):
        if key + "_us" in R:
            return "%*.1f" % (w, R[key + "_us"])
        return "%*s" % (w, "-")

    def ok(key):
        v = R.get(key)
        return "-" if v is None else ("ok" if v else "WRONG")
    print("ranks %d on %d GPU(s) (%s), torch %s, backend %s" %
          (R["ranks"], R["gpus"], R["device"], R["torch"], R["backend"]))
    print("us per bf16 all-reduce (median of 5), eager/graph; symheap: "
          "symheap.cuda.all_reduce (entry: %s; ctypes: the same call through "
          "ctypes, eager); 1shot/2shot: torch.ops.symm_mem.one_shot_all_reduce"
          " / two_shot_all_reduce_ on PyTorch's default backend (dflt) and on "
          "SYMHEAP (shp)" % R.get("symheap_path", "?"))
    cols = ("symheap", "1shot dflt", "1shot shp", "2shot dflt", "2shot shp",
            "nccl")
    print("%9s | %s | %7s | %s" % ("bytes", " | ".join(
        "%15s" % c for c in cols), "ctypes", "results sym/dflt/shp algo"))
    keys = ("symheap_%d", "torch_one_shot_%d", "sh_one_shot_%d",
            "torch_two_shot_%d", "sh_two_shot_%d", "nccl_%d")
    for nb in R["sizes"]:
        print("%9d | %s | %s | %s/%s/%s %s" % (
            nb, " | ".join("%s %s" % (cell((k % nb) + "_eager"),
                                      cell((k % nb) + "_graph"))
                           for k in keys),
            cell("symheap_ctypes_%d_eager" % nb),
            ok("symheap_ok_%d" % nb), ok("torch_ok_%d" % nb),
            ok("sh_ok_%d" % nb), R.get("symheap_algo_%d" % nb, "")))
    for tag, name in (("torch", "default"), ("sh", "SYMHEAP")):
        if tag + "_empty_rdv_ms" in R:
            print("symm_mem.empty + rendezvous 64 MiB, warm, %s backend: "
                  "median %.3f ms (min %.3f)" % (
                      name, R[tag + "_empty_rdv_ms"],
                      R[tag + "_empty_rdv_min_ms"]))
    if "torch_empty_rdv_ms" in R and "sh_empty_rdv_ms" in R:
        print("  SYMHEAP / default: %.2fx (goal <= 0.2x)" %
              (R["sh_empty_rdv_ms"] / R["torch_empty_rdv_ms"]))
    errs = {k: v for k, v in R.items() if "_err" in k}
    for k, v in sorted(errs.items()):
        print("  %s: %s" % (k, v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int,
                    default=max(2, torch.cuda.device_count()))
    ap.add_argument("--sizes", default="4K,64K,1M,16M,256M")
    ap.add_argument("--quick", action="store_true",
                    help="fewer iterations (a correctness run)")
    ap.add_argument("--no-symheap-backend", action="store_true",
                    help="skip the SYMHEAP backend's run")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP python_peers: no GPU")
        return 0
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    out = os.environ.get("OUT", "/tmp")
    res = os.path.join(out, "python_peers.json")
    def run(symm_backend, res_path):
        fd, path = tempfile.mkstemp(prefix="symheap-bench-")
        os.close(fd)
        os.unlink(path)
        mp.spawn(worker, args=(a.ranks, sizes, a.quick, path, res_path,
                               symm_backend), nprocs=a.ranks)
        with open(res_path) as f:
            return json.load(f)
    R = run("default", res)
    if a.no_symheap_backend:
        R["sh_err"] = "not run (--no-symheap-backend)"
    elif R["gpus"] < a.ranks:
        R["sh_err"] = "not run: ranks share a GPU"
    else:
        try:
            R.update(run("SYMHEAP", res + ".symheap"))
        except Exception as e:  # noqa: BLE001 -- the first run stands
            R["sh_err"] = "the SYMHEAP run failed: %s" % repr(e)[:200]
        with open(res, "w") as f:
            json.dump(R, f, indent=1)
    table(R)
    print("symheap results correct on every rank: %s" %
          R["symheap_ok_all_ranks"])
    return 0 if R["symheap_ok_all_ranks"] else 1


if __name__ == "__main__":
    sys.exit(main())

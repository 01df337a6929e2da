"""symheap's all-reduce from Python next to PyTorch symmetric memory's
one-shot/two-shot all-reduce and NCCL's all_reduce, in ONE Python process per
rank, on the same sizes (bf16, 4 KiB to 256 MiB), each eager (a launch loop)
and inside a CUDA graph (CALLS calls captured once, replayed), so that the
Python launch overhead is the same for all.  Median of 5 repeats, in us per
call.  NVLink multicast stays off.

    python3 bench/python_peers.py [--ranks N] [--sizes 4K,64K,...] [--quick]

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
        R["symheap_algo_%d" % nb] = symheap.cuda.all_reduce_algo(inp)
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


def bench_torch_symm(R, rank, nb, iters, gname):
    import torch.distributed._symmetric_memory as symm_mem
    n = nb // 2
    try:
        t = symm_mem.empty(n, dtype=torch.bfloat16, device="cuda")
        t.normal_()
        symm_mem.rendezvous(t, gname)
    except Exception as e:
        R["torch_symm_err_%d" % nb] = repr(e)[:200]
        return
    ops = torch.ops.symm_mem
    if nb <= (4 << 20):
        out = torch.empty_like(t)
        if hasattr(ops, "one_shot_all_reduce_out"):
            fn = (lambda: ops.one_shot_all_reduce_out(t, "sum", gname, out))
        else:
            fn = (lambda: ops.one_shot_all_reduce(t, "sum", gname))
        measure(R, "torch_one_shot_%d" % nb, fn, iters)
    measure(R, "torch_two_shot_%d" % nb,
            lambda: ops.two_shot_all_reduce_(t, "sum", gname), iters)


def worker(rank, world, sizes, quick, path, res_path):
    ndev = torch.cuda.device_count()
    torch.cuda.set_device(rank % ndev)
    shared = ndev < world
    backend = "gloo" if shared else "nccl"
    kw = {} if shared else {"device_id": torch.device("cuda", rank % ndev)}
    dist.init_process_group(backend, init_method="file://" + path, rank=rank,
                            world_size=world, **kw)
    import symheap
    comm = symheap.init_torch()
    gname = dist.group.WORLD.group_name
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
    def cell(key):
        for suffix in ("_us",):
            if key + suffix in R:
                return "%9.1f" % R[key + suffix]
        return "%9s" % "-"
    print("ranks %d on %d GPU(s) (%s), torch %s, backend %s" %
          (R["ranks"], R["gpus"], R["device"], R["torch"], R["backend"]))
    print("us per bf16 all-reduce (median of 5); eager | CUDA graph; "
          "symheap's Python entry: %s (ctypes: the same call through "
          "ctypes, eager)" % R.get("symheap_path", "?"))
    print("%9s %9s %9s %9s | %9s %9s | %9s %9s | %9s %9s | %s" % (
        "bytes", "symheap", "ctypes", "graph", "t.1shot", "graph", "t.2shot",
        "graph", "nccl", "graph", "symheap result"))
    for nb in R["sizes"]:
        print("%9d %s %s %s | %s %s | %s %s | %s %s | %s %s" % (
            nb, cell("symheap_%d_eager" % nb),
            cell("symheap_ctypes_%d_eager" % nb),
            cell("symheap_%d_graph" % nb),
            cell("torch_one_shot_%d_eager" % nb),
            cell("torch_one_shot_%d_graph" % nb),
            cell("torch_two_shot_%d_eager" % nb),
            cell("torch_two_shot_%d_graph" % nb),
            cell("nccl_%d_eager" % nb), cell("nccl_%d_graph" % nb),
            "ok" if R.get("symheap_ok_%d" % nb) else "WRONG",
            R.get("symheap_algo_%d" % nb, "")))
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
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP python_peers: no GPU")
        return 0
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    out = os.environ.get("OUT", "/tmp")
    res = os.path.join(out, "python_peers.json")
    fd, path = tempfile.mkstemp(prefix="symheap-bench-")
    os.close(fd)
    os.unlink(path)
    mp.spawn(worker, args=(a.ranks, sizes, a.quick, path, res),
             nprocs=a.ranks)
    with open(res) as f:
        R = json.load(f)
    table(R)
    print("symheap results correct on every rank: %s" %
          R["symheap_ok_all_ranks"])
    return 0 if R["symheap_ok_all_ranks"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""torch.ops.symheap.* (bindings/python/symheap/ops.py) on cuda, one rank
per process, under symheap-run or torchrun (symheap.init() then joins
through torch's store):
    build/bin/symheap-run -n 2 python3 test/python/test_torch_ops.py
    python3 -m torch.distributed.run --nproc-per-node 2 test/python/test_torch_ops.py
Each op against the result computed on the CPU from every rank's inputs
(known to all: seeded by rank), captured in a CUDA graph and replayed, and
under torch.compile(fullgraph=True).  Skips, saying
so, without torch >= 2.4, a GPU or libsymheap_cuda.so."""
import hashlib
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pytest_harness import Cases, check  # noqa: E402
from pytest_harness import need_torch_cuda, skip_all  # noqa: E402

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("SYMHEAP_DISABLE_MULTICAST", "1")
TORCHRUN = "SYMHEAP_RANK" not in os.environ and "RANK" in os.environ
RANK = int(os.environ.get("SYMHEAP_RANK", os.environ.get("RANK", "0")))


torch, dist, symheap = need_torch_cuda("python-torch-ops", RANK)
try:
    import symheap.ops  # noqa: E402,F401
except ImportError as e:
    skip_all("python-torch-ops", RANK, str(e))
OPS = torch.ops.symheap


def fill(n, rank, seed=0):
    g = torch.Generator().manual_seed(1000 * seed + rank)
    return torch.randint(-8, 9, (n,), generator=g).float()


def everyone(n, seed, size):
    return [fill(n, r, seed) for r in range(size)]


def case_ops_vs_torch(comm):
    n, size, r = 4096, comm.size, comm.rank
    with comm.empty((2, n * size), "float32") as w:
        inp, out = w.local[0], w.local[1]
        xs = everyone(n * size, 1, size)
        inp.copy_(xs[r].cuda())
        # all_reduce, out of place and in place
        OPS.all_reduce(inp[:n], out[:n])
        torch.cuda.synchronize()
        want = sum(x[:n] for x in xs)
        check(torch.equal(out[:n].cpu(), want), "all_reduce")
        OPS.all_reduce_(inp[:n], "max")
        torch.cuda.synchronize()
        want = torch.stack([x[:n] for x in xs]).max(0).values
        check(torch.equal(inp[:n].cpu(), want), "all_reduce_ max")
        inp.copy_(xs[r].cuda())
        # all_gather: every rank's first n elements
        OPS.all_gather(inp[:n], out)
        torch.cuda.synchronize()
        check(torch.equal(out.cpu(), torch.cat([x[:n] for x in xs])),
              "all_gather")
        # reduce_scatter: block r of the sum
        OPS.reduce_scatter(inp, out[:n])
        torch.cuda.synchronize()
        check(torch.equal(out[:n].cpu(), sum(xs)[r * n:(r + 1) * n]),
              "reduce_scatter")
        # all_to_all: block p of rank s lands in block s of rank p
        OPS.all_to_all(inp, out)
        torch.cuda.synchronize()
        want = torch.cat([xs[s][r * n:(r + 1) * n] for s in range(size)])
        check(torch.equal(out.cpu(), want), "all_to_all")
        # broadcast from the last rank
        OPS.broadcast(inp, out, size - 1)
        torch.cuda.synchronize()
        check(torch.equal(out.cpu(), xs[size - 1]), "broadcast")
        del inp, out
        torch.cuda.synchronize()
        comm.barrier()


def case_graph(comm):
    n = 8192
    with comm.empty((2, n), "bfloat16") as w:
        inp, out = w.local[0], w.local[1]
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            OPS.all_reduce(inp, out)  # warm outside the capture
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        comm.barrier()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            OPS.all_reduce(inp, out)
        for it in range(3):
            xs = everyone(n, 10 + it, comm.size)
            inp.copy_(xs[comm.rank].to(torch.bfloat16).cuda())
            torch.cuda.synchronize()
            comm.barrier()
            g.replay()
            torch.cuda.synchronize()
            check(torch.equal(out.float().cpu(), sum(xs)), "replay %d" % it)
            comm.barrier()
        del g, inp, out
        torch.cuda.synchronize()


def case_compile(comm):
    n = 4096

    def step(x, y):
        torch.ops.symheap.all_reduce(x, y)
        return y * 2

    f = torch.compile(step, fullgraph=True)
    with comm.empty((2, n), "float32") as w:
        inp, out = w.local[0], w.local[1]
        for it in range(2):
            xs = everyone(n, 20 + it, comm.size)
            inp.copy_(xs[comm.rank].cuda())
            torch.cuda.synchronize()
            comm.barrier()
            got = f(inp, out)
            torch.cuda.synchronize()
            check(torch.equal(got.cpu(), sum(xs) * 2), "compiled %d" % it)
            check(torch.equal(out.cpu(), sum(xs)), "out %d" % it)
            comm.barrier()
        del inp, out, got
        torch.cuda.synchronize()
        torch._dynamo.reset()  # no compiled frame holds the window's tensors


def main():
    local = int(os.environ.get("SYMHEAP_LOCAL_RANK",
                               os.environ.get("LOCAL_RANK", RANK)))
    torch.cuda.set_device(local % torch.cuda.device_count())
    path = None
    if TORCHRUN:  # env://, and symheap.init() through torch's store
        dist.init_process_group("gloo")
        comm = symheap.init()
        check((comm.rank, comm.size) == (RANK, dist.get_world_size()),
              "rank/size %d/%d" % (comm.rank, comm.size))
    else:
        uid = os.environ.get("SYMHEAP_UNIQUE_ID", "x").encode()
        path = os.path.join(tempfile.gettempdir(), "symheap-ops-%s" %
                            hashlib.sha1(uid).hexdigest()[:16])
        dist.init_process_group("gloo", init_method="file://" + path,
                                rank=RANK,
                                world_size=int(os.environ["SYMHEAP_NRANKS"]))
        comm = symheap.init_torch()
    torch.cuda.set_stream(torch.cuda.Stream())
    t = Cases(comm, comm.rank)
    t.run("python-torch-ops-vs-torch", case_ops_vs_torch, comm)
    t.run("python-torch-ops-graph-replay", case_graph, comm)
    t.run("python-torch-ops-compile-fullgraph", case_compile, comm)
    comm.destroy()
    dist.barrier()
    dist.destroy_process_group()
    if RANK == 0 and path and os.path.exists(path):
        os.unlink(path)
    return t.exit()


if __name__ == "__main__":
    sys.exit(main())

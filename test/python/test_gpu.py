"""The Python package on cuda with torch tensors, one rank per process:
    build/bin/symheap-run -n 2 python3 test/python/test_gpu.py
The collectives are checked against torch.distributed (gloo, on CPU copies:
2 ranks may share one GPU, which NCCL refuses).  Skips, saying so, without
torch, a GPU or libsymheap_cuda.so."""
import hashlib
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pytest_harness import Cases, check, raises  # noqa: E402
from pytest_harness import need_torch_cuda  # noqa: E402

for var in ("NCCL_NVLS_ENABLE", "SYMHEAP_DISABLE_MULTICAST"):
    os.environ.setdefault(var, "0" if var.startswith("NCCL") else "1")

RANK = int(os.environ.get("SYMHEAP_RANK", "0"))


torch, dist, symheap = need_torch_cuda("python-gpu", RANK)


def fill(shape, rank, dtype, seed=0):
    """Small integers, exact in every dtype, different on each rank."""
    g = torch.Generator().manual_seed(1000 * seed + rank)
    return torch.randint(-8, 9, shape, generator=g).to(dtype)


def case_peers_flat(comm):
    n = comm.size
    with comm.empty((4, 1000), "float32") as w:
        loc = w.local
        check(isinstance(loc, torch.Tensor) and loc.is_cuda and
              loc.shape == (4, 1000) and loc.dtype == torch.float32,
              "local is %r" % (loc,))
        loc.copy_(fill((4, 1000), comm.rank, torch.float32).cuda())
        torch.cuda.synchronize()
        comm.barrier()
        flat = w.flat
        check(flat.shape == (n, 4, 1000), "flat %s" % (flat.shape,))
        for p in range(n):
            want = fill((4, 1000), p, torch.float32).cuda()
            check(torch.equal(w.peer(p), want), "peer(%d)" % p)
            check(torch.equal(flat[p], want), "flat[%d]" % p)
        torch.cuda.synchronize()
        comm.barrier()
        w.peer((comm.rank + 1) % n)[3, 999] = -100.0 - comm.rank
        torch.cuda.synchronize()
        comm.barrier()
        check(loc[3, 999].item() == -100.0 - (comm.rank - 1) % n,
              "a peer's store: %r" % loc[3, 999].item())
        a = torch.from_dlpack(w)
        check(a.data_ptr() == loc.data_ptr(), "DLPack is not the window")
        comm.barrier()
        del loc, flat, a


def case_register(comm):
    x = comm.alloc((3, 512), "bfloat16")
    check(x.is_cuda and x.dtype == torch.bfloat16, "alloc %r" % (x,))
    x.fill_(comm.rank + 1)
    torch.cuda.synchronize()
    with comm.register(x) as w:
        check(w.local.data_ptr() == x.data_ptr(), "not the tensor")
        comm.barrier()
        for p in range(comm.size):
            check(bool((w.peer(p) == p + 1).all()), "peer %d" % p)
        comm.barrier()
    del x


def reference_all_reduce(cpu_f32, op):
    ref = cpu_f32.clone()
    dist.all_reduce(ref, op=dist.ReduceOp.SUM if op == "sum" else
                    dist.ReduceOp.MAX)
    return ref


def case_all_reduce(comm):
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for algo in ("auto", "one_shot", "two_shot"):
            for count in (1000, 1 << 18):
                if algo == "one_shot" and count > 4096:
                    continue  # LL capacity: the C API refuses it in place
                for op in ("sum", "max"):
                    with comm.empty(count, dtype) as w:
                        x = fill((count,), comm.rank, torch.float32,
                                 seed=count)
                        t = w.local
                        t.copy_(x.to(dtype).cuda())
                        symheap.cuda.all_reduce(t, op=op, algo=algo)
                        torch.cuda.synchronize()
                        ref = reference_all_reduce(x, op).to(dtype)
                        got = t.cpu()
                        check(torch.equal(got, ref), "%s %s %s %d: %d of %d "
                              "differ" % (dtype, algo, op, count,
                                          int((got != ref).sum()), count))
                        comm.barrier()
                        del t
    # Random values, out of place, against torch.distributed with a
    # tolerance (float32 sums in rank order, like the kernels).
    with comm.empty((2, 1 << 16), "bfloat16") as w:
        g = torch.Generator().manual_seed(comm.rank)
        x = torch.randn(1 << 16, generator=g)
        w.local[0].copy_(x.to(torch.bfloat16).cuda())
        out = symheap.cuda.all_reduce(w.local[0], out=w.local[1])
        torch.cuda.synchronize()
        ref = reference_all_reduce(x.to(torch.bfloat16).float(), "sum")
        err = (out.float().cpu() - ref).abs().max().item()
        check(err <= 0.02 * ref.abs().max().item(), "max error %g" % err)
        comm.barrier()
        del out


def case_all_gather(comm):
    n = comm.size
    for count in (7, 1 << 16):
        with comm.empty(count, "float16") as win_in, \
                comm.empty((n, count), "float16") as win_out:
            x = fill((count,), comm.rank, torch.float16, seed=3)
            win_in.local.copy_(x.cuda())
            out = symheap.cuda.all_gather(win_out.local, win_in.local)
            torch.cuda.synchronize()
            ref = [torch.empty(count, dtype=torch.float32) for _ in range(n)]
            dist.all_gather(ref, x.float())
            check(torch.equal(out.cpu().float(), torch.stack(ref)),
                  "all_gather of %d" % count)
            comm.barrier()
            del out


def case_put_get(comm):
    n = comm.size
    nxt, prv = (comm.rank + 1) % n, (comm.rank - 1) % n
    with comm.empty((2, 4096), "float32") as w:
        w.local.zero_()
        torch.cuda.synchronize()
        comm.barrier()
        src = torch.full((4096,), float(comm.rank + 1), device="cuda")
        symheap.cuda.put(w.local[1], src, nxt)
        torch.cuda.synchronize()
        comm.barrier()
        check(bool((w.local[1] == prv + 1).all()), "put from %d" % prv)
        dst = torch.empty(4096, device="cuda")
        symheap.cuda.get(dst, w.local[1], nxt)
        torch.cuda.synchronize()
        check(bool((dst == comm.rank + 1).all()), "get from %d" % nxt)
        comm.barrier()


def case_graph(comm):
    count = 1 << 14
    with comm.empty((2, count), "bfloat16") as w:
        inp, out = w.local[0], w.local[1]
        inp.zero_()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm, outside the capture
            symheap.cuda.all_reduce(inp, out=out)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            symheap.cuda.all_reduce(inp, out=out)
        for it in range(5):
            x = fill((count,), comm.rank, torch.float32, seed=10 + it)
            inp.copy_(x.to(torch.bfloat16).cuda())
            torch.cuda.synchronize()
            comm.barrier()
            g.replay()
            torch.cuda.synchronize()
            ref = reference_all_reduce(x, "sum").to(torch.bfloat16)
            check(torch.equal(out.cpu(), ref), "replay %d" % it)
            comm.barrier()
        del g, inp, out


def case_errors(comm):
    t = torch.ones(16, device="cuda")
    e = raises(symheap.InvalidArgError, symheap.cuda.all_reduce, t)
    check("not inside a symheap window" in e.message, e.message)
    # No exception is kept inside the blocks: its traceback would hold the
    # window's tensor, and free() would refuse.
    with comm.empty(16, "int32") as w:
        msg = raises(symheap.InvalidArgError, symheap.cuda.all_reduce,
                     w.local).message
        check("float32, bfloat16 or float16" in msg, msg)
    with comm.empty(16, "float32") as w:
        msg = raises(symheap.InvalidArgError, symheap.cuda.all_reduce,
                     w.local, op="min").message
        check("op must be one of" in msg, msg)
        # 3 elements per rank never fill 16 (at 4 ranks, 4 per rank would:
        # then it is a valid in-place all-gather, accepted on every rank).
        msg = raises(symheap.InvalidArgError, symheap.cuda.all_gather,
                     w.local, w.local[:3]).message
        check("not %d ranks" % comm.size in msg, msg)


def case_register_torch(comm):
    # A tensor of torch's own allocator (cudaMalloc memory, registered
    # through legacy IPC): 32 MiB, a segment of its own, so that every rank
    # registers offset 0 of its allocation.
    x = torch.full((8 << 20,), float(comm.rank + 1), device="cuda")
    torch.cuda.synchronize()
    with comm.register(x) as w:
        check(w.local.data_ptr() == x.data_ptr(), "not the tensor")
        comm.barrier()
        for p in range(comm.size):
            check(bool((w.peer(p)[::1 << 16] == p + 1).all()), "peer %d" % p)
        torch.cuda.synchronize()
        comm.barrier()
    del x


def case_no_leak(comm, cycles):
    for _ in range(5):
        with comm.empty(1 << 20, "float32") as w:
            w.local.fill_(1)
    torch.cuda.synchronize()
    s0 = comm.stats()
    for i in range(cycles):
        with comm.empty(1 << 20, "float32") as w:
            w.local.fill_(i)
    torch.cuda.synchronize()
    s1 = comm.stats()
    for k in ("windows_live", "bytes_mapped", "descriptors_held",
              "va_reserved", "allocations_live"):
        check(s0[k] == s1[k], "%s %d -> %d" % (k, s0[k], s1[k]))


def main():
    local = int(os.environ.get("SYMHEAP_LOCAL_RANK", RANK))
    torch.cuda.set_device(local % torch.cuda.device_count())
    uid = os.environ.get("SYMHEAP_UNIQUE_ID", "x").encode()
    path = os.path.join(tempfile.gettempdir(), "symheap-py-%s" %
                        hashlib.sha1(uid).hexdigest()[:16])
    dist.init_process_group("gloo", init_method="file://" + path, rank=RANK,
                            world_size=int(os.environ["SYMHEAP_NRANKS"]))
    comm = symheap.init_torch()
    # A stream of our own: with both ranks on one GPU, the collectives refuse
    # the legacy default stream (thread-ranks would queue behind each other
    # on it), and torch's current stream is that one by default.
    torch.cuda.set_stream(torch.cuda.Stream())
    t = Cases(comm, comm.rank)
    t.run("python-gpu-init-torch", lambda: check(
        (comm.rank, comm.size) == (dist.get_rank(), dist.get_world_size())
        and comm.device_adaptor == "cuda",
        "rank %d of %d on %s" % (comm.rank, comm.size, comm.device_adaptor)))
    t.run("python-gpu-peers-flat-dlpack", case_peers_flat, comm)
    t.run("python-gpu-register", case_register, comm)
    t.run("python-gpu-all-reduce-vs-torch", case_all_reduce, comm)
    t.run("python-gpu-all-gather-vs-torch", case_all_gather, comm)
    t.run("python-gpu-put-get", case_put_get, comm)
    t.run("python-gpu-graph-capture-replay", case_graph, comm)
    t.run("python-gpu-errors", case_errors, comm)
    t.run("python-gpu-no-leak", case_no_leak, comm, 200)
    t.run("python-gpu-register-torch-tensor", case_register_torch, comm)
    comm.destroy()
    dist.barrier()
    dist.destroy_process_group()
    if RANK == 0 and os.path.exists(path):
        os.unlink(path)
    return t.exit()


if __name__ == "__main__":
    sys.exit(main())

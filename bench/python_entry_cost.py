"""Where the host time of symheap.cuda.all_reduce goes (issue 30's goal: the
Python entry at most 1 us over the C call).  One process per rank:
    build/bin/symheap-run -n 2 python3 bench/python_entry_cost.py
    python3 -m torch.distributed.run --nproc-per-node 2 bench/python_entry_cost.py
Each rank times loops of CALLS calls on the host (perf_counter; the GPU is
synchronised between loops, and CALLS stays below the launch queue's depth
so that no launch waits), median of REPS loops, in us per call, layer by
layer (each row includes the ones above it that it needs):
  - a kernel launch from Python with nothing else (torch.cuda._sleep(0));
  - torch's tensor accessors the entry reads (data_ptr, numel, ...);
  - the current stream (torch._C._cuda_getCurrentRawStream);
  - the window lookup alone (_fast.locate);
  - symheap_cuda_all_reduce through ctypes with windows ready (the C call
    and its launch, plus ctypes' ~1 us);
  - _fast.all_reduce with its arguments ready (lookups + C call + launch);
  - _fast.all_reduce_t(tensors): the whole entry in C;
  - symheap.cuda.all_reduce, all of it, compiled and ctypes;
  - torch.ops.symheap.all_reduce (the custom op's dispatch on top);
  - PyTorch's torch.ops.symm_mem.one_shot_all_reduce on its default
    backend (the goal's yardstick; needs torch.distributed: set up here).
Prints one table on rank 0."""
import os
import statistics
import sys
import time

os.environ.setdefault("SYMHEAP_DISABLE_MULTICAST", "1")
import torch  # noqa: E402

import symheap  # noqa: E402
from symheap import _hot, cuda  # noqa: E402

try:
    from symheap import ops as _ops  # torch.ops.symheap.* (torch >= 2.4)
except ImportError:
    _ops = None

CALLS, REPS = 200, 15


def timed(comm, fn):
    out = []
    for _ in range(REPS):
        torch.cuda.synchronize()
        comm.barrier()
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        out.append((time.perf_counter() - t0) * 1e6 / CALLS)
    torch.cuda.synchronize()
    comm.barrier()
    return statistics.median(out)


def torch_one_shot(comm, timed_fn):
    """PyTorch's one-shot on its default backend, 4 KiB bf16, host us per
    call; or why not."""
    import hashlib
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem
    if not dist.is_initialized():
        if os.environ.get("MASTER_ADDR"):  # torchrun
            dist.init_process_group("gloo")
        else:
            port = 20000 + int(hashlib.sha1(os.environ.get(
                "SYMHEAP_UNIQUE_ID", "x").encode()).hexdigest(), 16) % 20000
            dist.init_process_group(
                "gloo", init_method="tcp://127.0.0.1:%d" % (port + 1),
                rank=comm.rank, world_size=comm.size)
    g = dist.group.WORLD.group_name
    try:
        symm_mem.enable_symm_mem_for_group(g)
    except Exception:  # noqa: BLE001 -- newer torch: every group is
        pass
    x = symm_mem.empty(2048, dtype=torch.bfloat16, device="cuda")
    symm_mem.rendezvous(x, g)
    x.normal_()
    f = torch.ops.symm_mem.one_shot_all_reduce
    return timed_fn(lambda: f(x, "sum", g))


def main():
    local = os.environ.get("SYMHEAP_LOCAL_RANK", os.environ.get(
        "LOCAL_RANK", "0"))
    torch.cuda.set_device(int(local) % torch.cuda.device_count())
    comm = symheap.init()  # symheap-run's job or torchrun's
    torch.cuda.set_stream(torch.cuda.Stream())
    rows = []
    with comm.empty((2, 2048), "bfloat16") as w:
        t, o = w.local[0], w.local[1]
        t.normal_()
        if hasattr(torch.cuda, "_sleep"):
            rows.append(("a kernel launch from Python alone "
                         "(torch.cuda._sleep(0))",
                         timed(comm, lambda: torch.cuda._sleep(0))))
        rows.append(("tensor accessors (data_ptr, numel, element_size, "
                     "is_contiguous, get_device)", timed(comm, lambda: (
                         t.data_ptr(), t.numel(), t.element_size(),
                         t.is_contiguous(), t.get_device()))))
        raw = torch._C._cuda_getCurrentRawStream
        rows.append(("current stream (_cuda_getCurrentRawStream)",
                     timed(comm, lambda: raw(0))))
        rows.append(("torch.cuda.current_stream().cuda_stream",
                     timed(comm, lambda: torch.cuda.current_stream()
                           .cuda_stream)))
        cuda.all_reduce(t, out=o)  # binds the compiled entry
        code = cuda._coll_dtype(t)
        args = (t.data_ptr(), 4096, o.data_ptr(), 4096, 2048, code, 0, 0,
                raw(t.get_device()))
        wi, oi = _hot.locate(args[0], 4096)
        wo, oo = _hot.locate(args[2], 4096)
        c_ar = cuda._library().symheap_cuda_all_reduce
        rows.append(("symheap_cuda_all_reduce through ctypes, windows ready "
                     "(C call + launch + ctypes)",
                     timed(comm, lambda: c_ar(wi, oi, wo, oo, 2048, code, 0,
                                              0, args[8]))))
        if cuda._bound():
            f = _hot.fast.all_reduce
            rows.append(("_fast.locate (the window lookup alone)",
                         timed(comm, lambda: _hot.fast.locate(
                             _hot.comms, args[0], 4096))))
            rows.append(("_fast.all_reduce, arguments ready (lookup, C call, "
                         "launch)", timed(comm, lambda: f(_hot.comms,
                                                          *args))))
            if cuda._art is not None:
                art = cuda._art
                rows.append(("_fast.all_reduce_t(tensors): the entry in C "
                             "(accessors, stream, cached lookup, C call)",
                             timed(comm, lambda: art(_hot.comms, t, o, "sum",
                                                     "auto"))))
        rows.append(("symheap.cuda.all_reduce (%s)" % _hot.path(),
                     timed(comm, lambda: cuda.all_reduce(t, out=o))))
        saved, cuda._fast_bound = cuda._fast_bound, False
        rows.append(("symheap.cuda.all_reduce (ctypes)",
                     timed(comm, lambda: cuda.all_reduce(t, out=o))))
        cuda._fast_bound = saved
        if _ops is not None:
            op = torch.ops.symheap.all_reduce
            rows.append(("torch.ops.symheap.all_reduce (dispatcher + the "
                         "above)", timed(comm, lambda: op(t, o))))
        del t, o
        torch.cuda.synchronize()
        comm.barrier()
    try:
        rows.append(("torch.ops.symm_mem.one_shot_all_reduce (PyTorch, "
                     "default backend)", torch_one_shot(
                         comm, lambda fn: timed(comm, fn))))
    except Exception as e:  # noqa: BLE001 -- a yardstick, not the subject
        rows.append(("torch.ops.symm_mem.one_shot_all_reduce: not measured "
                     "(%s)" % repr(e)[:120], float("nan")))
    if comm.rank == 0:
        print("host us per call, 4 KiB bf16 all-reduce, %d ranks, %s" %
              (comm.size, torch.cuda.get_device_name()))
        for name, us in rows:
            print("%8.2f  %s" % (us, name))
    comm.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())

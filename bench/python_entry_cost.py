"""Where the host time of symheap.cuda.all_reduce goes (issue 30's goal: the
Python entry at most 1 us over the C call).  One process per rank:
    build/bin/symheap-run -n 2 python3 bench/python_entry_cost.py
Each rank times loops of CALLS calls on the host (perf_counter; the GPU is
synchronised between loops, and CALLS stays below the launch queue's depth
so that no launch waits), median of REPS loops, in us per call, of:
  - torch's tensor accessors the entry reads (data_ptr, numel, ...);
  - the current stream (torch._C._cuda_getCurrentRawStream);
  - _fast.all_reduce with its arguments ready (lookup + C call + launch);
  - the same through ctypes (two lookups, the C call);
  - symheap.cuda.all_reduce, all of it, compiled and ctypes.
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


def main():
    torch.cuda.set_device(int(os.environ.get("SYMHEAP_LOCAL_RANK", "0")) %
                          torch.cuda.device_count())
    comm = symheap.init()
    torch.cuda.set_stream(torch.cuda.Stream())
    rows = []
    with comm.empty((2, 2048), "bfloat16") as w:
        t, o = w.local[0], w.local[1]
        t.normal_()
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
        args = (t.data_ptr(), 4096, o.data_ptr(), 4096, 2048, 1, 0, 0,
                raw(t.get_device()))
        if cuda._bound():
            f = _hot.fast.all_reduce
            rows.append(("_fast.all_reduce, arguments ready (lookup, C call, "
                         "launch)", timed(comm, lambda: f(_hot.comms,
                                                          *args))))
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
    if comm.rank == 0:
        print("host us per call, 4 KiB bf16 all-reduce, %d ranks, %s" %
              (comm.size, torch.cuda.get_device_name()))
        for name, us in rows:
            print("%8.2f  %s" % (us, name))
    comm.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())

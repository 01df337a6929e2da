"""What a symmetric allocation costs from Python, without torch: the median
over iterations (each after a barrier) of comm.empty(n, "uint8").free(), of
the Python layer's own agreement alone, and of symheap_malloc + symheap_free
called through ctypes, per rank, in microseconds.

    PYTHONPATH=build/lib/python3/site-packages \\
        build/bin/symheap-run -n 2 python3 bench/python_heap_pair.py [ITERS]
"""
import ctypes
import statistics
import sys
import time

import symheap
from symheap import _lib

comm = symheap.init()
iters = int(sys.argv[1]) if len(sys.argv) > 1 else 200
comm.heap_reserve(1 << 24)


def median_us(fn):
    out = []
    for _ in range(iters):
        comm.barrier()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out) * 1e6


def raw():
    w = ctypes.c_void_p()
    _lib.call("symheap_malloc", comm.handle, 4096, 0, ctypes.byref(w))
    _lib.call("symheap_free", comm.handle, w)


rows = (("empty(4 KiB) + free", lambda: comm.empty(4096, "uint8").free()),
        ("the Python agreement", lambda: comm._agree(None)),
        ("symheap_malloc + free (ctypes)", raw))
for name, fn in rows:
    print("rank %d  %-32s %8.1f us" % (comm.rank, name, median_us(fn)),
          flush=True)
comm.destroy()

"""test_host.py's hot path: a tensor's window found by pointer, and the
compiled entry (symheap._fast) over stand-in tensors and collectives."""
import ctypes
import os

import symheap
from pytest_harness import check, raises


def case_window_lookup(comm):
    """Issue 30: the window of an address (symheap_window_find), through
    the compiled entry and through ctypes alike; compiled wherever Python's
    headers were there to build it."""
    from symheap import _hot
    import sysconfig
    inc = sysconfig.get_paths()["include"]
    if os.path.exists(os.path.join(inc, "Python.h")) and \
            os.environ.get("SYMHEAP_PYTHON_FAST", "1") != "0":
        check(_hot.path() == "compiled", "symheap._fast is not used here")
    wins = [comm.empty(n, "uint8") for n in (100, 4096, 1 << 20)]
    ptrs = [w.local.__array_interface__["data"][0] for w in wins]
    for w, p in zip(wins, ptrs):
        for off, n in ((0, 1), (7, 16), (w.nbytes - 1, 1), (0, w.nbytes)):
            want = (w.handle, off)
            check(_hot.locate(p + off, n) == want, "locate %d+%d" % (off, n))
            check(_hot.locate_ctypes(p + off, n, "x")[:2] == want,
                  "ctypes locate %d+%d" % (off, n))
        # One past the end: not this window (perhaps the next one).
        try:
            check(_hot.locate(p + w.nbytes, 1)[0] != w.handle, "past end")
        except symheap.InvalidArgError:
            pass
        # Starting inside, running past the end: refused.
        e = raises(symheap.InvalidArgError, _hot.locate, p + w.nbytes - 1, 2)
        check("not inside" in e.message, e.message)
        raises(symheap.InvalidArgError, _hot.locate_ctypes, p + w.nbytes - 1,
               2, "x")
    e = raises(symheap.InvalidArgError, _hot.locate, 2**64, 1)
    if _hot.fast is not None:
        raises(symheap.InvalidArgError, _hot.fast.locate, _hot.comms, -1, 1)
        raises(symheap.InvalidArgError, _hot.fast.locate, _hot.comms, 1.5, 1)
    for w in wins:
        w.free()
    raises(symheap.InvalidArgError, _hot.locate, ptrs[1], 1)
    # The ctypes path remembers answers: never past the window's free, and
    # a window made at the same address is the one named.
    for _ in range(3):
        with comm.empty(4096, "uint8") as w:
            p = w.local.__array_interface__["data"][0]
            check(_hot.locate_ctypes(p, 8, "x")[:2] == (w.handle, 0), "hit")
            check(_hot.locate_ctypes(p, 8, "x")[:2] == (w.handle, 0), "again")
        raises(symheap.InvalidArgError, _hot.locate_ctypes, p, 8, "x")


_KEEP = []  # the fake collectives _fast stays bound to, alive to the end


class _FakeTensor:
    """What _fast.all_reduce_t reads of a torch tensor."""

    def __init__(self, ptr, n, dtype, contig=True, dev=0):
        self.ptr, self.n, self.dtype = ptr, n, dtype
        self.contig, self.dev = contig, dev

    def data_ptr(self):
        return self.ptr

    def numel(self):
        return self.n

    def is_contiguous(self):
        return self.contig

    def get_device(self):
        return self.dev


def case_fast_tensor_entry(comm):
    """Issue 30: all_reduce's entry in C (_fast.all_reduce_t) on tensor-like
    objects, bound to a fake symheap_cuda_all_reduce that records its
    arguments: the windows and offsets found (through its cache, emptied
    when a window goes), dtype/op/algo from the tables, the stream from the
    stream function, NotImplemented for what the Python entry must check,
    errors for an address outside every window and a failed C call."""
    from symheap import _hot
    f = _hot.fast
    check(hasattr(f, "all_reduce_t"), "symheap._fast has no all_reduce_t")
    vp, sz, ci = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    calls, result = [], [0]

    def fake_ar(wi, oi, wo, oo, count, dt, op, algo, stream):
        calls.append((wi, oi, wo, oo, count, dt, op, algo, stream))
        return result[0]
    ar = ctypes.CFUNCTYPE(ci, vp, sz, vp, sz, sz, ci, ci, ci, vp)(fake_ar)
    ag = ctypes.CFUNCTYPE(ci, vp, sz, vp, sz, sz, vp)(lambda *a: 0)
    _KEEP.extend((ar, ag))
    addr = _hot._addr
    f.bind_cuda(addr(ar), addr(ag))
    bf16, other = object(), object()
    f.bind_torch({bf16: (7, 2)}, {"sum": 0, "max": 1},
                 {"auto": 0, "one_shot": 1}, lambda d: 0x1000 + d)
    with comm.empty((2, 64), "uint16") as w:
        base = w.local.__array_interface__["data"][0]
        t, o = _FakeTensor(base, 64, bf16), _FakeTensor(base + 128, 64, bf16)
        for _ in range(2):  # the second through the cache
            check(f.all_reduce_t(_hot.comms, t, o, "max", "one_shot") is None,
                  "enqueued")
            check(calls[-1] == (w.handle, 0, w.handle, 128, 64, 7, 1, 1,
                                0x1000), "args %r" % (calls[-1],))
        check(f.all_reduce_t(_hot.comms, o, None, "sum", "auto") is None,
              "in place")
        check(calls[-1] == (w.handle, 128, w.handle, 128, 64, 7, 0, 0,
                            0x1000), "in place args %r" % (calls[-1],))
        n = len(calls)
        for why, a, b, op, algo in (
                ("not contiguous", _FakeTensor(base, 64, bf16, False), o,
                 "sum", "auto"),
                ("dtype", _FakeTensor(base, 64, other), None, "sum", "auto"),
                ("out dtype", t, _FakeTensor(base, 64, other), "sum", "auto"),
                ("numel", t, _FakeTensor(base + 128, 32, bf16), "sum",
                 "auto"),
                ("op", t, o, "avg", "auto"), ("algo", t, o, "sum", "ring"),
                ("no device", _FakeTensor(base, 64, bf16, dev=-1), None,
                 "sum", "auto")):
            got = f.all_reduce_t(_hot.comms, a, b, op, algo)
            check(got is NotImplemented, "%s: %r" % (why, got))
        check(len(calls) == n, "a declined call reached the C call")
        e = raises(symheap.InvalidArgError, f.all_reduce_t, _hot.comms,
                   _FakeTensor(base + 200, 64, bf16), None, "sum", "auto")
        check("not inside" in e.message, e.message)  # runs past the end
        result[0] = 3
        raises(symheap.UnsupportedError, f.all_reduce_t, _hot.comms, t, o,
               "sum", "auto")
        result[0] = 0
    # The window is gone: its cached answer with it.
    e = raises(symheap.InvalidArgError, f.all_reduce_t, _hot.comms, t, o,
               "sum", "auto")
    check(len(calls) == n + 1, "called after the window's free")
    raises(TypeError, f.all_reduce_t, _hot.comms, t)

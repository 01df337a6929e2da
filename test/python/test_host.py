"""The Python package on the host backend with NumPy, one rank per process:
    build/bin/symheap-run -n N python3 test/python/test_host.py
Prints PASS/FAIL/SKIP lines like the C tests (test/run.sh runs it at 2, 4
and 8 ranks).  CYCLES sets the empty/free cycles of the leak case."""
import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from pytest_harness import Cases, check, raises  # noqa: E402

try:
    import numpy as np
except ImportError:
    if os.environ.get("SYMHEAP_RANK", "0") == "0":
        print("SKIP python-host numpy is missing for %s (Debian: "
              "apt-get install python3-numpy)" % sys.executable)
    sys.exit(0)
import symheap  # noqa: E402  (PYTHONPATH: the build tree's site-packages)
from symheap import _dlpack, _lib, errors  # noqa: E402

DTYPES = ["float32", "float64", "int8", "int64", "uint16", "complex64",
          "bool"]


def case_errors_table(comm):
    # The Python table against the header's X-macro, name by name, and the
    # library's texts for each code.
    text = open(os.path.join(ROOT, "include", "symheap.h")).read()
    pairs = re.findall(r'X\((SYMHEAP_\w+), "([^"]*)"\)', text)
    check([n for n, _ in pairs] == list(errors.RESULT_CODES),
          "codes differ from include/symheap.h: %s" % pairs)
    for code, (name, txt) in enumerate(pairs):
        check(_lib.strerror(code) == txt, "strerror(%d) is %r, header says %r"
              % (code, _lib.strerror(code), txt))
        if code:
            cls = errors.BY_CODE[code]
            check(cls.code == code and cls.code_name == name,
                  "%s maps to %s" % (name, cls.__name__))
            check(issubclass(cls, symheap.Error), "%s is no Error" % cls)
    check(issubclass(symheap.InvalidArgError, ValueError),
          "InvalidArgError is not a ValueError")


def case_init_env(comm):
    check(comm.rank == int(os.environ["SYMHEAP_RANK"]), "rank")
    check(comm.size == int(os.environ["SYMHEAP_NRANKS"]), "size")
    check(comm.local_rank == comm.rank, "local_rank %d" % comm.local_rank)
    info = comm.info()
    check(info["device_adaptor"] == "host" and info["cpu_access"] == 1,
          "info %r" % info)
    check(comm.local_ranks() == list(range(comm.size)), "local ranks")
    check(comm.world_rank(comm.size - 1) == comm.size - 1, "world rank")
    got = comm.allgather(b"r%03d" % comm.rank)
    check(got == [b"r%03d" % r for r in range(comm.size)], "allgather %r"
          % got)


def case_init_uid(comm):
    uid = comm.allgather(symheap.unique_id())[0]  # rank 0's, to every rank
    with symheap.init(comm.rank, comm.size, uid) as c2:
        check((c2.rank, c2.size) == (comm.rank, comm.size), "rank/size")
        with c2.empty(16, "int32") as w:
            w.local[:] = c2.rank + 1
            c2.barrier()
            for p in range(c2.size):
                check((w.peer(p) == p + 1).all(), "peer %d" % p)
            c2.barrier()
    e = raises(symheap.InvalidArgError, symheap.init, 0, 1, b"short")
    check("128 bytes" in str(e), str(e))


def expected(rank, shape, dtype):
    n = int(np.prod(shape))
    v = (np.arange(n) + 1000 * rank) % 97
    return v.astype(dtype).reshape(shape)


def case_peers_and_flat(comm):
    n = comm.size
    for dtype in DTYPES:
        shape = (3, 257)
        with comm.empty(shape, dtype) as w:
            check(w.shape == shape and w.dtype == dtype, repr(w))
            loc = w.local
            check(isinstance(loc, np.ndarray) and loc.dtype == dtype and
                  loc.shape == shape, "local is %r" % type(loc))
            loc[...] = expected(comm.rank, shape, dtype)
            comm.barrier()
            flat = w.flat
            check(flat.shape == (n,) + shape, "flat shape %s" % (flat.shape,))
            for p in range(n):
                want = expected(p, shape, dtype)
                check((w.peer(p) == want).all(), "%s: peer(%d)" % (dtype, p))
                check((flat[p] == want).all(), "%s: flat[%d]" % (dtype, p))
            comm.barrier()
            # Stores through peer() land in the peer's memory.
            w.peer((comm.rank + 1) % n)[0, 0] = expected(comm.rank, (1,),
                                                         dtype)[0] \
                if dtype != "bool" else True
            del loc, flat
            comm.barrier()
            src = (comm.rank - 1) % n
            want = expected(src, (1,), dtype)[0] if dtype != "bool" else True
            check(w.local[0, 0] == want, "%s: store from rank %d" %
                  (dtype, src))
            comm.barrier()
    with comm.empty(8) as w:
        raises(symheap.InvalidArgError, w.peer, n)
        e = raises(symheap.InvalidArgError, w.peer, -1)
        check("out of range" in e.message, e.message)


def case_split(comm):
    n = comm.size
    color, key = comm.rank % 2, -comm.rank  # reversed order inside a color
    members = [r for r in range(n) if r % 2 == color]
    with comm.split(color, key) as sub:
        check(sub.size == len(members), "size %d" % sub.size)
        order = sorted(members, reverse=True)
        check(sub.rank == order.index(comm.rank), "rank %d" % sub.rank)
        check(sub.world_rank(sub.rank) == comm.rank, "world rank")
        with sub.empty((4,), "int64") as w:
            w.local[:] = comm.rank
            sub.barrier()
            for p in range(sub.size):
                check((w.peer(p) == order[p]).all(), "sub peer %d" % p)
            sub.barrier()
    none = comm.split(symheap.COLOR_NONE if comm.rank == 0 else 1)
    check((none is None) == (comm.rank == 0), "COLOR_NONE gave %r" % none)
    if none is not None:
        check(none.size == n - 1, "size without rank 0: %d" % none.size)
        none.destroy()


def case_register(comm):
    x = comm.alloc((5, 64), "float32")
    x[...] = comm.rank + 0.5
    with comm.register(x) as w:
        check(w.shape == (5, 64) and w.dtype == "float32", repr(w))
        check(np.shares_memory(w.local, x), "local is not the array")
        comm.barrier()
        for p in range(comm.size):
            check((w.peer(p) == p + 0.5).all(), "peer %d" % p)
            check((w.flat[p] == p + 0.5).all(), "flat %d" % p)
        comm.barrier()
        w.peer((comm.rank + 1) % comm.size)[4, 63] = -1.0
        comm.barrier()
        check(x[4, 63] == -1.0, "a peer's store did not reach the array")
        comm.barrier()
    del x
    # Memory the host backend cannot share: refused on every rank.
    plain = np.zeros(1024, dtype=np.float32)
    raises(symheap.Error, comm.register, plain)
    # A bad argument on one rank fails the call on every rank, naming it.
    bad = np.zeros((8, 8))[:, ::2] if comm.rank == 1 else comm.alloc(64)
    e = raises(symheap.InvalidArgError, comm.register, bad)
    if comm.rank == 1:
        check("not C-contiguous" in e.message, e.message)
    else:
        check(e.message.startswith("rank 1: "), e.message)
    del bad
    check(comm.stats()["windows_live"] == 0, "windows left")


def case_errors(comm):
    e = raises(symheap.MismatchError, comm.empty, 64 + comm.rank) \
        if comm.size > 1 else None
    if e is not None:
        check("disagree" in e.message and e.code == 2, e.message)
    e = raises(symheap.InvalidArgError, comm.empty, 0)
    check("size is zero" in e.message and isinstance(e, ValueError), str(e))
    e = raises(symheap.InvalidArgError, comm.empty, 4, "float8")
    check("unknown dtype" in e.message, e.message)
    w = comm.empty(4)
    w.free()
    e = raises(symheap.InvalidArgError, lambda: w.local)
    check("freed" in e.message, e.message)
    raises(symheap.InvalidArgError, w.free)
    check(comm.stats()["windows_live"] == 0, "windows left")


def case_dlpack(comm):
    with comm.empty((6, 7), "float64") as w:
        check(w.__dlpack_device__() == (_dlpack.CPU, 0), "device")
        a = np.from_dlpack(w)
        check(a.shape == (6, 7) and a.dtype == np.float64, "shape/dtype")
        loc = w.local
        check(a.__array_interface__["data"][0] ==
              loc.__array_interface__["data"][0], "not the window's memory")
        loc[...] = comm.rank * 2.0
        check((a == comm.rank * 2.0).all(), "no alias")
        check(w.exports == 2, "exports %d" % w.exports)
        # A DLPack 1.x capsule on request; an unconsumed capsule lets go.
        cap = w.__dlpack__(max_version=(1, 0))
        valid = ctypes.PyDLL(ctypes.pythonapi._name).PyCapsule_IsValid
        valid.restype, valid.argtypes = ctypes.c_int, [ctypes.py_object,
                                                       ctypes.c_char_p]
        check(valid(cap, b"dltensor_versioned") == 1, "versioned capsule")
        check(w.exports == 3, "exports with a capsule %d" % w.exports)
        del cap
        check(w.exports == 2, "capsule not released: %d" % w.exports)
        # A live array on one rank refuses free() on every rank.
        if comm.rank != 0:
            del a, loc
        e = raises(symheap.InvalidArgError, w.free)
        check(("del them" in e.message) if comm.rank == 0 else
              e.message.startswith("rank 0: "), e.message)
        if comm.rank == 0:
            del a, loc
        check(w.exports == 0, "exports after del %d" % w.exports)
    check(_dlpack.live_exports() == 0, "DLPack holders left: %d" %
          _dlpack.live_exports())
    with comm.empty(4, "bfloat16") as w:  # NumPy has no bfloat16
        e = raises(ValueError, lambda: w.local)
        check("bfloat16" in str(e), str(e))
        check(w.exports == 0, "a failed array holds the window")


def case_device_view(comm):
    with comm.empty((100,), "float32") as w:
        v = symheap.DeviceWindow.from_buffer_copy(w.device_view())
        check(v.version == 3 and v.struct_size == ctypes.sizeof(v),
              "version %d size %d" % (v.version, v.struct_size))
        check((v.rank, v.nranks) == (comm.rank, comm.size), "rank/nranks")
        check(v.size == 400 and v.flags & 1, "size %d flags %x" %
              (v.size, v.flags))
        flat = w.flat
        check(v.flat_base == flat.__array_interface__["data"][0], "flat base")
        for p in range(comm.size):
            ptr = w.peer(p).__array_interface__["data"][0]
            check(v.peer_ptrs[p] == ptr, "peer_ptrs[%d]" % p)
            check(ptr == v.flat_base + p * v.stride, "stride")
        del flat


def agreed_refusal(comm, what, bad_call, good_call, bad=None):
    """bad_call on one rank, good_call on the others: every rank gets the
    same InvalidArgError at once (not after the timeout), naming the rank
    that refused, and the comm's next calls still pair."""
    bad = comm.size - 1 if bad is None else bad
    t0 = time.monotonic()
    e = raises(symheap.InvalidArgError,
               bad_call if comm.rank == bad else good_call)
    took = time.monotonic() - t0
    check(took < 5, "%s: refused after %.1f s (a timeout)" % (what, took))
    if comm.rank != bad:
        check(e.message.startswith("rank %d: " % bad), "%s: %s" % (what, e))
    got = comm.allgather(b"%04d" % comm.rank)
    check(got == [b"%04d" % r for r in range(comm.size)],
          "%s: the next allgather got %r" % (what, got))
    return e


def case_refusals_agreed(comm):
    """Issue 28 item 5: a bad argument on one rank fails the collective on
    every rank, at once, and the comm stays usable and in step."""
    agreed_refusal(comm, "split('x')", lambda: comm.split("x"),
                   lambda: comm.split(0))
    agreed_refusal(comm, "split(2**32-1)", lambda: comm.split(2**32 - 1),
                   lambda: comm.split(1))
    agreed_refusal(comm, "split key 2**31", lambda: comm.split(0, 2**31),
                   lambda: comm.split(0, 0), bad=0)
    agreed_refusal(comm, "split(1.5)", lambda: comm.split(1.5),
                   lambda: comm.split(1))
    e = agreed_refusal(comm, "allgather(str)", lambda: comm.allgather("ab"),
                       lambda: comm.allgather(b"ab"))
    check(comm.rank != comm.size - 1 or "not str" in e.message, e.message)
    agreed_refusal(comm, "allgather(int)", lambda: comm.allgather(7),
                   lambda: comm.allgather(bytes(7)), bad=0)
    e = agreed_refusal(comm, "empty(2**62+4)",
                       lambda: comm.empty(2**62 + 4, "float32"),
                       lambda: comm.empty(16, "float32"))
    check(comm.rank != comm.size - 1 or "size_t" in e.message, e.message)
    agreed_refusal(comm, "empty(-1)", lambda: comm.empty(-1),
                   lambda: comm.empty(16), bad=0)
    if comm.heap_info()["enabled"]:
        before = comm.heap_info()
        agreed_refusal(comm, "heap_reserve(2**64)",
                       lambda: comm.heap_reserve(2**64),
                       lambda: comm.heap_reserve(0))
        agreed_refusal(comm, "heap_reserve(-1)",
                       lambda: comm.heap_reserve(-1),
                       lambda: comm.heap_reserve(4096), bad=0)
        agreed_refusal(comm, "heap_reserve('1')",
                       lambda: comm.heap_reserve("1"),
                       lambda: comm.heap_reserve(4096))
        check(comm.heap_info() == before, "a refused heap_reserve changed "
              "the heap")
    # The same bad integer on every rank: refused, never truncated.
    e = raises(symheap.InvalidArgError, comm.split, 2**32 - 1)
    check("out of range" in e.message, e.message)
    e = raises(symheap.InvalidArgError, comm.empty, (2**62 + 4,), "float32")
    check("size_t" in e.message, e.message)
    with comm.empty(4) as w:
        raises(symheap.InvalidArgError, w.peer, 2**32)
    raises(symheap.InvalidArgError, comm.world_rank, 2**32)
    check(comm.stats()["windows_live"] == 0, "windows left")


def interrupted(comm, victim, call, signal_at):
    """call() on every rank; on `victim` a SIGINT lands at signal_at
    ("agreed": just after the argument agreement, before the C call;
    a number: that many seconds into the call, while it waits for the
    others, who start 1 s late).  The KeyboardInterrupt must come out at
    the end, with what the call made as .symheap_result."""
    orig, orig_ag = comm._agree, comm._allgather
    timers = []
    if comm.rank == victim and signal_at == "agreed":
        def agree_then_interrupt(local):
            orig(local)
            signal.raise_signal(signal.SIGINT)
        comm._agree = agree_then_interrupt
    elif comm.rank == victim:
        # Armed from inside the call's first exchange (however slow this
        # rank is to get there), it fires while the exchange waits for the
        # others.
        def allgather_then_interrupt(data):
            del comm._allgather  # once
            t = threading.Timer(signal_at, os.kill,
                                (os.getpid(), signal.SIGINT))
            timers.append(t)
            t.start()
            return orig_ag(data)
        comm._allgather = allgather_then_interrupt
    elif signal_at != "agreed":
        time.sleep(1.0)
    try:
        got = call()
        check(comm.rank != victim, "no KeyboardInterrupt")
    except KeyboardInterrupt as e:
        check(comm.rank == victim, "KeyboardInterrupt on rank %d" %
              comm.rank)
        check(hasattr(e, "symheap_result"), "the interrupt came before the "
              "call's end (no .symheap_result)")
        got = e.symheap_result
    finally:
        comm.__dict__.pop("_agree", None)
        comm.__dict__.pop("_allgather", None)
        for t in timers:
            t.join()
    check(signal.getsignal(signal.SIGINT) is signal.default_int_handler,
          "the SIGINT handler was not restored")
    return got


def case_interrupt_deferred(comm):
    """Issue 28 item 5: a SIGINT between the agreement and the C call (or
    during either) leaves every rank in step."""
    victim = comm.size - 1
    for at in ("agreed", 0.1):
        live = comm.stats()["windows_live"]
        w = interrupted(comm, victim, lambda: comm.empty(64, "int32"), at)
        check(isinstance(w, symheap.Window), "empty gave %r" % (w,))
        n = comm.allgather(b"%d" % comm.stats()["windows_live"])
        check(n == [b"%d" % (live + 1)] * comm.size,
              "windows live per rank: %r" % n)
        w.local[:] = comm.rank
        comm.barrier()
        check((w.peer(victim) == victim).all(), "window not shared")
        comm.barrier()
        w.free()
        sub = interrupted(comm, victim, lambda: comm.split(0, comm.rank), at)
        check(isinstance(sub, symheap.Comm) and sub.size == comm.size,
              "split gave %r" % (sub,))
        sub.destroy()
    g = interrupted(comm, 0, lambda: comm.allgather(b"%d" % comm.rank),
                    "agreed")
    check(g == [b"%d" % r for r in range(comm.size)], "allgather %r" % g)
    check(comm.stats()["windows_live"] == 0, "windows left")


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


class _DirStore:
    """A c10d Store's set/get over a directory (what _torchrun uses of it)."""

    def __init__(self, path):
        self.path = path

    def _file(self, key):
        return os.path.join(self.path, key.replace("/", "_"))

    def set(self, key, value):
        tmp = self._file(key) + ".tmp"
        with open(tmp, "wb") as f:
            f.write(value)
        os.rename(tmp, self._file(key))

    def get(self, key):
        for _ in range(2000):
            try:
                with open(self._file(key), "rb") as f:
                    return f.read()
            except FileNotFoundError:
                time.sleep(0.005)
        raise TimeoutError("store.get(%s)" % key)


def case_torchrun_bootstrap(comm):
    """Issue 30: a comm made with no arguments joins a torchrun job: which
    way init() takes by the environment, the unique id through a store
    (rank 0 makes it), the comm it makes, and the error without any job."""
    from symheap import _torchrun
    how = _torchrun.how
    tr = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
          "MASTER_PORT": "29500"}
    check(how({"SYMHEAP_UNIQUE_ID": "ab", **tr})[0] == "env", "symheap-run")
    check(how({"SYMHEAP_CCL": "mpi", **tr})[0] == "env", "SYMHEAP_CCL")
    check(how(tr)[0] == "store", "torchrun: %r" % (how(tr),))
    check(how({"OMPI_COMM_WORLD_SIZE": "2"})[0] == "env", "mpirun")
    way, why = how({"RANK": "0"})
    check(way is None and "torchrun" in why, "none: %r" % (why,))
    # torchrun's variables without its agent's store: init_process_group
    # will host the store there, so symheap refuses to go first.
    saved = {k: os.environ.get(k) for k in
             list(tr) + ["TORCHELASTIC_USE_AGENT_STORE",
                         "SYMHEAP_TIMEOUT_MS"]}
    try:
        os.environ.update(tr)
        os.environ.pop("TORCHELASTIC_USE_AGENT_STORE", None)
        if _torchrun._dist() is None:  # (no initialised torch.distributed)
            e = raises(symheap.InvalidArgError, _torchrun.job)
            check("init_process_group first" in e.message, e.message)
            # With the agent's store: a malformed SYMHEAP_TIMEOUT_MS is
            # named, before torch is imported (before: int()'s "invalid
            # literal", after the import).
            os.environ["TORCHELASTIC_USE_AGENT_STORE"] = "True"
            for bad in ("soon", "0"):
                os.environ["SYMHEAP_TIMEOUT_MS"] = bad
                e = raises(ValueError, _torchrun.job)
                check("SYMHEAP_TIMEOUT_MS" in str(e), "%s: %s" % (bad, e))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    import tempfile
    d = comm.allgather(tempfile.mkdtemp().encode().ljust(200, b"\0"))[0]
    store = _DirStore(d.rstrip(b"\0").decode())
    made = []

    def make():
        made.append(1)
        return symheap.unique_id()
    for _ in range(2):  # two comms, one key each
        r, n, uid = _torchrun.exchange(make, comm.rank, comm.size, store)
        check((r, n, len(uid)) == (comm.rank, comm.size, 128), "exchange")
        with symheap.init(r, n, uid) as c2:
            check((c2.rank, c2.size) == (comm.rank, comm.size), "rank/size")
            got = c2.allgather(b"%03d" % c2.rank)
            check(got == [b"%03d" % p for p in range(n)], "allgather")
    check(len(made) == (2 if comm.rank == 0 else 0), "made %d" % len(made))
    if comm.rank == 0:  # no job at all: init() names every way in
        env = {k: v for k, v in os.environ.items() if k not in
               ("SYMHEAP_UNIQUE_ID", "SYMHEAP_RANK", "SYMHEAP_NRANKS",
                "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
        p = subprocess.run(
            [sys.executable, "-c", "import symheap\ntry:\n symheap.init()\n"
             "except symheap.InvalidArgError as e:\n print('REFUSED', e)"],
            env=env, capture_output=True, text=True, timeout=60)
        check("REFUSED" in p.stdout and "torchrun" in p.stdout,
              "no job: %r %r" % (p.stdout, p.stderr[-300:]))
    comm.barrier()
    if comm.rank == 0:
        import shutil
        shutil.rmtree(store.path, ignore_errors=True)


def case_gc_free_during_collective(comm):
    """Issue 28 item 3 on the Python side: alloc() memory released by
    another thread (the garbage collector's, say) while this comm is in a
    collective is freed after it, never during the C call."""
    inside, seen = [False], []
    real_ag, real_free = _lib.lib.symheap_comm_allgather, \
        _lib.lib.symheap_mem_free

    def allgather(*a):
        inside[0] = True
        try:
            return real_ag(*a)
        finally:
            inside[0] = False

    def mem_free(*a):
        seen.append(inside[0])
        return real_free(*a)
    live = comm.stats()["allocations_live"]
    box = [comm.alloc(1024, "float32")]
    dropper = threading.Timer(0.2, box.clear)  # the last reference, there
    _lib.lib.symheap_comm_allgather = allgather
    _lib.lib.symheap_mem_free = mem_free
    try:
        if comm.rank == 0:
            dropper.start()
        else:
            time.sleep(1.0)  # rank 0 waits in the allgather meanwhile
        comm.allgather(b"x")
        if comm.rank == 0:
            dropper.join()
    finally:
        _lib.lib.symheap_comm_allgather = real_ag
        _lib.lib.symheap_mem_free = real_free
    check(comm.rank != 0 or not box, "the array is still held")
    box.clear()  # the other ranks' own
    check(True not in seen, "symheap_mem_free ran during a collective's C "
          "call")
    check(comm.stats()["allocations_live"] == live, "the memory was not "
          "given back after the collective (%d live, %d before)" %
          (comm.stats()["allocations_live"], live))


def counts():
    fds = len(os.listdir("/proc/self/fd"))
    with open("/proc/self/maps") as f:
        maps = sum(1 for _ in f)
    return fds, maps


def case_no_leak(comm, cycles):
    for i in range(10):  # warm: first-time imports and caches
        with comm.empty(1024, "float32") as w:
            w.local[0] = i
    # Counted at the start, after a tenth of the cycles and at the end: no
    # growth (a peer's free may be heard a call later, so one fewer is
    # fine).
    start = counts()
    for i in range(cycles):
        if i == cycles // 10:  # the window cache holds no earlier case's
            mid, s0 = counts(), comm.stats()
        with comm.empty(1024, "float32") as w:
            w.local[0] = i
            w.peer((comm.rank + 1) % comm.size)[1] = i
    after, s1 = counts(), comm.stats()
    check(after == mid and all(a <= s for a, s in zip(after, start)),
          "fds/mappings %s, %s after %d, %s after %d cycles" %
          (start, mid, cycles // 10, after, cycles))
    for k in ("windows_live", "bytes_mapped", "descriptors_held",
              "va_reserved", "allocations_live"):
        check(s0[k] == s1[k], "%s %d -> %d" % (k, s0[k], s1[k]))
    check(s1["windows_live"] == 0 and _dlpack.live_exports() == 0, "live")


def case_heap(comm):
    """heap_reserve / heap_info / heap_trim: the accounting follows what
    empty() took, and trim gives back what no allocation holds."""
    comm.heap_reserve(8 << 20)
    i0 = comm.heap_info()
    check(i0["largest_free"] >= 8 << 20,
          "heap_reserve(8 MiB) left largest_free %d" % i0["largest_free"])
    check(i0["committed"] >= 8 << 20 and i0["reserved"] >= i0["committed"],
          "reserved %d committed %d" % (i0["reserved"], i0["committed"]))
    w = comm.empty((1 << 20,), "uint8")
    i1 = comm.heap_info()
    check(i1["allocations"] == i0["allocations"] + 1,
          "allocations %d -> %d" % (i0["allocations"], i1["allocations"]))
    check(i1["used"] >= i0["used"] + (1 << 20), "used %d -> %d" % (
        i0["used"], i1["used"]))
    check(i1["committed"] == i0["committed"], "an allocation that fits grew "
          "the heap: %d -> %d" % (i0["committed"], i1["committed"]))
    w.free()
    comm.heap_trim()
    i2 = comm.heap_info()
    check(i2["allocations"] == i0["allocations"] and i2["used"] == i0["used"],
          "after free: %r" % i2)
    if i0["allocations"] == 0:
        check(i2["committed"] == 0 and i2["chunks"] == 0,
              "trim with no allocation left %d bytes in %d chunks" % (
                  i2["committed"], i2["chunks"]))
    e = raises(errors.InvalidArgError, comm.heap_reserve, (1 << 64) - 1)
    check("too large" in str(e), "heap_reserve(SIZE_MAX): %s" % e)
    check(comm.heap_info() == i2, "a refused heap_reserve changed the heap")


def case_destroy_refused(comm):
    c2 = comm.split(0, comm.rank)
    w = c2.empty(16)
    keep = w.local if comm.rank == comm.size - 1 else None
    e = raises(symheap.InvalidArgError, c2.destroy)
    check("alive" in e.message or "rank" in e.message, e.message)
    del keep
    c2.destroy()  # the window goes with it
    check(w._h is None, "window outlived its comm")


def case_module_main(comm):
    if comm.rank != 0:
        return
    env = dict(os.environ)
    py = subprocess.run([sys.executable, "-m", "symheap"], env=env,
                        capture_output=True, text=True, timeout=60)
    tool = os.path.normpath(os.path.join(
        os.path.dirname(symheap.library_path), "..", "bin", "symheap-info"))
    c = subprocess.run([tool], env=env, capture_output=True, text=True,
                       timeout=60)
    check(py.returncode == 0 and c.returncode == 0, py.stderr)
    check(py.stdout == c.stdout and "device adaptors" in py.stdout,
          "python -m symheap differs from symheap-info")


def main():
    comm = symheap.init()
    t = Cases(comm, comm.rank)
    cycles = int(os.environ.get("CYCLES", "1000"))
    t.run("python-errors-table", case_errors_table, comm)
    t.run("python-init-env", case_init_env, comm)
    # Before the cases that leave mappings in the window cache.
    t.run("python-no-leak-%d-cycles" % cycles, case_no_leak, comm, cycles)
    t.run("python-init-uid", case_init_uid, comm)
    t.run("python-peers-flat", case_peers_and_flat, comm)
    t.run("python-split", case_split, comm)
    t.run("python-register", case_register, comm)
    t.run("python-errors", case_errors, comm)
    if comm.size > 1:
        t.run("python-refusals-agreed", case_refusals_agreed, comm)
    t.run("python-interrupt-deferred", case_interrupt_deferred, comm)
    t.run("python-window-lookup", case_window_lookup, comm)
    from symheap import _hot
    if _hot.fast is not None:
        t.run("python-fast-tensor-entry", case_fast_tensor_entry, comm)
    else:
        t.skip("python-fast-tensor-entry", "the ctypes path (no _fast, or "
               "SYMHEAP_PYTHON_FAST=0): nothing compiled to test")
    t.run("python-torchrun-bootstrap", case_torchrun_bootstrap, comm)
    if comm.size > 1:
        t.run("python-gc-free-during-collective",
              case_gc_free_during_collective, comm)
    t.run("python-dlpack", case_dlpack, comm)
    t.run("python-device-view", case_device_view, comm)
    if comm.heap_info()["enabled"]:
        t.run("python-heap", case_heap, comm)
    else:
        t.skip("python-heap", "the heap is off here (SYMHEAP_HEAP=0)")
    t.run("python-destroy-refused", case_destroy_refused, comm)
    t.run("python-module-main", case_module_main, comm)
    comm.destroy()
    return t.exit()


if __name__ == "__main__":
    sys.exit(main())

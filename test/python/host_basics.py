"""test_host.py's cases of a comm and its windows: the error table, init
from the environment and from a unique id, peers and the flat view, split,
registration, errors, DLPack, the device view and the device check."""
import ctypes
import os
import re
import subprocess

import numpy as np
import symheap
from symheap import _dlpack, _lib, errors
from pytest_harness import check, raises

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


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


def case_struct_layout(comm):
    # The ctypes structures against the C ones, member by member, as a small
    # C program of the build prints them (test/py_layout.c): the library's
    # views (DeviceWindow, DeviceStatus, UniqueId) and CommStats whole (its
    # Python lacked the four heap_* members, so stats() never returned
    # them); the other caller-sized ones (struct_size) may stop early,
    # never skip or move a member.
    exe = os.environ.get("SYMHEAP_TEST_LAYOUT",
                         os.path.join(ROOT, "build", "test", "py_layout"))
    check(os.access(exe, os.X_OK), "%s is missing: make tests builds it" % exe)
    if not os.access(exe, os.X_OK):
        return
    sizes, members = {}, {}
    for line in subprocess.check_output([exe], text=True).splitlines():
        w = line.split()
        if w[0] == "S":
            sizes[w[1]], members[w[1]] = int(w[2]), []
        elif w[0] == "F":
            members[w[1]].append((w[2], int(w[3]), int(w[4])))
    for name, whole in (("DeviceStatus", True), ("DeviceWindow", True),
                        ("UniqueId", True), ("CommStats", True),
                        ("CommInfo", False), ("HeapInfo", False)):
        cls = getattr(_lib, name)
        mine = [(f, getattr(cls, f).offset, getattr(cls, f).size)
                for f, _ in cls._fields_]
        c = members.get(name, [])
        check(mine == (c if whole else c[:len(mine)]),
              "%s: ctypes %s, C %s" % (name, mine, c))
        size = ctypes.sizeof(cls)
        check(size == sizes.get(name) if whole else
              size <= sizes.get(name, 0),
              "%s: ctypes size %d, C %s" % (name, size, sizes.get(name)))
    # DeviceStatus.wait's names against the header's SYMHEAP_WAIT_*.
    text = open(os.path.join(ROOT, "include", "symheap_device.h")).read()
    waits = re.findall(r"#define SYMHEAP_(WAIT_\w+) (\d+)", text)
    check(len(waits) >= 10, "SYMHEAP_WAIT_* not found: %s" % waits)
    for n, v in waits:
        check(getattr(_lib, n, None) == int(v),
              "_lib.%s is %r, the header says %s" % (n, getattr(_lib, n, None),
                                                     v))


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


def case_device_check(comm):
    """comm.device_check(): None while no kernel gave up; once this rank's
    device status says one did (written here the way a kernel writes it:
    the fields, then done), symheap.TimeoutError with the recorded wait at
    every call, the device view refused alike, and the comm, broken, still
    destroyed.  A split, so comm stays whole; UnsupportedError where the
    device adaptor keeps no status (no host_alloc)."""
    sub = comm.split(0, comm.rank)
    w = sub.empty((16,), "int64")
    v = symheap.DeviceWindow.from_buffer_copy(w.device_view())
    if not v.flags & _lib.VIEW_STATUS:
        check(v.status is None, "status %r without the flag" % v.status)
        if v.flags & _lib.VIEW_PAD:
            e = raises(symheap.UnsupportedError, sub.device_check)
            check("host_alloc" in str(e), str(e))
        w.free()
        sub.destroy()
        return
    check(sub.device_check() is None, "a clean status")
    check(v.timeout_ns == sub.info()["timeout_ms"] * 1000000,
          "timeout_ns %d" % v.timeout_ns)
    sub.barrier()  # every rank saw its clean status
    s = symheap.DeviceStatus.from_address(v.status)
    peer = (comm.rank + 1) % comm.size
    s.code, s.wait = symheap.TimeoutError.code, _lib.WAIT_DEV_BARRIER
    s.peer, s.block = peer, 2
    s.want, s.seen, s.waited_ns = 4, 3, 2 * 10**9
    s.done = 1
    for _ in range(2):
        e = raises(symheap.TimeoutError, sub.device_check)
        check(isinstance(e, TimeoutError), "not a builtins.TimeoutError")
        check("gave up waiting for rank %d" % peer in str(e) and
              "symheap_dev_barrier" in str(e), str(e))
    e = raises(symheap.TimeoutError, w.device_view)
    check("symheap_dev_barrier" in str(e), str(e))
    raises(TypeError, sub.device_check, 1)
    sub.destroy()  # broken: local, and takes w with it
    raises(symheap.InvalidArgError, sub.device_check)

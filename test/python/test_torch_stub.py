"""One rank of test_torch_stub.sh: symheap.torch's extension, built against
the stand-ins of test/python/torch_stub, driven as PyTorch drives it, in a
job started like torchrun's (RANK, WORLD_SIZE; the torch.distributed
stand-in's default store is the directory $FAKE_STORE).
    python3 test_torch_stub.py lazy|explicit|nojob STUB_C_SO
Prints "OK <mode> rank r" when every check passed, else raises."""
import ctypes
import os
import sys
import time

MODE, SO = sys.argv[1], sys.argv[2]
RANK = int(os.environ.get("RANK", "0"))
SIZE = int(os.environ.get("WORLD_SIZE") or 1)

import symheap.torch as sht  # noqa: E402
from symheap.torch import _C  # noqa: E402

lib = ctypes.CDLL(SO)
lib.stub_alloc.restype = ctypes.c_void_p
lib.stub_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
lib.stub_rendezvous.argtypes = [ctypes.c_void_p]
lib.stub_free.argtypes = [ctypes.c_void_p]
lib.stub_peer.restype = ctypes.c_void_p
lib.stub_peer.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]


def check(cond, what):
    if not cond:
        raise AssertionError("rank %d: %s" % (RANK, what))


_barriers = [0]


def barrier():
    """Every rank here: one key per rank in the store's directory."""
    d = os.environ["FAKE_STORE"]
    n = _barriers[0]
    _barriers[0] += 1
    open(os.path.join(d, "barrier%d.%d" % (n, RANK)), "w").close()
    for _ in range(4000):
        if all(os.path.exists(os.path.join(d, "barrier%d.%d" % (n, r)))
               for r in range(SIZE)):
            return
        time.sleep(0.005)
    raise AssertionError("rank %d: barrier %d timed out" % (RANK, n))


def shared(nbytes, tag, device=0):
    """An allocation filled with (tag + rank) bytes, rendezvoused; every
    peer's buffer read through the handle, and its device tables.  Device
    -1: torch.device("cuda") with no index, the current device."""
    p = lib.stub_alloc(nbytes, device)
    check(p, "alloc of %d bytes" % nbytes)
    ctypes.memset(p, (tag + RANK) & 0xff, nbytes)
    check(lib.stub_rendezvous(p) == 0, "rendezvous")
    check(lib.stub_peer(RANK, 0, 0) == p, "own buffer is the allocation")
    for q in range(SIZE):
        b = lib.stub_peer(q, 0, 0)
        check(b and lib.stub_peer(q, 0, 1) == b, "peer %d's table entry" % q)
        got = ctypes.string_at(b, nbytes)
        check(got == bytes([(tag + q) & 0xff]) * nbytes,
              "peer %d's buffer (tag %d)" % (q, tag))
        pad = lib.stub_peer(q, 1, 0)
        check(pad and lib.stub_peer(q, 1, 1) == pad, "peer %d's pad" % q)
        check(ctypes.string_at(pad, 64) == bytes(64), "peer %d's pad is "
              "cleared" % q)
    return p


def lazy():
    check(not _C.initialized(), "initialised before the first allocation")
    a = shared(4096, 10)  # the first allocation makes the comm
    inf = sht.info()
    check((inf["rank"], inf["nranks"], inf["initialized"]) ==
          (RANK, SIZE, 1), "info %r" % inf)
    b = shared(65536, 20, device=-1)
    barrier()  # every rank read a and b
    for p in ((a, b) if RANK % 2 else (b, a)):  # freed in different orders
        lib.stub_free(p)
    c = shared(4096, 30)  # a's size again: the pool, a cached registration
    barrier()
    lib.stub_free(c)
    check(sht.info()["allocations"] == 0, "allocations left %r" % sht.info())
    sht.init()  # idempotent


def explicit():
    sht.init(0)
    check(_C.initialized() and sht.info()["rank"] == RANK, "init(0)")
    p = shared(8192, 40)
    barrier()
    lib.stub_free(p)


def nojob():
    try:
        sht.init(0)
    except RuntimeError as e:
        check("no job to join" in str(e) and "torchrun" in str(e), str(e))
    else:
        raise AssertionError("init with no job did not fail")
    check(not _C.initialized(), "initialised anyway")
    check(lib.stub_alloc(4096, 0) is None, "allocation without a comm")


{"lazy": lazy, "explicit": explicit, "nojob": nojob}[MODE]()
print("OK %s rank %d" % (MODE, RANK), flush=True)

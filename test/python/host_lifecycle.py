"""test_host.py's lifetimes: bootstrapping as torchrun does, a window freed
by the collector during a collective, no leak over cycles, the heap, and
python -m symheap."""
import os
import subprocess
import sys
import threading
import time

import symheap
from symheap import _dlpack, _lib, errors
from pytest_harness import check, raises


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


# A job of one rank that exits with arrays over window memory still alive,
# held by a module imported before symheap (so they die after symheap's own
# modules are cleared), and a capsule nobody took; PYTHONMALLOC=debug fills
# freed memory, so a deleter called through a freed struct always crashes.
_EXIT_SCRIPT = r"""
import collections, sys
import numpy as np, symheap
comm = symheap.init()
w = comm.empty((6, 7), "float64")
collections._symheap_arrays = [np.from_dlpack(w), w.local, w.local[2:]]
collections._symheap_capsule = w.__dlpack__()
print("exiting", flush=True)
"""


def case_exit_with_live_export(comm):
    """Interpreter exit with a DLPack export alive ends the process cleanly
    (it died of SIGILL at exit on a GPU machine: the consumer called the
    deleter through a struct freed with _dlpack's globals)."""
    if comm.rank != 0:
        return
    run = os.path.normpath(os.path.join(
        os.path.dirname(symheap.library_path), "..", "bin", "symheap-run"))
    env = dict(os.environ, PYTHONMALLOC="debug")
    for _ in range(2):
        p = subprocess.run([run, "-n", "1", sys.executable, "-c", _EXIT_SCRIPT],
                           env=env, capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 0 and p.stdout == "exiting\n",
              "rc %d, stdout %r, stderr %s" % (p.returncode, p.stdout,
                                               p.stderr[-400:]))

"""The C harness's conventions for Python test programs (test/harness.h):
every rank prints "FAIL <case> [rank r] <why>" for a failed check, rank 0
prints "PASS <case>" when every rank passed it (test/run.sh counts a case
only if no rank failed it).  SYMHEAP_TEST_ONLY=<case> runs that case alone
(on every rank alike: the name is all that decides)."""
import os
import sys
import traceback


class Cases:
    def __init__(self, comm=None, rank=0):
        self.comm, self.rank, self.failed = comm, rank, 0

    def run(self, name, fn, *args):
        only = os.environ.get("SYMHEAP_TEST_ONLY")
        if only and only != name:
            return True
        ok = True
        try:
            fn(*args)
        except Exception as e:  # a failed check or an unexpected error
            ok = False
            tb = traceback.extract_tb(e.__traceback__)
            mine = [f for f in tb if f.filename == sys.argv[0] or
                    f.filename.endswith(sys.argv[0])]
            where = (mine or tb)[-1]
            print("FAIL %s [rank %d] %s: %s (line %d)" %
                  (name, self.rank, type(e).__name__, e, where.lineno),
                  flush=True)
        all_ok = ok
        if self.comm is not None:  # PASS only if every rank passed
            flags = self.comm.allgather(b"\1" if ok else b"\0")
            all_ok = all(f == b"\1" for f in flags)
        if not ok:
            self.failed += 1
        elif self.rank == 0 and all_ok:
            print("PASS %s" % name, flush=True)
        return ok

    def skip(self, name, why):
        if self.rank == 0:
            print("SKIP %s %s" % (name, why), flush=True)

    def exit(self):
        sys.stdout.flush()
        return 1 if self.failed else 0


def skip_all(label, rank, why):
    """The whole program is skipped: rank 0 says why in one line (test/run.sh
    counts "SKIP <label> <why>"), every rank exits 0."""
    if rank == 0:
        print("SKIP %s %s" % (label, why), flush=True)
    sys.exit(0)


def need_torch_cuda(label, rank):
    """torch, torch.distributed and symheap, for a program on cuda tensors;
    skips the whole program (skip_all) without torch, a GPU or
    libsymheap_cuda.so."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        skip_all(label, rank, "torch is not installed for %s" % sys.executable)
    if not torch.cuda.is_available():
        skip_all(label, rank, "no GPU (torch.cuda.is_available() is False)")
    import symheap
    if not symheap.cuda.available():
        skip_all(label, rank,
                 "libsymheap_cuda.so is not built (no nvcc at build time)")
    return torch, dist, symheap


def check(cond, why):
    if not cond:
        raise AssertionError(why)


def raises(exc, fn, *args, **kwargs):
    """The exception fn raised, which must be an `exc`."""
    try:
        fn(*args, **kwargs)
    except exc as e:
        return e
    raise AssertionError("%s did not raise %s" %
                         (getattr(fn, "__name__", fn), exc.__name__))

"""symheap.torch: symheap memory behind PyTorch's SymmetricMemory.

    import symheap.torch
    import torch.distributed._symmetric_memory as symm_mem
    symm_mem.set_backend("SYMHEAP")
    t = symm_mem.empty(n, device="cuda")      # symheap_mem_alloc, local
    h = symm_mem.rendezvous(t, group)         # symheap_window_register
    torch.ops.symm_mem.one_shot_all_reduce(t, "sum", group.group_name)

Importing registers the backend "SYMHEAP" (torch >= 2.9: older torch has
no set_backend and is refused here).  The symheap comm is the job's
(symheap-run's or mpirun's environment, or torchrun's: the unique id
travels through torch's c10d store, symheap/_torchrun.py); it is made by
init() (collective: call it on every rank, after torch.cuda.set_device and,
under torchrun, preferably after init_process_group) or else by the first
symm_mem.empty, which every rank must then reach.  Groups must span the
whole job in job order.  docs/torch.md.
"""
try:
    import torch
except ImportError as e:
    raise ImportError("symheap.torch needs torch >= 2.9 (%s)" % e) from e

_MIN = (2, 9)


def _version(v):
    out = []
    for part in v.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


def _check_torch():
    import torch.distributed._symmetric_memory as sm
    if _version(torch.__version__) < _MIN or not hasattr(sm, "set_backend"):
        raise ImportError(
            "symheap.torch needs torch >= 2.9 (torch.distributed."
            "_symmetric_memory.set_backend); this is torch %s"
            % torch.__version__)


_check_torch()

try:
    from . import _C  # noqa: E402
except ImportError as e:  # built without torch at pip/make time
    raise ImportError(
        "symheap.torch: the extension symheap.torch._C is not built (%s); "
        "build it with `make python-torch` or pip install where torch "
        "imports" % e) from e

from .. import _torchrun  # noqa: E402

_C.register_backend()


def init(device=None):
    """Collective: make the symheap comm on `device` (default: the current
    CUDA device), the way the job was started: symheap-run or mpirun
    (symheap_comm_init_env), or torchrun / torch.distributed (the unique id
    through torch's c10d store).  Idempotent.  Called by the first
    symm_mem.empty when not called before."""
    if _C.initialized():
        return
    if device is None:
        device = torch.cuda.current_device()
    d = torch.device("cuda", device) if isinstance(device, int) \
        else torch.device(device)
    idx = d.index if d.index is not None else torch.cuda.current_device()
    way, why = _torchrun.how()
    if way == "store":
        rank, size, uid = _torchrun.exchange(_C.unique_id)
        _C.init_uid(idx, rank, size, uid)
    elif way == "env":
        _C.init(idx)
    else:
        raise RuntimeError("symheap.torch: cannot make the symheap comm: %s"
                           % why)


_C.set_bootstrap(init)  # the first symm_mem.empty calls it


def info():
    """The backend's state: rank, nranks, device, live allocations, pooled
    ones, and the comm's window counts."""
    return dict(_C.info())


__all__ = ["init", "info"]

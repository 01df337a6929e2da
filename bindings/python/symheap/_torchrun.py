"""How a comm made with no arguments joins its job: symheap-run's or an MPI
launcher's environment (symheap_comm_init_env), or PyTorch's (torchrun,
torch.distributed), where the unique id travels through a c10d Store.

    how()                  -> ("env", why) | ("store", why) | (None, why)
    exchange(make_uid)     -> (rank, size, uid): collective over the job

Under torchrun the ranks know RANK and WORLD_SIZE and reach the agent's
TCPStore at MASTER_ADDR:MASTER_PORT; once torch.distributed is initialised,
its default store is used instead.  Rank 0 makes the id (it must: over the
TCP bootstrap the maker listens), sets it under a key, the others get it
(store.get waits, bounded by the store's timeout).  The key is numbered per
process (the n-th comm made this way), so every rank must make its comms
through here in the same order, as with any collective.  docs/torch.md.
"""
import os

from . import errors

# symheap_comm_init_env's own ways in (core/comm/ccl_env.c).
_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")
_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_PREFIX = "symheap/uid/"

_count = 0  # comms made through exchange() in this process


def _dist():
    """torch.distributed where it imports and is initialised, else None."""
    try:
        import torch.distributed as dist
    except Exception:  # noqa: BLE001 -- no torch: no store
        return None
    try:
        return dist if dist.is_available() and dist.is_initialized() else None
    except Exception:  # noqa: BLE001
        return None


def how(env=None):
    """("env" | "store" | None, why): which way a comm with no arguments
    joins.  symheap-run (SYMHEAP_UNIQUE_ID) and SYMHEAP_CCL win; then an
    initialised torch.distributed, then torchrun's variables; then an MPI
    launcher's; None says what is missing."""
    env = os.environ if env is None else env
    if env.get("SYMHEAP_UNIQUE_ID"):
        return "env", "SYMHEAP_UNIQUE_ID is set (symheap-run)"
    ccl = env.get("SYMHEAP_CCL", "auto").lower()
    if ccl not in ("auto", ""):
        return "env", "SYMHEAP_CCL=%s" % ccl
    if _dist() is not None:
        return "store", "torch.distributed is initialised"
    if all(env.get(k) for k in _TORCHRUN_VARS):
        return "store", "torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT"
    for k in _LAUNCHER_VARS:
        if env.get(k):
            return "env", "%s is set (mpirun)" % k
    missing = [k for k in _TORCHRUN_VARS if not env.get(k)]
    return None, (
        "no job to join: run under symheap-run, torchrun or mpirun, or "
        "call torch.distributed.init_process_group first (SYMHEAP_UNIQUE_ID "
        "is not set, nor any of %s; torchrun's %s %s missing)" %
        (", ".join(_LAUNCHER_VARS), ", ".join(missing),
         "is" if len(missing) == 1 else "are"))


def _env_int(name):
    v = os.environ.get(name, "")
    try:
        return int(v)
    except ValueError:
        raise ValueError("%s=%r is not an integer" % (name, v)) from None


def job():
    """(rank, size, store) of the torch job: torch.distributed's default
    group and store, else torchrun's agent store as a client."""
    dist = _dist()
    if dist is not None:
        from torch.distributed import distributed_c10d as c10d
        return dist.get_rank(), dist.get_world_size(), c10d._get_default_store()
    rank, size = _env_int("RANK"), _env_int("WORLD_SIZE")
    # torchrun's agent hosts the store (TORCHELASTIC_USE_AGENT_STORE=True):
    # every rank is a client.  Without an agent, rank 0 of
    # init_process_group(env://) will host it on MASTER_PORT: taking the
    # port first would make that fail, so that order is refused.
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "") != "True":
        raise errors.InvalidArgError(
            "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are set but no "
            "torchrun agent hosts a store there "
            "(TORCHELASTIC_USE_AGENT_STORE is not True): call "
            "torch.distributed.init_process_group first, and symheap uses "
            "its store")
    import datetime
    # Named when malformed (int() said only "invalid literal"), and before
    # torch is imported.
    ms = _env_int("SYMHEAP_TIMEOUT_MS") if os.environ.get(
        "SYMHEAP_TIMEOUT_MS") else 60000
    if ms < 1:
        raise ValueError("SYMHEAP_TIMEOUT_MS=%r is not a positive number of "
                         "milliseconds" % os.environ["SYMHEAP_TIMEOUT_MS"])
    timeout = datetime.timedelta(milliseconds=ms)
    from torch.distributed import TCPStore
    store = TCPStore(os.environ["MASTER_ADDR"], _env_int("MASTER_PORT"),
                     size, is_master=False, timeout=timeout,
                     wait_for_workers=False)
    return rank, size, store


def _key():
    run = os.environ.get("TORCHELASTIC_RUN_ID", "")
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return "%s%s/%s/%d" % (_PREFIX, run, restart, _count)


def _multi_host():
    """Whether the job's ranks span hosts (torchrun says so)."""
    try:
        return _env_int("LOCAL_WORLD_SIZE") != _env_int("WORLD_SIZE")
    except ValueError:
        return False


def exchange(make_uid, rank=None, size=None, store=None):
    """Collective: (rank, size, uid) with rank 0's make_uid() handed to
    every rank through the store.  Over several hosts the bootstrap is TCP
    (SYMHEAP_BOOTSTRAP=tcp unless set: a Unix socket reaches one host)."""
    global _count
    if store is None:
        rank, size, store = job()
    if _multi_host():
        os.environ.setdefault("SYMHEAP_BOOTSTRAP", "tcp")
    key = _key()
    _count += 1
    if rank == 0:
        uid = bytes(make_uid())
        store.set(key, uid)
    else:
        uid = bytes(store.get(key))
    if len(uid) != 128:
        raise ValueError("the store's %s holds %d bytes, not a 128-byte "
                         "unique id" % (key, len(uid)))
    return rank, size, uid

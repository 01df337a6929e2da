"""symheap from Python: symmetric memory as NumPy arrays (CPU backends) or
torch tensors (cuda), and symheap's CUDA collectives on them.

    import symheap
    comm = symheap.init()              # under symheap-run or mpirun
    with comm.empty((4, 1024), "float32") as win:
        win.local[:] = comm.rank
        comm.barrier()
        print(win.peer((comm.rank + 1) % comm.size)[0, 0])

docs/python.md has the whole API and the lifetime rules.
"""
import ctypes as _ctypes

from . import _lib
from .comm import COLOR_NONE, Comm, init, init_torch, unique_id
from .errors import (DeviceError, Error, InternalError, InvalidArgError,
                     MismatchError, NoMemoryError, PluginError, RemoteError,
                     SystemError, TimeoutError, UnsupportedError)
from .window import Window
from ._lib import DeviceStatus, DeviceWindow, last_error
from . import cuda  # noqa: F401  (loads libsymheap_cuda.so on first use)

library_path = _lib.path


def version():
    """The library's (major, minor, patch)."""
    v = [_ctypes.c_int() for _ in range(3)]
    _lib.call("symheap_get_version", *[_ctypes.byref(x) for x in v])
    return tuple(x.value for x in v)


__version__ = "%d.%d.%d" % version()
__all__ = ["init", "init_torch", "unique_id", "Comm", "Window", "Error",
           "InvalidArgError", "MismatchError", "UnsupportedError",
           "NoMemoryError", "SystemError", "DeviceError", "TimeoutError",
           "RemoteError", "PluginError",
           "InternalError", "DeviceWindow", "DeviceStatus", "COLOR_NONE",
           "cuda", "version",
           "last_error"]

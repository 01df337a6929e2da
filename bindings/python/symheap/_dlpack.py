"""DLPack capsules made with ctypes, so that NumPy, PyTorch, CuPy and JAX take
window memory without a compiled extension.

Each export allocates a DLManagedTensor (or the versioned struct, DLPack 1.x,
when the consumer asks for it) whose manager_ctx keys a holder in _live: the
holder keeps the shape and stride arrays and a reference to the owner (the
Window).  The consumer calls the deleter when its array or tensor dies; the
deleter drops the holder, and with it the reference, so a window cannot be
freed while an array over it lives (Window.free refuses until then).
"""
import atexit
import ctypes
import itertools
import threading

# DLDeviceType values (dlpack.h).
CPU, CUDA, ROCM = 1, 2, 10

_READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device),
                ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):  # DLManagedTensor
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):  # DLManagedTensorVersioned
    _fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER), ("flags", ctypes.c_uint64),
                ("dl_tensor", _Tensor)]


_live = {}  # manager_ctx -> (struct, shape, strides, owner)
_lock = threading.Lock()
_ids = itertools.count(1)


def live_exports():
    """How many exported arrays or tensors are alive (for tests)."""
    return len(_live)


def _on_delete(managed_ptr):
    # Called by the consumer with the struct we made (either kind), found by
    # its address; drops the holder and, with it, the owner's export.
    try:
        with _lock:
            key = _by_address.pop(managed_ptr, None)
            holder = _live.pop(key, None)
        if holder is not None and holder[3] is not None:
            holder[3]._export_done()
    except Exception:  # at interpreter exit the module may be half gone
        pass


_by_address = {}
_deleter = _DELETER(_on_delete)

# Our own function objects: ctypes.pythonapi's are shared, and a caller
# setting their argtypes would change ours.
_api = ctypes.PyDLL(ctypes.pythonapi._name)
_CAPSULE_DTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DTOR]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.Py_IncRef.restype = None
_api.Py_IncRef.argtypes = [ctypes.py_object]


def _pin_at_exit():
    # An array or tensor still alive at interpreter exit can die after this
    # module's globals are cleared (held by a module imported before
    # symheap, or by torch's own teardown).  Its consumer then called the
    # deleter through a struct already freed with _live: the process died
    # of SIGILL or SIGSEGV at exit (test_host.py on a GPU machine, where
    # failed cases left tensors alive).  So each export still alive keeps
    # its holder for good, a reference nobody drops, with no deleter (DLPack
    # lets it be NULL; NumPy and PyTorch check), and the functions called
    # back stay too (a capsule nobody took calls _capsule_destructor).
    with _lock:
        holders = list(_live.values())
    for h in holders:
        m = h[0]
        ctypes.c_void_p.from_address(
            ctypes.addressof(m) + type(m).deleter.offset).value = None
        _api.Py_IncRef(h)
    for f in (_deleter, _capsule_destructor):
        _api.Py_IncRef(f)


atexit.register(_pin_at_exit)
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

_NAME = ctypes.create_string_buffer(b"dltensor")
_NAME_V = ctypes.create_string_buffer(b"dltensor_versioned")


def _capsule_dtor(capsule):
    # A capsule nobody consumed still owns its tensor (a consumer renames it
    # "used_dltensor").  The capsule is passed as an address: it is being
    # destroyed, so no Python reference may be taken to it.
    try:
        for name in (_NAME, _NAME_V):
            if _api.PyCapsule_IsValid(capsule, name):
                _on_delete(_api.PyCapsule_GetPointer(capsule, name))
    except Exception:
        pass


_capsule_destructor = _CAPSULE_DTOR(_capsule_dtor)


def capsule(ptr, shape, strides, dtype, device, owner, versioned=False):
    """A DLPack capsule over `ptr` (strides in elements).  `owner` gets
    _export_begin() now and _export_done() when the consumer lets go."""
    ndim = len(shape)
    c_shape = (ctypes.c_int64 * max(ndim, 1))(*shape)
    c_strides = (ctypes.c_int64 * max(ndim, 1))(*strides)
    m = _ManagedVersioned() if versioned else _Managed()
    t = m.dl_tensor
    t.data = ptr
    t.device = _Device(device[0], device[1])
    t.ndim = ndim
    t.dtype = _DataType(dtype.code, dtype.bits, 1)
    t.shape = c_shape
    t.strides = c_strides
    t.byte_offset = 0
    key = next(_ids)
    m.manager_ctx = key
    m.deleter = _deleter
    if versioned:
        m.version = _Version(1, 0)
        m.flags = 0
    addr = ctypes.addressof(m)
    if owner is not None:
        owner._export_begin()
    with _lock:
        _live[key] = (m, c_shape, c_strides, owner)
        _by_address[addr] = key
    return _api.PyCapsule_New(addr, _NAME_V if versioned else _NAME,
                              _capsule_destructor)


class Export:
    """One array's worth of window memory, for xp.from_dlpack(Export(...))."""

    def __init__(self, owner, ptr, shape, strides, dtype, device):
        self._args = (ptr, tuple(shape), tuple(strides), dtype, device, owner)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None,
                   copy=None, **_):
        # `stream`: the consumer's stream; symheap enqueues nothing of its own
        # on any stream behind the caller's back, so there is nothing to order.
        if copy:
            raise BufferError("symheap: windows are exported without copying")
        ptr, shape, strides, dtype, device, owner = self._args
        if dl_device is not None and tuple(dl_device) != tuple(device):
            raise BufferError("symheap: window memory is on device %r, not %r"
                              % (device, tuple(dl_device)))
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return capsule(ptr, shape, strides, dtype, device, owner, versioned)

    def __dlpack_device__(self):
        return self._args[4]


class HostArray:
    """The same for NumPy on CPU memory, through the array interface
    (numpy.from_dlpack makes read-only arrays before NumPy 2.1): the array's
    base is this object, which holds the owner's export until it dies."""

    def __init__(self, owner, ptr, shape, strides, typestr, itemsize):
        self.__array_interface__ = {
            "version": 3, "shape": tuple(shape), "typestr": typestr,
            "data": (ptr, False),
            "strides": tuple(s * itemsize for s in strides)}
        self._owner = owner
        owner._export_begin()

    def __del__(self):
        try:
            self._owner._export_done()
        except Exception:  # at interpreter exit
            pass

"""Windows: symmetric memory shaped as an array.

A Window is made collectively by Comm.empty (symheap_malloc) or
Comm.register (symheap_window_register over an existing array or tensor).
Its arrays (.local, .peer(p), .flat, and whatever takes it through DLPack)
alias window memory; each keeps the window alive, and free() refuses, on
every rank alike, while any of them lives.
"""
import ctypes
import gc
import threading

from . import _args, _dlpack, _dtypes, _hot, _lib, errors

def contiguous_strides(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


class Window:
    """Symmetric memory of one comm; see the module's comment."""

    def __init__(self, comm, handle, shape, dtype, owned, base=None):
        self._comm = comm
        self._h = handle
        self.shape = tuple(shape)
        self._dt = dtype
        self._owned = owned  # symheap_free, else symheap_window_deregister
        self._base = base    # the registered array or tensor, kept alive
        self._exports = 0
        self._lock = threading.Lock()
        p = ctypes.c_void_p()
        _lib.call("symheap_window_local_ptr", handle, ctypes.byref(p))
        self._local = p.value or 0
        n = ctypes.c_size_t()
        _lib.call("symheap_window_size", handle, ctypes.byref(n))
        self.nbytes = n.value
        comm._windows.add(self)
        _hot.forget()  # an address may now lie in this window

    # -- what the arrays' owners call (_dlpack) --
    def _export_begin(self):
        with self._lock:
            self._exports += 1

    def _export_done(self):
        with self._lock:
            self._exports -= 1

    @property
    def exports(self):
        """Arrays and tensors over this window still alive."""
        return self._exports

    @property
    def dtype(self):
        """The element type's name ("float32", "bfloat16", ...)."""
        return self._dt.name

    @property
    def comm(self):
        return self._comm

    @property
    def handle(self):
        """The symheap_window_t, as an int (for C code of your own)."""
        self._alive()
        return self._h

    def _alive(self):
        if self._h is None:
            raise errors.InvalidArgError("the window was freed")

    def _array(self, ptr, shape, strides):
        return self._comm._make_array(self, ptr, shape, strides, self._dt)

    @property
    def local(self):
        """This rank's copy: a numpy.ndarray on CPU backends, a torch.Tensor
        on cuda.  A new array at each access, all over the same memory."""
        self._alive()
        return self._array(self._local, self.shape,
                           contiguous_strides(self.shape))

    def peer(self, p):
        """Rank p's copy, same shape and dtype: loads and stores reach p's
        memory (UnsupportedError for a rank on another host)."""
        self._alive()
        ptr = ctypes.c_void_p()
        _lib.call("symheap_window_peer_ptr", self._h,
                  _args.integer(p, "peer"), ctypes.byref(ptr))
        return self._array(ptr.value, self.shape,
                           contiguous_strides(self.shape))

    @property
    def flat(self):
        """Every rank's copy as one (size, *shape) array over the flat VA
        (UnsupportedError for a window that fell back to per-peer mappings).
        """
        self._alive()
        base, stride = ctypes.c_void_p(), ctypes.c_size_t()
        _lib.call("symheap_window_flat_base", self._h, ctypes.byref(base),
                  ctypes.byref(stride))
        item = _dtypes.itemsize(self._dt)
        if stride.value % item:
            raise errors.UnsupportedError(
                "the flat stride (%d bytes) is not a multiple of the element "
                "size (%d)" % (stride.value, item))
        shape = (self._comm.size,) + self.shape
        strides = (stride.value // item,) + contiguous_strides(self.shape)
        return self._array(base.value, shape, strides)

    def device_view(self):
        """The symheap_device_window_t bytes (include/symheap_device.h), to
        pass by value to a kernel; symheap.DeviceWindow parses them."""
        self._alive()
        buf = ctypes.create_string_buffer(8192)  # more than any library size
        _lib.call("symheap_window_device_view", self._h, buf)
        size = ctypes.c_uint32.from_buffer(buf, 4).value
        return buf.raw[:size]

    def __dlpack__(self, **kwargs):
        self._alive()
        return _dlpack.Export(self, self._local, self.shape,
                              contiguous_strides(self.shape), self._dt,
                              self._comm._dl_device()).__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._comm._dl_device()

    def free(self):
        """Collective: release the window (and its memory, for one made by
        empty).  Refused on every rank while an array over it lives on any
        rank: del them first.  On a GPU it first waits for the device's
        work (torch.cuda.synchronize), so no kernel still uses the memory."""
        self._alive()
        local = None
        if self._exports:  # perhaps only garbage (cycles through a traceback)
            gc.collect()
        if self._exports:
            local = errors.InvalidArgError(
                "window still has %d array(s) or tensor(s) over it alive; "
                "del them before free()" % self._exports)
        else:
            self._comm._quiesce()
        with self._comm._collective():  # agreement and C call, or neither
            self._comm._agree(local)
            fn = "symheap_free" if self._owned else \
                "symheap_window_deregister"
            _lib.call(fn, self._comm._h, self._h)
            self._forget()

    def _forget(self):
        _hot.forget()  # no answer may name this window any more
        self._comm._windows.discard(self)
        self._h = None
        self._base = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._h is not None:
            try:
                self.free()
            except errors.Error:
                # An exception is on its way out of the block: that one is
                # the cause (the free may fail because of it, e.g. a tensor
                # still alive in the failed code), so it is the one raised.
                if exc[0] is None:
                    raise
        return False

    def __repr__(self):
        state = "freed" if self._h is None else "%d bytes" % self.nbytes
        return "<symheap.Window shape=%s dtype=%s %s>" % (
            self.shape, self._dt.name, state)

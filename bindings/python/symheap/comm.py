"""Communicators: init (environment, unique id, torch.distributed), the
comm's properties, barrier, split, and the collective window calls."""
import contextlib
import ctypes
import gc
import re
import struct
import threading

from . import _args, _dlpack, _dtypes, _hot, _lib, _torchrun, errors
from ._interrupt import deferred
from .window import Window, contiguous_strides

COLOR_NONE = -1  # SYMHEAP_COLOR_NONE: join no sub-communicator
WINDOW_MULTICAST = 1  # SYMHEAP_WINDOW_MULTICAST

_AGREE_BYTES = 256  # one rank's message in _agree, when one failed


def unique_id():
    """A new job identity (128 bytes): make it on one rank, hand it to every
    rank (any way you like), and pass it to init(rank, size, uid)."""
    uid = _lib.UniqueId()
    _lib.call("symheap_get_unique_id", ctypes.byref(uid))
    return bytes(uid.bytes)


def init(rank=None, size=None, uid=None):
    """init(): the job this process was started in: symheap-run's or
    mpirun's environment, or torchrun's / torch.distributed's (the unique
    id through torch's c10d store: _torchrun.py).
    init(rank, size, uid): `size` ranks sharing `uid` from unique_id().
    Collective; blocks until every rank joined (SYMHEAP_TIMEOUT_MS)."""
    h = ctypes.c_void_p()
    if rank is None and size is None and uid is None:
        way, why = _torchrun.how()
        if way == "store":
            rank, size, uid = _torchrun.exchange(unique_id)
        else:
            try:
                _lib.call("symheap_comm_init_env", ctypes.byref(h))
            except errors.InvalidArgError as e:
                if way is None:  # say every way in, not symheap-run's alone
                    raise errors.InvalidArgError(
                        "%s; %s" % (e.message, why)) from e
                raise
            return Comm(h.value)
    if rank is None or size is None or uid is None:
        raise errors.InvalidArgError("init takes no argument, or rank, size "
                                     "and uid")
    rank, size = _args.integer(rank, "rank"), _args.integer(size, "size")
    uid = _args.data(uid, "uid")
    if len(uid) != 128:
        raise errors.InvalidArgError("uid must be the 128 bytes of "
                                     "unique_id(), not %d" % len(uid))
    c_uid = _lib.UniqueId()
    ctypes.memmove(c_uid.bytes, uid, 128)
    _lib.call("symheap_comm_init", ctypes.byref(h), size,
              ctypes.byref(c_uid), rank)
    return Comm(h.value)


def init_torch(group=None):
    """A comm over the ranks of a torch.distributed group (the default group
    when None): rank 0 of the group makes the uid, the group broadcasts it.
    Call it after torch.cuda.set_device: the cuda adaptor follows the
    current device."""
    import torch
    import torch.distributed as dist
    if torch.cuda.is_available():
        torch.cuda.synchronize()  # makes torch's context current here
    rank = dist.get_rank(group)
    size = dist.get_world_size(group)
    box = [unique_id() if rank == 0 else None]
    src = dist.get_global_rank(group, 0) if group is not None else 0
    dist.broadcast_object_list(box, src=src, group=group)
    return init(rank, size, box[0])


def _shape(shape):
    if hasattr(shape, "__index__"):
        shape = (shape,)
    shape = tuple(_args.integer(n, "dimension", 0, _args.SIZE_MAX)
                  for n in shape)
    return shape


def _local_error(what, e):
    """The symheap error for a refusal made here in Python."""
    if isinstance(e, errors.Error):
        return e
    return errors.InvalidArgError("%s: %s" % (what, e))


class Comm:
    """A symheap communicator.  destroy() it (collective), or use `with`."""

    def __init__(self, handle):
        self._h = handle
        self._windows = set()
        self._allocs = set()
        # Held by the thread in a collective of this comm: another thread's
        # release of alloc() memory (the garbage collector's) waits in
        # _pending_frees until the collective is over (_flush_frees).
        self._busy = threading.RLock()
        self._pending_frees = []
        info = self.info()
        self.rank = info["rank"]
        self.size = info["nranks"]
        self.local_rank = info["local_rank"]
        self.device_adaptor = info["device_adaptor"]
        m = re.search(r"\(device (\d+)\)", info["device"])
        ordinal = int(m.group(1)) if m else 0
        if self.device_adaptor == "cuda":
            self._device = (_dlpack.CUDA, ordinal)
        elif self.device_adaptor == "hip":
            self._device = (_dlpack.ROCM, ordinal)
        elif info["cpu_access"]:
            self._device = (_dlpack.CPU, 0)
        else:
            self._device = None
        _hot.add_comm(handle)  # where symheap.cuda finds tensors' windows

    # -- arrays --
    def _dl_device(self):
        if self._device is None:
            raise errors.UnsupportedError(
                "the '%s' device adaptor has no array type in Python (CPU "
                "backends give NumPy arrays, cuda gives torch tensors)" %
                self.device_adaptor)
        return self._device

    def _make_array(self, owner, ptr, shape, strides, dt):
        """A NumPy array (CPU) or torch tensor over ptr that holds an
        export of owner while it (or a view of it) lives."""
        if self._dl_device()[0] == _dlpack.CPU:
            import numpy
            return numpy.asarray(_dlpack.HostArray(
                owner, ptr, shape, strides, _dtypes.typestr(dt),
                _dtypes.itemsize(dt)))
        import torch
        return torch.from_dlpack(_dlpack.Export(owner, ptr, shape, strides,
                                                dt, self._device))

    def _quiesce(self):
        """Wait for this rank's device work before memory is unmapped: a
        kernel still running on a window being freed would fault.  Each rank
        waits before the collective agreement, so no rank's work on it is
        left when any rank unmaps."""
        if self._device is not None and self._device[0] != _dlpack.CPU:
            import torch
            torch.cuda.synchronize(self._device[1])

    @property
    def handle(self):
        """The symheap_comm_t, as an int (for C code of your own)."""
        self._alive()
        return self._h

    def _alive(self):
        if self._h is None:
            raise errors.InvalidArgError("the comm was destroyed")

    # -- queries --
    def info(self):
        """symheap_comm_get_info as a dict (device_adaptor, device, ...)."""
        self._alive()
        i = _lib.CommInfo()
        i.struct_size = ctypes.sizeof(i)
        _lib.call("symheap_comm_get_info", self._h, ctypes.byref(i))
        return _lib.struct_dict(i)

    def stats(self):
        """symheap_comm_get_stats as a dict (windows_live, bytes_mapped,
        descriptors_held, ..., heap_reserved, heap_committed, heap_used,
        heap_allocations)."""
        self._alive()
        s = _lib.CommStats()
        s.struct_size = ctypes.sizeof(s)
        _lib.call("symheap_comm_get_stats", self._h, ctypes.byref(s))
        return _lib.struct_dict(s)

    def heap_info(self):
        """symheap_heap_get_info as a dict (reserved, committed, used,
        largest_free, allocations, chunks, ...): the comm's symmetric heap,
        which empty() draws from (docs/heap.md)."""
        self._alive()
        i = _lib.HeapInfo()
        i.struct_size = ctypes.sizeof(i)
        _lib.call("symheap_heap_get_info", self._h, ctypes.byref(i))
        return _lib.struct_dict(i)

    def heap_reserve(self, nbytes):
        """Collective: commit heap memory so that at least `nbytes` can be
        allocated without growing (e.g. before CUDA-graph capture, where
        growth is refused)."""
        self._alive()
        with self._collective():
            n = self._checked("heap_reserve",
                              lambda: _args.size(nbytes, "nbytes"))
            _lib.call("symheap_heap_reserve", self._h, n)

    def heap_trim(self):
        """Collective: give back the heap's chunks that hold no allocation."""
        self._alive()
        _lib.call("symheap_heap_trim", self._h)

    def device_check(self):
        """symheap_comm_device_check: raises symheap.TimeoutError (a
        builtins.TimeoutError too), saying which wait, peer and block, once
        a kernel of this rank gave up waiting for a peer (the comm is then
        broken: destroy it), at every call after; UnsupportedError where
        the device adaptor keeps no device status (no host_alloc), so a
        give-up could not be seen.  Local, one host load: call it after
        synchronising the stream (torch.cuda.synchronize)."""
        self._alive()
        _lib.call("symheap_comm_device_check", self._h)

    def world_rank(self, rank):
        """The job-wide rank of `rank` of this comm."""
        self._alive()
        out = ctypes.c_int()
        _lib.call("symheap_comm_world_rank", self._h,
                  _args.integer(rank, "rank"), ctypes.byref(out))
        return out.value

    def local_ranks(self):
        """The ranks of this comm on this host (reachable by load/store)."""
        self._alive()
        buf = (ctypes.c_int * self.size)()
        count = ctypes.c_int()
        _lib.call("symheap_comm_local_ranks", self._h, buf, self.size,
                  ctypes.byref(count))
        return list(buf[:count.value])

    # -- collectives --
    def barrier(self):
        self._alive()
        _lib.call("symheap_comm_barrier", self._h)

    def allgather(self, data):
        """Collective: every rank gives the same number of bytes (a
        bytes-like object); returns the list of every rank's bytes (the
        bootstrap's speed: for setup)."""
        self._alive()
        with self._collective() as d:
            data = self._checked("allgather",
                                 lambda: _args.data(data, "allgather"))
            d.result = self._allgather(data)
            return d.result

    @contextlib.contextmanager
    def _collective(self):
        """Around each collective of the package: SIGINT held to its end
        (_interrupt.deferred), and this comm marked busy for the other
        threads; frees they queued meanwhile are made at its end."""
        got = self._busy.acquire(blocking=False)
        try:
            with deferred() as d:
                yield d
        finally:
            if got:
                self._busy.release()
                self._flush_frees()

    def _flush_frees(self):
        """symheap_mem_free of what other threads released during a
        collective, unless another thread is in one now (it flushes)."""
        if not self._pending_frees or not self._busy.acquire(blocking=False):
            return
        try:
            while self._pending_frees and self._h is not None:
                _lib.lib.symheap_mem_free(self._h, self._pending_frees.pop())
        finally:
            self._busy.release()

    def _allgather(self, data):
        out = ctypes.create_string_buffer(max(1, len(data) * self.size))
        _lib.call("symheap_comm_allgather", self._h, data, out, len(data))
        n = len(data)
        return [out.raw[r * n:(r + 1) * n] for r in range(self.size)]

    def _checked(self, what, prepare):
        """Collective: prepare() (this rank's checks and conversions of a
        call's arguments), then one verdict on every rank (_agree): its
        value, or the error of the first rank whose prepare() failed."""
        local, value = None, None
        try:
            value = prepare()
        except Exception as e:  # whatever it is, every rank hears of it
            local = _local_error(what, e)
        self._agree(local)
        return value

    def _agree(self, local_exc):
        """Collective: fail on every rank if this check failed on any, with
        the first failing rank's error (so that a refusal made here in Python
        leaves no peer waiting in the C call that would follow)."""
        code, msg = 0, b""
        if local_exc is not None:
            code = getattr(local_exc, "code", 1)
            code = code if code > 0 else 1
            msg = str(getattr(local_exc, "message", local_exc)).encode()
        # The codes first: 4 bytes, which ride the comm's shared memory on
        # one host; the messages only when some rank failed.
        with self._collective():  # both exchanges, or neither
            codes = [struct.unpack("<i", got)[0]
                     for got in self._allgather(struct.pack("<i", code))]
            if not any(codes):
                return
            texts = self._allgather(
                msg[:_AGREE_BYTES - 1].ljust(_AGREE_BYTES, b"\0"))
        for r, c in enumerate(codes):
            if c == 0:
                continue
            if r == self.rank:
                raise local_exc
            text = texts[r].split(b"\0", 1)[0].decode(errors="replace")
            raise errors.error_for(c, "rank %d: %s" % (r, text))

    def split(self, color, key=0):
        """Collective: ranks passing the same color form a new Comm, ordered
        by key then rank; COLOR_NONE (-1) joins none and gets None."""
        self._alive()
        out = ctypes.c_void_p()
        with self._collective() as d:
            c, k = self._checked("split", lambda: (
                _args.integer(color, "color"), _args.integer(key, "key")))
            _lib.call("symheap_comm_split", self._h, c, k, ctypes.byref(out))
            d.result = Comm(out.value) if out.value else None
            return d.result

    def split_local(self):
        """Collective: the ranks that share this rank's host."""
        self._alive()
        out = ctypes.c_void_p()
        with self._collective() as d:
            _lib.call("symheap_comm_split_local", self._h, ctypes.byref(out))
            d.result = Comm(out.value)
            return d.result

    def empty(self, shape, dtype="float32", multicast=False):
        """Collective: a Window of `shape` and `dtype` on every rank
        (symheap_malloc); uninitialised memory."""
        self._alive()

        def prepare():
            s = _shape(shape)
            dt = _dtypes.get(dtype)
            return s, dt, _args.nbytes(s, _dtypes.itemsize(dt), "empty")
        with self._collective() as d:
            shape, dt, nbytes = self._checked("empty", prepare)
            h = ctypes.c_void_p()
            _lib.call("symheap_malloc", self._h, nbytes,
                      WINDOW_MULTICAST if multicast else 0, ctypes.byref(h))
            try:
                d.result = Window(self, h.value, shape, dt, owned=True)
            except BaseException:
                _lib.lib.symheap_free(self._h, h.value)  # every rank got here
                raise
            return d.result

    def alloc(self, shape, dtype="float32"):
        """Local: an array over device memory from symheap_mem_alloc, which
        register() takes on every backend.  The memory goes back when the
        array and every view of it are gone."""
        self._alive()
        shape = _shape(shape)
        dt = _dtypes.get(dtype)
        nbytes = _args.nbytes(shape, _dtypes.itemsize(dt), "alloc")
        p = ctypes.c_void_p()
        _lib.call("symheap_mem_alloc", self._h, nbytes, ctypes.byref(p))
        owner = _Allocation(self, p.value)
        try:
            return self._make_array(owner, p.value, shape,
                                    contiguous_strides(shape), dt)
        finally:
            if owner.exports == 0:  # no array was made: give it back
                owner._export_done()

    def register(self, obj, multicast=False):
        """Collective: a Window over an existing contiguous array or tensor
        (symheap_window_register); it keeps `obj` alive.  On the host backend
        the memory must come from alloc(); on cuda, from alloc() or any
        memory the driver can export (then every rank must register the same
        offset inside its allocation)."""
        self._alive()
        with self._collective() as d:
            ptr, nbytes, shape, dt = self._checked(
                "register", lambda: self._describe(obj))
            h = ctypes.c_void_p()
            _lib.call("symheap_window_register", self._h, ptr, nbytes,
                      WINDOW_MULTICAST if multicast else 0, ctypes.byref(h))
            try:
                d.result = Window(self, h.value, shape, dt, owned=False,
                                  base=obj)
            except BaseException:
                _lib.lib.symheap_window_deregister(self._h, h.value)
                raise
            return d.result

    def _describe(self, obj):
        """(pointer, bytes, shape, DType) of a contiguous array or tensor on
        this comm's device."""
        dev = self._dl_device()
        if hasattr(obj, "data_ptr") and hasattr(obj, "is_contiguous"):
            if not obj.is_contiguous():
                raise ValueError("the tensor is not contiguous")
            want = {_dlpack.CPU: "cpu", _dlpack.CUDA: "cuda",
                    _dlpack.ROCM: "cuda"}[dev[0]]
            if obj.device.type != want:
                raise ValueError("the tensor is on %s; this comm's memory is "
                                 "on %s" % (obj.device, want))
            return (obj.data_ptr(), obj.numel() * obj.element_size(),
                    tuple(obj.shape), _dtypes.get(obj.dtype))
        if hasattr(obj, "__array_interface__"):
            if dev[0] != _dlpack.CPU:
                raise ValueError("a host array cannot be registered on the "
                                 "'%s' adaptor" % self.device_adaptor)
            if not obj.flags["C_CONTIGUOUS"]:
                raise ValueError("the array is not C-contiguous")
            return (obj.__array_interface__["data"][0], obj.nbytes,
                    tuple(obj.shape), _dtypes.get(obj.dtype))
        raise TypeError("register takes a NumPy array or a torch tensor, not "
                        "%s" % type(obj).__name__)

    def destroy(self):
        """Collective (local once the comm has failed): releases the comm and
        the windows still on it.  Refused on every rank while an array over
        one of its windows or allocations lives on any rank."""
        if self._h is None:
            return
        def busy_count():
            return sum(w.exports for w in self._windows) + \
                sum(a.exports for a in self._allocs)
        busy = busy_count()
        if busy:  # perhaps only garbage (cycles through a traceback)
            gc.collect()
            busy = busy_count()
        if not busy:  # kernels may still use its windows or its pad
            self._quiesce()
        local = errors.InvalidArgError(
            "comm.destroy: %d array(s) or tensor(s) over its windows or "
            "allocations still alive; del them first" % busy) if busy else None
        with self._collective():
            try:
                self._agree(local)
            except errors.Error as e:
                if busy or e.code not in (errors.RemoteError.code,
                                          errors.TimeoutError.code):
                    raise  # a refusal; a failed comm is destroyed locally
            for w in list(self._windows):
                w._forget()
            self._flush_frees()
            h, self._h = self._h, None
            _hot.remove_comm(h)
            _lib.call("symheap_comm_destroy", h)

    close = destroy

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False

    def __repr__(self):
        if self._h is None:
            return "<symheap.Comm destroyed>"
        return "<symheap.Comm rank %d of %d on %s>" % (self.rank, self.size,
                                                       self.device_adaptor)


class _Allocation:
    """Memory from symheap_mem_alloc, freed when the last array over it goes
    (symheap_mem_free is local, so the garbage collector may call it)."""

    def __init__(self, comm, ptr):
        self.comm, self.ptr, self.exports = comm, ptr, 0
        comm._allocs.add(self)

    def _export_begin(self):
        self.exports += 1

    def _export_done(self):
        self.exports -= 1
        c = self.comm
        if self.exports <= 0 and c._h is not None:
            c._allocs.discard(self)
            c._quiesce()  # queued kernels may still use it
            if not c._busy.acquire(blocking=False):
                # Another thread is in a collective of this comm (we are the
                # garbage collector, say): the C library would refuse.
                c._pending_frees.append(self.ptr)
                return
            try:
                _lib.lib.symheap_mem_free(c._h, self.ptr)
            finally:
                c._busy.release()

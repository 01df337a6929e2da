"""Finding libsymheap.so and declaring the C API (include/symheap.h) to ctypes.

Where the library is looked for, first found wins:
  1. $SYMHEAP_LIBRARY (a path to libsymheap.so[.0]);
  2. $SYMHEAP_PREFIX/lib (what `make install PREFIX=...` was given);
  3. beside this package as `make install` lays it out
     (PREFIX/lib/python3/site-packages/symheap -> PREFIX/lib), which is also
     the build tree's layout (build/lib/python3/site-packages/symheap);
  4. the source tree's build (bindings/python/symheap -> build/lib);
  5. where `pip install` found it (symheap/_config.py, written by setup.py);
  6. the dynamic linker's search path (libsymheap.so.0).
"""
import ctypes
import os

from . import errors

_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("SYMHEAP_LIBRARY")
    if env:
        return [env]  # asked for by name: nothing else is tried
    dirs = []
    prefix = os.environ.get("SYMHEAP_PREFIX")
    if prefix:
        dirs.append(os.path.join(prefix, "lib"))
    dirs += [os.path.normpath(os.path.join(_HERE, rel))
             for rel in ("../../..", "../../../build/lib")]
    try:
        from . import _config  # only in a package pip installed
        if _config.LIBDIR:
            dirs.append(_config.LIBDIR)
    except ImportError:
        pass
    out = []
    for d in dirs:
        out += [os.path.join(d, "libsymheap.so.0"),
                os.path.join(d, "libsymheap.so")]
    return [p for p in out if os.path.exists(p)] + ["libsymheap.so.0"]


def _load():
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("symheap: cannot load libsymheap: tried " +
                      "; ".join(tried) +
                      ". Set SYMHEAP_LIBRARY to its path, or SYMHEAP_PREFIX to the "
                      "PREFIX of `make install`.")


lib, path = _load()
libdir = os.path.dirname(os.path.abspath(path)) if os.sep in path else None

c_int, c_int32, c_uint, c_uint32, c_uint64, c_size_t, c_void_p, c_char_p = (
    ctypes.c_int, ctypes.c_int32, ctypes.c_uint, ctypes.c_uint32,
    ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p)
P = ctypes.POINTER


class UniqueId(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_ubyte * 128)]


class CommInfo(ctypes.Structure):
    """symheap_comm_info_t."""
    _fields_ = [
        ("struct_size", c_uint32), ("rank", c_int32), ("nranks", c_int32),
        ("local_rank", c_int32), ("device_adaptor", ctypes.c_char * 32),
        ("ccl_adaptor", ctypes.c_char * 32), ("granularity", c_size_t),
        ("multicast_available", c_int32), ("timeout_ms", c_int32),
        ("device", ctypes.c_char * 64), ("cpu_access", c_int32),
        ("window_cache", c_int32), ("local_nranks", c_int32),
        ("nhosts", c_int32), ("window_path", ctypes.c_char * 16)]


class CommStats(ctypes.Structure):
    """symheap_comm_stats_t."""
    _fields_ = [("struct_size", c_uint32)] + [
        (n, c_uint64) for n in (
            "windows_live", "allocations_live", "bytes_allocated",
            "bytes_registered", "va_reserved", "bytes_mapped",
            "descriptors_held", "multicast_objects", "mappings_cached",
            "heap_reserved", "heap_committed", "heap_used",
            "heap_allocations")]


class HeapInfo(ctypes.Structure):
    """symheap_heap_info_t."""
    _fields_ = [("struct_size", c_uint32)] + [
        (n, c_uint64) for n in (
            "reserved", "committed", "used", "largest_free", "allocations",
            "chunks", "chunk_size", "threshold")] + [("enabled", ctypes.c_int32)]


MAX_PEERS = 32  # SYMHEAP_DEVICE_MAX_PEERS


class DeviceWindow(ctypes.Structure):
    """symheap_device_window_t (include/symheap_device.h), version 3: parse
    the bytes of Window.device_view() with DeviceWindow.from_buffer_copy."""
    _fields_ = [
        ("version", c_uint32), ("struct_size", c_uint32),
        ("flat_base", c_void_p), ("stride", c_uint64), ("size", c_uint64),
        ("rank", c_int32), ("nranks", c_int32), ("flags", c_uint32),
        ("signal_count", c_uint32), ("multicast_base", c_void_p),
        ("pad_base", c_void_p), ("pad_stride", c_uint64),
        ("signal_offset", c_uint64), ("peer_ptrs", c_void_p * MAX_PEERS),
        ("world_ranks", c_int32 * MAX_PEERS), ("local_rank", c_int32),
        ("local_nranks", c_int32), ("reachable", c_uint64),
        ("rdma_addr", c_uint64 * MAX_PEERS),
        ("rdma_rkey", c_uint32 * MAX_PEERS), ("proxy_ring", c_void_p),
        ("proxy_window", c_uint64), ("status", c_void_p),
        ("timeout_ns", c_uint64)]


VIEW_PAD = 0x4      # SYMHEAP_VIEW_PAD
VIEW_STATUS = 0x80  # SYMHEAP_VIEW_STATUS: status and timeout_ns are valid


class DeviceStatus(ctypes.Structure):
    """symheap_device_status_t (include/symheap_device.h): where a kernel of
    this rank records a wait that gave up (DeviceWindow.status points at
    it, host memory mapped into the device); Comm.device_check reads it."""
    _fields_ = [
        ("code", c_uint32), ("wait", c_uint32), ("peer", c_int32),
        ("block", c_int32), ("want", c_uint64), ("seen", c_uint64),
        ("waited_ns", c_uint64), ("done", c_uint32), ("pad_", c_uint32),
        ("reserved", c_uint64 * 4)]


# DeviceStatus.wait: what a kernel gave up waiting for (SYMHEAP_WAIT_* of
# include/symheap_device.h; a test compares the names and values).
WAIT_BARRIER = 1      # the collectives' barrier (block flags)
WAIT_LL = 2           # the LL all-reduce/reduce-scatter data
WAIT_PUSH = 3         # the push all-reduce's block flags
WAIT_LL128 = 4        # the LL128 all-reduce's line flags
WAIT_BCAST_PIPE = 5   # the pipelined broadcast's progress
WAIT_A2A_READY = 6    # all-to-all: a peer entering the call
WAIT_A2A_DATA = 7     # all-to-all: a peer's data sent
WAIT_CE_FLAG = 8      # a copy-engine path's flag (kernel)
WAIT_DEV_BARRIER = 9  # symheap_dev_barrier
WAIT_DEV_SIGNAL = 10  # symheap_dev_wait_signal


def struct_dict(s):
    """A caller-sized struct as a dict (struct_size left out, text decoded)."""
    out = {}
    for name, _ in s._fields_:
        if name == "struct_size":
            continue
        v = getattr(s, name)
        out[name] = v.decode(errors="replace") if isinstance(v, bytes) else v
    return out


_R = c_int  # symheap_result_t
_PROTOS = {
    "symheap_strerror": (c_char_p, [c_int]),
    "symheap_last_error": (c_char_p, []),
    "symheap_get_version": (_R, [P(c_int)] * 3),
    "symheap_get_unique_id": (_R, [P(UniqueId)]),
    "symheap_comm_init": (_R, [P(c_void_p), c_int, P(UniqueId), c_int]),
    "symheap_comm_init_env": (_R, [P(c_void_p)]),
    "symheap_comm_destroy": (_R, [c_void_p]),
    "symheap_comm_rank": (_R, [c_void_p, P(c_int)]),
    "symheap_comm_size": (_R, [c_void_p, P(c_int)]),
    "symheap_comm_barrier": (_R, [c_void_p]),
    "symheap_comm_split": (_R, [c_void_p, c_int, c_int, P(c_void_p)]),
    "symheap_comm_split_local": (_R, [c_void_p, P(c_void_p)]),
    "symheap_comm_world_rank": (_R, [c_void_p, c_int, P(c_int)]),
    "symheap_comm_local_ranks": (_R, [c_void_p, P(c_int), c_int, P(c_int)]),
    "symheap_comm_allgather": (_R, [c_void_p, c_void_p, c_void_p, c_size_t]),
    "symheap_comm_get_info": (_R, [c_void_p, P(CommInfo)]),
    "symheap_comm_get_stats": (_R, [c_void_p, P(CommStats)]),
    "symheap_comm_device_check": (_R, [c_void_p]),
    "symheap_mem_alloc": (_R, [c_void_p, c_size_t, P(c_void_p)]),
    "symheap_mem_free": (_R, [c_void_p, c_void_p]),
    "symheap_window_register": (_R, [c_void_p, c_void_p, c_size_t, c_uint,
                                     P(c_void_p)]),
    "symheap_window_deregister": (_R, [c_void_p, c_void_p]),
    "symheap_malloc": (_R, [c_void_p, c_size_t, c_uint, P(c_void_p)]),
    "symheap_free": (_R, [c_void_p, c_void_p]),
    "symheap_window_local_ptr": (_R, [c_void_p, P(c_void_p)]),
    "symheap_window_peer_ptr": (_R, [c_void_p, c_int, P(c_void_p)]),
    "symheap_window_flat_base": (_R, [c_void_p, P(c_void_p), P(c_size_t)]),
    "symheap_window_multicast_ptr": (_R, [c_void_p, P(c_void_p)]),
    "symheap_window_size": (_R, [c_void_p, P(c_size_t)]),
    "symheap_window_find": (_R, [c_void_p, c_void_p, P(c_void_p),
                                 P(c_size_t)]),
    "symheap_window_device_view": (_R, [c_void_p, c_void_p]),
    "symheap_heap_get_info": (_R, [c_void_p, P(HeapInfo)]),
    "symheap_heap_reserve": (_R, [c_void_p, c_size_t]),
    "symheap_heap_trim": (_R, [c_void_p]),
}
for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _res, _args


def last_error():
    return (lib.symheap_last_error() or b"").decode(errors="replace")


def strerror(code):
    return (lib.symheap_strerror(code) or b"").decode(errors="replace")


def check(result, what=None):
    """Raise the exception of a failed result, with this thread's
    symheap_last_error() (read at once: the next call replaces it)."""
    if result != 0:
        msg = last_error() or strerror(result)
        raise errors.error_for(result, msg if not what else
                               "%s: %s" % (what, msg))


def call(name, *args):
    check(getattr(lib, name)(*args))

"""The hot path of symheap.cuda: the window of a tensor's address, and the
collective call, compiled (symheap._fast, built where Python's headers are)
or through ctypes where it is not.

The window is found by the library (symheap_window_find, O(log n) of the
live windows) among the live comms of this process (usually one), whose
handles comm.py keeps in `comms`.  SYMHEAP_PYTHON_FAST=0 uses ctypes even
where _fast is built (to compare, or to rule it out).
"""
import ctypes
import os

from . import _args, _lib, errors

comms = ()  # the live comms' handles (ints), in order of creation

try:
    from . import _fast as fast
except ImportError:  # not compiled here (no Python.h when it was built)
    fast = None
_fast_module = fast  # its window cache is emptied by forget() in any case
if os.environ.get("SYMHEAP_PYTHON_FAST", "1") == "0":
    fast = None


def add_comm(handle):
    global comms
    comms = comms + (handle,)


def remove_comm(handle):
    global comms
    comms = tuple(h for h in comms if h != handle)
    forget()


def _make_error(code, what, message):
    return errors.error_for(code, "%s %s" % (what, message) if what
                            else message)


def _addr(f):
    return ctypes.cast(f, ctypes.c_void_p).value


if fast is not None:
    fast.bind(_addr(_lib.lib.symheap_window_find),
              _addr(_lib.lib.symheap_window_size),
              _addr(_lib.lib.symheap_comm_size),
              _addr(_lib.lib.symheap_last_error), _make_error)


def path():
    """"compiled" or "ctypes": what the hot calls go through."""
    return "compiled" if fast is not None else "ctypes"


# locate_ctypes's answers by (ptr, nbytes): four ctypes calls saved per
# tensor.  Emptied whenever a window of this process is made or released
# (window.py), so an answer never outlives the windows it was given for.
_found = {}


def forget():
    _found.clear()
    if _fast_module is not None and hasattr(_fast_module, "forget"):
        _fast_module.forget()


def locate_ctypes(ptr, nbytes, what):
    """(window handle, byte offset, comm handle) of [ptr, ptr + nbytes) in
    a live window's local copy, through ctypes."""
    hit = _found.get((ptr, nbytes))
    if hit is not None:
        return hit
    ptr, nbytes = _args.size(ptr, "address"), _args.size(nbytes, "size")
    win, off, size = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
    for c in comms:
        if _lib.lib.symheap_window_find(c, ptr, ctypes.byref(win),
                                        ctypes.byref(off)) != 0:
            continue
        _lib.call("symheap_window_size", win, ctypes.byref(size))
        if off.value + nbytes <= size.value:
            if len(_found) > 4096:  # tensors come and go: stay small
                _found.clear()
            _found[(ptr, nbytes)] = hit = (win.value, off.value, c)
            return hit
        break
    raise errors.InvalidArgError(
        "%s is not inside a symheap window's local copy (make it with "
        "comm.empty or comm.register)" % what)


def locate(ptr, nbytes, what="the address"):
    """(window handle, byte offset) of [ptr, ptr + nbytes)."""
    if fast is not None:
        return fast.locate(comms, ptr, nbytes)
    return locate_ctypes(ptr, nbytes, what)[:2]

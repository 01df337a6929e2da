"""symheap's CUDA collectives (libsymheap_cuda.so, kernels/symheap_cuda.h) on
torch tensors that live in windows.

Each call finds the window and byte offset of its tensors (made by
Comm.empty or Comm.register, or views into them), and enqueues on `stream`:
by default torch's current stream, so the calls order with the rest of the
script and can be captured in torch.cuda.graph.  Like the C API, nothing
waits on the host and a refused call enqueues nothing; every rank must make
the same collective calls in the same order.

Adding a collective of the C API: one line in _PROTOS (name, argument
types), and a function below that turns tensors into (window, offset) with
_in_window and calls _call(name, ...).
"""
import ctypes
import os

from . import _args, _dtypes, _hot, _lib, errors

c_int, c_size_t, c_void_p = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p

# symheap_result_t NAME(args...), as in kernels/symheap_cuda.h.
_PROTOS = {
    "symheap_cuda_all_reduce": [c_void_p, c_size_t, c_void_p, c_size_t,
                                c_size_t, c_int, c_int, c_int, c_void_p],
    "symheap_cuda_all_reduce_algo": [c_void_p, c_size_t, c_int,
                                     ctypes.POINTER(c_int)],
    "symheap_cuda_all_gather": [c_void_p, c_size_t, c_void_p, c_size_t,
                                c_size_t, c_void_p],
    "symheap_cuda_put": [c_void_p, c_int, c_size_t, c_void_p, c_size_t,
                         c_void_p],
    "symheap_cuda_get": [c_void_p, c_void_p, c_int, c_size_t, c_size_t,
                         c_void_p],
    "symheap_cuda_reduce_scatter": [c_void_p, c_size_t, c_void_p, c_size_t,
                                    c_size_t, c_int, c_int, c_int, c_void_p],
    "symheap_cuda_all_to_all": [c_void_p, c_size_t, c_void_p, c_size_t,
                                c_size_t, c_void_p],
    "symheap_cuda_broadcast": [c_void_p, c_size_t, c_void_p, c_size_t,
                               c_size_t, c_int, ctypes.c_uint, c_void_p],
}
OPS = {"sum": 0, "max": 1}  # symheap_redop_t
# symheap_algo_t; rs_ce and rs_ce_pipe (SYMHEAP_ALGO_RS_COPY_ENGINE,
# SYMHEAP_ALGO_RS_CE_PIPELINED) and the push ones are all-reduce only
ALGOS = {"auto": 0, "one_shot": 1, "two_shot": 2, "rs_ce": 3,
         "one_shot_push": 4, "two_shot_push": 5, "rs_ce_pipe": 6,
         "ll128": 7}

_cuda = None
_fast_bound = None  # _bound(): None until the first call
_art = None  # _fast.all_reduce_t once bound to torch (_bind_torch)


def _library():
    """libsymheap_cuda.so: $SYMHEAP_CUDA_COLL_LIBRARY, else beside
    libsymheap, else the linker's path.  Built only where nvcc is."""
    global _cuda
    if _cuda is not None:
        return _cuda
    env = os.environ.get("SYMHEAP_CUDA_COLL_LIBRARY")
    paths = [env] if env else (
        [os.path.join(_lib.libdir, "libsymheap_cuda.so.0")]
        if _lib.libdir else []) + ["libsymheap_cuda.so.0"]
    tried = []
    for p in paths:
        try:
            lib = ctypes.CDLL(p)
            break
        except OSError as e:
            tried.append("%s (%s)" % (p, e))
    else:
        raise errors.UnsupportedError(
            "symheap.cuda: cannot load libsymheap_cuda.so (make builds it "
            "wherever nvcc is): tried " + "; ".join(tried))
    for name, args in _PROTOS.items():
        f = getattr(lib, name, None)
        if f is not None:
            f.restype, f.argtypes = c_int, args
    _cuda = lib
    return lib


def _bound():
    """Whether the compiled entry is bound to libsymheap_cuda's calls."""
    global _fast_bound
    if _fast_bound is None:
        _fast_bound = False
        if _hot.fast is not None:
            lib = _library()
            ar = getattr(lib, "symheap_cuda_all_reduce", None)
            ag = getattr(lib, "symheap_cuda_all_gather", None)
            if ar is not None and ag is not None:
                _hot.fast.bind_cuda(_hot._addr(ar), _hot._addr(ag))
                _fast_bound = True
                _bind_torch()
    return _fast_bound


def _bind_torch():
    """all_reduce's whole entry in C (_fast.all_reduce_t): the tables it
    reads torch tensors with.  OPS and ALGOS are passed as they are, so an
    entry added to them is seen there too."""
    global _art
    f = getattr(_hot.fast, "all_reduce_t", None)
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if f is None or raw is None:
        return
    dtypes = {}
    for d in (torch.float32, torch.bfloat16, torch.float16):
        dt = _dtypes.get(d)
        if dt.coll is not None:
            dtypes[d] = (dt.coll, _dtypes.itemsize(dt))
    _hot.fast.bind_torch(dtypes, OPS, ALGOS, raw)
    _art = f


def available():
    """Whether libsymheap_cuda.so loads here."""
    try:
        _library()
        return True
    except errors.Error:
        return False


def _call(name, *args):
    f = getattr(_library(), name, None)
    if f is None:
        raise errors.UnsupportedError("%s is not in this libsymheap_cuda.so"
                                      % name)
    _lib.check(f(*args))


_raw_stream = None  # torch._C._cuda_getCurrentRawStream, once looked up


def _stream(stream, t=None):
    global _raw_stream
    if stream is None:
        if _raw_stream is None:
            import torch
            _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream",
                                  False)
        if _raw_stream and t is not None:  # much cheaper than the below
            return _raw_stream(t.get_device())
        import torch
        return torch.cuda.current_stream().cuda_stream
    if hasattr(stream, "cuda_stream"):
        return stream.cuda_stream
    return _args.size(stream, "stream")


def _nbytes(t):
    return t.numel() * t.element_size()


def _contiguous(t, what):
    if not t.is_contiguous():
        raise errors.InvalidArgError("%s is not contiguous" % what)


def _in_window(t, what):
    """(window handle, byte offset) of a contiguous tensor inside a window's
    local copy (symheap_window_find, _hot.py)."""
    _contiguous(t, what)
    if _hot.fast is not None:
        return _hot.fast.locate(_hot.comms, t.data_ptr(), _nbytes(t))
    return _hot.locate_ctypes(t.data_ptr(), _nbytes(t), what)[:2]


_COLL = {}  # torch dtype -> symheap_dtype_t, filled as they come


def _coll_dtype(t):
    code = _COLL.get(t.dtype)
    if code is not None:
        return code
    dt = _dtypes.get(t.dtype)
    if dt.coll is None:
        raise errors.InvalidArgError(
            "the collectives take float32, bfloat16 or float16, not %s"
            % dt.name)
    _COLL[t.dtype] = dt.coll
    return dt.coll


def _choice(table, value, what):
    if value not in table:
        raise errors.InvalidArgError("%s must be one of %s, not %r" %
                                     (what, ", ".join(table), value))
    return table[value]


def all_reduce(tensor, op="sum", algo="auto", stream=None, out=None):
    """Collective: out (default: tensor, in place) = op over ranks of tensor.
    Returns out."""
    if _fast_bound and stream is None and _art is not None:
        # One C call reads the tensors, the current stream and the windows;
        # NotImplemented: arguments the checks below must look at.
        if _art(_hot.comms, tensor, out, op, algo) is None:
            return tensor if out is None else out
    n = tensor.numel()
    nb = n * tensor.element_size()
    if out is None:
        out = tensor
    elif out.dtype != tensor.dtype or out.numel() != n:
        raise errors.InvalidArgError("all_reduce: out must have the input's "
                                     "dtype and number of elements")
    else:
        _contiguous(out, "all_reduce output")
    _contiguous(tensor, "all_reduce input")
    opc, alg = OPS.get(op), ALGOS.get(algo)
    if opc is None or alg is None:
        _choice(OPS, op, "op")
        _choice(ALGOS, algo, "algo")
    ptr = tensor.data_ptr()
    args = (ptr, nb, out.data_ptr() if out is not tensor else ptr, nb, n,
            _coll_dtype(tensor), opc, alg, _stream(stream, tensor))
    if _bound():
        _hot.fast.all_reduce(_hot.comms, *args)
        return out
    win_in, off_in, _ = _hot.locate_ctypes(args[0], args[1],
                                           "all_reduce input")
    win_out, off_out, _ = _hot.locate_ctypes(args[2], args[3],
                                             "all_reduce output")
    _call("symheap_cuda_all_reduce", win_in, off_in, win_out, off_out,
          *args[4:])
    return out


def all_reduce_algo(tensor):
    """What algo="auto" picks for this tensor: "one_shot", "two_shot" or
    "rs_ce" (reduce-scatter, then all-gather by the copy engines) or
    "rs_ce_pipe" (the same in chunks, pipelined)."""
    win, _ = _in_window(tensor, "tensor")
    got = c_int()
    _call("symheap_cuda_all_reduce_algo", win, tensor.numel(),
          _coll_dtype(tensor), ctypes.byref(got))
    names = {v: k for k, v in ALGOS.items()}
    if got.value not in names:  # a newer library's algorithm
        return "algo_%d" % got.value
    return names[got.value]


def all_gather(out, inp, stream=None):
    """Collective: every rank's inp lands in out, rank r's block at r (out
    holds comm.size times inp's bytes).  Returns out."""
    _contiguous(inp, "all_gather input")
    _contiguous(out, "all_gather output")
    args = (inp.data_ptr(), _nbytes(inp), out.data_ptr(), _nbytes(out),
            _stream(stream, inp))
    if _bound():
        _hot.fast.all_gather(_hot.comms, *args)
        return out
    win_in, off_in, _ = _hot.locate_ctypes(args[0], args[1],
                                           "all_gather input")
    win_out, off_out, c = _hot.locate_ctypes(args[2], args[3],
                                             "all_gather output")
    n = c_int()
    _lib.call("symheap_comm_size", c, ctypes.byref(n))
    if args[3] != args[1] * n.value:
        raise errors.InvalidArgError(
            "all_gather: out has %d bytes, not %d ranks x %d" %
            (args[3], n.value, args[1]))
    _call("symheap_cuda_all_gather", win_in, off_in, win_out, off_out,
          args[1], args[4])
    return out


def put(dst, src, peer, stream=None):
    """One-sided: src (local device memory) into rank peer's copy of dst (a
    tensor in a window; the same place in peer's copy).  No synchronisation
    with the peer: order it yourself before the peer reads."""
    win, off = _in_window(dst, "put destination")
    if not src.is_contiguous() or _nbytes(src) > _nbytes(dst):
        raise errors.InvalidArgError("put: src must be contiguous and fit in "
                                     "dst")
    _call("symheap_cuda_put", win, _args.integer(peer, "peer"), off, src.data_ptr(),
          _nbytes(src), _stream(stream))
    return dst


def get(dst, src, peer, stream=None):
    """One-sided: rank peer's copy of src (a tensor in a window) into dst
    (local device memory).  Returns dst."""
    win, off = _in_window(src, "get source")
    if not dst.is_contiguous() or _nbytes(dst) < _nbytes(src):
        raise errors.InvalidArgError("get: dst must be contiguous and hold "
                                     "src")
    _call("symheap_cuda_get", dst.data_ptr(), win, _args.integer(peer, "peer"), off,
          _nbytes(src), _stream(stream))
    return dst


def _win(t, what):
    """(window handle, offset, comm handle) of a contiguous tensor."""
    _contiguous(t, what)
    return _hot.locate_ctypes(t.data_ptr(), _nbytes(t), what)


def _nranks(comm):
    n = c_int()
    _lib.call("symheap_comm_size", comm, ctypes.byref(n))
    return n.value


def reduce_scatter(out, inp, op="sum", algo="auto", stream=None):
    """Collective: out (count elements) = op over ranks of this rank's block
    of inp (nranks x count elements, block r for rank r).  Returns out."""
    wi, oi, c = _win(inp, "reduce_scatter input")
    wo, oo, _ = _win(out, "reduce_scatter output")
    if out.dtype != inp.dtype or inp.numel() != out.numel() * _nranks(c):
        raise errors.InvalidArgError(
            "reduce_scatter: inp must hold nranks x out's elements, same dtype")
    _call("symheap_cuda_reduce_scatter", wi, oi, wo, oo, out.numel(),
          _coll_dtype(out), _choice(OPS, op, "op"),
          _choice(ALGOS, algo, "algo"), _stream(stream, out))
    return out


def all_to_all(out, inp, stream=None):
    """Collective: block p of inp (nbytes / nranks each) lands in block r
    (this rank) of rank p's out.  Returns out."""
    wi, oi, c = _win(inp, "all_to_all input")
    wo, oo, _ = _win(out, "all_to_all output")
    n = _nranks(c)
    if _nbytes(out) != _nbytes(inp) or _nbytes(inp) % n:
        raise errors.InvalidArgError(
            "all_to_all: out and inp must have the same bytes, a multiple of "
            "%d ranks" % n)
    _call("symheap_cuda_all_to_all", wi, oi, wo, oo, _nbytes(inp) // n,
          _stream(stream, out))
    return out


def broadcast(out, inp, root, stream=None):
    """Collective: root's inp lands in out on every rank (same bytes).
    Returns out."""
    wi, oi, _ = _win(inp, "broadcast input")
    wo, oo, _ = _win(out, "broadcast output")
    if _nbytes(out) != _nbytes(inp):
        raise errors.InvalidArgError("broadcast: out and inp must have the "
                                     "same bytes")
    _call("symheap_cuda_broadcast", wi, oi, wo, oo, _nbytes(inp),
          _args.integer(root, "root"), 0, _stream(stream, out))
    return out

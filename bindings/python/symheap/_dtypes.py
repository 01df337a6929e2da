"""Element types, named once: the DLPack code and width of each, and the
symheap_dtype_t the CUDA collectives take (kernels/symheap_cuda.h)."""
import collections

DType = collections.namedtuple("DType", "name code bits coll")

# DLPack type codes (dlpack.h): kDLInt, kDLUInt, kDLFloat, kDLBfloat,
# kDLComplex, kDLBool.
_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6

# name -> (DLPack code, bits, symheap_dtype_t or None)
_TABLE = {
    "float32": (_FLOAT, 32, 0), "bfloat16": (_BFLOAT, 16, 1),
    "float16": (_FLOAT, 16, 2), "float64": (_FLOAT, 64, None),
    "int8": (_INT, 8, None), "int16": (_INT, 16, None),
    "int32": (_INT, 32, None), "int64": (_INT, 64, None),
    "uint8": (_UINT, 8, None), "uint16": (_UINT, 16, None),
    "uint32": (_UINT, 32, None), "uint64": (_UINT, 64, None),
    "bool": (_BOOL, 8, None), "complex64": (_COMPLEX, 64, None),
    "complex128": (_COMPLEX, 128, None),
}
_ALIASES = {"float": "float32", "half": "float16", "double": "float64",
            "int": "int32", "long": "int64", "bool_": "bool",
            "cfloat": "complex64", "cdouble": "complex128"}


def get(dtype):
    """A DType from a name ("float32"), a NumPy dtype or type, or a torch
    dtype.  ValueError names the accepted ones."""
    if isinstance(dtype, DType):
        return dtype
    name = None
    if isinstance(dtype, str):
        name = dtype
    elif type(dtype).__module__ == "torch":  # torch.float32 -> "float32"
        name = str(dtype).split(".", 1)[-1]
    else:
        try:
            import numpy
            name = numpy.dtype(dtype).name
        except Exception:  # not a NumPy type either
            name = None
    if name is not None:
        name = _ALIASES.get(name, name)
    if name not in _TABLE:
        raise ValueError("unknown dtype %r; symheap knows %s" %
                         (dtype, ", ".join(sorted(_TABLE))))
    code, bits, coll = _TABLE[name]
    return DType(name, code, bits, coll)


def itemsize(dt):
    return dt.bits // 8


def torch_dtype(dt):
    import torch
    return getattr(torch, dt.name)


_KINDS = {_INT: "i", _UINT: "u", _FLOAT: "f", _COMPLEX: "c", _BOOL: "b"}


def typestr(dt):
    """The NumPy array-interface type string ("<f4"); ValueError for types
    NumPy lacks (bfloat16)."""
    if dt.code not in _KINDS:
        raise ValueError("NumPy has no %s arrays" % dt.name)
    return "<%s%d" % (_KINDS[dt.code], itemsize(dt))

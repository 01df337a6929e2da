"""Arguments checked before they reach C: ctypes converts integers without
any overflow check (c_int(2**32 - 1) is -1, c_size_t(2**64 + 16) is 16), so
every integer handed to the library goes through these first and one that
does not fit is refused, never truncated."""
import operator

from .errors import InvalidArgError

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
SIZE_MAX = (1 << 64) - 1


def integer(value, what, lo=INT_MIN, hi=INT_MAX):
    """value as a Python int in [lo, hi]; InvalidArgError (a ValueError)
    otherwise.  operator.index: ints and NumPy integers, not floats or
    strings."""
    if isinstance(value, bool):
        raise InvalidArgError("%s must be an integer, not bool" % what)
    try:
        v = operator.index(value)
    except TypeError:
        raise InvalidArgError("%s must be an integer, not %s" %
                              (what, type(value).__name__)) from None
    if v < lo or v > hi:
        raise InvalidArgError("%s %d is out of range [%d, %d]" %
                              (what, v, lo, hi))
    return v


def size(value, what):
    """A size_t: an integer in [0, SIZE_MAX]."""
    return integer(value, what, 0, SIZE_MAX)


def nbytes(shape, itemsize, what):
    """The bytes of `shape` elements of `itemsize`, refused beyond SIZE_MAX
    (Python's ints do not wrap; the C size_t would)."""
    n = itemsize
    for d in shape:
        n *= d
    if n > SIZE_MAX:
        raise InvalidArgError("%s: %s elements of %d bytes is %d bytes, more "
                              "than a size_t holds" % (what, shape, itemsize,
                                                       n))
    return n


def data(value, what):
    """The bytes of a bytes-like object (bytes, bytearray, memoryview, a
    contiguous array); a str or an int is refused (bytes(5) would be five
    zero bytes)."""
    if isinstance(value, str):
        raise InvalidArgError("%s takes bytes, not str (encode it)" % what)
    try:
        return memoryview(value).tobytes()
    except TypeError:
        raise InvalidArgError("%s takes a bytes-like object, not %s" %
                              (what, type(value).__name__)) from None

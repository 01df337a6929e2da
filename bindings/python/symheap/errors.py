"""Exceptions: one class per symheap result code.

Every failing call raises the subclass named after its result code
(SYMHEAP_ERR_MISMATCH -> MismatchError), carrying the library's
symheap_last_error() text.  Where a Python built-in means the same thing, the
class derives from it too, so `except ValueError` still catches a bad argument.
"""
import builtins

# The order of SYMHEAP_RESULT_MAP in include/symheap.h: the value of a code is
# its index.  A test compares these names with symheap_strerror().
RESULT_CODES = (
    "SYMHEAP_SUCCESS",
    "SYMHEAP_ERR_INVALID_ARG",
    "SYMHEAP_ERR_MISMATCH",
    "SYMHEAP_ERR_UNSUPPORTED",
    "SYMHEAP_ERR_NO_MEMORY",
    "SYMHEAP_ERR_SYSTEM",
    "SYMHEAP_ERR_DEVICE",
    "SYMHEAP_ERR_TIMEOUT",
    "SYMHEAP_ERR_REMOTE",
    "SYMHEAP_ERR_PLUGIN",
    "SYMHEAP_ERR_INTERNAL",
)


class Error(Exception):
    """A symheap call failed.  .code is the result code (an int), .code_name
    its name, .message symheap_last_error() at the time of the failure."""

    code = -1
    code_name = "SYMHEAP_ERR_UNKNOWN"

    def __init__(self, message, code=None):
        Exception.__init__(self, message)
        if code is not None:
            self.code = code
            self.code_name = (RESULT_CODES[code]
                              if 0 <= code < len(RESULT_CODES)
                              else "SYMHEAP_ERR_UNKNOWN(%d)" % code)
        self.message = message

    def __str__(self):
        return "%s: %s" % (self.code_name, self.message)


def _camel(code_name):
    words = code_name[len("SYMHEAP_ERR_"):].lower().split("_")
    return "".join(w.capitalize() for w in words) + "Error"


# Built-ins whose meaning matches a code.
_ALSO = {
    "SYMHEAP_ERR_INVALID_ARG": ValueError,
    "SYMHEAP_ERR_NO_MEMORY": MemoryError,
    "SYMHEAP_ERR_TIMEOUT": builtins.TimeoutError,
}

BY_CODE = {}
for _code, _name in enumerate(RESULT_CODES):
    if _code == 0:
        continue
    _bases = (Error,) + ((_ALSO[_name],) if _name in _ALSO else ())
    _cls = type(_camel(_name), _bases,
                {"code": _code, "code_name": _name,
                 "__doc__": "Raised for %s." % _name,
                 "__init__": lambda self, message, code=None, _c=_code:
                     Error.__init__(self, message, _c)})
    globals()[_cls.__name__] = _cls
    BY_CODE[_code] = _cls

# Named explicitly for readers and linters (the loop above made them).
InvalidArgError = BY_CODE[1]
MismatchError = BY_CODE[2]
UnsupportedError = BY_CODE[3]
NoMemoryError = BY_CODE[4]
SystemError = BY_CODE[5]  # noqa: A001 (symheap.SystemError, not the built-in)
DeviceError = BY_CODE[6]
TimeoutError = BY_CODE[7]  # noqa: A001
RemoteError = BY_CODE[8]
PluginError = BY_CODE[9]
InternalError = BY_CODE[10]


def error_for(code, message):
    """The exception for a result code (Error itself for an unknown code)."""
    cls = BY_CODE.get(code)
    return cls(message) if cls else Error(message, code)

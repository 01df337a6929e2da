"""python3 -m symheap [ARGS]: what symheap-info prints (it runs the
symheap-info installed beside the library, with the same arguments)."""
import os
import shutil
import sys

from . import _lib


def _tool():
    if _lib.libdir:
        p = os.path.join(_lib.libdir, "..", "bin", "symheap-info")
        if os.access(p, os.X_OK):
            return os.path.normpath(p)
    return shutil.which("symheap-info")


def main(argv):
    tool = _tool()
    if tool is None:
        sys.stderr.write("symheap: symheap-info is neither beside %s (../bin) "
                         "nor on PATH\n" % _lib.path)
        return 1
    sys.stdout.flush()
    os.execv(tool, [tool] + argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

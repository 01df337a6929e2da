"""Builds the symheap package for pip (pyproject.toml names this backend).

Where the C library is, decided at build time and written into the package
as symheap/_config.py (the package looks there after its other places,
symheap/_lib.py):
  1. $SYMHEAP_PREFIX (what `make install PREFIX=...` was given): PREFIX/lib;
  2. pkg-config symheap (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig);
  3. the source tree's build/lib, when built from inside it.
Nothing found: a warning, and the package still looks at run time
($SYMHEAP_LIBRARY, $SYMHEAP_PREFIX, the linker's path).

symheap._fast (symheap/_fast.c, the compiled entry of the eager
collectives) is built where Python's headers are (Debian: python3-dev);
where it cannot be, the package uses ctypes and says so in
`python3 -m symheap`.
"""
import os
import re
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.normpath(os.path.join(HERE, "..", ".."))


def _pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config"] + list(args) + ["symheap"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def libdir():
    """(the directory of libsymheap.so.0, how it was found) or (None, why)."""
    prefix = os.environ.get("SYMHEAP_PREFIX")
    if prefix:
        d = os.path.join(prefix, "lib")
        return (d, "SYMHEAP_PREFIX") if os.path.isdir(d) else \
            (None, "SYMHEAP_PREFIX=%s has no lib/" % prefix)
    d = _pkg_config("--variable=libdir")
    if d:
        return d, "pkg-config"
    d = os.path.join(TREE, "build", "lib")
    if os.path.exists(os.path.join(d, "libsymheap.so.0")):
        return d, "the source tree's build"
    return None, ("neither SYMHEAP_PREFIX nor pkg-config symheap "
                  "(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig) found it")


def version():
    h = os.path.join(TREE, "include", "symheap.h")
    if os.path.exists(h):
        text = open(h).read()
        parts = [re.search(r"#define SYMHEAP_VERSION_%s (\d+)" % k,
                           text).group(1) for k in ("MAJOR", "MINOR", "PATCH")]
        return ".".join(parts)
    return _pkg_config("--modversion") or "0.0.0"


class BuildPy(build_py):
    """Also writes symheap/_config.py: where the library was found."""

    def run(self):
        build_py.run(self)
        d, how = libdir()
        if d is None:
            print("symheap: libsymheap not found at build time (%s); the "
                  "package will look at run time (SYMHEAP_LIBRARY, "
                  "SYMHEAP_PREFIX, the linker's path)" % how)
        else:
            print("symheap: using %s/libsymheap.so.0 (from %s)" % (d, how))
        out = os.path.join(self.build_lib, "symheap", "_config.py")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write('"""Written by setup.py at pip install time."""\n'
                    "LIBDIR = %r\n" % d)


def extensions():
    if not os.path.exists(os.path.join(HERE, "symheap", "_fast.c")):
        return []
    inc = sysconfig.get_paths().get("include")
    if not inc or not os.path.exists(os.path.join(inc, "Python.h")):
        print("symheap: no Python.h for %s (Debian: apt-get install "
              "python3-dev): the compiled fast path is skipped, ctypes is "
              "used" % sys.executable)
        return []
    return [Extension("symheap._fast", ["symheap/_fast.c"], optional=True,
                      extra_compile_args=["-O2", "-std=c11"])]


def torch_extensions():
    """symheap.torch._C where torch (>= 2.9, with CUDA) imports; else a line
    saying why (torch_ext.py)."""
    sys.path.insert(0, HERE)
    import torch_ext
    exts = torch_ext.extensions(libdir()[0])
    return exts, ({"build_ext": torch_ext.build_ext_cmd()} if exts else {})


_TORCH_EXTS, _TORCH_CMDS = torch_extensions()
setup(version=version(), cmdclass=dict({"build_py": BuildPy}, **_TORCH_CMDS),
      ext_modules=extensions() + _TORCH_EXTS)

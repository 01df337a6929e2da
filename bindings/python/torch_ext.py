"""symheap.torch._C, the torch extension (symheap/torch/*.cpp, *.cu).

Used by setup.py (pip) and by `make python-torch`:
    python3 torch_ext.py BUILD_LIB   # builds into BUILD_LIB/symheap/torch/
Built only where torch imports with CUDA and nvcc is found; elsewhere a
line says why and nothing is built (exit status 0).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.normpath(os.path.join(HERE, "..", ".."))


def why_not():
    """None when the extension can be built here, else why not."""
    try:
        import torch
        from torch.utils import cpp_extension
    except Exception as e:  # noqa: BLE001 -- any import failure means skip
        return "torch does not import (%s)" % e
    if not torch.version.cuda:
        return "torch %s has no CUDA" % torch.__version__
    if not cpp_extension.CUDA_HOME:
        return "no CUDA toolkit (nvcc) found (set CUDA_HOME)"
    import torch.distributed._symmetric_memory as sm
    if not hasattr(sm, "set_backend"):
        return "torch %s is older than 2.9 (no set_backend)" % \
            torch.__version__
    return None


def extensions(libdir):
    """[the CUDAExtension] or [] (printing why)."""
    why = why_not()
    if why:
        print("symheap: symheap.torch skipped: %s" % why)
        return []
    from torch.utils.cpp_extension import CUDAExtension
    src = os.path.join("symheap", "torch")
    inc = [os.path.join(TREE, "include")]
    libs = [libdir] if libdir else []
    return [CUDAExtension(
        "symheap.torch._C",
        [os.path.join(src, "allocator.cpp"), os.path.join(src, "signal.cu")],
        include_dirs=inc, library_dirs=libs, libraries=["symheap"],
        runtime_library_dirs=libs,
        extra_compile_args={"cxx": ["-O2", "-std=c++17"],
                            "nvcc": ["-O2", "-std=c++17"]})]


def build_ext_cmd():
    """ninja where it is (the two sources compile side by side, MAX_JOBS
    bounds it), else one after the other."""
    from torch.utils.cpp_extension import BuildExtension, is_ninja_available
    return BuildExtension.with_options(use_ninja=is_ninja_available())


def main():
    out = os.path.abspath(sys.argv[1])
    libdir = os.path.join(TREE, "build", "lib")
    if len(sys.argv) > 2:
        libdir = os.path.abspath(sys.argv[2])
    exts = extensions(libdir)
    if not exts:
        return 0
    from setuptools import setup
    os.chdir(HERE)
    setup(name="symheap-torch", ext_modules=exts,
          cmdclass={"build_ext": build_ext_cmd()},
          script_args=["build_ext", "--build-lib", out,
                       "--build-temp", os.path.join(out, "..", "tmp-torch")])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Python package on the host backend with NumPy, one rank per process:
    build/bin/symheap-run -n N python3 test/python/test_host.py
Prints PASS/FAIL/SKIP lines like the C tests (test/run.sh runs it at 2, 4
and 8 ranks).  CYCLES sets the empty/free cycles of the leak case.  The
cases live by idea in host_basics.py (a comm and its windows),
host_refusals.py, host_fast.py (the hot path) and host_lifecycle.py; this
file runs them in order."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pytest_harness import Cases  # noqa: E402

try:
    import numpy  # noqa: F401  (the cases' modules use it)
except ImportError:
    if os.environ.get("SYMHEAP_RANK", "0") == "0":
        print("SKIP python-host numpy is missing for %s (Debian: "
              "apt-get install python3-numpy)" % sys.executable)
    sys.exit(0)
import symheap  # noqa: E402  (PYTHONPATH: the build tree's site-packages)
from host_basics import (case_device_check,  # noqa: E402
                         case_device_view, case_dlpack, case_errors,
                         case_errors_table, case_init_env, case_init_uid,
                         case_peers_and_flat, case_register, case_split,
                         case_struct_layout)
from host_fast import case_fast_tensor_entry, case_window_lookup  # noqa: E402
from host_lifecycle import (case_exit_with_live_export,  # noqa: E402
                            case_gc_free_during_collective, case_heap,
                            case_module_main, case_no_leak,
                            case_torchrun_bootstrap)
from host_refusals import (case_destroy_refused,  # noqa: E402
                           case_interrupt_deferred, case_refusals_agreed)


def main():
    comm = symheap.init()
    t = Cases(comm, comm.rank)
    cycles = int(os.environ.get("CYCLES", "1000"))
    t.run("python-errors-table", case_errors_table, comm)
    t.run("python-struct-layout", case_struct_layout, comm)
    t.run("python-init-env", case_init_env, comm)
    # Before the cases that leave mappings in the window cache.
    t.run("python-no-leak-%d-cycles" % cycles, case_no_leak, comm, cycles)
    t.run("python-init-uid", case_init_uid, comm)
    t.run("python-peers-flat", case_peers_and_flat, comm)
    t.run("python-split", case_split, comm)
    t.run("python-register", case_register, comm)
    t.run("python-errors", case_errors, comm)
    if comm.size > 1:
        t.run("python-refusals-agreed", case_refusals_agreed, comm)
    t.run("python-interrupt-deferred", case_interrupt_deferred, comm)
    t.run("python-window-lookup", case_window_lookup, comm)
    from symheap import _hot
    if _hot.fast is not None:
        t.run("python-fast-tensor-entry", case_fast_tensor_entry, comm)
    else:
        t.skip("python-fast-tensor-entry", "the ctypes path (no _fast, or "
               "SYMHEAP_PYTHON_FAST=0): nothing compiled to test")
    t.run("python-torchrun-bootstrap", case_torchrun_bootstrap, comm)
    if comm.size > 1:
        t.run("python-gc-free-during-collective",
              case_gc_free_during_collective, comm)
    t.run("python-dlpack", case_dlpack, comm)
    t.run("python-device-view", case_device_view, comm)
    t.run("python-device-check", case_device_check, comm)
    if comm.heap_info()["enabled"]:
        t.run("python-heap", case_heap, comm)
    else:
        t.skip("python-heap", "the heap is off here (SYMHEAP_HEAP=0)")
    t.run("python-destroy-refused", case_destroy_refused, comm)
    t.run("python-module-main", case_module_main, comm)
    t.run("python-exit-with-live-export", case_exit_with_live_export, comm)
    comm.destroy()
    return t.exit()


if __name__ == "__main__":
    sys.exit(main())

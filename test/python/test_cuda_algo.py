"""symheap.cuda's algorithm names against the C API, without a GPU:
    PYTHONPATH=build/lib/python3/site-packages python3 test/python/test_cuda_algo.py
The Python table must name every symheap_algo_t of kernels/symheap_cuda.h,
and all_reduce_algo must answer for each value the library can return
(it raised KeyError 3 for SYMHEAP_ALGO_RS_COPY_ENGINE, which AUTO takes
from 64 MiB).  The library call is replaced by one that answers each value,
so no libsymheap_cuda.so or tensor is needed."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from pytest_harness import Cases, check  # noqa: E402

from symheap import cuda  # noqa: E402

NAMES = {"AUTO": "auto", "ONE_SHOT": "one_shot", "TWO_SHOT": "two_shot",
         "RS_COPY_ENGINE": "rs_ce", "ONE_SHOT_PUSH": "one_shot_push",
         "TWO_SHOT_PUSH": "two_shot_push", "RS_CE_PIPELINED": "rs_ce_pipe",
         "ONE_SHOT_LL128": "ll128"}


def header_algos():
    text = open(os.path.join(ROOT, "kernels", "symheap_cuda.h")).read()
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"SYMHEAP_ALGO_(\w+) = (\d+)", text)}


def case_table_matches_header():
    algos = header_algos()
    check(set(algos) == set(NAMES),
          "the header's algorithms %s are not the ones this test knows %s"
          % (sorted(algos), sorted(NAMES)))
    for c_name, value in algos.items():
        py = NAMES[c_name]
        check(cuda.ALGOS.get(py) == value,
              "cuda.ALGOS[%r] is %r; the header says SYMHEAP_ALGO_%s = %d"
              % (py, cuda.ALGOS.get(py), c_name, value))


class _Tensor:
    def numel(self):
        return 1 << 26


def case_all_reduce_algo_every_value():
    saved = (cuda._in_window, cuda._coll_dtype, cuda._call)
    answer = {}

    def fake_call(name, *args):
        check(name == "symheap_cuda_all_reduce_algo", "called %s" % name)
        args[-1]._obj.value = answer["v"]  # the byref'd c_int

    try:
        cuda._in_window = lambda t, what: (None, 0)
        cuda._coll_dtype = lambda t: 1
        cuda._call = fake_call
        for c_name, value in header_algos().items():
            if value == 0:
                continue  # AUTO is never an answer
            answer["v"] = value
            got = cuda.all_reduce_algo(_Tensor())
            check(got == NAMES[c_name], "value %d answered %r, not %r"
                  % (value, got, NAMES[c_name]))
        answer["v"] = 99  # a newer library's algorithm: named, no KeyError
        got = cuda.all_reduce_algo(_Tensor())
        check(got == "algo_99", "value 99 answered %r" % got)
    finally:
        cuda._in_window, cuda._coll_dtype, cuda._call = saved


def main():
    t = Cases()
    t.run("python-cuda-algo-table", case_table_matches_header)
    t.run("python-cuda-all-reduce-algo-values",
          case_all_reduce_algo_every_value)
    return t.exit()


if __name__ == "__main__":
    sys.exit(main())

"""torch.ops.symheap.*: symheap's CUDA collectives as torch operators.

    import symheap.ops   # registers them (needs torch >= 2.4)
    torch.ops.symheap.all_reduce_(t)              # in place, t in a window
    torch.ops.symheap.all_reduce(inp, out)        # out of place
    torch.ops.symheap.all_gather(inp, out)
    torch.ops.symheap.reduce_scatter(inp, out)
    torch.ops.symheap.all_to_all(inp, out)
    torch.ops.symheap.broadcast(inp, out, root)

Registered with torch.library.custom_op (the Python form of TORCH_LIBRARY)
with fake kernels, so that torch.compile(fullgraph=True) traces them without
a graph break, and they enqueue on torch's current stream, so that
torch.cuda.graph captures them.  Every tensor must lie in a symheap window
(comm.empty or comm.register); each op writes only its `out` (declared as
mutated: torch orders the ops like any in-place op) and returns nothing.
op: "sum" or "max"; algo: "auto", "one_shot" or "two_shot" (all_reduce
also "rs_ce", "one_shot_push", "two_shot_push").
"""
import torch

from . import cuda

if not hasattr(torch, "library") or not hasattr(torch.library,
                                                "custom_op"):
    raise ImportError("symheap.ops needs torch >= 2.4 (torch.library."
                      "custom_op); this is torch %s" % torch.__version__)


@torch.library.custom_op("symheap::all_reduce_", mutates_args=("tensor",))
def all_reduce_(tensor: torch.Tensor, op: str = "sum",
                algo: str = "auto") -> None:
    cuda.all_reduce(tensor, op=op, algo=algo)


@torch.library.custom_op("symheap::all_reduce", mutates_args=("out",))
def all_reduce(inp: torch.Tensor, out: torch.Tensor, op: str = "sum",
               algo: str = "auto") -> None:
    cuda.all_reduce(inp, op=op, algo=algo, out=out)


@torch.library.custom_op("symheap::all_gather", mutates_args=("out",))
def all_gather(inp: torch.Tensor, out: torch.Tensor) -> None:
    cuda.all_gather(out, inp)


@torch.library.custom_op("symheap::reduce_scatter", mutates_args=("out",))
def reduce_scatter(inp: torch.Tensor, out: torch.Tensor, op: str = "sum",
                   algo: str = "auto") -> None:
    cuda.reduce_scatter(out, inp, op=op, algo=algo)


@torch.library.custom_op("symheap::all_to_all", mutates_args=("out",))
def all_to_all(inp: torch.Tensor, out: torch.Tensor) -> None:
    cuda.all_to_all(out, inp)


@torch.library.custom_op("symheap::broadcast", mutates_args=("out",))
def broadcast(inp: torch.Tensor, out: torch.Tensor, root: int) -> None:
    cuda.broadcast(out, inp, root)


# Fake (meta) kernels: the ops make no tensor, so tracing needs nothing but
# to know that; the shapes are the caller's.
def _none(*args, **kwargs):
    return None


for _op in (all_reduce_, all_reduce, all_gather, reduce_scatter, all_to_all,
            broadcast):
    _op.register_fake(_none)

"""Symmetric allocation on the GPU: symheap's heap next to PyTorch symmetric
memory, in ONE Python process per rank, timed the same way.

  symheap:  w = comm.empty(n, "uint8"); w.free()
            (symheap_malloc + symheap_free from Python; the heap is reserved
            ahead for the largest size, so every call fits: no device call)
  torch:    t = symm_mem.empty(n, dtype=torch.uint8, device="cuda")
            symm_mem.rendezvous(t, group); del t
            (what a PyTorch user writes for a new symmetric buffer)

Each iteration starts after a barrier; a rank times its own call with
time.perf_counter; the figure is the median over iterations of the slowest
rank's time, in microseconds (the first call of each size is not counted).
NVLink multicast stays off.

    PYTHONPATH=build/lib/python3/site-packages python3 bench/heap_gpu_peers.py \
        [--ranks 2] [--sizes 4K,64K,1M,16M,64M] [--iters 21]

With fewer GPUs than ranks, ranks share a GPU (the process group is gloo);
both libraries then do the same work as on separate GPUs, minus the link.
"""
import argparse
import os
import statistics
import tempfile
import time

for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST",
               "1"), ("NVSHMEM_DISABLE_NVLS", "1"),
               ("SYMHEAP_DISABLE_MULTICAST", "1")):
    os.environ[_k] = _v

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from python_peers import parse_size  # noqa: E402  (bench/, beside this file)


def slowest_median(times):
    """times: this rank's per-iteration seconds; the median over iterations
    of the slowest rank's time, in us."""
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, times)
    worst = [max(col) for col in zip(*every)]
    return statistics.median(worst) * 1e6


def timed(fn, iters):
    fn()  # the first of a size (growth, caches) is not counted
    out = []
    for _ in range(iters):
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return slowest_median(out)


def worker(rank, world, sizes, iters, path, res):
    ndev = torch.cuda.device_count()
    torch.cuda.set_device(rank % ndev)
    shared = ndev < world
    kw = {} if shared else {"device_id": torch.device("cuda", rank % ndev)}
    dist.init_process_group("gloo" if shared else "nccl",
                            init_method="file://" + path, rank=rank,
                            world_size=world, **kw)
    import symheap
    import torch.distributed._symmetric_memory as symm_mem
    comm = symheap.init_torch()
    gname = dist.group.WORLD.group_name
    comm.heap_reserve(max(sizes) * 2)
    rows, err = [], None
    for nb in sizes:
        def sh():
            comm.empty(nb, "uint8").free()

        def th():
            t = symm_mem.empty(nb, dtype=torch.uint8, device="cuda")
            symm_mem.rendezvous(t, gname)
            del t
        a = timed(sh, iters)
        try:
            b = "%.1f" % timed(th, iters)
        except Exception as e:
            b = "error (below)"
            err = str(e).splitlines()[0][:300]
        rows.append((nb, a, b))
    if rank == 0:
        with open(res, "w") as f:
            f.write("%s, %d ranks on %d GPU(s), torch %s, %d iterations\n" % (
                torch.cuda.get_device_name(), world, ndev, torch.__version__,
                iters))
            f.write("%-10s %22s %30s\n" % ("size", "symheap empty+free us",
                                           "torch empty+rendezvous us"))
            for nb, a, b in rows:
                f.write("%-10s %22.1f %30s\n" % (
                    "%d KiB" % (nb >> 10) if nb < (1 << 20) else
                    "%d MiB" % (nb >> 20), a, b))
            if err:
                f.write("torch: %s\n" % err)
    comm.destroy()
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--sizes", default="4K,64K,1M,16M,64M")
    p.add_argument("--iters", type=int, default=21)
    a = p.parse_args()
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    d = tempfile.mkdtemp()
    res = os.path.join(d, "res.txt")
    mp.spawn(worker, args=(a.ranks, sizes, a.iters, os.path.join(d, "pg"),
                           res), nprocs=a.ranks)
    print(open(res).read(), end="")


if __name__ == "__main__":
    main()

# The peers' side of symheap-bench's reduce-scatter, all-to-all and broadcast
# rows (tools/symheap-bench-cuda.cu), at N ranks (default 2): NCCL through
# torch.distributed (reduce_scatter_tensor, all_to_all_single with equal and,
# at 2 ranks, uneven splits, broadcast, all_gather_into_tensor) and, with PEERS_VDEV=1, PyTorch
# symmetric memory's all_to_all_vdev (its NVSHMEM backend; a missing op is
# recorded as an *_err key, not guessed).  Same timing as peers_baseline.py
# (which it extends; /work/shared keeps the original): per-op time in a
# launch loop, median of 5 repeats, bf16, bytes = each rank's block.
# Multicast stays off.
# Usage (on the GPU machine): python3 bench/peers_collectives.py [N]
#   -> prints JSON, also written to $OUT/peers_collectives.json
#
# Why it once ran past 150 s with no output on 2 GPUs of a 4-GPU machine:
# the NVSHMEM step.  PyTorch bootstraps NVSHMEM inside the first symmetric
# allocation, a hidden collective (pytorch/pytorch#195501), and NVSHMEM's
# default symmetric heap (1 GiB) cannot hold the 256 MiB case's buffers
# (1.5 GiB at 2 ranks): a rank that fails there leaves its peer waiting in
# the bootstrap or in the next barrier, and nothing was printed before the
# end.  Now: that step is opt-in and capped at 16 MiB, every attempt's
# outcome is agreed by all ranks before the next step, the process group
# has a timeout (a hang becomes an error), the port is a free one, and rank
# 0 prints each size as it finishes.
import datetime, json, os, socket, statistics, sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
import torch, torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20]


def timeit(fn, iters, reps=5):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    out = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        dist.barrier()
        torch.cuda.synchronize()
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e) * 1000 / iters)  # us
    return statistics.median(out)


def attempt(R, key, fn):
    """fn's time under key, or its error under *_err_*: the same on every
    rank (a rank that failed alone would leave its peers in the next
    collective)."""
    err = None
    try:
        t = fn()
    except Exception as ex:  # recorded, never guessed
        err = repr(ex)[:300]
    bad = torch.tensor([1 if err else 0], device="cuda")
    dist.all_reduce(bad)
    if bad.item() == 0:
        R[key] = t
    else:
        R[key.replace("_us_", "_err_")] = err or "failed on another rank"


def worker(rank, world, port, res_path):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev,
                            timeout=datetime.timedelta(seconds=120))
    import torch.distributed._symmetric_memory as symm_mem

    gname = dist.group.WORLD.group_name
    vdev_on = os.environ.get("PEERS_VDEV") == "1"
    vdev_why = ""
    if vdev_on:
        try:
            symm_mem.set_backend("NVSHMEM")
        except Exception as ex:
            vdev_on = False
            vdev_why = repr(ex)[:300]
    else:
        vdev_why = "not run (PEERS_VDEV=1 runs it: NVSHMEM backend)"
    R = {}
    for nb in SIZES:
        n = nb // 2  # bf16 elements per rank's block
        it = 200 if nb <= (1 << 20) else 20
        x = torch.randn(n * world, dtype=torch.bfloat16, device=dev)
        y = torch.empty(n, dtype=torch.bfloat16, device=dev)
        z = torch.empty(n * world, dtype=torch.bfloat16, device=dev)
        attempt(R, f"nccl_reducescatter_us_{nb}",
                lambda: timeit(lambda: dist.reduce_scatter_tensor(y, x), it))
        attempt(R, f"nccl_alltoall_us_{nb}",
                lambda: timeit(lambda: dist.all_to_all_single(z, x), it))
        # uneven: rank r sends 3/4 of a block to one peer and 5/4 to the
        # other, as an MoE layer's routing would (host-side splits: NCCL's
        # all_to_all_single needs them on the host)
        if world == 2:
            a = (3 * n) // 4
            ins = [a, 2 * n - a] if rank == 0 else [2 * n - a, a]
            # what each rank receives is what its peer sends it: rank 0
            # gets a from itself and 2n - a from rank 1, and rank 1 the
            # mirror, so the splits are the same both ways (the older
            # [ins[0], ins[0]] told NCCL to expect a from rank 1, which
            # sends 2n - a: the 2-rank run hung there)
            outs = list(ins)
            zz = torch.empty(sum(outs), dtype=torch.bfloat16, device=dev)
            attempt(R, f"nccl_alltoallv_us_{nb}",
                    lambda: timeit(lambda: dist.all_to_all_single(
                        zz, x, output_split_sizes=outs,
                        input_split_sizes=ins), it))
        attempt(R, f"nccl_broadcast_us_{nb}",
                lambda: timeit(lambda: dist.broadcast(y, 0), it))
        attempt(R, f"nccl_allgather_us_{nb}",
                lambda: timeit(lambda: dist.all_gather_into_tensor(z, y), it))

        def vdev():
            inp = symm_mem.empty(n * world, dtype=torch.bfloat16, device=dev)
            out = symm_mem.empty(n * world * 2, dtype=torch.bfloat16,
                                 device=dev)
            sp = symm_mem.empty(3, world, dtype=torch.int64, device=dev)
            sp[0].fill_(n)
            symm_mem.rendezvous(inp, gname)
            symm_mem.rendezvous(out, gname)
            symm_mem.rendezvous(sp, gname)
            return timeit(lambda: torch.ops.symm_mem.all_to_all_vdev(
                inp, out, sp, gname), it)

        if vdev_on and nb <= (16 << 20):
            attempt(R, f"torch_all_to_all_vdev_us_{nb}", vdev)
        else:
            R[f"torch_all_to_all_vdev_err_{nb}"] = (
                vdev_why if not vdev_on else "not run above 16 MiB (NVSHMEM's "
                "default symmetric heap is 1 GiB)")
        if rank == 0:
            print("peers_collectives: %d ranks, %d bytes done" % (world, nb),
                  flush=True)
    dist.barrier()
    if rank == 0:
        json.dump(R, open(res_path, "w"), indent=1)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    out = os.environ.get("OUT", "/tmp")
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    ndev = torch.cuda.device_count()
    print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(),
          "gpus", ndev, "ranks", world, flush=True)
    if world < 2 or ndev < world:
        print("peers_collectives: %d ranks need %d GPUs; %d visible" %
              (world, world, ndev))
        raise SystemExit(2)
    mp.spawn(worker, args=(world, free_port(),
                           f"{out}/peers_collectives.json"), nprocs=world)
    print(open(f"{out}/peers_collectives.json").read())

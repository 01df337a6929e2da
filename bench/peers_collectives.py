# The peers' side of symheap-bench's reduce-scatter, all-to-all and broadcast
# rows (tools/symheap-bench-cuda.cu), on a 2-GPU host: NCCL through
# torch.distributed (reduce_scatter_tensor, all_to_all_single with equal and
# with uneven splits, broadcast) and PyTorch symmetric memory where it has the
# op (all_to_all_vdev needs its NVSHMEM backend; a missing op is recorded as
# an *_err key, not guessed).  Same timing as peers_baseline.py (which it
# extends; /work/shared keeps the original): per-op time in a launch loop,
# median of 5 repeats, bf16, bytes = each rank's block.  Multicast stays off.
# Usage (on the GPU machine): python3 bench/peers_collectives.py
#   -> prints JSON, also written to $OUT/peers_collectives.json
import os, statistics, json

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
    try:
        R[key] = fn()
    except Exception as ex:  # recorded, never guessed
        R[key.replace("_us_", "_err_")] = repr(ex)[:300]


def worker(rank, world, res_path):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29534"
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    import torch.distributed._symmetric_memory as symm_mem

    gname = dist.group.WORLD.group_name
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
            outs = [ins[0], ins[0]] if rank == 0 else [ins[1], ins[1]]
            zz = torch.empty(sum(outs), dtype=torch.bfloat16, device=dev)
            attempt(R, f"nccl_alltoallv_us_{nb}",
                    lambda: timeit(lambda: dist.all_to_all_single(
                        zz, x, output_split_sizes=outs,
                        input_split_sizes=ins), it))
        attempt(R, f"nccl_broadcast_us_{nb}",
                lambda: timeit(lambda: dist.broadcast(y, 0), it))

        def vdev():
            symm_mem.set_backend("NVSHMEM")
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

        attempt(R, f"torch_all_to_all_vdev_us_{nb}", vdev)
    dist.barrier()
    if rank == 0:
        json.dump(R, open(res_path, "w"), indent=1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    out = os.environ.get("OUT", "/tmp")
    print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(),
          "gpus", torch.cuda.device_count(), flush=True)
    if torch.cuda.device_count() < 2:
        print("peers_collectives: needs 2 GPUs")
        raise SystemExit(2)
    mp.spawn(worker, args=(2, f"{out}/peers_collectives.json"), nprocs=2)
    print(open(f"{out}/peers_collectives.json").read())

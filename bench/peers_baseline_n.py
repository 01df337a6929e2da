# The project's shared/bench/peers_baseline.py extended to N ranks (bench/scale.sh): the same
# measures, the same method, on `python3 peers_baseline_n.py N` GPUs (one process each). The
# peer-bandwidth figures copy to and from the next rank; the copy-engine figure is rank 0 to
# rank 1. With 2 ranks it is exactly shared/bench/peers_baseline.py (the next rank is the other
# one), which is what bench/peers_baseline.py runs.
# Peer baselines, for side-by-side comparison with symheap in the same run:
# NCCL all-reduce and PyTorch symmetric-memory one-shot/two-shot all-reduce (bf16, per-op time in a
# launch loop, median of 5 repeats), SM copy through mapped peer memory, copy-engine peer copy, and
# PyTorch symmetric-memory setup time (empty + rendezvous). NVLink multicast stays off.
# Usage (on the GPU machine): python3 peers_baseline_n.py N -> prints JSON; also writes
# $OUT/baseline.json
import os, sys, time, statistics, json
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
import torch, torch.distributed as dist
import torch.multiprocessing as mp

def timeit(fn, iters, reps=5):
    for _ in range(3): fn()
    torch.cuda.synchronize(); dist.barrier()
    out = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        dist.barrier(); torch.cuda.synchronize()
        s.record()
        for _ in range(iters): fn()
        e.record(); torch.cuda.synchronize()
        out.append(s.elapsed_time(e) * 1000 / iters)  # us
    return statistics.median(out)

def worker(rank, world, res_path):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = "29533"
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    import torch.distributed._symmetric_memory as symm_mem
    g = dist.group.WORLD
    gname = g.group_name
    try: symm_mem.enable_symm_mem_for_group(gname)
    except Exception as ex: pass
    R = {}
    # PEERS_SIZES (bytes, comma-separated) widens the sweep (bench/tune_gpu.sh: 4 KiB to 1 GiB)
    sizes = [int(v) for v in os.environ.get("PEERS_SIZES", "").split(",") if v] or \
        [4<<10, 64<<10, 1<<20, 16<<20, 256<<20]
    for nb in sizes:
        n = nb // 2
        x = torch.randn(n, dtype=torch.bfloat16, device="cuda")
        it = 200 if nb <= (1<<20) else 20
        R[f"nccl_allreduce_us_{nb}"] = timeit(lambda: dist.all_reduce(x), it)
        try:
            t = symm_mem.empty(n, dtype=torch.bfloat16, device=f"cuda:{rank}")
            t.copy_(x)
            hdl = symm_mem.rendezvous(t, gname)
            if nb <= (4<<20):
                R[f"torch_one_shot_us_{nb}"] = timeit(lambda: torch.ops.symm_mem.one_shot_all_reduce(t, "sum", gname), it)
            R[f"torch_two_shot_us_{nb}"] = timeit(lambda: torch.ops.symm_mem.two_shot_all_reduce_(t, "sum", gname), it)
        except Exception as ex:
            R[f"torch_symm_err_{nb}"] = repr(ex)[:300]
    # setup cost: alloc + rendezvous
    for nb in [1<<20, 64<<20, 1<<30]:
        try:
            torch.cuda.synchronize(); dist.barrier()
            t0 = time.perf_counter()
            t = symm_mem.empty(nb//4, dtype=torch.float32, device=f"cuda:{rank}")
            hdl = symm_mem.rendezvous(t, gname)
            torch.cuda.synchronize(); dist.barrier()
            R[f"torch_symm_setup_ms_{nb}"] = (time.perf_counter()-t0)*1e3
        except Exception as ex:
            R[f"torch_symm_setup_err_{nb}"] = repr(ex)[:300]
    # peer bandwidth through mapped peer memory (SM copy) and copy engine
    try:
        nb = 1<<30
        t = symm_mem.empty(nb//4, dtype=torch.float32, device=f"cuda:{rank}")
        t.normal_()
        hdl = symm_mem.rendezvous(t, gname)
        peer = (rank + 1) % world
        pbuf = hdl.get_buffer(peer, (nb//4,), torch.float32)
        loc = torch.empty(nb//4, dtype=torch.float32, device="cuda")
        us = timeit(lambda: loc.copy_(pbuf), 10)
        R["sm_peer_read_GBps"] = nb / (us*1e-6) / 1e9
        us = timeit(lambda: pbuf.copy_(loc), 10)
        R["sm_peer_write_GBps"] = nb / (us*1e-6) / 1e9
        us = timeit(lambda: loc.copy_(t), 10)
        R["local_d2d_GBps_rw"] = 2 * nb / (us*1e-6) / 1e9
    except Exception as ex:
        R["peer_bw_err"] = repr(ex)[:300]
    dist.barrier()
    if rank == 0:
        try:
            a = torch.empty(1<<28, dtype=torch.float32, device="cuda:0")
            b = torch.empty(1<<28, dtype=torch.float32, device="cuda:1")
            for _ in range(3): b.copy_(a)
            torch.cuda.synchronize()
            s=time.perf_counter()
            for _ in range(10): b.copy_(a)
            torch.cuda.synchronize(0); torch.cuda.synchronize(1)
            R["ce_peer_copy_GBps"] = 10*(1<<30)/(time.perf_counter()-s)/1e9
        except Exception as ex:
            R["ce_err"] = repr(ex)[:300]
        json.dump(R, open(res_path, "w"), indent=1)
    dist.barrier()
    dist.destroy_process_group()

def main(world):
    out = os.environ.get("OUT", "/tmp")
    print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count(), flush=True)
    mp.spawn(worker, args=(world, f"{out}/baseline.json"), nprocs=world)
    print(open(f"{out}/baseline.json").read())

if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)

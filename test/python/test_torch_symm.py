"""symheap.torch: PyTorch's SymmetricMemory on the "SYMHEAP" backend, one
rank per process under symheap-run (torch.distributed is set up beside it,
for the group and for the comparison backend) or under torchrun (the symheap
comm then joins through torch's store, made lazily by the first
symm_mem.empty: no symheap.torch.init() call):
    build/bin/symheap-run -n 2 python3 test/python/test_torch_symm.py [--backend SYMHEAP|default] [--bench]
    python3 -m torch.distributed.run --nproc-per-node 2 test/python/test_torch_symm.py
The same cases run on either backend (a process can use only one), each
checked against the result computed on the CPU from every rank's inputs:
every peer's buffer and signal pad read through get_buffer/get_signal_pad,
put_signal/wait_signal, barrier, buffer_ptrs/signal_pad_ptrs,
torch.ops.symm_mem.one_shot_all_reduce and two_shot_all_reduce_,
allocations freed in a different order on each rank and then more, and a
CUDA graph replay of one_shot_all_reduce.  --bench prints BENCH lines.
SKIP (rank 0, one line) without torch >= 2.9, 2 GPUs or symheap.torch._C."""
import hashlib
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pytest_harness import Cases, check, skip_all  # noqa: E402

for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
          "NVSHMEM_DISABLE_NVLS", "SYMHEAP_DISABLE_MULTICAST"):
    os.environ[k] = "1" if k != "NCCL_NVLS_ENABLE" else "0"
# torchrun: no symheap-run variables, torch's instead.
TORCHRUN = "SYMHEAP_RANK" not in os.environ and "RANK" in os.environ
RANK = int(os.environ.get("SYMHEAP_RANK", os.environ.get("RANK", "0")))
SIZE = int(os.environ.get("SYMHEAP_NRANKS", os.environ.get("WORLD_SIZE",
                                                           "1")))
LOCAL = int(os.environ.get("SYMHEAP_LOCAL_RANK",
                           os.environ.get("LOCAL_RANK", RANK)))
BACKEND = "SYMHEAP"
if "--backend" in sys.argv:
    BACKEND = sys.argv[sys.argv.index("--backend") + 1]
TAG = "torch-symm-%s " % BACKEND.lower()
LABEL = BACKEND
if BACKEND == "SYMHEAP" and os.environ.get("SYMHEAP_TORCH_POOL") == "0":
    LABEL = "SYMHEAP(pool=0)"


def skip(why):
    skip_all("python-torch-symm", RANK, why)


try:
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem
except ImportError:
    skip("torch is not installed for %s" % sys.executable)
if not hasattr(symm_mem, "set_backend"):
    skip("torch %s is older than 2.9 (no set_backend)" % torch.__version__)
if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
    skip("no GPU (torch.cuda.is_available() is False)")
if BACKEND == "SYMHEAP":
    try:
        import symheap.torch as sht
    except ImportError as e:
        skip(str(e))

DEV = torch.device("cuda", LOCAL % torch.cuda.device_count())
torch.cuda.set_device(DEV)
if TORCHRUN:  # env://: torchrun's MASTER_ADDR, MASTER_PORT
    dist.init_process_group("nccl", device_id=DEV)
else:
    port = 20000 + int(hashlib.sha1(os.environ.get("SYMHEAP_UNIQUE_ID", "x")
                                    .encode()).hexdigest(), 16) % 20000
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port,
                            rank=RANK, world_size=SIZE, device_id=DEV)
GROUP = dist.group.WORLD
GNAME = GROUP.group_name
if BACKEND == "SYMHEAP":
    symm_mem.set_backend("SYMHEAP")
    if not TORCHRUN:  # under torchrun the first symm_mem.empty makes it
        sht.init(DEV)
try:
    symm_mem.enable_symm_mem_for_group(GNAME)
except Exception:  # noqa: BLE001 -- newer torch: every group already is
    pass


class DistComm:  # the harness's allgather, over torch.distributed
    rank, size = RANK, SIZE

    def allgather(self, b):
        out = [None] * SIZE
        dist.all_gather_object(out, b)
        return out


def fill(n, rank, seed):
    g = torch.Generator().manual_seed(1000 * seed + rank)
    return torch.randint(-8, 9, (n,), generator=g).float()


def sym(n, dtype=torch.float32):
    t = symm_mem.empty(n, dtype=dtype, device=DEV)
    return t, symm_mem.rendezvous(t, GNAME)


def case_peers():
    n = 8192
    t, h = sym(n)
    t.copy_(fill(n, RANK, 1).to(DEV))
    check(h.rank == RANK and h.world_size == SIZE, "rank/size %d/%d" %
          (h.rank, h.world_size))
    check(len(h.buffer_ptrs) == SIZE and len(h.signal_pad_ptrs) == SIZE,
          "ptr lists %r %r" % (h.buffer_ptrs, h.signal_pad_ptrs))
    check(h.buffer_ptrs[RANK] == t.data_ptr(), "own buffer ptr %x != %x" %
          (h.buffer_ptrs[RANK], t.data_ptr()))
    check(h.buffer_ptrs_dev != 0 and h.signal_pad_ptrs_dev != 0, "dev arrays")
    pad_n = getattr(h, "signal_pad_size", 2048) // 4
    mine = h.get_signal_pad(RANK, [pad_n], dtype=torch.int32)
    mine[pad_n - 1] = 7 + RANK  # past what any barrier of 2..72 ranks uses
    torch.cuda.synchronize()
    dist.barrier()
    h.barrier(channel=0)
    torch.cuda.synchronize()
    for p in range(SIZE):
        got = h.get_buffer(p, [n], torch.float32).cpu()
        check(torch.equal(got, fill(n, p, 1)), "rank %d's buffer" % p)
        pad = h.get_signal_pad(p, [pad_n], dtype=torch.int32).cpu()
        check(int(pad[pad_n - 1]) == 7 + p, "rank %d's pad marker %d" %
              (p, int(pad[pad_n - 1])))
        check(int(pad[:pad_n - 1].abs().sum()) == 0,
              "rank %d's pad not clear after a barrier" % p)
    dist.barrier()
    mine[pad_n - 1] = 0
    torch.cuda.synchronize()
    dist.barrier()


def case_comm():
    """The backend's comm: made (explicitly, or by the first allocation
    through torch's store under torchrun) with torch's rank and size."""
    if BACKEND != "SYMHEAP":
        return
    inf = sht.info()
    check(inf["initialized"] == 1, "not initialised: %r" % inf)
    check((inf["rank"], inf["nranks"]) == (RANK, SIZE),
          "rank/size %r, torch says %d/%d" % (inf, RANK, SIZE))
    check(inf["device"] == DEV.index, "device %r" % inf)


def case_signals():
    n = 4096
    t, h = sym(n)
    t.zero_()
    torch.cuda.synchronize()
    dist.barrier()
    dst, src = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    h.get_buffer(dst, [n], torch.float32).copy_(fill(n, RANK, 2).to(DEV))
    h.put_signal(dst, channel=1)
    h.wait_signal(src, channel=1)
    torch.cuda.synchronize()
    check(torch.equal(t.cpu(), fill(n, src, 2)), "data from rank %d" % src)
    dist.barrier()


def all_reduce_cases(n, seed, dtype=torch.float32):
    t, h = sym(n, dtype)
    t.copy_(fill(n, RANK, seed).to(DEV, dtype))
    want = sum(fill(n, p, seed) for p in range(SIZE)).to(dtype)
    torch.cuda.synchronize()
    dist.barrier()
    out = torch.ops.symm_mem.one_shot_all_reduce(t, "sum", GNAME)
    check(torch.equal(out.cpu(), want), "one_shot_all_reduce n=%d %s" %
          (n, dtype))
    torch.cuda.synchronize()
    dist.barrier()
    torch.ops.symm_mem.two_shot_all_reduce_(t, "sum", GNAME)
    check(torch.equal(t.cpu(), want), "two_shot_all_reduce_ n=%d %s" %
          (n, dtype))
    torch.cuda.synchronize()
    dist.barrier()
    return t


def case_ops():
    for n in (1024, 65536, 1 << 20):
        for dt in (torch.float32, torch.bfloat16):
            all_reduce_cases(n, 3, dt)


def case_free_order():
    sizes = [4096, 1 << 16, 4096, 1 << 20, 12345 * 4, 1 << 18]
    live = []
    for i, s in enumerate(sizes):
        t, h = sym(s // 4)
        t.fill_(RANK + i)
        live.append((t, h))
    torch.cuda.synchronize()
    dist.barrier()
    order = list(range(len(sizes)))
    order = order[RANK % len(order):] + order[:RANK % len(order)]
    if RANK % 2:
        order.reverse()
    for i in order:
        live[i] = None  # freed here, in this rank's order
    del live
    for i in range(3):  # then more, the same on every rank
        all_reduce_cases(1 << (10 + 3 * i), 10 + i)
    if BACKEND == "SYMHEAP":
        inf = sht.info()
        check(inf["allocations"] <= 3, "live allocations %r" % inf)


def case_graph():
    n = 1 << 14
    t, h = sym(n)
    t.copy_(fill(n, RANK, 5).to(DEV))
    torch.cuda.synchronize()
    dist.barrier()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.ops.symm_mem.one_shot_all_reduce(t, "sum", GNAME)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    dist.barrier()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = torch.ops.symm_mem.one_shot_all_reduce(t, "sum", GNAME)
    for seed in (6, 7):
        t.copy_(fill(n, RANK, seed).to(DEV))
        torch.cuda.synchronize()
        dist.barrier()
        g.replay()
        torch.cuda.synchronize()
        want = sum(fill(n, p, seed) for p in range(SIZE))
        check(torch.equal(out.cpu(), want), "graph replay seed %d" % seed)
        dist.barrier()


def bench():
    for nbytes in (4096, 65536, 1 << 20):
        n = nbytes // 2
        t, h = sym(n, torch.bfloat16)
        t.fill_(1)
        for _ in range(20):
            torch.ops.symm_mem.one_shot_all_reduce(t, "sum", GNAME)
        torch.cuda.synchronize()
        dist.barrier()
        e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
        iters = 200
        e0.record()
        for _ in range(iters):
            torch.ops.symm_mem.one_shot_all_reduce(t, "sum", GNAME)
        e1.record()
        torch.cuda.synchronize()
        us = e0.elapsed_time(e1) * 1000 / iters
        dist.barrier()
        h0 = time.perf_counter()  # the host's side alone: launches queued
        for _ in range(iters):
            torch.ops.symm_mem.one_shot_all_reduce(t, "sum", GNAME)
        host = (time.perf_counter() - h0) * 1e6 / iters
        torch.cuda.synchronize()
        if RANK == 0:
            print("BENCH %s one_shot_all_reduce bf16 %d B: %.2f us "
                  "(host %.2f us/call)" % (LABEL, nbytes, us, host),
                  flush=True)
        del t, h
    n = (64 << 20) // 2
    times, t_empty = [], []
    for i in range(12):
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        t = symm_mem.empty(n, dtype=torch.bfloat16, device=DEV)
        t1 = time.perf_counter()
        h = symm_mem.rendezvous(t, GNAME)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        del h, t
        if i >= 2:
            times.append(dt)
            t_empty.append(t1 - t0)
    if RANK == 0:
        print("BENCH %s empty+rendezvous 64 MiB warm: median %.3f ms "
              "(min %.3f, empty alone %.3f, %d runs)" %
              (LABEL, statistics.median(times) * 1e3, min(times) * 1e3,
               statistics.median(t_empty) * 1e3, len(times)), flush=True)


cases = Cases(DistComm(), RANK)
for name, fn in (("peers", case_peers), ("comm", case_comm),
                 ("signals", case_signals),
                 ("ops", case_ops), ("free_order", case_free_order),
                 ("graph", case_graph)):
    cases.run(TAG + name, fn)
if "--bench" in sys.argv:
    bench()
dist.barrier()
dist.destroy_process_group()
sys.exit(cases.exit())

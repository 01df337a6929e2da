#!/usr/bin/env bash
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
W=/tmp/r5w4; mkdir -p $W
nvidia-smi -L | tee $W/gpus.txt; date -u | tee -a $W/gpus.txt
make -j16 all tests gpu-tests > $W/build.log 2>&1 || { tail -30 $W/build.log; exit 1; }
PP=$PWD/build/lib/python3/site-packages
for rep in 1 2; do for v in shipped t512; do
  f=$PWD/tuning/nvidia-h100-80gb-hbm3.tsv; [ $v = t512 ] && f=$PWD/t512.tsv
  mkdir -p $W/$v.$rep
  SYMHEAP_TUNING_FILE=$f OUT=$W/$v.$rep PYTHONPATH=$PP timeout 60 python3 bench/python_peers.py --ranks 2 --sizes 256K,512K,1M,2M > $W/$v.$rep.log 2>&1; echo "$v.$rep rc=$?"
done; done
tar czf $OUT/r5run4.tgz -C /tmp r5w4
python3 - $W <<'PY'
import json,sys,os
W=sys.argv[1]
print("config bytes algo | symheap eager/graph | ctypes eager | torch1 e/g | torch2 e/g")
for c in sorted(os.listdir(W)):
    p=os.path.join(W,c,"python_peers.json")
    if not os.path.exists(p): continue
    R=json.load(open(p))
    for nb in (262144,524288,1<<20,2<<20):
        g=R.get; f=lambda v: "%.2f"%v if v else "-"
        print(c, nb, g("symheap_algo_%d"%nb), f(g("symheap_%d_eager_us"%nb)), f(g("symheap_%d_graph_us"%nb)), f(g("symheap_ctypes_%d_eager_us"%nb)), f(g("torch_one_shot_%d_eager_us"%nb)), f(g("torch_one_shot_%d_graph_us"%nb)), f(g("torch_two_shot_%d_eager_us"%nb)), f(g("torch_two_shot_%d_graph_us"%nb)))
PY

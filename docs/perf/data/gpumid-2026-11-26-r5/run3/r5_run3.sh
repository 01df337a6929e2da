#!/usr/bin/env bash
# r5 run 3: build; push/ll128 suites; timing (symheap-tune graph+eager, python_peers with the table); gpu_verify at 2 ranks
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
set -u
W=/tmp/r5w; mkdir -p $W
nvidia-smi -L | tee $W/gpus.txt; date -u | tee -a $W/gpus.txt
make -j16 all tests gpu-tests > $W/build.log 2>&1 || { tail -30 $W/build.log; exit 1; }
R=build/bin/symheap-run
PP=$PWD/build/lib/python3/site-packages
s() { local n=$1 l=$2; shift 2; local t=$SECONDS; timeout -k 5 $l "$@" > $W/$n.log 2>&1; printf '%-26s rc=%-3s %3ss PASS %s FAIL %s\n' $n $? $((SECONDS-t)) $(grep -c '^PASS' $W/$n.log) $(grep -c '^FAIL' $W/$n.log) | tee -a $W/summary.txt; grep -m3 '^FAIL' $W/$n.log; }
s mid.procs2 60 $R -n 2 build/test/test_coll_mid
s mid.threads2 60 build/test/test_coll_mid --threads 2
s coll.ll128.procs2 90 env SYMHEAP_ALL_REDUCE_ALGO=ll128 $R -n 2 build/test/test_coll
s tune_graph_n2 60 $R -n 2 build/bin/symheap-tune --coll all_reduce --min-bytes 65536 --max-bytes 4194304 --graph --all $W/tune_graph_n2.tsv
s tune_eager_n2 60 $R -n 2 build/bin/symheap-tune --coll all_reduce --min-bytes 65536 --max-bytes 4194304 --all $W/tune_eager_n2.tsv
mkdir -p $W/torch_n2
s peers2 150 env OUT=$W/torch_n2 PYTHONPATH=$PP python3 bench/python_peers.py --ranks 2 --sizes 4K,64K,256K,512K,1M,2M,16M
python3 bench/gpumid_table.py $W > $W/table.txt 2>&1
timeout 330 bash bench/gpu_verify.sh $W/verify > $W/verify.log 2>&1; echo "gpu_verify rc=$?" | tee -a $W/summary.txt
tar czf $OUT/r5run3.tgz -C /tmp r5w
cp $W/summary.txt $W/table.txt $OUT/
tail -25 $W/verify.log
cat $W/summary.txt
python3 - $W/torch_n2/python_peers.json <<'PY'
import json,sys
R=json.load(open(sys.argv[1]))
print("bytes algo | symheap e/g | torch1 e/g | torch2 e/g | nccl e/g | g/t1 g/t2")
for nb in (4096,65536,262144,524288,1<<20,2<<20,16<<20):
    g=lambda k: R.get(k)
    sh=g("symheap_%d_graph_us"%nb); t1=g("torch_one_shot_%d_graph_us"%nb); t2=g("torch_two_shot_%d_graph_us"%nb)
    f=lambda v: "%.2f"%v if v else "-"
    print(nb, g("symheap_algo_%d"%nb), f(g("symheap_%d_eager_us"%nb)), f(sh), f(g("torch_one_shot_%d_eager_us"%nb)), f(t1), f(g("torch_two_shot_%d_eager_us"%nb)), f(t2), f(g("nccl_%d_eager_us"%nb)), f(g("nccl_%d_graph_us"%nb)), f(sh/t1) if sh and t1 else "-", f(sh/t2) if sh and t2 else "-")
PY
cat $W/table.txt | sed -n '/^graph/,$p'

#!/usr/bin/env bash
# A shorter re-run of bench/gpu_verify.sh after a fix: the adaptor suite,
# the collectives (thread-ranks three times, to see a rare hang), the heap.
# Correctness only; logs in $OUT/logs.tgz.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 SYMHEAP_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.."
make -s -j16 all tests gpu-tests > $OUT/build.txt 2>&1 || { tail -20 $OUT/build.txt; exit 1; }
r() { n=$1; t=$2; shift 2; s=$SECONDS; timeout -k 5 $t "$@" > $OUT/$n.txt 2>&1; echo "$n rc=$? $((SECONDS-s))s pass=$(grep -c ^PASS $OUT/$n.txt) fail=$(grep -c ^FAIL $OUT/$n.txt)"; grep ^FAIL $OUT/$n.txt | head -2; }
r gpu.procs2 90 build/bin/symheap-run -n 2 build/test/test_gpu
r gpu.threads2 90 build/test/test_gpu --threads 2
r coll.procs2 120 build/bin/symheap-run -n 2 build/test/test_coll
for i in 1 2 3; do r coll.threads2.$i 60 build/test/test_coll --threads 2; done
for i in 1 2; do r xfer.threads2.$i 60 build/test/test_coll_xfer --threads 2; done
r heap.procs2 60 build/bin/symheap-run -n 2 build/test/test_heap_gpu
cd $OUT && tar czf logs.tgz *.txt && rm -f *.txt

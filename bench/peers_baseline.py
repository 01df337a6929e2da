# Peer baselines on a 2-GPU host, for side-by-side comparison with symheap in the same run:
# NCCL all-reduce and PyTorch symmetric-memory one-shot/two-shot all-reduce (bf16, per-op time in a
# launch loop, median of 5 repeats), SM copy through mapped peer memory, copy-engine peer copy, and
# PyTorch symmetric-memory setup time (empty + rendezvous). NVLink multicast stays off.
# Usage (on the GPU machine): python3 peers_baseline.py   -> prints JSON; also writes $OUT/baseline.json
# This is the project's shared/bench/peers_baseline.py as a GPU run of this repository carries it
# (bench/gpu_run.sh): bench/peers_baseline_n.py with 2 ranks, which is the same program (the same
# sizes, peers and timing) written once for any rank count; PEERS_SIZES widens its sweep.
from peers_baseline_n import main

if __name__ == "__main__":
    main(2)

#!/bin/bash
# Interleaved runs of several commands, medians per message size.
# usage (from the repository root): alt.sh BENCH N label1 "cmd1" label2 "cmd2" ...
# Runs each command in turn, N times over; keeps the lines of 16 KiB and up
# whose first field is a size; prints per size the median of the second
# field and its range, a column per label.  BENCH only names the run.
b=$1
n=$2
shift 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
declare -a labels cmds
while [ $# -gt 0 ]; do
  labels+=("$1")
  cmds+=("$2")
  shift 2
done
out=$(mktemp -d "/tmp/alt-$b.XXXXXX")
trap 'rm -rf "$out"' EXIT
for _ in $(seq "$n"); do
  for i in "${!labels[@]}"; do
    eval "${cmds[$i]}" 2>&1 |
      awk '$1 ~ /^[0-9]+$/ && $1 >= 16384 {print $1, $2}' >>"$out/${labels[$i]}"
  done
done
python3 - "$out" "${labels[@]}" <<'PY'
import collections, statistics, sys
d, labs = sys.argv[1], sys.argv[2:]
data = {}
for l in labs:
    m = collections.defaultdict(list)
    for line in open(f"{d}/{l}"):
        s, v = line.split()
        m[int(s)].append(float(v))
    data[l] = m
print("size", *[f"{l:>18}" for l in labs])
for s in sorted(data[labs[0]]):
    print(s, *[f"{statistics.median(data[l][s]):7.2f} [{min(data[l][s]):5.2f}-{max(data[l][s]):5.2f}]" for l in labs])
PY

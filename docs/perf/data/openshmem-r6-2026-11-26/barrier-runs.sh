#!/usr/bin/env bash
# Interleaved OSU barrier at N PEs: several builds, many short runs.
# usage: r6-barrier.sh REPS N OUT  (builds: env BUILDS="name=dir[:runopts] ...")
reps=$1 n=$2 out=$3
OSU=/work/shared/osu-oshm; U=$OSU/c/util
w=$(mktemp -d /tmp/r6-bar.XXXXXX)
export SHMEM_SYMMETRIC_SIZE=512M OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for spec in $BUILDS; do
  name=${spec%%=*}; rest=${spec#*=}; dir=${rest%%:*}
  [ "$dir" = ompi ] && { oshcc -O2 -DPACKAGE_VERSION=\"6.0\" -I$U -o $w/$name $OSU/c/openshmem/osu_oshm_barrier.c $U/osu_util.c $U/osu_util_pgas.c -lm; continue; }
  $dir/bin/symheap-oshcc -O2 -DPACKAGE_VERSION=\"6.0\" -I$U -o $w/$name $OSU/c/openshmem/osu_oshm_barrier.c $U/osu_util.c $U/osu_util_pgas.c -lm
done
: > $out
for r in $(seq $reps); do
  for spec in $BUILDS; do
    name=${spec%%=*}; rest=${spec#*=}; dir=${rest%%:*}; opts=; [[ $rest == *:* ]] && opts=${rest#*:}; opts=${opts//,/ }
    if [ "$dir" = ompi ]; then cmd="oshrun --mca osc ^rdma --oversubscribe -n $n $w/$name"
    else cmd="$dir/bin/symheap-run $opts -n $n $w/$name"; fi
    v=$(timeout 60 $cmd 2>&1 | awk '/^ *[0-9.]+ *$/{print $1}')
    echo "$r $name $(cut -d' ' -f1 /proc/loadavg) ${v:-fail}" >> $out
  done
done
python3 - $out <<'PY'
import sys, statistics, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r, name, load, v = l.split()
    if v != "fail": d[name].append(float(v))
for k, v in d.items():
    v.sort()
    print(f"{k:12s} n={len(v):2d} median {statistics.median(v):8.2f}  min {v[0]:8.2f}  q1 {v[len(v)//4]:8.2f} q3 {v[3*len(v)//4]:8.2f} max {v[-1]:8.2f}")
PY
rm -rf $w

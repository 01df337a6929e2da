#!/bin/bash
# usage: osuvar.sh REPS NPES MAX "variants(dir:name ...)" "benches"
reps=$1 n=$2 max=$3 vars=$4 benches=$5
OSU=/work/shared/osu-oshm; U=$OSU/c/util; w=/tmp/r11/osu
export SHMEM_SYMMETRIC_SIZE=512M OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in $vars; do d=${v%%:*}; nm=${v#*:}
  for b in $benches; do
    if [ "$d" = omp ]; then oshcc -O2 -DPACKAGE_VERSION=\"6.0\" -I"$U" -o $w/$nm-$b $OSU/c/openshmem/osu_oshm_$b.c $U/osu_util.c $U/osu_util_pgas.c -lm
    else $d/bin/symheap-oshcc -O2 -DPACKAGE_VERSION=\"6.0\" -I"$U" -o $w/$nm-$b $OSU/c/openshmem/osu_oshm_$b.c $U/osu_util.c $U/osu_util_pgas.c -lm; fi
  done
done
for r in $(seq $reps); do for b in $benches; do for v in $vars; do d=${v%%:*}; nm=${v#*:}
  if [ "$d" = omp ]; then cmd="oshrun --mca osc ^rdma --oversubscribe -n $n $w/$nm-$b"; else cmd="$d/bin/symheap-run -n $n $w/$nm-$b"; fi
  echo "## $r $nm $b $n"
  timeout -k 5 120 $cmd -m $max ${OSU_ARGS:-} </dev/null 2>&1 | grep -E '^[0-9]+ |^ *[0-9.]+ *$|^[0-9]' | awk '{print $1, $2}'
done; done; done

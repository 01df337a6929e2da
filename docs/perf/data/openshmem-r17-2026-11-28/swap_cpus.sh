#!/bin/sh
# For clock_get_where.txt: under symheap-run --bind core (the default), run
# local rank 0 on CPU 1 and rank 1 on CPU 0 (a 2-CPU machine, 2 ranks).
exec taskset -c $((1 - ${SYMHEAP_LOCAL_RANK:-0})) "$@"

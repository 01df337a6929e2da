#!/bin/sh
# per-rank tweaks for bw.sh: /tmp/r11/wrap.conf: NOPROG_RANK=n, NOPROG_ALL=1, PERF=label, LIB=dir, PIN=1
. /tmp/r11/wrap.conf 2>/dev/null
if [ -n "$NOPROG_ALL" ] || { [ -n "$NOPROG_RANK" ] && [ "$SYMHEAP_RANK" = "$NOPROG_RANK" ]; }; then export SYMHEAP_NET_PROGRESS=none; fi
[ -n "$LIB" ] && export LD_LIBRARY_PATH=$LIB
pre=
if [ -n "$BIN" ]; then shift; set -- "$BIN" "$@"; fi
[ -n "$PIN" ] && pre="taskset -c $SYMHEAP_RANK"
if [ -n "$PERF" ]; then exec $pre perf stat -e context-switches,cpu-migrations,task-clock,raw_syscalls:sys_enter,syscalls:sys_enter_ppoll,syscalls:sys_enter_poll,syscalls:sys_enter_clock_nanosleep,syscalls:sys_enter_sched_yield,syscalls:sys_enter_sendmsg,syscalls:sys_enter_recvfrom,syscalls:sys_enter_recvmsg,syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_sendto -o /tmp/r11/perf-$PERF-$SYMHEAP_RANK.txt "$@"; fi
exec $pre "$@"

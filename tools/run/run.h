/* symheap-run across hosts: the launcher side (hosts.c) and the agent that
 * runs each rank on its host (agent.c). */
#ifndef SYMHEAP_RUN_H
#define SYMHEAP_RUN_H

#include <sched.h>
#include <signal.h>

/* One --hosts entry: a host and how many ranks it runs. */
typedef struct {
  char *name;
  int ranks;
} run_host_t;

typedef struct {
  int nranks;
  run_host_t *hosts;
  int nhosts;
  const char *rsh; /* the remote-start command, split on spaces */
  char **prog;     /* the program and its arguments */
  int tag;         /* prefix each output line with "[rank] " */
} run_job_t;

/* "A:2,B:2" into hosts (names point into spec); the rank count, or -1. */
int run_parse_hosts(char *spec, run_job_t *job);
/* The whole job; symheap-run's exit status. */
int run_hosts(run_job_t *job);
/* symheap-run --agent -- PROG ARGS: reads the rank's environment from stdin
 * (NAME=VALUE lines, then an empty line), runs the rank, and from then on
 * reads stdin for "signal N" lines; at EOF (symheap-run or its connection
 * gone) the rank is stopped.  Exits with the rank's status (128+signal). */
int run_agent(char **prog);

/* run/signals.c: handler for SIGINT, SIGTERM and SIGHUP (no SA_RESTART: a
 * blocking wait returns EINTR and the caller passes the signal on); also
 * puts SIGCHLD back to its default, for waitpid. */
void run_catch_signals(void (*handler)(int));
/* Around each fork of a rank (or its start command): run_fork_begin blocks
 * those signals in the parent, which calls run_fork_end once fork returns;
 * the child calls run_fork_child, which puts every signal the launcher
 * handles back to its default and only then unblocks them.  A signal that
 * came in between (symheap-run stopping the job while this rank starts)
 * then ends the child at once.  Before, it ran the launcher's handler,
 * which the child still had until exec, and was lost: the rank went on to
 * run and stopped only at the SIGKILL 2 s later.  (SIGPIPE is the caller's:
 * the launchers that ignore it put it back themselves.) */
void run_fork_begin(sigset_t *old);
void run_fork_end(const sigset_t *old);
void run_fork_child(const sigset_t *old);

/* Ranks asked to stop (a failure, or a signal to symheap-run) are killed
 * (SIGKILL) RUN_GRACE_MS later, on CLOCK_MONOTONIC (run_now_ms); a second
 * signal to symheap-run kills them at once. */
#define RUN_GRACE_MS 2000
long long run_now_ms(void);

/* run/orphans.c: symheap-run becomes the subreaper of what its ranks start
 * (before any fork); run_kill_orphans kills and reaps its children that
 * are not ranks (what a stopped job's ranks left in sessions of their own;
 * called once every rank is reaped) and says how many. */
void run_adopt_orphans(void);
int run_kill_orphans(void);

/* run/shm_files.c: removes the files libfabric's shm endpoints of the
 * ended processes pids[0..n) left in /dev/shm (named by the ofi adaptor),
 * saying how many when there were some. */
void run_clean_shm_files(const pid_t *pids, int n);

/* run/bind.c: a cpulist ("0-3,8") into set; 0, or -1 if it is not one. */
int run_parse_cpulist(const char *s, cpu_set_t *set);
/* The CPUs (within allowed) of the NUMA node of the GPU that the rank of
 * this local rank will use, into out; the node, or -1 when there is none
 * (no GPU found, no node, no allowed CPU on it). */
int run_gpu_node_cpus(int local_rank, const cpu_set_t *allowed,
                      cpu_set_t *out);

#endif

/* symheap-run: start N ranks of a program on this host with the environment
 * symheap_comm_init_env reads.  If a rank fails, stop the others and exit
 * with that rank's status.  The ranks never outlive it: SIGINT, SIGTERM and
 * SIGHUP are forwarded to every rank (then SIGKILL after a grace period),
 * and each rank is killed by the kernel if symheap-run dies any other way
 * (PR_SET_PDEATHSIG).
 *
 * Each rank is bound to one CPU of its own by default (--bind core), as
 * mpirun does for small jobs: an unbound pair of ranks that wait for each
 * other by spinning can be put on one CPU by the scheduler and run 30x
 * slower.  Where the rank's GPU has a NUMA node (run/bind.c says how it is
 * found), its CPU is taken from that node's first.  With more ranks than
 * CPUs, each rank is bound to its GPU's node if it has one, else ranks are
 * dealt out over the CPUs in turn (rank r on the (r mod CPUs)-th), as many
 * on each as can be: left to the scheduler, ranks that wait for each other
 * were moved around and stacked three or four on one CPU while the other
 * had one or none (OSU's 4-PE OpenSHMEM barrier on 2 idle CPUs: 36 us
 * unbound against 12 us dealt out two a CPU; docs/perf/openshmem.md).
 * --bind numa binds each rank to its GPU node's CPUs only, --bind none (or
 * SYMHEAP_RUN_BIND=none|core|numa; --bind-to as mpirun spells it) changes
 * the mode. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/run.h"
#include "symheap.h"

static pid_t *pids;   /* rank r's pid while it runs; 0 once reaped */
static pid_t *groups; /* rank r's process group, kept once it is reaped */
static pid_t *born;   /* rank r's pid as started, kept for good */
static int started;   /* ranks forked so far */
static int nranks;
static run_job_t job = {0, NULL, 0, "ssh", NULL, 1};
static char *hosts_spec;
enum { BIND_NONE, BIND_CORE, BIND_NUMA };
static int bind_mode = BIND_CORE; /* --bind */
static int bind_given;            /* --bind was on the command line */
static cpu_set_t *bind_sets;      /* rank r's CPUs; empty: not bound */
static volatile sig_atomic_t got_signal;

static void on_signal(int sig) { got_signal = sig; }

static void usage(FILE *f) {
  fprintf(
      f, "usage: symheap-run -n N [--hosts A:2,B:2 [--rsh CMD]] [--] PROGRAM "
         "[ARGS...] | --version\n"
         "Starts N ranks of PROGRAM on this host.  Each gets SYMHEAP_RANK,\n"
         "SYMHEAP_NRANKS, SYMHEAP_LOCAL_RANK and SYMHEAP_UNIQUE_ID, which\n"
         "symheap_comm_init_env reads.  If one rank fails, the others are\n"
         "stopped (SIGTERM, then SIGKILL after 2 s, with what they started)\n"
         "and symheap-run exits with the failed rank's status (128+signal\n"
         "if it was killed).  SIGINT, SIGTERM and SIGHUP to symheap-run go\n"
         "to every rank (a second one kills them at once); if symheap-run\n"
         "is killed outright, its ranks are killed with it.\n"
         "--hosts HOST:COUNT,... starts the ranks on those hosts in order\n"
         "(ranks 0..COUNT-1 on the first), each through CMD HOST (default\n"
         "ssh; e.g. --rsh 'ip netns exec' for network namespaces; host\n"
         "localhost runs here), which runs this symheap-run, at the same\n"
         "path, as the rank's agent.  The ranks meet over TCP at rank 0\n"
         "(SYMHEAP_BOOTSTRAP=tcp); their output comes back tagged \"[rank] \"\n"
         "(--no-tag: as it is).  Stopping symheap-run stops every rank.\n"
         "Rank 0 ending before it joins (symheap_comm_init_env) leaves the\n"
         "others unstarted: its status, or 1 if that was 0.\n"
         "-n may be left out; if given it must match the hosts' sum.\n"
         "SYMHEAP_BOOTSTRAP=tcp without --hosts runs --hosts localhost:N.\n"
         "  --bind core      each rank to a CPU of its own (the default), from\n"
         "                   its GPU's NUMA node first where it has one; with\n"
         "                   more ranks than CPUs, to its GPU's node, else\n"
         "                   rank r to the (r mod CPUs)-th CPU\n"
         "  --bind numa      each rank to its GPU's NUMA node's CPUs (no GPU\n"
         "                   node: not bound)\n"
         "  --bind none      leave placement to the scheduler\n"
         "                   (SYMHEAP_RUN_BIND=none|core|numa; --bind-to too;\n"
         "                   one host only: --hosts ranks are not bound)\n");
}

static void hex(const unsigned char *in, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    sprintf(out + 2 * i, "%02x", in[i]);
}

/* Each rank leads its own process group, so stopping a rank also stops what
 * it started (a shell's children, a debugger's inferior), even once the
 * rank itself has ended. */
static void signal_all(int sig) {
  for (int r = 0; r < started; r++)
    if (groups[r] > 0)
      kill(-groups[r], sig);
}

/* A process of some rank's group is left (the rank, or what it started). */
static int groups_alive(void) {
  for (int r = 0; r < started; r++)
    if (groups[r] > 0 && kill(-groups[r], 0) == 0)
      return 1;
  return 0;
}

/* Whom the SIGKILL after the grace period is for: a rank that ignores the
 * signal that asked it to stop, or takes longer to exit on it, is told
 * apart from one that stopped when asked. */
static void say_killing(void) {
  for (int r = 0; r < started; r++) {
    if (pids[r] > 0)
      fprintf(stderr,
              "symheap-run: rank %d did not stop within %d ms of being "
              "asked to; killing it (SIGKILL)\n",
              r, RUN_GRACE_MS);
    else if (groups[r] > 0 && kill(-groups[r], 0) == 0)
      fprintf(stderr,
              "symheap-run: what rank %d started did not stop within %d ms; "
              "killing it (SIGKILL)\n",
              r, RUN_GRACE_MS);
  }
}

static int rank_of(pid_t pid) {
  for (int r = 0; r < nranks; r++)
    if (pids[r] == pid)
      return r;
  return -1;
}

static int describe(int rank, int status) {
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "symheap-run: rank %d was killed by signal %d (%s)\n", rank,
            WTERMSIG(status), strsignal(WTERMSIG(status)));
    return 128 + WTERMSIG(status);
  }
  fprintf(stderr, "symheap-run: rank %d exited with status %d\n", rank,
          WEXITSTATUS(status));
  return WEXITSTATUS(status);
}

/* none, core or numa (0: none, as before); -1 for anything else. */
static int bind_word(const char *w) {
  return strcmp(w, "none") == 0 || strcmp(w, "0") == 0 ? BIND_NONE
         : strcmp(w, "core") == 0                      ? BIND_CORE
         : strcmp(w, "numa") == 0                      ? BIND_NUMA
                                                       : -1;
}

/* An option that takes a value (said "unknown option" when last). */
static int is_valued(const char *a) {
  static const char *const valued[] = {"-n", "--hosts", "--rsh", "--bind",
                                       "--bind-to"};
  for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
    if (strcmp(a, valued[k]) == 0)
      return 1;
  return 0;
}

/* The options before the program; the program's index in argv, or -1 with
 * *rc the exit status (0 after --help, 2 for a usage error). */
static int parse_args(int argc, char **argv, int *rc) {
  int i = 1;
  *rc = 2;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      char *end;
      const char *a = argv[++i];
      long n = a[0] >= '0' && a[0] <= '9' ? strtol(a, &end, 10) : 0;
      if ((n && *end) || n < 1 || n > 4096) { /* digits only: not " 2", "+2" */
        fprintf(stderr, "symheap-run: -n needs a rank count from 1 to 4096\n");
        return -1;
      }
      nranks = (int)n;
    } else if (strcmp(argv[i], "--hosts") == 0 && i + 1 < argc) {
      hosts_spec = argv[++i];
    } else if (strcmp(argv[i], "--rsh") == 0 && i + 1 < argc) {
      job.rsh = argv[++i];
      /* No word: the host name itself would be run as the command. */
      if (strspn(job.rsh, " ") == strlen(job.rsh)) {
        fprintf(stderr, "symheap-run: --rsh needs a command (e.g. ssh)\n");
        return -1;
      }
    } else if (strcmp(argv[i], "--no-tag") == 0) {
      job.tag = 0;
    } else if ((strcmp(argv[i], "--bind") == 0 ||
                strcmp(argv[i], "--bind-to") == 0) &&
               i + 1 < argc) {
      if ((bind_mode = bind_word(argv[++i])) < 0) {
        fprintf(stderr,
                "symheap-run: --bind takes none, core or numa, not %s\n",
                argv[i]);
        return -1;
      }
      bind_given = 1;
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      *rc = 0;
      return -1;
    } else if (strcmp(argv[i], "--version") == 0) {
      int major, minor, patch;
      symheap_get_version(&major, &minor, &patch);
      printf("symheap-run %d.%d.%d\n", major, minor, patch);
      *rc = 0;
      return -1;
    } else if (strcmp(argv[i], "--") == 0) {
      i++;
      break;
    } else if (is_valued(argv[i])) { /* the last word: no value left */
      fprintf(stderr, "symheap-run: %s needs a value\n", argv[i]);
      usage(stderr);
      return -1;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "symheap-run: unknown option %s\n", argv[i]);
      usage(stderr);
      return -1;
    } else {
      break;
    }
  }
  if ((nranks == 0 && !hosts_spec) || i >= argc) {
    /* Which is missing, before the whole usage text. */
    if (i >= argc)
      fprintf(stderr, "symheap-run: no program to run\n");
    else
      fprintf(stderr, "symheap-run: how many ranks: -n N or --hosts\n");
    usage(stderr);
    return -1;
  }
  return i;
}

/* --hosts (or SYMHEAP_BOOTSTRAP=tcp on this host alone): the job across
 * hosts (run/hosts.c); -1 when not asked for. */
static int maybe_hosts(char **prog) {
  const char *boot = getenv("SYMHEAP_BOOTSTRAP");
  char local[32];
  /* Read as the library reads it, in any case (before: "TCP" ran the job
   * on one host with a TCP bootstrap nobody had set up for it). */
  if (!hosts_spec && !(boot && strcasecmp(boot, "tcp") == 0))
    return -1;
  if (!hosts_spec) { /* one host: the output as without TCP, untagged */
    snprintf(local, sizeof local, "localhost:%d", nranks);
    hosts_spec = local;
    job.tag = 0;
  }
  int n = run_parse_hosts(hosts_spec, &job);
  if (n < 0 || (nranks && n != nranks)) {
    fprintf(stderr,
            n < 0 ? "symheap-run: --hosts wants HOST:COUNT,... (counts from 1, "
                    "4096 ranks at most; no host name starts with '-')\n"
                  : "symheap-run: -n %d but --hosts gives %d ranks\n",
            nranks, n);
    return 2;
  }
  job.nranks = n;
  job.prog = prog;
  return run_hosts(&job);
}

/* The first CPU of want not taken yet (and takes it); -1 if none. */
static int take_cpu(const cpu_set_t *want, cpu_set_t *taken) {
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, want) && !CPU_ISSET(c, taken)) {
      CPU_SET(c, taken);
      return c;
    }
  return -1;
}

/* The k-th CPU of set (k < CPU_COUNT(set)). */
static int nth_cpu(const cpu_set_t *set, int k) {
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, set) && k-- == 0)
      return c;
  return -1;
}

/* Every rank's CPUs (bind_sets), by the mode: SYMHEAP_RUN_BIND unless
 * --bind said otherwise.  0, or 2 after a bad SYMHEAP_RUN_BIND. */
static int bind_decide(void) {
  const char *env = getenv("SYMHEAP_RUN_BIND");
  if (!bind_given && env && *env && (bind_mode = bind_word(env)) < 0) {
    fprintf(stderr, "symheap-run: SYMHEAP_RUN_BIND takes none, core or numa, "
                    "not %s\n", env);
    return 2;
  }
  /* A tree that is not there would read as "no GPU" and bind silently
   * otherwise than asked (it was taken, whatever it named). */
  const char *sys = getenv("SYMHEAP_RUN_SYSFS");
  struct stat st;
  if (sys && *sys && (stat(sys, &st) != 0 || !S_ISDIR(st.st_mode))) {
    fprintf(stderr, "symheap-run: SYMHEAP_RUN_SYSFS='%s' is not a "
                    "directory\n", sys);
    return 2;
  }
  cpu_set_t allowed, taken;
  bind_sets = calloc((size_t)nranks, sizeof *bind_sets);
  if (!bind_sets || bind_mode == BIND_NONE ||
      sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return bind_sets ? 0 : 2;
  int own_cpu = bind_mode == BIND_CORE && nranks <= CPU_COUNT(&allowed);
  CPU_ZERO(&taken);
  for (int r = 0; r < nranks; r++) {
    cpu_set_t node;
    int has_node = run_gpu_node_cpus(r, &allowed, &node) >= 0;
    if (!own_cpu) {
      if (has_node)
        bind_sets[r] = node;
      else if (bind_mode == BIND_CORE) /* more ranks than CPUs: in turn */
        CPU_SET(nth_cpu(&allowed, r % CPU_COUNT(&allowed)), &bind_sets[r]);
      continue;
    }
    int c = has_node ? take_cpu(&node, &taken) : -1;
    if (c < 0)
      c = take_cpu(&allowed, &taken);
    CPU_SET(c, &bind_sets[r]); /* c >= 0: nranks <= CPUs allowed */
  }
  return 0;
}

/* In the child: rank r of the job, then the program. */
static void exec_rank(int r, pid_t launcher, const sigset_t *mask,
                      char **prog) {
  char num[16];
  /* Die with the launcher, however it dies; if it is gone already (before
   * prctl took effect), go now. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != launcher)
    _exit(127);
  setpgid(0, 0);
  run_fork_child(mask);
  if (CPU_COUNT(&bind_sets[r]) &&
      sched_setaffinity(0, sizeof bind_sets[r], &bind_sets[r]) != 0)
    fprintf(stderr, "symheap-run: rank %d: cannot bind: %s\n", r,
            strerror(errno));
  snprintf(num, sizeof num, "%d", r);
  setenv("SYMHEAP_RANK", num, 1);
  setenv("SYMHEAP_LOCAL_RANK", num, 1);
  execvp(prog[0], prog);
  fprintf(stderr, "symheap-run: cannot run %s: %s\n", prog[0], strerror(errno));
  _exit(127);
}

/* Every rank forked, with the job's environment (or fewer, when a signal
 * to symheap-run came meanwhile: wait_ranks stops those); 0, or 2 after a
 * failure (the ranks started so far killed). */
static int start_ranks(char **prog) {
  symheap_unique_id_t id;
  if (symheap_get_unique_id(&id) != SYMHEAP_SUCCESS) {
    fprintf(stderr, "symheap-run: %s\n", symheap_last_error());
    return 2;
  }
  char idhex[2 * sizeof id.bytes + 1], num[16];
  hex(id.bytes, sizeof id.bytes, idhex);
  setenv("SYMHEAP_UNIQUE_ID", idhex, 1);
  snprintf(num, sizeof num, "%d", nranks);
  setenv("SYMHEAP_NRANKS", num, 1);
  pid_t launcher = getpid();
  for (int r = 0; r < nranks && !got_signal; r++) {
    sigset_t mask;
    run_fork_begin(&mask);
    pid_t pid = fork();
    if (pid == 0)
      exec_rank(r, launcher, &mask, prog);
    if (pid > 0)
      setpgid(pid, pid); /* also here, so no signal can race the child's */
    run_fork_end(&mask);
    if (pid < 0) {
      fprintf(stderr, "symheap-run: fork: %s\n", strerror(errno));
      signal_all(SIGKILL);
      return 2;
    }
    pids[r] = groups[r] = born[r] = pid;
    started = r + 1;
  }
  return 0;
}

/* A rank has ended: the first failure stops the others. */
static void rank_ended(int r, int status, int *live, int *failed,
                       int *result, long long *kill_at) {
  pids[r] = 0;
  (*live)--;
  /* An empty group is forgotten: its id may be taken by another program's
   * group, long before this job stops.  (One that what the rank started
   * keeps alive is in use, and stays ours while it is.) */
  if (kill(-groups[r], 0) != 0)
    groups[r] = 0;
  if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || *failed >= 0)
    return;
  *failed = r;
  *result = describe(r, status);
  if (*live > 0) {
    fprintf(stderr, "symheap-run: stopping the other %d rank(s)\n", *live);
    signal_all(SIGTERM);
    *kill_at = run_now_ms() + RUN_GRACE_MS;
  }
}

/* A signal to us: the first is passed on to every rank, a second kills
 * them (as does one that comes after a rank's failure began the stop). */
static void got_one(int sig, int *failed, int *result, long long *kill_at) {
  if (*failed < 0) {
    fprintf(stderr, "symheap-run: got signal %d, stopping all ranks\n", sig);
    signal_all(sig);
    *result = 128 + sig;
    *failed = nranks; /* not a rank, but stop waiting politely */
    *kill_at = run_now_ms() + RUN_GRACE_MS;
  } else {
    fprintf(stderr, "symheap-run: signal %d again; killing every rank\n",
            sig);
    signal_all(SIGKILL);
    *kill_at = 0;
  }
}

/* Until every rank is gone, and once a stop began, every process of their
 * groups (or RUN_GRACE_MS, then SIGKILL).  The job's exit status.
 * SIGCHLD and the signals passed on are blocked here and taken with
 * sigtimedwait, so one that comes at any moment is acted on at once.
 * Before, a blocking waitpid learned of a signal only by EINTR, and one
 * that came while the ranks were being started (before waitpid) was left
 * until the job ended by itself. */
static int wait_ranks(int live) {
  int result = 0, failed = -1;
  long long kill_at = 0;
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigprocmask(SIG_BLOCK, &set, &old);
  while (live > 0 || got_signal || (kill_at && groups_alive())) {
    int status;
    /* Every child: the ranks, and what they started that we adopted as
     * their subreaper (left a zombie, it would keep its group alive). */
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == ECHILD && live == 0)
      pid = 0; /* what is left of the groups is no child of ours */
    if (pid < 0 && errno != EINTR) {
      fprintf(stderr, "symheap-run: waitpid: %s, with %d rank(s) running\n",
              strerror(errno), live);
      result = result ? result : 2;
      break;
    }
    int r = pid > 0 ? rank_of(pid) : -1;
    if (r >= 0)
      rank_ended(r, status, &live, &failed, &result, &kill_at);
    if (pid > 0)
      continue; /* reap every rank that has ended before waiting again */
    if (got_signal) {
      int sig = (int)got_signal;
      got_signal = 0;
      got_one(sig, &failed, &result, &kill_at);
    }
    long long now = run_now_ms();
    if (kill_at && now >= kill_at) {
      say_killing();
      signal_all(SIGKILL);
      kill_at = 0;
    }
    /* A rank's end (SIGCHLD) or a signal to us wakes this at once.  What
     * a rank started becomes our child as the rank ends (we are its
     * subreaper), but whether its group still runs is looked at every
     * 20 ms once the ranks are gone. */
    long long ms = kill_at ? kill_at - now : 1000;
    if (live == 0 && ms > 20)
      ms = 20;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    int sig = sigtimedwait(&set, NULL, &ts);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
      got_signal = sig;
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  int left = failed >= 0 ? run_kill_orphans() : 0;
  if (left)
    fprintf(stderr,
            "symheap-run: killed %d process(es) the ranks had started in "
            "sessions of their own\n",
            left);
  run_clean_shm_files(born, started);
  return result;
}

int main(int argc, char **argv) {
  int rc;
  if (argc > 2 && strcmp(argv[1], "--agent") == 0 &&
      strcmp(argv[2], "--") == 0 && argc > 3)
    return run_agent(&argv[3]);
  int prog = parse_args(argc, argv, &rc);
  if (prog < 0)
    return rc;
  if ((rc = maybe_hosts(&argv[prog])) >= 0)
    return rc;
  if (bind_decide() != 0)
    return 2;
  pids = calloc((size_t)nranks, sizeof *pids);
  groups = calloc((size_t)nranks, sizeof *groups);
  born = calloc((size_t)nranks, sizeof *born);
  if (!pids || !groups || !born)
    return 2;
  run_catch_signals(on_signal);
  run_adopt_orphans();
  rc = start_ranks(&argv[prog]);
  if (rc == 0)
    rc = wait_ranks(started);
  free(pids);
  free(groups);
  free(born);
  free(bind_sets);
  return rc;
}

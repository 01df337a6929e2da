/* symheap-run --hosts: ranks on several hosts, each started through the
 * remote-start command (--rsh, default ssh) running `symheap-run --agent`
 * there.  The launcher talks to its ranks only through those commands'
 * pipes: it need not be reachable from their hosts.  Rank 0 starts first
 * and hosts the bootstrap: it reports its TCP address (the whole unique id)
 * on its stdout, and the other ranks start with it, given through stdin.
 * Output is forwarded line by line, tagged "[rank] ". */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"
#include "symheap.h"

#define ROOT_REPORT "@@symheap-run-root@@ "

typedef struct {
  pid_t pid;     /* the remote-start command (or the local agent) */
  int in, fd[2]; /* its stdin; its stdout and stderr (-1: closed) */
  char *buf[2];  /* a partial line of each */
  size_t len[2];
  int host, reaped, status;
} rank_t;

static rank_t *ranks;
static int nranks;
static volatile sig_atomic_t got_signal;
static char root_id[600];
static int tag_lines;

static void on_signal(int sig) { got_signal = sig; }

int run_parse_hosts(char *spec, run_job_t *job) {
  int cap = 1, total = 0;
  for (const char *p = spec; *p; p++)
    cap += *p == ',';
  job->hosts = calloc((size_t)cap, sizeof *job->hosts);
  if (!job->hosts)
    return -1;
  /* strsep, not strtok: an empty entry ("A:1,,B:1", a trailing ',') is a
   * mistake to refuse, not to skip. */
  for (char *rest = spec, *tok; (tok = strsep(&rest, ",")) != NULL;) {
    char *colon = strrchr(tok, ':'), *end = NULL;
    /* Digits only, as -n: not " 2", "+2" (strtol takes both). */
    long n = !colon ? 1
             : colon[1] >= '0' && colon[1] <= '9' ? strtol(colon + 1, &end, 10)
                                                  : 0;
    /* A name starting with '-' would reach the remote-start command as an
     * option (ssh -oProxyCommand=..., ip netns exec -all: every namespace). */
    if ((end && *end) || n < 1 || n > 4096 || tok == colon || !tok[0] ||
        tok[0] == '-')
      return -1;
    if (colon)
      *colon = '\0';
    job->hosts[job->nhosts].name = tok;
    job->hosts[job->nhosts++].ranks = (int)n;
    total += (int)n;
    if (total > 4096)
      return -1;
  }
  return total > 0 && total <= 4096 ? total : -1;
}

/* A word for a remote shell: single-quoted. */
static char *shell_quote(const char *s) {
  char *out = malloc(4 * strlen(s) + 3), *o = out;
  if (!out)
    return NULL;
  *o++ = '\'';
  for (; *s; s++) {
    if (*s == '\'') {
      memcpy(o, "'\\''", 4);
      o += 4;
    } else {
      *o++ = *s;
    }
  }
  *o++ = '\'';
  *o = '\0';
  return out;
}

/* The command that starts rank r's agent on its host. */
static char **agent_argv(run_job_t *job, const char *host, const char *self) {
  size_t n = 0, words = 8;
  for (const char *p = job->rsh; *p; p++)
    words += *p == ' ';
  for (char **a = job->prog; *a; a++)
    words++;
  char **argv = calloc(words, sizeof *argv);
  char *rsh = strdup(job->rsh);
  if (!argv || !rsh)
    return NULL;
  int local = strcmp(host, "localhost") == 0, shell = 0;
  if (!local) {
    for (char *save = NULL, *w = strtok_r(rsh, " ", &save); w;
         w = strtok_r(NULL, " ", &save))
      argv[n++] = w;
    const char *base = n ? strrchr(argv[0], '/') : NULL;
    base = base ? base + 1 : n ? argv[0] : "";
    /* ssh and rsh hand the command to a shell there; others (ip netns
     * exec, a wrapper) take it as arguments. */
    shell = strcmp(base, "ssh") == 0 || strcmp(base, "rsh") == 0;
    argv[n++] = (char *)host;
  }
  argv[n++] = shell ? shell_quote(self) : (char *)self;
  argv[n++] = "--agent";
  argv[n++] = "--";
  for (char **a = job->prog; *a; a++)
    argv[n++] = shell ? shell_quote(*a) : *a;
  return argv;
}

/* Rank r's environment, as the agent reads it from stdin. */
static void send_env(int fd, int r, int local_rank, const char *id) {
  extern char **environ;
  FILE *f = fdopen(dup(fd), "w");
  if (!f)
    return;
  static const char *ours[] = {
      "SYMHEAP_RANK=",      "SYMHEAP_NRANKS=",          "SYMHEAP_LOCAL_RANK=",
      "SYMHEAP_UNIQUE_ID=", "SYMHEAP_RUN_ROOT_REPORT=", "SYMHEAP_BOOTSTRAP="};
  /* A remote shell starts with its own environment: the job's settings go
   * along. */
  for (char **e = environ; *e; e++) {
    int skip = strncmp(*e, "SYMHEAP_", 8) != 0 || strchr(*e, '\n');
    for (size_t i = 0; !skip && i < sizeof ours / sizeof ours[0]; i++)
      skip = strncmp(*e, ours[i], strlen(ours[i])) == 0;
    if (!skip)
      fprintf(f, "%s\n", *e);
  }
  fprintf(f,
          "SYMHEAP_RANK=%d\nSYMHEAP_NRANKS=%d\nSYMHEAP_LOCAL_RANK=%d\n"
          "SYMHEAP_UNIQUE_ID=%s\nSYMHEAP_RUN_ROOT_REPORT=%d\n"
          "SYMHEAP_BOOTSTRAP=tcp\n\n",
          r, nranks, local_rank, id, r == 0);
  fclose(f);
}

static int launch(run_job_t *job, int r, int local_rank, const char *self,
                  const char *id) {
  rank_t *k = &ranks[r];
  int in[2], out[2], err[2];
  char **argv = agent_argv(job, job->hosts[k->host].name, self);
  if (!argv || pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) ||
      pipe2(err, O_CLOEXEC))
    return -1;
  sigset_t mask;
  run_fork_begin(&mask);
  pid_t launcher = getpid(), pid = fork();
  if (pid == 0) {
    /* Dies with the launcher, however it dies: then the agent's stdin
     * closes, and it stops the rank. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != launcher)
      _exit(127);
    setpgid(0, 0);
    run_fork_child(&mask);
    signal(SIGPIPE, SIG_DFL);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execvp(argv[0], argv);
    fprintf(stderr, "symheap-run: cannot run %s: %s\n", argv[0],
            strerror(errno));
    _exit(127);
  }
  if (pid > 0)
    setpgid(pid, pid);
  run_fork_end(&mask);
  if (pid < 0)
    return -1;
  close(in[0]);
  close(out[1]);
  close(err[1]);
  k->pid = pid;
  k->in = in[1];
  k->fd[0] = out[0];
  k->fd[1] = err[0];
  send_env(k->in, r, local_rank, id);
  return 0;
}

/* One line of rank r's stream s: rank 0's report is taken out. */
static void emit(int r, int s, const char *line, size_t len) {
  const char *m = memmem(line, len, ROOT_REPORT, strlen(ROOT_REPORT));
  if (r == 0 && s == 0 && m && !root_id[0]) {
    size_t idlen = len - (size_t)(m - line) - strlen(ROOT_REPORT);
    if (idlen < sizeof root_id) {
      memcpy(root_id, m + strlen(ROOT_REPORT), idlen);
      root_id[idlen] = '\0';
    }
    len = (size_t)(m - line);
    if (len == 0)
      return;
  }
  FILE *f = s ? stderr : stdout;
  if (tag_lines)
    fprintf(f, "[%d] %.*s\n", r, (int)len, line);
  else
    fprintf(f, "%.*s\n", (int)len, line);
  fflush(f);
}

static void read_stream(int r, int s) {
  rank_t *k = &ranks[r];
  char tmp[65536];
  ssize_t n = read(k->fd[s], tmp, sizeof tmp);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  if (n <= 0) {
    if (k->len[s])
      emit(r, s, k->buf[s], k->len[s]);
    k->len[s] = 0;
    close(k->fd[s]);
    k->fd[s] = -1;
    return;
  }
  char *grown = realloc(k->buf[s], k->len[s] + (size_t)n);
  if (!grown)
    return;
  k->buf[s] = grown;
  memcpy(k->buf[s] + k->len[s], tmp, (size_t)n);
  k->len[s] += (size_t)n;
  size_t start = 0;
  for (size_t i = 0; i < k->len[s]; i++)
    if (k->buf[s][i] == '\n') {
      emit(r, s, k->buf[s] + start, i - start);
      start = i + 1;
    }
  memmove(k->buf[s], k->buf[s] + start, k->len[s] - start);
  k->len[s] -= start;
}

/* Forward what the ranks wrote (up to ms), and reap the ones that ended. */
static void pump(int ms) {
  struct pollfd p[2 * 4096];
  int who[2 * 4096], n = 0;
  for (int r = 0; r < nranks; r++)
    for (int s = 0; s < 2; s++)
      if (ranks[r].pid && ranks[r].fd[s] >= 0) {
        p[n] = (struct pollfd){ranks[r].fd[s], POLLIN, 0};
        who[n++] = 2 * r + s;
      }
  if (poll(p, (nfds_t)n, ms) > 0)
    for (int i = 0; i < n; i++)
      if (p[i].revents)
        read_stream(who[i] / 2, who[i] % 2);
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
    for (int r = 0; r < nranks; r++)
      if (ranks[r].pid == pid) {
        ranks[r].reaped = 1;
        ranks[r].status = status;
      }
}

/* To every rank's agent: signal sig, or (sig 0) stdin closed and the
 * remote-start commands killed. */
static void signal_all(int sig) {
  char line[32];
  int n = snprintf(line, sizeof line, "signal %d\n", sig);
  for (int r = 0; r < nranks; r++) {
    if (!ranks[r].pid || ranks[r].reaped)
      continue;
    if (sig && ranks[r].in >= 0 && write(ranks[r].in, line, (size_t)n) < 0)
      continue;
    if (!sig) {
      if (ranks[r].in >= 0)
        close(ranks[r].in);
      ranks[r].in = -1;
      kill(-ranks[r].pid, SIGKILL);
    }
  }
}

static int died_of_signal(int r) {
  int st = ranks[r].status;
  return WIFSIGNALED(st) ||
         (WEXITSTATUS(st) > 128 && WEXITSTATUS(st) < 128 + 65);
}

static int status_code(int r) {
  int st = ranks[r].status;
  if (WIFSIGNALED(st)) {
    fprintf(stderr,
            "symheap-run: rank %d (its start command) was killed by "
            "signal %d\n",
            r, WTERMSIG(st));
    return 128 + WTERMSIG(st);
  }
  fprintf(stderr, "symheap-run: rank %d exited with status %d\n", r,
          WEXITSTATUS(st));
  return WEXITSTATUS(st);
}

static int live(void) {
  int n = 0;
  for (int r = 0; r < nranks; r++)
    n += ranks[r].pid && !ranks[r].reaped;
  return n;
}

static int open_streams(void) {
  int n = 0;
  for (int r = 0; r < nranks; r++)
    n += (ranks[r].fd[0] >= 0) + (ranks[r].fd[1] >= 0);
  return n;
}

/* At the end of the grace period: what is still running is killed. */
static void kill_the_rest(void) {
  for (int r = 0; r < nranks; r++)
    if (ranks[r].pid && !ranks[r].reaped)
      fprintf(stderr,
              "symheap-run: rank %d did not stop within %d ms of being asked "
              "to; killing its start command (SIGKILL)\n",
              r, RUN_GRACE_MS);
  signal_all(0);
}

/* The first failure (or a signal to us) stops the rest: the signal, then
 * after RUN_GRACE_MS the start commands killed and the agents' stdin
 * closed; a second signal to us does that at once. */
static int supervise(int *failed, long long *kill_at) {
  int result = 0, pick = -1;
  /* Of the failures seen at once, one that died of a signal (an agent
   * exits 128+signal) is the likelier cause: the others may be its peers,
   * which failed because it was gone. */
  for (int r = 0; r < nranks && *failed < 0; r++) {
    int st = ranks[r].status;
    if (!ranks[r].reaped || (WIFEXITED(st) && WEXITSTATUS(st) == 0))
      continue;
    if (pick < 0 || (!died_of_signal(pick) && died_of_signal(r)))
      pick = r;
  }
  if (pick >= 0) {
    *failed = pick;
    result = status_code(pick);
    if (live() > 0) {
      fprintf(stderr, "symheap-run: stopping the other %d rank(s)\n", live());
      signal_all(SIGTERM);
      *kill_at = run_now_ms() + RUN_GRACE_MS;
    }
  }
  /* Taken and cleared at once: one that came between would be lost. */
  int sig = (int)__atomic_exchange_n(&got_signal, 0, __ATOMIC_SEQ_CST);
  if (sig && *failed < 0) {
    fprintf(stderr, "symheap-run: got signal %d, stopping all ranks\n", sig);
    signal_all(sig);
    result = 128 + sig;
    *failed = nranks;
    *kill_at = run_now_ms() + RUN_GRACE_MS;
  } else if (sig) {
    fprintf(stderr, "symheap-run: signal %d again; killing every rank\n", sig);
    signal_all(0);
    *kill_at = 0;
  }
  if (*kill_at && run_now_ms() >= *kill_at) {
    kill_the_rest();
    *kill_at = 0;
  }
  return result;
}

static int start_all(run_job_t *job, const char *self, const char *idhex) {
  int r = 0;
  for (int h = 0; h < job->nhosts; h++)
    for (int i = 0; i < job->hosts[h].ranks; i++, r++) {
      ranks[r].host = h;
      ranks[r].fd[0] = ranks[r].fd[1] = ranks[r].in = -1;
    }
  if (launch(job, 0, 0, self, idhex) != 0)
    return -1;
  /* Rank 0 reports its address when it joins (symheap_comm_init_env). */
  while (nranks > 1 && !root_id[0] && !ranks[0].reaped && !got_signal)
    pump(100);
  if (nranks > 1 && !root_id[0])
    return 1;
  for (r = 1; r < nranks; r++) {
    /* By name: a host listed twice (A:1,B:1,A:1) is one host, whose
     * ranks must not share a local rank (they pick GPUs by it). */
    int local = 0;
    for (int q = 0; q < r; q++)
      local += strcmp(job->hosts[ranks[q].host].name,
                      job->hosts[ranks[r].host].name) == 0;
    if (launch(job, r, local, self, root_id) != 0)
      return -1;
  }
  return 0;
}

int run_hosts(run_job_t *job) {
  char self[PATH_MAX];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  nranks = job->nranks;
  tag_lines = job->tag;
  ranks = calloc((size_t)nranks, sizeof *ranks);
  if (sl <= 0 || !ranks)
    return 2;
  self[sl] = '\0';
  run_catch_signals(on_signal);
  signal(SIGPIPE, SIG_IGN);
  /* A launcher's id: the secret only; rank 0 adds its address. */
  symheap_unique_id_t id;
  setenv("SYMHEAP_BOOTSTRAP", "tcp", 1);
  setenv("SYMHEAP_RUN_ROOT_REPORT", "1", 1);
  symheap_result_t res = symheap_get_unique_id(&id);
  unsetenv("SYMHEAP_RUN_ROOT_REPORT");
  if (res != SYMHEAP_SUCCESS) {
    fprintf(stderr, "symheap-run: %s\n", symheap_last_error());
    return 2;
  }
  char idhex[2 * sizeof id.bytes + 1];
  for (size_t i = 0; i < sizeof id.bytes; i++)
    sprintf(idhex + 2 * i, "%02x", id.bytes[i]);
  int started = start_all(job, self, idhex);
  if (started < 0)
    fprintf(stderr, "symheap-run: cannot start the ranks: %s\n",
            strerror(errno));
  else if (started > 0 && !got_signal && nranks > 1)
    fprintf(stderr, "symheap-run: rank 0 ended before it joined the job "
                    "(symheap_comm_init_env), so the other ranks were not "
                    "started\n");
  int failed = started < 0 ? nranks : -1, result = started < 0 ? 2 : 0;
  long long kill_at = started < 0 ? run_now_ms() : 0;
  if (started < 0)
    signal_all(SIGKILL);
  while (live() > 0) {
    pump(100);
    int rc = supervise(&failed, &kill_at);
    if (rc && !result)
      result = rc;
  }
  /* What they wrote last; a stream a stray background process holds open
   * gets a second. */
  for (time_t until = time(NULL) + 1;
       open_streams() > 0 && time(NULL) <= until;)
    pump(100);
  int rc = supervise(&failed, &kill_at);
  /* Rank 0 ended well but never joined: the other ranks never ran, which
   * is no success. */
  return result ? result : rc ? rc : started > 0 && nranks > 1 ? 1 : 0;
}

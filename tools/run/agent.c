/* The agent: what symheap-run starts on each host, through the remote-start
 * command, to run one rank.  Its stdin is the launcher's only way in: the
 * rank's environment first (so the job's secret never sits on a command
 * line, where ps shows it), then signals; EOF means the launcher is gone,
 * and the rank goes too, so no rank outlives its job. */
#include <errno.h>
#include <fcntl.h>
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

static volatile sig_atomic_t got;
static void on_signal(int sig) { got = sig; }

/* One line of stdin into buf (without the newline); -1 at EOF, -2 for a
 * line longer than buf holds (read to its end, its start in buf). */
static int read_line(char *buf, size_t len) {
  size_t n = 0;
  int over = 0;
  for (;;) {
    char ch;
    ssize_t r = read(STDIN_FILENO, &ch, 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    if (ch == '\n') {
      buf[n] = '\0';
      return over ? -2 : (int)n;
    }
    if (n + 1 < len)
      buf[n++] = ch;
    else
      over = 1;
  }
}

static pid_t start(char **prog) {
  sigset_t mask;
  run_fork_begin(&mask);
  pid_t agent = getpid(), pid = fork();
  if (pid != 0) {
    if (pid > 0)
      setpgid(pid, pid);
    run_fork_end(&mask);
    return pid;
  }
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != agent)
    _exit(127);
  setpgid(0, 0);
  run_fork_child(&mask);
  signal(SIGPIPE, SIG_DFL);
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null >= 0)
    dup2(null, STDIN_FILENO);
  execvp(prog[0], prog);
  fprintf(stderr, "symheap-run: cannot run %s: %s\n", prog[0], strerror(errno));
  _exit(127);
}

static void on_child(int sig) { (void)sig; }

/* The rank's status for symheap-run (128+signal if it was killed); a death
 * by a signal nobody here sent is said here, since the launcher sees only
 * this agent's exit code (before: "rank 1 exited with status 139", and a
 * crash read as an error exit). */
static int rank_status(int status, int asked) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  int sig = WTERMSIG(status);
  if (!asked) {
    const char *rank = getenv("SYMHEAP_RANK");
    fprintf(stderr,
            "symheap-run --agent: rank %s was killed by signal %d (%s)\n",
            rank ? rank : "?", sig, strsignal(sig));
  }
  return 128 + sig;
}

/* Until the rank exits: signals from stdin or to us go to it; EOF stops it
 * (SIGTERM, SIGKILL RUN_GRACE_MS later).  SIGCHLD is blocked but for the
 * ppoll, so the rank's end wakes this at once (before: within 100 ms, and
 * a peer that noticed it first often ended first). */
static int watch(pid_t pid) {
  int open_in = 1, asked = 0;
  long long kill_at = 0;
  char line[64];
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_child;
  sigaction(SIGCHLD, &sa, NULL);
  sigset_t chld, waiting;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &waiting);
  sigdelset(&waiting, SIGCHLD);
  for (;;) {
    int status;
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid)
      return rank_status(status, asked);
    if (got) {
      kill(-pid, (int)got);
      got = 0;
      asked = 1;
    }
    if (kill_at && run_now_ms() >= kill_at) {
      const char *rank = getenv("SYMHEAP_RANK");
      fprintf(stderr,
              "symheap-run --agent: rank %s did not stop within %d ms of "
              "SIGTERM; killing it (SIGKILL)\n",
              rank ? rank : "?", RUN_GRACE_MS);
      kill(-pid, SIGKILL);
      kill_at = 0;
    }
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    struct timespec ts = {0, 100 * 1000 * 1000};
    if (ppoll(&p, open_in ? 1 : 0, &ts, &waiting) <= 0 || !open_in)
      continue;
    int sig;
    if (read_line(line, sizeof line) < 0) {
      open_in = 0;
      asked = 1;
      kill(-pid, SIGTERM);
      kill_at = run_now_ms() + RUN_GRACE_MS;
    } else if (sscanf(line, "signal %d", &sig) == 1 && sig > 0 && sig < 65) {
      kill(-pid, sig);
      asked = 1;
    }
  }
}

int run_agent(char **prog) {
  char line[4096];
  int n;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    return 127;
  while ((n = read_line(line, sizeof line)) > 0 || n == -2) {
    char *eq = strchr(line, '=');
    if (n == -2) { /* cut short, it would run the rank with another value */
      fprintf(stderr,
              "symheap-run --agent: %.*s is longer than the %zu bytes a "
              "variable can take to another host\n",
              eq ? (int)(eq - line) : 64, line, sizeof line - 1);
      return 127;
    }
    if (eq) {
      *eq = '\0';
      setenv(line, eq + 1, 1);
    }
  }
  if (n < 0) {
    fprintf(stderr, "symheap-run --agent: no environment on stdin\n");
    return 127;
  }
  run_catch_signals(on_signal);
  signal(SIGPIPE, SIG_IGN);
  pid_t pid = start(prog);
  if (pid < 0) {
    fprintf(stderr, "symheap-run --agent: fork: %s\n", strerror(errno));
    return 127;
  }
  int rc = watch(pid);
  run_clean_shm_files(&pid, 1);
  return rc;
}

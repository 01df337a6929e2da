/* What a rank starts in a session of its own (setsid, a daemon) leaves its
 * process group, so stopping the group misses it; its parent ending made it
 * an orphan.  symheap-run is the subreaper of its ranks' descendants: such
 * an orphan becomes its child, and when the job is stopped it is killed
 * with the rest.  Before, it outlived the job (a rank's `setsid sleep`,
 * holding the caller's output pipe open for 10 minutes). */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

void run_adopt_orphans(void) { prctl(PR_SET_CHILD_SUBREAPER, 1); }

/* The parent of process pid (from /proc/pid/stat), or -1; -1 for a zombie
 * too (dead already: it only wants reaping). */
static pid_t parent_of(pid_t pid) {
  char path[64], comm[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  int ppid = -1;
  char state;
  /* "pid (comm) state ppid": a comm with a space or ')' in it only makes
   * this miss the process, never take another's parent. */
  if (fscanf(f, "%*d (%63[^)]) %c %d", comm, &state, &ppid) != 3 ||
      state == 'Z')
    ppid = -1;
  fclose(f);
  return (pid_t)ppid;
}

/* SIGKILL to every live child of ours; how many. */
static int kill_children(void) {
  DIR *d = opendir("/proc");
  if (!d)
    return 0;
  pid_t me = getpid();
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    pid_t pid = (pid_t)atoi(e->d_name);
    if (pid > 0 && pid != me && parent_of(pid) == me && kill(pid, SIGKILL) == 0)
      n++;
  }
  closedir(d);
  return n;
}

/* An orphan killed hands its own children to us: kill and reap in rounds
 * until a round finds none (1 s at most; before, a blocking waitpid for
 * children never killed). */
int run_kill_orphans(void) {
  int total = 0;
  for (int round = 0; round < 50; round++) {
    int n = kill_children();
    total += n;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    while (waitpid(-1, NULL, WNOHANG) > 0)
      ;
    if (n == 0)
      break;
  }
  return total;
}

/* A PE that has exited but is not yet reaped (a zombie) is dead, not alive:
 * started by a launcher other than symheap-run that reaps its children only
 * at the end, the other PEs must not wait for it forever in a barrier
 * (issue 28 item 6: kill(pid, 0) succeeds on a zombie, so they did).
 *
 * Run with no arguments, this program is that launcher: it starts two PEs
 * of itself (--pe) with the environment symheap_comm_init_env reads, PE 1
 * exits right after shmem_init, PE 0 enters shmem_barrier_all, and the
 * launcher reaps only PE 0: PE 0 must end, with status 1 and a message
 * naming PE 1, within 60 s (it takes about 2 s). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shmem.h>
#include <symheap.h>

static int pe_main(void) {
  shmem_init();
  if (shmem_my_pe() == 1)
    _exit(3); /* gone, and its parent will not reap it for a while */
  shmem_barrier_all();
  printf("barrier returned although PE 1 has exited\n");
  return 0;
}

static pid_t start_pe(const char *self, int rank, int errfd) {
  pid_t pid = fork();
  if (pid == 0) {
    char num[16];
    snprintf(num, sizeof num, "%d", rank);
    setenv("SYMHEAP_RANK", num, 1);
    setenv("SYMHEAP_LOCAL_RANK", num, 1);
    if (errfd >= 0)
      dup2(errfd, 2);
    execl(self, self, "--pe", (char *)NULL);
    _exit(127);
  }
  return pid;
}

static int fail(const char *why, pid_t a, pid_t b) {
  printf("FAIL shmem_zombie_pe_ends_the_job %s\n", why);
  kill(a, SIGKILL);
  kill(b, SIGKILL);
  waitpid(a, NULL, 0);
  waitpid(b, NULL, 0);
  return 1;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--pe") == 0)
    return pe_main();
  symheap_unique_id_t id;
  if (symheap_get_unique_id(&id) != SYMHEAP_SUCCESS) {
    printf("FAIL shmem_zombie_pe_ends_the_job no unique id: %s\n",
           symheap_last_error());
    return 1;
  }
  char hex[2 * sizeof id.bytes + 1];
  for (size_t i = 0; i < sizeof id.bytes; i++)
    sprintf(hex + 2 * i, "%02x", id.bytes[i]);
  setenv("SYMHEAP_UNIQUE_ID", hex, 1);
  setenv("SYMHEAP_NRANKS", "2", 1);
  char errpath[] = "/tmp/symheap-zombie-XXXXXX";
  int errfd = mkstemp(errpath);
  if (errfd < 0) {
    printf("FAIL shmem_zombie_pe_ends_the_job mkstemp\n");
    return 1;
  }
  unlink(errpath);
  pid_t pe0 = start_pe(argv[0], 0, errfd), pe1 = start_pe(argv[0], 1, -1);
  int status = 0;
  struct timespec ts = {0, 50 * 1000 * 1000};
  time_t deadline = time(NULL) + 60;
  pid_t got;
  while ((got = waitpid(pe0, &status, WNOHANG)) == 0 && time(NULL) < deadline)
    nanosleep(&ts, NULL);
  if (got != pe0)
    return fail("PE 0 still waits 60 s after PE 1 exited (a zombie)", pe0, pe1);
  char buf[4096] = {0};
  ssize_t n = pread(errfd, buf, sizeof buf - 1, 0);
  buf[n > 0 ? n : 0] = 0;
  fputs(buf, stdout);
  waitpid(pe1, NULL, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 1)
    return fail("PE 0 did not exit with status 1", 0, 0);
  if (!strstr(buf, "PE 1") || !strstr(buf, "has exited"))
    return fail("PE 0 did not say that PE 1 has exited", 0, 0);
  printf("PASS shmem_zombie_pe_ends_the_job\n");
  return 0;
}

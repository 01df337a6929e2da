/* Hostile input: what reaches a job's sockets and environment from outside.
 *  - strays at the bootstrap door (silent, garbage, a wrong token, a header
 *    claiming a huge length, a wrong rank) while the job forms: each is
 *    dropped, the job forms, quickly;
 *  - another user's process that even knows the token and claims a rank is
 *    dropped by SO_PEERCRED before a byte is read (needs root to become
 *    another user; says SKIP otherwise);
 *  - every typed environment variable given a malformed value: comm init
 *    fails with INVALID_ARG naming the variable and its accepted values. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot/bootstrap_msg.h"
#include "base/config.h"
#include "harness.h"
#include "boot/uid.h"

static symheap_unique_id_t g_id;

typedef struct {
  int rank, n;
  symheap_result_t r;
  int64_t ms;
  char err[512];
} join_t;

static void *join(void *arg) {
  join_t *j = arg;
  int64_t t0 = symheap__now_ms();
  symheap_comm_t c = NULL;
  j->r = symheap_comm_init(&c, j->n, &g_id, j->rank);
  j->ms = symheap__now_ms() - t0;
  snprintf(j->err, sizeof j->err, "%s", symheap_last_error());
  if (j->r == SYMHEAP_SUCCESS) {
    j->r = symheap_comm_barrier(c);
    symheap_comm_destroy(c);
  }
  return NULL;
}

static int connect_to_job(void) {
  symheap__uid_t u;
  if (symheap__uid_decode(&g_id, &u) != SYMHEAP_SUCCESS)
    return -1;
  symheap__sockname_t name;
  name.abstract = (int)u.abstract;
  snprintf(name.name, sizeof name.name, "%s", u.name);
  int fd = -1;
  if (symheap__sock_connect(&name, symheap__now_ms() + 5000, 0, &fd) !=
      SYMHEAP_SUCCESS)
    return -1;
  return fd;
}

static void send_all(int fd, const void *p, size_t n) {
  (void)symheap__sock_send(fd, p, n, -1, symheap__now_ms() + 1000, 0);
}

/* Rank 0 waits at its socket; strays knock; then rank 1 joins. */
static void test_strays(void) {
  th_begin("hostile", "strays_at_the_bootstrap_door", 0);
  setenv("SYMHEAP_DEBUG", "NONE", 1); /* the drops are logged as warnings */
  CHECK_OK(symheap_get_unique_id(&g_id));
  join_t j[2] = {{0, 2, 0, 0, ""}, {1, 2, 0, 0, ""}};
  pthread_t t0, t1;
  pthread_create(&t0, NULL, join, &j[0]);
  int strays[6];
  for (int k = 0; k < 6; k++)
    strays[k] = connect_to_job();
  CHECK(strays[0] >= 0, "cannot reach rank 0's socket");
  unsigned char junk[64];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (unsigned char)(i * 151 + 7);
  msg_hdr_t huge = {MSG_MAGIC, MSG_VERSION, MSG_HELLO, 0, 0xfffffff0u};
  msg_hdr_t hello_hdr = {MSG_MAGIC, MSG_VERSION, MSG_HELLO, 0, sizeof(hello_t)};
  hello_t wrong_token = {{0}, 1, 2};
  symheap__uid_t u;
  CHECK_OK(symheap__uid_decode(&g_id, &u));
  hello_t wrong_rank;
  memcpy(wrong_rank.token, u.token, sizeof wrong_rank.token);
  wrong_rank.rank = 7;
  wrong_rank.nranks = 9;
  /* 0: says nothing; 1: garbage; 2: a huge length; 3: a wrong token;
   * 4: a header and then nothing; 5: hangs up at once.  (A hello with the
   * job's token and a wrong rank is one of the job's own, launched wrong:
   * wrong_rank_claim below.) */
  if (strays[1] >= 0)
    send_all(strays[1], junk, sizeof junk);
  if (strays[2] >= 0)
    send_all(strays[2], &huge, sizeof huge);
  if (strays[3] >= 0) {
    send_all(strays[3], &hello_hdr, sizeof hello_hdr);
    send_all(strays[3], &wrong_token, sizeof wrong_token);
  }
  if (strays[4] >= 0)
    send_all(strays[4], &hello_hdr, sizeof hello_hdr);
  (void)wrong_rank;
  if (strays[5] >= 0)
    close(strays[5]);
  pthread_create(&t1, NULL, join, &j[1]);
  pthread_join(t0, NULL);
  pthread_join(t1, NULL);
  for (int k = 0; k < 5; k++)
    if (strays[k] >= 0)
      close(strays[k]);
  for (int r = 0; r < 2; r++)
    CHECK(j[r].r == SYMHEAP_SUCCESS, "rank %d: %s (%s)", r,
          symheap_strerror(j[r].r), j[r].err);
  /* The silent stray costs at most its hello time (HELLO_MS). */
  CHECK(j[0].ms < HELLO_MS + 3000, "the job took %lld ms to form",
        (long long)j[0].ms);
  printf("# 6 strays at the door, job formed in %lld ms\n", (long long)j[0].ms);
  unsetenv("SYMHEAP_DEBUG");
  th_end();
}

/* A process with the job's token that claims a rank the job does not have
 * was launched wrong: every rank fails at once, told what was claimed,
 * instead of waiting out the timeout for a "missing" rank. */
static void test_wrong_rank_claim(void) {
  th_begin("hostile", "wrong_rank_claim_fails_the_job_at_once", 0);
  setenv("SYMHEAP_DEBUG", "NONE", 1);
  setenv("SYMHEAP_TIMEOUT_MS", "20000", 1);
  CHECK_OK(symheap_get_unique_id(&g_id));
  join_t j[2] = {{0, 2, 0, 0, ""}, {1, 2, 0, 0, ""}};
  pthread_t t0, t1;
  pthread_create(&t0, NULL, join, &j[0]);
  int fd = connect_to_job();
  symheap__uid_t u;
  CHECK_OK(symheap__uid_decode(&g_id, &u));
  msg_hdr_t hello_hdr = {MSG_MAGIC, MSG_VERSION, MSG_HELLO, 0, sizeof(hello_t)};
  hello_t wrong_rank;
  memcpy(wrong_rank.token, u.token, sizeof wrong_rank.token);
  wrong_rank.rank = 7;
  wrong_rank.nranks = 9;
  if (fd >= 0) {
    send_all(fd, &hello_hdr, sizeof hello_hdr);
    send_all(fd, &wrong_rank, sizeof wrong_rank);
  }
  pthread_create(&t1, NULL, join, &j[1]);
  pthread_join(t0, NULL);
  pthread_join(t1, NULL);
  if (fd >= 0)
    close(fd);
  for (int r = 0; r < 2; r++) {
    CHECK(j[r].r != SYMHEAP_SUCCESS && strstr(j[r].err, "claims rank 7 of 9"),
          "rank %d: %s (%s)", r, symheap_strerror(j[r].r), j[r].err);
    CHECK(j[r].ms < 5000, "rank %d took %lld ms to fail", r,
          (long long)j[r].ms);
  }
  unsetenv("SYMHEAP_TIMEOUT_MS");
  unsetenv("SYMHEAP_DEBUG");
  th_end();
}

/* A process of another uid that knows the token and claims rank 1 connects
 * first; SO_PEERCRED drops it, and the real rank 1 joins. */
static void test_other_user(void) {
  if (geteuid() != 0) {
    printf("SKIP hostile/other_user_refused: needs root to run a process as "
           "another user\n");
    return;
  }
  th_begin("hostile", "other_user_refused", 0);
  setenv("SYMHEAP_DEBUG", "NONE", 1);
  CHECK_OK(symheap_get_unique_id(&g_id));
  symheap__uid_t u;
  CHECK_OK(symheap__uid_decode(&g_id, &u));
  int ready[2];
  CHECK(pipe(ready) == 0, "pipe");
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    if (setgid(65534) != 0 || setuid(65534) != 0)
      _exit(3);
    int fd = connect_to_job();
    if (fd < 0)
      _exit(4);
    msg_hdr_t h = {MSG_MAGIC, MSG_VERSION, MSG_HELLO, 0, sizeof(hello_t)};
    hello_t hello;
    memcpy(hello.token, u.token, sizeof hello.token);
    hello.rank = 1;
    hello.nranks = 2;
    send_all(fd, &h, sizeof h);
    send_all(fd, &hello, sizeof hello);
    char c = 1;
    if (write(ready[1], &c, 1) != 1)
      _exit(5);
    char buf[64];
    /* Rank 0 hangs up on us without a word (a reset, as our hello was
     * never read). */
    ssize_t got = read(fd, buf, sizeof buf);
    _exit(got == 0 || (got < 0 && errno == ECONNRESET) ? 0 : 6);
  }
  close(ready[1]);
  join_t j[2] = {{0, 2, 0, 0, ""}, {1, 2, 0, 0, ""}};
  pthread_t t0, t1;
  pthread_create(&t0, NULL, join, &j[0]);
  char c = 0;
  CHECK(read(ready[0], &c, 1) == 1, "the other user's process did not connect");
  close(ready[0]);
  pthread_create(&t1, NULL, join, &j[1]);
  pthread_join(t0, NULL);
  pthread_join(t1, NULL);
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "the other user's process: status 0x%x (3: setuid, 4: connect, 6: "
        "it was answered)",
        st);
  for (int r = 0; r < 2; r++)
    CHECK(j[r].r == SYMHEAP_SUCCESS, "rank %d: %s (%s)", r,
          symheap_strerror(j[r].r), j[r].err);
  unsetenv("SYMHEAP_DEBUG");
  th_end();
}

/* Every INT, BOOL and CHOICE variable, malformed: init names it. */
static void test_bad_env(void) {
  th_begin("hostile", "malformed_variables_named", 0);
  size_t n;
  const symheap__cfg_var_t *t = symheap__cfg_table(&n);
  /* (An empty value means unset, as the environment's convention goes.) */
  const char *bad[] = {"x",  "12abc", "99999999999999999999", "-5", " 1",
                       "+1", "0x10"};
  int tried = 0;
  for (size_t i = 0; i < n; i++) {
    if (t[i].kind == SYMHEAP_CFG_STRING)
      continue;
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
      /* "-5" is fine where the range allows it; skip values in range */
      if (strcmp(bad[b], "-5") == 0 && t[i].kind == SYMHEAP_CFG_INT &&
          t[i].min <= -5)
        continue;
      setenv(t[i].name, bad[b], 1);
      symheap_comm_t c = NULL;
      symheap_unique_id_t id;
      symheap_get_unique_id(&id);
      symheap_result_t r = symheap_comm_init(&c, 1, &id, 0);
      CHECK(r == SYMHEAP_ERR_INVALID_ARG &&
                strstr(symheap_last_error(), t[i].name),
            "%s='%s': %s (%s)", t[i].name, bad[b], symheap_strerror(r),
            symheap_last_error());
      if (r == SYMHEAP_SUCCESS)
        symheap_comm_destroy(c);
      unsetenv(t[i].name);
      tried++;
    }
  }
  /* Strings with a grammar of their own. */
  const char *strs[][2] = {{"SYMHEAP_IPC_SOCKET", "relative/dir"},
                           {"SYMHEAP_DEVICE", "no-such-device"}};
  for (size_t k = 0; k < 2; k++) {
    setenv(strs[k][0], strs[k][1], 1);
    symheap_comm_t c = NULL;
    symheap_unique_id_t id;
    symheap_result_t r = symheap_get_unique_id(&id);
    if (r == SYMHEAP_SUCCESS)
      r = symheap_comm_init(&c, 1, &id, 0);
    CHECK(r != SYMHEAP_SUCCESS && strstr(symheap_last_error(), strs[k][1]),
          "%s='%s': %s (%s)", strs[k][0], strs[k][1], symheap_strerror(r),
          symheap_last_error());
    if (r == SYMHEAP_SUCCESS)
      symheap_comm_destroy(c);
    unsetenv(strs[k][0]);
    tried++;
  }
  printf("# %d malformed values refused, each naming its variable\n", tried);
  th_end();
}

/* A crowd at the door: 48 strays that connect and say nothing and 8 that
 * send one byte and stop, all before rank 1 knocks.  They wait side by side
 * (core/boot/hellos.c), so the job forms at once and each is let go after
 * its own HELLO_MS.  Before: heard one after the other, a second each, and
 * the join ran past SYMHEAP_TIMEOUT_MS (8 s here). */
static void test_stray_crowd(void) {
  th_begin("hostile", "stray_crowd_does_not_stall_the_join", 0);
  setenv("SYMHEAP_DEBUG", "NONE", 1);
  setenv("SYMHEAP_TIMEOUT_MS", "8000", 1);
  CHECK_OK(symheap_get_unique_id(&g_id));
  join_t j[2] = {{0, 2, 0, 0, ""}, {1, 2, 0, 0, ""}};
  pthread_t t0, t1;
  pthread_create(&t0, NULL, join, &j[0]);
  enum { CROWD = 56 };
  int strays[CROWD], reached = 0;
  for (int k = 0; k < CROWD; k++) {
    strays[k] = connect_to_job();
    reached += strays[k] >= 0;
    if (k >= 48 && strays[k] >= 0)
      send_all(strays[k], "S", 1);
  }
  CHECK(reached == CROWD, "%d of %d strays reached rank 0's socket", reached,
        CROWD);
  pthread_create(&t1, NULL, join, &j[1]);
  pthread_join(t0, NULL);
  pthread_join(t1, NULL);
  for (int k = 0; k < CROWD; k++)
    if (strays[k] >= 0)
      close(strays[k]);
  for (int r = 0; r < 2; r++)
    CHECK(j[r].r == SYMHEAP_SUCCESS, "rank %d: %s (%s)", r,
          symheap_strerror(j[r].r), j[r].err);
  CHECK(j[0].ms < HELLO_MS + 3000, "the job took %lld ms to form",
        (long long)j[0].ms);
  printf("# %d strays at the door, job formed in %lld ms\n", CROWD,
         (long long)j[0].ms);
  unsetenv("SYMHEAP_TIMEOUT_MS");
  unsetenv("SYMHEAP_DEBUG");
  th_end();
}

int main(void) {
  test_other_user(); /* forks: first, before any thread */
  test_strays();
  test_stray_crowd();
  test_wrong_rank_claim();
  test_bad_env();
  return th_total_failures() ? 1 : 0;
}

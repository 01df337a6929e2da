#include "harness.h"
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local char tls_case[128];
static _Thread_local int tls_rank;
static _Thread_local int tls_fails;
static atomic_int total_fails;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

void th_begin(const char *tag, const char *name, int rank) {
  snprintf(tls_case, sizeof tls_case, "%s/%s", tag, name);
  tls_rank = rank;
  tls_fails = 0;
}

int th_end(void) {
  if (tls_rank == 0 && tls_fails == 0) {
    pthread_mutex_lock(&out_lock);
    printf("PASS %s\n", tls_case);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
  }
  return tls_fails;
}

void th_run_cases(th_ctx_t *c, const char *tag, const th_case_t *cases,
                  size_t ncases) {
  for (size_t i = 0; i < ncases; i++) {
    th_begin(tag, cases[i].name, c->rank);
    cases[i].fn(c);
    CHECK_OK(symheap_comm_barrier(c->comm));
    th_end();
  }
}

void th_fail(const char *file, int line, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tls_fails++;
  atomic_fetch_add(&total_fails, 1);
  pthread_mutex_lock(&out_lock);
  printf("FAIL %s [rank %d] %s:%d: %s\n", tls_case[0] ? tls_case : "?",
         tls_rank, file, line, msg);
  fflush(stdout);
  pthread_mutex_unlock(&out_lock);
}

int th_total_failures(void) { return atomic_load(&total_fails); }

int th_count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  if (!d)
    return -1;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

int th_count_symheap_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  int n = 0;
  if (!d)
    return -1;
  while ((e = readdir(d))) {
    char path[64], target[256];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(path, target, sizeof target - 1);
    if (len <= 0)
      continue;
    target[len] = '\0';
    n += strncmp(target, "socket:", 7) == 0 || strstr(target, "memfd:") != NULL;
  }
  closedir(d);
  return n;
}

static int count_maps(const char *needle) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[1024];
  int n = 0;
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f))
    n += !needle || strstr(line, needle) != NULL;
  fclose(f);
  return n;
}

int th_count_maps(void) {
  return getenv("SYMHEAP_TEST_UNDER_TOOL") ? 0 : count_maps(NULL);
}

int th_count_symheap_maps(void) { return count_maps("memfd:"); }

typedef struct {
  int rank, n;
  const symheap_unique_id_t *id;
  th_rank_fn fn;
  void *arg;
  int rc;
} thread_arg_t;

static void *thread_main(void *p) {
  thread_arg_t *t = p;
  th_ctx_t ctx = {NULL, t->rank, t->n};
  symheap_result_t r = symheap_comm_init(&ctx.comm, t->n, t->id, t->rank);
  if (r != SYMHEAP_SUCCESS) {
    th_begin("threads", "comm_init", t->rank);
    th_fail(__FILE__, __LINE__, "symheap_comm_init: %s: %s",
            symheap_strerror(r), symheap_last_error());
    t->rc = 1;
    return NULL;
  }
  t->fn(&ctx, t->arg);
  r = symheap_comm_destroy(ctx.comm);
  t->rc = r != SYMHEAP_SUCCESS;
  return NULL;
}

int th_run_rank_threads(const symheap_unique_id_t *id, int nranks, int first,
                        int count, th_rank_fn fn, void *arg) {
  pthread_t *th = calloc((size_t)count, sizeof *th);
  thread_arg_t *args = calloc((size_t)count, sizeof *args);
  int rc = 0;
  for (int i = 0; i < count; i++) {
    args[i] = (thread_arg_t){first + i, nranks, id, fn, arg, 0};
    pthread_create(&th[i], NULL, thread_main, &args[i]);
  }
  for (int i = 0; i < count; i++) {
    pthread_join(th[i], NULL);
    rc |= args[i].rc;
  }
  free(th);
  free(args);
  return rc;
}

int th_run_threads(int n, th_rank_fn fn, void *arg) {
  symheap_unique_id_t id;
  if (symheap_get_unique_id(&id) != SYMHEAP_SUCCESS) {
    printf("FAIL threads/unique_id: %s\n", symheap_last_error());
    return 1;
  }
  return th_run_rank_threads(&id, n, 0, n, fn, arg);
}

int th_launcher_ranks(const char *what, int *rank, int *n) {
  const char *rk = getenv("SYMHEAP_RANK"), *nr = getenv("SYMHEAP_NRANKS");
  if (!rk || !nr) {
    printf("FAIL %s: run under symheap-run\n", what);
    return -1;
  }
  *rank = atoi(rk);
  *n = atoi(nr);
  return 0;
}

int th_main(int argc, char **argv, const char *prefix, char *tag,
            size_t tag_size, int *threads, th_rank_fn fn, void *arg) {
  if (argc == 3 && strcmp(argv[1], "--threads") == 0) {
    int n = atoi(argv[2]);
    if (threads)
      *threads = 1;
    snprintf(tag, tag_size, "%sthreads%d", prefix, n);
    int rc = th_run_threads(n, fn, arg);
    return rc || th_total_failures() ? 1 : 0;
  }
  th_ctx_t c = {0};
  symheap_result_t r = symheap_comm_init_env(&c.comm);
  if (r != SYMHEAP_SUCCESS) {
    printf("FAIL %sprocs/comm_init: %s: %s\n", prefix, symheap_strerror(r),
           symheap_last_error());
    return 1;
  }
  symheap_comm_rank(c.comm, &c.rank);
  symheap_comm_size(c.comm, &c.n);
  snprintf(tag, tag_size, "%sprocs%d", prefix, c.n);
  fn(&c, arg);
  CHECK_OK(symheap_comm_destroy(c.comm));
  return th_total_failures() ? 1 : 0;
}

static char suite_tag[96];

static void run_suite(th_ctx_t *c, void *arg) {
  const th_suite_t *suite = arg;
  if (suite->setup)
    suite->setup(c);
  th_run_cases(c, suite_tag, suite->cases, suite->ncases);
}

int th_main_suite(int argc, char **argv, const th_suite_t *suite) {
  return th_main(argc, argv, suite->prefix, suite_tag, sizeof suite_tag, NULL,
                 run_suite, (void *)suite);
}

void th_stop_self(int ms) {
  pid_t me = getpid();
  fflush(stdout);
  pid_t waker = fork();
  if (waker == 0) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    kill(me, SIGCONT);
    _exit(0);
  }
  if (waker > 0) {
    raise(SIGSTOP);
    waitpid(waker, NULL, 0);
  }
}

/* symheap-conformance: does a device adaptor keep the contracts of the
 * vtable?  What a vendor runs before shipping an adaptor.
 *
 * Every check runs in a forked child of its own with a time bound, so an
 * adaptor that crashes, aborts or hangs fails that check (naming the signal
 * or the bound and where it was) and the kit goes on to the next.  Each
 * verdict is printed, and flushed, as soon as it is known:
 *   PASS conformance/<check>: what was shown
 *   FAIL conformance/<check>: what was expected and what was seen
 *   SKIP conformance/<check>: why it cannot apply to this adaptor
 * and the last line is "N passed, N failed, N skipped".  docs/conformance.md
 * lists the checks and the exit codes. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"
#include "base/plugin.h"

kit_config_t K = {NULL, {{0}, 0, 0, 0, 0, 0}, 2, 200, 60, NULL,
                  NULL, {{0}, 0, 0}};

/* The verdict of the running check (shared with its child). */
typedef struct {
  int verdict;
  char msg[1024];
  char stage[160];
} verdict_t;
static verdict_t *V;

static void record(int kind, const char *fmt, va_list ap) {
  /* A FAIL overrides any earlier verdict; the first FAIL's text stays. */
  if (V->verdict == KIT_FAIL || (V->verdict != KIT_NONE && kind != KIT_FAIL))
    return;
  V->verdict = kind;
  vsnprintf(V->msg, sizeof V->msg, fmt, ap);
  if (!V->msg[0])
    snprintf(V->msg, sizeof V->msg, "(the kit gave no reason: a kit bug)");
}
#define RECORD(kind)                                                           \
  do {                                                                         \
    va_list ap;                                                                \
    va_start(ap, fmt);                                                         \
    record(kind, fmt, ap);                                                     \
    va_end(ap);                                                                \
  } while (0)
void kit_pass(const char *fmt, ...) { RECORD(KIT_PASS); }
void kit_fail(const char *fmt, ...) { RECORD(KIT_FAIL); }
void kit_skip(const char *fmt, ...) { RECORD(KIT_SKIP); }
int kit_failed(void) { return V->verdict == KIT_FAIL; }
void kit_stage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(V->stage, sizeof V->stage, fmt, ap);
  va_end(ap);
}

void *kit_shared(size_t size) {
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) {
    perror("symheap-conformance: mmap");
    exit(2);
  }
  return p;
}

int kit_pow2(size_t v) { return v && !(v & (v - 1)); }

static int passed, failed, skipped;

static void print_verdict(const char *check, int kind, const char *msg) {
  const char *w = kind == KIT_PASS   ? "PASS"
                  : kind == KIT_SKIP ? "SKIP"
                                     : "FAIL";
  passed += kind == KIT_PASS;
  skipped += kind == KIT_SKIP;
  failed += kind == KIT_FAIL;
  printf("%s conformance/%s: %s\n", w, check, msg);
  fflush(stdout);
}

/* The library's clock (the host services'). */
static double now_s(void) {
  return (double)symheap_host_services()->now_ns() / 1e9;
}

/* Wait for the check's child within the bound; kill its process group (the
 * ranks it forked too) past it.  Returns the wait status, or -1 on a
 * timeout. */
static int wait_bounded(pid_t pid) {
  double end = now_s() + K.timeout_s;
  int st = 0;
  for (;;) {
    /* Wait without reaping, so that the group's id stays ours until the
     * ranks it left behind are killed. */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int w = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
    if (w == 0 && si.si_pid == pid)
      break;
    if (w < 0 && errno != EINTR)
      break;
    if (now_s() > end) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    struct timespec ms = {0, 5 * 1000 * 1000};
    nanosleep(&ms, NULL);
  }
  kill(-pid, SIGKILL); /* ranks a dead check left behind */
  waitpid(pid, &st, 0);
  return st;
}

static const char *sig_name(int s) {
  switch (s) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGBUS:
    return "SIGBUS";
  case SIGABRT:
    return "SIGABRT";
  case SIGFPE:
    return "SIGFPE";
  case SIGILL:
    return "SIGILL";
  case SIGKILL:
    return "SIGKILL";
  case SIGTERM:
    return "SIGTERM";
  case SIGPIPE:
    return "SIGPIPE";
  case SIGTRAP:
    return "SIGTRAP";
  default:
    return "signal";
  }
}

/* Run one check isolated; returns its verdict. */
static int run_check(const kit_check_t *c) {
  memset(V, 0, sizeof *V);
  snprintf(V->stage, sizeof V->stage, "starting");
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    print_verdict(c->name, KIT_FAIL, "fork failed: the kit could not run it");
    return KIT_FAIL;
  }
  if (pid == 0) {
    setpgid(0, 0);
    /* A fault in the adaptor kills the check with its signal, which the
     * FAIL line names (a sanitizer's handler would turn it into an exit
     * status). */
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    signal(SIGFPE, SIG_DFL);
    signal(SIGILL, SIG_DFL);
    c->fn();
    fflush(stdout);
    _exit(0); /* no atexit work (plugins' fini) in a child */
  }
  setpgid(pid, pid);
  int st = wait_bounded(pid);
  char msg[1400];
  int kind = V->verdict;
  if (st == -1) {
    kind = KIT_FAIL;
    snprintf(msg, sizeof msg,
             "did not finish within the %d s bound (--timeout); it hung in: %s",
             K.timeout_s, V->stage);
  } else if (WIFSIGNALED(st)) {
    kind = KIT_FAIL;
    int s = WTERMSIG(st);
    snprintf(msg, sizeof msg, "killed by signal %d (%s: %s) in: %s%s%s", s,
             sig_name(s), strsignal(s), V->stage,
             V->verdict == KIT_FAIL ? "; before that: " : "",
             V->verdict == KIT_FAIL ? V->msg : "");
  } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && kind != KIT_FAIL) {
    kind = KIT_FAIL;
    snprintf(msg, sizeof msg,
             "the check's process exited with status %d in: %s",
             WEXITSTATUS(st), V->stage);
  } else if (kind == KIT_NONE) {
    kind = KIT_FAIL;
    snprintf(msg, sizeof msg, "ended without a verdict in: %s (a kit bug)",
             V->stage);
  } else {
    snprintf(msg, sizeof msg, "%s", V->msg);
  }
  print_verdict(c->name, kind, msg);
  return kind;
}

static const kit_check_t *const device_parts[] = {kit_local_checks,
                                                  kit_handle_checks,
                                                  kit_data_checks,
                                                  kit_optional_checks,
                                                  kit_leak_checks,
                                                  kit_rank_checks,
                                                  NULL};
static const kit_check_t *const net_parts[] = {
    kit_net_checks, kit_net_amo_checks, kit_net_order_checks,
    kit_net_bounds_checks, NULL};
/* The device checks, or with --net the net adaptor's. */
static const kit_check_t *const *parts = device_parts;
#define NPARTS (parts == net_parts ? 4u : 6u)

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: symheap-conformance --device NAME [options]\n"
      "       symheap-conformance --net NAME [--provider P] [options]\n"
      "Checks a device adaptor (built in, or a plugin loaded with\n"
      "SYMHEAP_PLUGIN=name-or-path) against the contracts of\n"
      "include/symheap_adaptor.h.  Each check runs in its own process;\n"
      "a crash or a hang fails that check only.\n"
      "  --device NAME        the adaptor (what SYMHEAP_DEVICE=NAME selects)\n"
      "  --net NAME           a net adaptor instead (what SYMHEAP_NET=NAME\n"
      "                       selects): put/get/atomic/signal/fence/quiet\n"
      "                       between two processes the kit forks\n"
      "  --provider P         the net adaptor's provider (as\n"
      "                       SYMHEAP_NET_PROVIDER: \"tcp;ofi_rxm\", \"shm\")\n"
      "  --ranks N            ranks for the multi-rank checks, run as\n"
      "                       threads and as processes the kit forks (2..16,\n"
      "                       default 2)\n"
      "  --cycles N           create/release rounds of the leak checks\n"
      "                       (default 200)\n"
      "  --timeout SEC        bound of one check (default 60)\n"
      "  --only CHECK[,...]   run only these checks\n"
      "  --allow-unavailable  exit 0 when the adaptor cannot run here\n"
      "  --list               list the checks and exit\n"
      "  --help               this text\n"
      "  --version            the version, then exit\n"
      "Output: PASS/FAIL/SKIP conformance/<check>: <why>, one line each,\n"
      "then \"N passed, N failed, N skipped\".\n"
      "Exit status: 0 no FAIL; 1 a FAIL; 2 usage or setup error; 3 the\n"
      "adaptor is unavailable here (nothing could run) and\n"
      "--allow-unavailable was not given.\n");
}

static int selected(const char *only, const char *name) {
  if (!only)
    return 1;
  size_t n = strlen(name);
  for (const char *p = only; *p;) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == n && strncmp(p, name, n) == 0)
      return 1;
    p += l + (e != NULL);
  }
  return 0;
}

static int int_arg(const char *v, int lo, int hi, const char *opt) {
  char *end;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || *end || x < lo || x > hi) {
    fprintf(stderr, "symheap-conformance: %s wants a number in [%d, %d]\n", opt,
            lo, hi);
    exit(2);
  }
  return (int)x;
}

static int find_adaptor(void) {
  if (K.net) {
    symheap__net_table_t all[16];
    symheap__builtins_load();
    int n = symheap__net_list(all, 16);
    for (int i = 0; i < n && i < 16; i++)
      if (strcmp(all[i].ops.name, K.net) == 0) {
        K.N = all[i];
        return 1;
      }
    return 0;
  }
  for (int i = 0; i < symheap__device_count(); i++)
    if (symheap__device_get(i, &K.T) == SYMHEAP_SUCCESS &&
        strcmp(K.T.ops.name, K.name) == 0)
      return 1;
  return 0;
}

typedef struct {
  const char *only;
  int allow_unavailable, list;
} opts_t;

static int known_check(const char *name, size_t len) {
  for (size_t p = 0; p < NPARTS; p++)
    for (const kit_check_t *c = parts[p]; c->name; c++)
      if (strlen(c->name) == len && strncmp(c->name, name, len) == 0)
        return 1;
  return 0;
}

/* Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, opts_t *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      int major, minor, patch;
      symheap_get_version(&major, &minor, &patch);
      printf("symheap-conformance %d.%d.%d\n", major, minor, patch);
      return 0;
    } else if (!strcmp(a, "--device") && v) {
      K.name = v, i++;
    } else if (!strcmp(a, "--net") && v) {
      K.net = v, i++;
      parts = net_parts;
    } else if (!strcmp(a, "--provider") && v) {
      K.provider = v, i++;
    } else if (!strcmp(a, "--ranks")) {
      K.ranks = int_arg(v, 2, 16, a), i++;
    } else if (!strcmp(a, "--cycles")) {
      K.cycles = int_arg(v, 8, 100000, a), i++;
    } else if (!strcmp(a, "--timeout")) {
      K.timeout_s = int_arg(v, 1, 86400, a), i++;
    } else if (!strcmp(a, "--only") && v) {
      o->only = v, i++;
    } else if (!strcmp(a, "--allow-unavailable")) {
      o->allow_unavailable = 1;
    } else if (!strcmp(a, "--list")) {
      o->list = 1;
    } else {
      usage(stderr);
      return 2;
    }
  }
  for (const char *p = o->only; p && *p;) {
    size_t l = strcspn(p, ",");
    if (!known_check(p, l)) {
      fprintf(stderr,
              "symheap-conformance: --only: no check '%.*s' "
              "(--list lists them)\n",
              (int)l, p);
      return 2;
    }
    p += l + (p[l] == ',');
  }
  if (K.name && K.net) {
    fprintf(stderr, "symheap-conformance: --device and --net exclude each "
                    "other (one adaptor per run)\n");
    return 2;
  }
  if (!o->list && !K.name && !K.net) {
    usage(stderr);
    return 2;
  }
  return -1;
}

/* Load the plugins and find the adaptor; a FAIL line when either fails. */
static int load_adaptor(void) {
  /* Loading runs the plugins' init in this process: the one step that is
   * not isolated, as it is not in an application either. */
  symheap__error_clear();
  if (symheap__plugins_load() != SYMHEAP_SUCCESS) {
    print_verdict("table", KIT_FAIL,
                  symheap_last_error()[0]
                      ? symheap_last_error()
                      : "SYMHEAP_PLUGIN could not be loaded");
    return 0;
  }
  if (!find_adaptor()) {
    char m[256];
    snprintf(m, sizeof m,
             "no %s adaptor '%s' is registered (a plugin? set "
             "SYMHEAP_PLUGIN=name-or-path)%s%s",
             K.net ? "net" : "device", K.net ? K.net : K.name,
             symheap_last_error()[0] ? "; " : "", symheap_last_error());
    print_verdict("table", KIT_FAIL, m);
    return 0;
  }
  return 1;
}

/* Run every selected check; returns whether the adaptor was unavailable.
 * Once it says it cannot run here, the rest SKIP with its reason. */
static int run_all(const char *only) {
  int unavailable = 0;
  for (size_t p = 0; p < NPARTS; p++)
    for (const kit_check_t *c = parts[p]; c->name; c++) {
      int avail =
          !strcmp(c->name, "available") || !strcmp(c->name, "net_available");
      if (!selected(only, c->name) && !avail)
        continue;
      if (unavailable) {
        print_verdict(c->name, KIT_SKIP,
                      "the adaptor cannot run here (conformance/available "
                      "says why)");
        continue;
      }
      int kind = run_check(c);
      if (avail && kind == KIT_SKIP)
        unavailable = 1;
    }
  return unavailable;
}

int main(int argc, char **argv) {
  opts_t o = {NULL, 0, 0};
  int rc = parse_args(argc, argv, &o);
  if (rc >= 0)
    return rc;
  if (o.list) {
    for (size_t p = 0; p < NPARTS; p++)
      for (const kit_check_t *c = parts[p]; c->name; c++)
        printf("%-28s %s\n", c->name, c->what);
    return 0;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  V = kit_shared(sizeof *V);
  if (K.net)
    printf("# symheap-conformance: net adaptor '%s', provider %s, 2 "
           "processes, %d s per check\n",
           K.net, K.provider ? K.provider : "(default)", K.timeout_s);
  else
    printf("# symheap-conformance: device adaptor '%s', %d ranks, %d cycles, "
           "%d s per check\n",
           K.name, K.ranks, K.cycles, K.timeout_s);
  int unavailable = load_adaptor() ? run_all(o.only) : 0;
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  if (failed)
    return 1;
  if (unavailable && !o.allow_unavailable) {
    printf("# the adaptor is unavailable here, so nothing was checked (exit "
           "3; --allow-unavailable makes this exit 0)\n");
    return 3;
  }
  return 0;
}

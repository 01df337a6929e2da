/* Plugins: loading, refusal, composition.  Plugins load once per process, so
 * every case runs in a child process with its own SYMHEAP_PLUGIN and reports
 * through a pipe.
 *   test_plugins PLUGIN_DIR BAD_PLUGIN_DIR */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "base/internal.h"

static const char *plugdir, *baddir;

typedef struct {
  symheap_result_t r;
  char msg[900];
  char adaptor[32];
  int ok_data; /* a window's peer data checked out */
} outcome_t;

/* In a child: SYMHEAP_PLUGIN=spec, SYMHEAP_DEVICE=dev, a 2-thread job that
 * makes a window and checks a peer's data. */
static void job(th_ctx_t *c, void *arg) {
  outcome_t *o = arg;
  symheap_window_t w;
  if (symheap_malloc(c->comm, 8192, 0, &w) != SYMHEAP_SUCCESS)
    return;
  int *mine = NULL, *peer = NULL;
  symheap_window_local_ptr(w, (void **)&mine);
  *mine = 1000 + c->rank;
  symheap_comm_barrier(c->comm);
  symheap_window_peer_ptr(w, 1 - c->rank, (void **)&peer);
  if (c->rank == 0) {
    o->ok_data = *peer == 1001;
    symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
    symheap_comm_get_info(c->comm, &info);
    snprintf(o->adaptor, sizeof o->adaptor, "%s", info.device_adaptor);
  }
  symheap_comm_barrier(c->comm);
  symheap_free(c->comm, w);
}

static outcome_t run(const char *spec, const char *dev, const char *path) {
  int pfd[2];
  outcome_t o;
  memset(&o, 0, sizeof o);
  if (pipe(pfd) != 0)
    return o;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    alarm(60); /* a lying plugin must not hang the suite */
    setenv("SYMHEAP_PLUGIN", spec, 1);
    if (dev)
      setenv("SYMHEAP_DEVICE", dev, 1);
    if (path)
      setenv("SYMHEAP_PLUGIN_PATH", path, 1);
    else
      unsetenv("SYMHEAP_PLUGIN_PATH");
    outcome_t r;
    memset(&r, 0, sizeof r);
    symheap_unique_id_t id;
    symheap_comm_t c = NULL;
    symheap_get_unique_id(&id);
    r.r = symheap_comm_init(&c, 1, &id, 0);
    snprintf(r.msg, sizeof r.msg, "%s", symheap_last_error());
    if (r.r == SYMHEAP_SUCCESS) {
      symheap_comm_destroy(c);
      th_run_threads(2, job, &r);
    }
    if (write(pfd[1], &r, sizeof r) != (ssize_t)sizeof r)
      _exit(3);
    _exit(0);
  }
  close(pfd[1]);
  if (read(pfd[0], &o, sizeof o) != (ssize_t)sizeof o)
    o.r = SYMHEAP_ERR_INTERNAL;
  close(pfd[0]);
  waitpid(pid, NULL, 0);
  return o;
}

/* A plugin that loads but whose adaptor lies: refused at comm init, at
 * once, naming the member. */
static void caught_lying(const char *name, const char *file, const char *dev,
                         const char *why) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", baddir, file);
  th_begin("plugins", name, 0);
  int64_t t0 = symheap__now_ms();
  outcome_t o = run(path, dev, NULL);
  CHECK(o.r == SYMHEAP_ERR_PLUGIN && strstr(o.msg, why),
        "%s: %s (%s); expected SYMHEAP_ERR_PLUGIN saying '%s'", file,
        symheap_strerror(o.r), o.msg, why);
  CHECK(symheap__now_ms() - t0 < 10000, "%s took %lld ms", file,
        (long long)(symheap__now_ms() - t0));
  th_end();
}

static void refused(const char *name, const char *file, const char *why) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", baddir, file);
  th_begin("plugins", name, 0);
  outcome_t o = run(path, "host", NULL);
  CHECK(o.r == SYMHEAP_ERR_PLUGIN && strstr(o.msg, path) && strstr(o.msg, why),
        "%s: %s (%s); expected SYMHEAP_ERR_PLUGIN naming %s and '%s'", file,
        symheap_strerror(o.r), o.msg, path, why);
  th_end();
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_plugins PLUGIN_DIR BAD_PLUGIN_DIR\n");
    return 2;
  }
  plugdir = argv[1];
  baddir = argv[2];

  refused("refused_missing_file", "no-such-plugin.so", "cannot load");
  refused("refused_no_symbol", "bad1.so", "does not export symheap_plugin_v1");
  refused("refused_other_abi_major", "bad2.so", "plugin ABI 2.0");
  refused("refused_no_init", "bad3.so", "lacks the required init");
  refused("refused_missing_required_op", "bad4.so", "'map'");
  refused("refused_provides_nothing", "bad5.so", "provides nothing");
  refused("refused_init_fails", "bad6.so", "init says no");
  refused("refused_ccl_without_allgather", "bad7.so", "allgather");
  caught_lying("lying_granularity", "bad8.so", "bad", "granularity");
  caught_lying("lying_va_reserve_null", "bad9.so", "host", "va_reserve");
  caught_lying("lying_va_reserve_misaligned", "bad10.so", "host", "aligned");

  th_begin("plugins", "bare_name_not_found", 0);
  outcome_t o = run("nosuch", "host", plugdir);
  CHECK(o.r == SYMHEAP_ERR_PLUGIN &&
            strstr(o.msg, "libsymheap-plugin-nosuch.so") &&
            strstr(o.msg, plugdir),
        "a missing plugin: %s (%s)", symheap_strerror(o.r), o.msg);
  th_end();

  th_begin("plugins", "example_vendor_by_name", 0);
  o = run("example", "example", plugdir);
  CHECK(o.r == SYMHEAP_SUCCESS && o.ok_data &&
            strcmp(o.adaptor, "example") == 0,
        "example: %s (%s), adaptor '%s', data %d", symheap_strerror(o.r), o.msg,
        o.adaptor, o.ok_data);
  th_end();

  th_begin("plugins", "trace_hooks_over_host_and_example", 0);
  o = run("trace", "host", plugdir);
  CHECK(o.r == SYMHEAP_SUCCESS && o.ok_data && strcmp(o.adaptor, "host") == 0,
        "trace over host: %s (%s)", symheap_strerror(o.r), o.msg);
  o = run("trace,example", "example", plugdir);
  CHECK(o.r == SYMHEAP_SUCCESS && o.ok_data &&
            strcmp(o.adaptor, "example") == 0,
        "trace over example: %s (%s)", symheap_strerror(o.r), o.msg);
  th_end();

  th_begin("plugins", "templates_say_they_cannot_run", 0);
  o = run("stub_vmm,stub_ipc", "stub_vmm", plugdir);
  CHECK(o.r == SYMHEAP_ERR_UNSUPPORTED && strstr(o.msg, "template"),
        "stub_vmm: %s (%s)", symheap_strerror(o.r), o.msg);
  o = run("stub_vmm,stub_ipc", "auto", plugdir);
  CHECK(o.r == SYMHEAP_SUCCESS && strcmp(o.adaptor, "host") == 0,
        "auto with only templates: %s (%s), adaptor %s", symheap_strerror(o.r),
        o.msg, o.adaptor);
  th_end();
  return th_total_failures() ? 1 : 0;
}

/* symheap-info: what this build of symheap can use here.
 *   symheap-info      version, device adaptors and their capabilities, ccls,
 *                     net adaptors and their providers
 *   symheap-info -e   every environment variable, its value and its help
 *   symheap-info -e --markdown   the same as the table in docs/env.md
 *   symheap-info --stats [BYTES]  the accounting of a one-rank comm on the
 *                     selected adaptor: fresh, with a window of BYTES
 *                     (default 1 MiB), after freeing it, and after trimming
 *                     the heap it came from */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symheap.h"
#include "symheap_adaptor.h"

static int stats_at(symheap_comm_t c, symheap_comm_stats_t *s) {
  s->struct_size = sizeof *s;
  return symheap_comm_get_stats(c, s) == SYMHEAP_SUCCESS;
}

static int print_stats(size_t bytes) {
  symheap_unique_id_t id;
  symheap_comm_t c;
  if (symheap_get_unique_id(&id) != SYMHEAP_SUCCESS ||
      symheap_comm_init(&c, 1, &id, 0) != SYMHEAP_SUCCESS) {
    fprintf(stderr, "symheap-info: cannot make a comm: %s\n",
            symheap_last_error());
    return 1;
  }
  symheap_comm_stats_t s[4];
  symheap_window_t w;
  symheap_comm_info_t info = SYMHEAP_COMM_INFO_INIT;
  symheap_heap_info_t hi = SYMHEAP_HEAP_INFO_INIT;
  int ok = symheap_comm_get_info(c, &info) == SYMHEAP_SUCCESS &&
           stats_at(c, &s[0]) &&
           symheap_malloc(c, bytes, 0, &w) == SYMHEAP_SUCCESS &&
           stats_at(c, &s[1]) &&
           symheap_heap_get_info(c, &hi) == SYMHEAP_SUCCESS &&
           symheap_free(c, w) == SYMHEAP_SUCCESS && stats_at(c, &s[2]) &&
           symheap_heap_trim(c) == SYMHEAP_SUCCESS && stats_at(c, &s[3]);
  if (!ok) {
    fprintf(stderr, "symheap-info: %s\n", symheap_last_error());
    symheap_comm_destroy(c);
    return 1;
  }
  printf("accounting of a one-rank comm on '%s' (%s), window of %zu bytes\n",
         info.device_adaptor, info.device, bytes);
  printf("%-18s %14s %14s %14s %14s\n", "", "fresh comm", "with window",
         "window freed", "heap trimmed");
#define ROW(f)                                                                 \
  printf("%-18s %14llu %14llu %14llu %14llu\n", #f,                            \
         (unsigned long long)s[0].f, (unsigned long long)s[1].f,               \
         (unsigned long long)s[2].f, (unsigned long long)s[3].f)
  ROW(windows_live);
  ROW(allocations_live);
  ROW(bytes_allocated);
  ROW(bytes_registered);
  ROW(va_reserved);
  ROW(bytes_mapped);
  ROW(descriptors_held);
  ROW(multicast_objects);
  ROW(mappings_cached);
  ROW(heap_reserved);
  ROW(heap_committed);
  ROW(heap_used);
  ROW(heap_allocations);
#undef ROW
  printf("(the fresh comm's memory is its pad: signals and collectives' "
         "state)\n");
  if (hi.enabled)
    printf("heap with the window: %llu chunk(s) of %llu bytes, largest free "
           "block %llu; symheap_malloc above %llu bytes bypasses the heap "
           "(docs/heap.md)\n",
           (unsigned long long)hi.chunks, (unsigned long long)hi.chunk_size,
           (unsigned long long)hi.largest_free,
           (unsigned long long)hi.threshold);
  else
    printf("heap: off (SYMHEAP_HEAP=0): the window was its own "
           "registration\n");
  return symheap_comm_destroy(c) == SYMHEAP_SUCCESS ? 0 : 1;
}

static void print_caps(const symheap_device_adaptor_info_t *t) {
  if (!t->caps_known) {
    printf("    capabilities: unknown (%s)\n", t->caps_why);
    return;
  }
  printf("    device:       %s\n", t->device);
  printf("    granularity:  %llu bytes (recommended %llu)\n",
         (unsigned long long)t->granularity,
         (unsigned long long)t->recommended_granularity);
  printf("    VMM:          %s\n", t->caps & SYMHEAP_CAP_VMM ? "yes" : "no");
  printf("    CPU access:   %s\n",
         t->caps & SYMHEAP_CAP_HOST_ACCESS ? "yes" : "no");
  printf("    handles:      %s%s\n",
         t->handle_kinds & (1u << SYMHEAP_HANDLE_FD) ? "fd " : "",
         t->handle_kinds & (1u << SYMHEAP_HANDLE_BYTES) ? "bytes" : "");
  printf("    multicast:    %s",
         t->has_multicast && (t->caps & SYMHEAP_CAP_MULTICAST) ? "supported"
                                                              : "no");
  if (t->has_multicast && t->multicast_granularity)
    printf(" (granularity %llu)",
           (unsigned long long)t->multicast_granularity);
  printf("\n    IPC fallback: %s\n", t->has_ipc ? "yes" : "no");
}

/* Every variable: the core's, then what adaptors and plugins declared (the
 * built-ins are admitted, and SYMHEAP_PLUGIN loaded, first).  The i-th into
 * *v, or 0 past the end. */
static int var_at(int i, symheap_var_info_t *v) {
  memset(v, 0, sizeof *v);
  v->struct_size = sizeof *v;
  int n = 0;
  return symheap_var_count(&n) == SYMHEAP_SUCCESS && i < n &&
         symheap_var_get(i, v) == SYMHEAP_SUCCESS;
}

static void load_declarations(void) { (void)symheap_plugins_load(); }

/* Variables the bindings (bindings/openshmem, bindings/python) and
 * symheap-run read themselves: not the core's, so not validated here, but
 * listed with the rest so that -e and docs/env.md name every variable
 * symheap reads (test/shell_checks.sh looks for every getenv of one). */
typedef struct {
  const char *name, *owner, *def, *values, *help;
} binding_var_t;
static const binding_var_t binding_vars[] = {
    {"SHMEM_SYMMETRIC_SIZE", "openshmem binding", "1G",
     "bytes, with K, M, G or T (decimal fractions allowed)",
     "the most symmetric heap per PE; address space is reserved, memory is "
     "committed as the heap grows (SMA_SYMMETRIC_SIZE: the deprecated name)"},
    {"SHMEM_DEBUG", "openshmem binding", "(unset)", "any",
     "if set, a failed allocation says why (SMA_DEBUG: the deprecated name)"},
    {"SHMEM_VERSION", "openshmem binding", "(unset)", "any",
     "if set, PE 0 prints the library's version at shmem_init (SMA_VERSION)"},
    {"SHMEM_INFO", "openshmem binding", "(unset)", "any",
     "if set, PE 0 prints every variable the library reads (OpenSHMEM's, "
     "its own, the launchers', symheap's) with its help at shmem_init "
     "(SMA_INFO)"},
    {"SYMHEAP_SHMEM_DATA_SEGMENT", "openshmem binding", "1", "0 or 1",
     "0 leaves the data segment alone (statics are then not symmetric)"},
    {"SYMHEAP_SHMEM_PUSH", "openshmem binding", "1", "0 or 1",
     "1: a small broadcast's root, and every PE of an fcollect, write into "
     "the other PEs' dest as they enter (dest must be ready on every PE "
     "before any PE calls, as the specification says); 0: each PE copies "
     "into its own dest in its own call (programs that reuse dest without "
     "a sync); the same on every PE"},
    {"SYMHEAP_SHMEM_STREAM_MIN", "openshmem binding", "16K",
     "0, or bytes from 16K (with K, M, G or T)",
     "the smallest put or get on one host written with streaming stores "
     "(which bypass the cache) when its destination continues the last "
     "one's and was not written lately; 0: never; x86-64 only"},
    {"SYMHEAP_SHMEM_PREFAULT", "openshmem binding", "64M",
     "0, or bytes from 4K (with K, M, G or T)",
     "heap objects of a page up to this size over the PEs of the host (and "
     "the data segment) get their pages, and every PE of the host its page "
     "tables for them, at allocation instead of at their first put or get; "
     "0: none (Linux 5.14's MADV_POPULATE_WRITE; without it, none)"},
    {"SYMHEAP_SHMEM_SPIN", "openshmem binding", "3000", "0 to 1000000",
     "pause-spins in a wait before each wait yields the CPU (unset: 3000, "
     "or 2 with more PEs than CPUs)"},
    {"SYMHEAP_SHMEM_TIMEOUT_MS", "openshmem binding", "0", "0 to 86400000",
     "a wait (barrier, collective, wait_until) that lasts longer ends the "
     "job, saying so; 0 or unset: waits last as long as the PEs take"},
    {"SYMHEAP_LIBRARY", "python binding", "(unset)", "a path",
     "the libsymheap.so.0 the Python package loads, before its own search"},
    {"SYMHEAP_CUDA_COLL_LIBRARY", "python binding", "(unset)", "a path",
     "the libsymheap_cuda.so.0 symheap.cuda loads (default: beside "
     "libsymheap)"},
    {"SYMHEAP_TORCH_POOL", "python binding", "8", "a count",
     "freed blocks the torch allocator keeps for reuse, per rank (0: none)"},
    {"SYMHEAP_RUN_BIND", "symheap-run", "core", "none, core, numa (0: none)",
     "where symheap-run puts each rank, as --bind: a CPU of its own (core; "
     "with more ranks than CPUs, its GPU's NUMA node or, in turn, one CPU "
     "of several ranks), its GPU's "
     "NUMA node's CPUs (numa), or anywhere (none); --bind wins"},
    {"SYMHEAP_RUN_SYSFS", "symheap-run", "/sys", "a directory",
     "where symheap-run reads the PCI devices and NUMA nodes that --bind "
     "core or numa places ranks by (tests point it at a made-up tree)"},
};
#define NBINDING_VARS (sizeof binding_vars / sizeof binding_vars[0])

static void print_binding_env(void) {
  const char *last = NULL;
  for (size_t i = 0; i < NBINDING_VARS; i++) {
    const binding_var_t *b = &binding_vars[i];
    if (!last || strcmp(last, b->owner) != 0)
      printf("\n== %s (read by it, not by the core)\n\n", b->owner);
    last = b->owner;
    const char *set = getenv(b->name);
    printf("%s\n  value:   %s\n  default: %s\n  values:  %s\n  %s\n", b->name,
           set && *set ? set : "(unset)", b->def, b->values, b->help);
  }
}

static void print_env(void) {
  const char *last = NULL;
  symheap_var_info_t var, *v = &var;
  load_declarations();
  for (int i = 0; var_at(i, v); i++) {
    const char *owner = v->owner;
    if (!last || strcmp(last, owner) != 0)
      printf("%s== %s%s\n\n", last ? "\n" : "",
             strcmp(owner, "core") == 0 ? "" : "adaptor ", owner);
    last = owner;
    const char *set = v->value;
    printf("%s\n  value:   %s\n  default: %s\n", v->name, set ? set : "(unset)",
           v->def ? v->def : "(unset)");
    if (v->type == SYMHEAP_VAR_CHOICE)
      printf("  values:  %s\n", v->choices);
    else if (v->type == SYMHEAP_VAR_INT)
      printf("  values:  %ld to %ld\n", v->min, v->max);
    else if (v->type == SYMHEAP_VAR_BOOL)
      printf("  values:  0 or 1\n");
    printf("  %s\n", v->help);
  }
  print_binding_env();
  symheap_result_t r = symheap_vars_check();
  if (r != SYMHEAP_SUCCESS)
    printf("\nerror: %s\n", symheap_last_error());
}

/* The accepted values of a variable as a Markdown cell ('|' would split
 * it). */
static void values_cell(const symheap_var_info_t *v, char *out, size_t len) {
  if (v->type == SYMHEAP_VAR_CHOICE) {
    size_t o = 0;
    for (const char *p = v->choices; *p && o + 3 < len; p++)
      if (*p == '|') {
        out[o++] = ',';
        out[o++] = ' ';
      } else {
        out[o++] = *p;
      }
    out[o] = '\0';
  } else if (v->type == SYMHEAP_VAR_INT)
    snprintf(out, len, "%ld to %ld", v->min, v->max);
  else if (v->type == SYMHEAP_VAR_BOOL)
    snprintf(out, len, "0 or 1");
  else
    snprintf(out, len, "text");
}

/* The same table as Markdown: docs/env.md is this output (a test checks). */
static void print_env_markdown(void) {
  symheap_var_info_t var, *v = &var;
  load_declarations();
  printf("| variable | read by | default | accepted values | meaning |\n"
         "|---|---|---|---|---|\n");
  for (int i = 0; var_at(i, v); i++) {
    char values[256];
    values_cell(v, values, sizeof values);
    printf("| `%s` | %s | %s | %s | %s |\n", v->name, v->owner,
           v->def ? v->def : "(unset)", values, v->help);
  }
  for (size_t i = 0; i < NBINDING_VARS; i++)
    printf("| `%s` | %s | %s | %s | %s |\n", binding_vars[i].name,
           binding_vars[i].owner, binding_vars[i].def, binding_vars[i].values,
           binding_vars[i].help);
}

/* What would make comm init fail here, as set: symheap-info says so and
 * exits 1, so a script never reads 0 for an environment that cannot work. */
#define MAX_PROBLEMS 8
static char problems[MAX_PROBLEMS][600];
static int nproblems;

static void problem(const char *what, const char *why) {
  if (nproblems < MAX_PROBLEMS)
    snprintf(problems[nproblems++], sizeof problems[0], "%s: %s", what, why);
}

static int report_problems(void) {
  if (nproblems == 0)
    return 0;
  printf("\ncomm init would fail with this environment:\n");
  for (int i = 0; i < nproblems; i++)
    printf("  - %s\n", problems[i]);
  return 1;
}

/* The device adaptors, each one's capabilities, and which one a comm would
 * take now (its name into chosen, "" when none would). */
static void print_devices(char *chosen, size_t len) {
  int n = 0;
  (void)symheap_device_adaptor_count(&n);
  for (int i = 0; i < n; i++) {
    symheap_device_adaptor_info_t t;
    t.struct_size = sizeof t;
    if (symheap_device_adaptor_get(i, &t) != SYMHEAP_SUCCESS)
      continue;
    printf("  %-8s %s%s%s\n", t.name, t.available ? "available" : "unavailable",
           t.available ? "" : ": ", t.available ? "" : t.why);
    if (t.available)
      print_caps(&t);
  }
  char why[512];
  chosen[0] = '\0';
  if (symheap_device_adaptor_choice(chosen, len, why, sizeof why) ==
      SYMHEAP_SUCCESS) {
    printf("  selected now: %s (%s)\n", chosen, why);
  } else {
    chosen[0] = '\0';
    printf("  selected now: none: %s\n", symheap_last_error());
    problem("device adaptor", symheap_last_error());
  }
}

/* The net adaptors (other hosts' ranks), each one's providers here.
 * Listing providers asks the engine (libfabric's fi_getinfo, as fi_info
 * does: providers with FI_EP_RDM and RMA; UCX's transport/device
 * resources, as ucx_info -d lists them). */
static void print_nets(void) {
  int n = 0;
  (void)symheap_net_adaptor_count(&n);
  printf("\nnet adaptors (SYMHEAP_NET=<name>; ofi: SYMHEAP_NET_PROVIDER picks "
         "the provider; ucx: UCX's own UCX_TLS and UCX_NET_DEVICES):\n");
  for (int i = 0; i < n; i++) {
    symheap_net_adaptor_info_t a;
    a.struct_size = sizeof a;
    if (symheap_net_adaptor_get(i, &a) != SYMHEAP_SUCCESS)
      continue;
    if (!a.available)
      printf("  %-8s unavailable: %s\n", a.name, a.why);
    else
      printf("  %-8s available; providers here: %s\n",
             a.name, a.providers[0] ? a.providers : "none");
  }
  const char *prov = getenv("SYMHEAP_NET_PROVIDER");
  if (prov && prov[0])
    printf("  SYMHEAP_NET_PROVIDER=%s\n", prov);
  printf("  device windows of other hosts' ranks: registered where the "
         "provider has FI_HMEM, else staged through pinned host memory "
         "(docs/network.md, \"Staging\")\n");
}

static int plugin_at(int i, symheap_plugin_info_t *p) {
  p->struct_size = sizeof *p;
  return symheap_plugin_get(i, p) == SYMHEAP_SUCCESS;
}

static int plugins(void) {
  int n = 0;
  (void)symheap_plugin_count(&n);
  return n;
}

/* The ccl adaptors, and which one symheap_comm_init_env would join on. */
static void print_ccls(void) {
  printf("\nccl adaptors:\n  local    built-in bootstrap over Unix sockets "
         "(one host); used by symheap_comm_init and symheap_comm_init_env\n");
  char mpi_path[512];
  if (symheap_ccl_mpi_path(mpi_path, sizeof mpi_path) == SYMHEAP_SUCCESS)
    printf("  mpi      %s (symheap_comm_init_mpi; symheap_comm_init_env under "
           "mpirun)\n",
           mpi_path);
  else
    printf("  mpi      not installed: %s; it is built where mpicc is on "
           "PATH when make runs (apt-get install libopenmpi-dev, then make "
           "again)\n",
           symheap_last_error());
  symheap_plugin_info_t p;
  for (int i = 0; i < plugins(); i++)
    if (plugin_at(i, &p) && p.ccl[0])
      printf("  %-8s from plugin '%s' (%s)\n", p.ccl, p.name,
             p.ccl_joins ? "SYMHEAP_CCL=<this name> joins through it"
                         : "pass it to symheap_comm_init_ccl");
  char name[64], why[256];
  if (symheap_ccl_env_choice(name, sizeof name, why, sizeof why) !=
      SYMHEAP_SUCCESS) {
    printf("  symheap_comm_init_env would join through: none: %s\n",
           symheap_last_error());
    problem("SYMHEAP_CCL", symheap_last_error());
  } else {
    printf("  symheap_comm_init_env would join through: %s (%s)\n", name,
           why);
  }
}

static void print_plugins(symheap_result_t pr, const char *plugin_error) {
  printf("\nplugins (SYMHEAP_PLUGIN):\n");
  if (pr != SYMHEAP_SUCCESS)
    printf("  NOT LOADED: %s\n", plugin_error);
  else if (plugins() == 0)
    printf("  none\n");
  symheap_plugin_info_t p;
  for (int i = 0; i < plugins(); i++) {
    if (!plugin_at(i, &p))
      continue;
    printf("  %-8s %s (ABI %u.%u)\n", p.name, p.path, p.abi_major,
           p.abi_minor);
    if (p.device[0])
      printf("    provides device adaptor '%s'\n", p.device);
    if (p.ccl[0])
      printf("    provides ccl adaptor '%s'\n", p.ccl);
    if (p.hooks_target[0])
      printf("    hooks over %s: %s\n",
             strcmp(p.hooks_target, "*") == 0
                 ? "whichever adaptor a comm uses"
                 : p.hooks_target,
             p.hooked);
  }
}

/* What each hookable operation of the chosen adaptor resolves to: the last
 * loaded plugin hooking it is on top. */
static void print_hook_resolution(const char *base) {
  static const char *const ops[] = {
      "va_reserve", "va_free",     "map",           "unmap",
      "set_access", "mc_create",   "mc_add_device", "mc_bind",
      "mc_unbind",  "mem_release", "mem_export",    "mem_import"};
  printf("  hook resolution for '%s':\n", base);
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    char chain[256];
    size_t o = 0;
    chain[0] = '\0';
    for (int i = plugins() - 1; i >= 0; i--) {
      symheap_plugin_info_t p;
      if (!plugin_at(i, &p))
        continue;
      char needle[32], padded[260];
      snprintf(needle, sizeof needle, ",%s,", ops[k]);
      snprintf(padded, sizeof padded, ",%s,", p.hooked);
      if (p.hooks_target[0] &&
          (strcmp(p.hooks_target, "*") == 0 ||
           strcmp(p.hooks_target, base) == 0) &&
          strstr(padded, needle) && o < sizeof chain)
        o += (size_t)snprintf(chain + o, sizeof chain - o, "%s -> ", p.name);
    }
    printf("    %-14s %s%s\n", ops[k], chain, base);
  }
}

static void print_window_path(const char *base) {
  int path = 0;
  char name[16];
  if (symheap_window_path(name, sizeof name) != SYMHEAP_SUCCESS)
    printf("\nwindow path: %s\n", symheap_last_error());
  else if ((path = strcmp(name, "nccl") == 0  ? 1
                  : strcmp(name, "ccl") == 0 ? 2
                                             : 0) == 0)
    printf("\nwindow path: symheap's own flat VA (import every rank's "
           "memory, map at base + rank * stride)\n");
  else if (path == 1)
    printf("\nwindow path: NCCL symmetric windows (SYMHEAP_WINDOW_PATH=nccl; "
           "ncclCommWindowRegister, cuda adaptor only)\n");
  else
    printf("\nwindow path: the window_register of the ccl adaptor a comm is "
           "made on (SYMHEAP_WINDOW_PATH=ccl)\n");
  if (path == 1 && strcmp(base, "cuda") != 0)
    problem("SYMHEAP_WINDOW_PATH=nccl", "needs the cuda device adaptor");
}

/* RDMA: what a comm spanning hosts would use. */
static void print_rdma(void) {
  symheap_net_info_t n;
  n.struct_size = sizeof n;
  if (symheap_net_probe(&n) != SYMHEAP_SUCCESS) {
    printf("RDMA registration: %s\n", symheap_last_error());
    problem("SYMHEAP_NET", symheap_last_error());
  } else if (n.mode == SYMHEAP_NET_ADAPTOR)
    printf("RDMA registration: off (SYMHEAP_NET=%s, a net adaptor)\n",
           n.adaptor);
  else if (n.mode == SYMHEAP_NET_NONE)
    printf("RDMA registration: off (SYMHEAP_NET=none)\n");
  else if (!n.available) {
    printf("RDMA registration: unavailable: %s\n", n.why_not);
    if (n.mode == SYMHEAP_NET_ALWAYS)
      problem("SYMHEAP_NET=ibverbs", n.why_not);
  } else
    printf("RDMA registration: %s on %s (SYMHEAP_NET=%s)\n",
           n.mode == SYMHEAP_NET_ALWAYS ? "always" : "for comms spanning hosts",
           n.device, n.mode == SYMHEAP_NET_ALWAYS ? "ibverbs" : "auto");
}

static void print_multicast_policy(void) {
  const char *by = NULL;
  if (symheap_multicast_disabled_by(&by) != SYMHEAP_SUCCESS)
    printf("multicast policy: %s\n", symheap_last_error());
  else
    printf("multicast policy: %s\n", by ? by : "allowed where supported");
}

/* The tuning table the CUDA collectives' AUTO would use on this thread's
 * GPU: libsymheap_cuda.so.0 beside libsymheap answers (docs/tuning.md). */
static void print_cuda_tuning(void) {
  Dl_info info;
  char path[4096];
  if (!dladdr((void *)&symheap_get_version, &info) || !info.dli_fname)
    return;
  snprintf(path, sizeof path, "%s", info.dli_fname);
  char *slash = strrchr(path, '/');
  snprintf(slash ? slash + 1 : path,
           sizeof path - (size_t)(slash ? slash + 1 - path : 0),
           "libsymheap_cuda.so.0");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("cuda collectives: not here (%s: not built without nvcc)\n", path);
    return;
  }
  symheap_result_t (*f)(char *, size_t) =
      (symheap_result_t(*)(char *, size_t))dlsym(h, "symheap_cuda_tuning_table");
  char text[1200] = "";
  if (!f)
    printf("cuda collectives tuning table: this libsymheap_cuda has none\n");
  else if (f(text, sizeof text) != SYMHEAP_SUCCESS)
    printf("cuda collectives tuning table: %s\n", symheap_last_error());
  else
    printf("cuda collectives tuning table: %s\n", text);
  dlclose(h);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    int major, minor, patch;
    symheap_get_version(&major, &minor, &patch);
    printf("symheap-info %d.%d.%d\n", major, minor, patch);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "-e") == 0 &&
      strcmp(argv[2], "--markdown") == 0) {
    print_env_markdown();
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "-e") == 0) {
    print_env();
    return symheap_vars_check() == SYMHEAP_SUCCESS ? 0 : 1;
  }
  if (argc <= 3 && argc > 1 && strcmp(argv[1], "--stats") == 0) {
    /* BYTES: a positive number (strtoull alone took "abc" and "0" as the
     * default, and "-5" as 2^64 - 5). */
    char *end = NULL;
    errno = 0;
    unsigned long long b = argc > 2 && argv[2][0] >= '0' && argv[2][0] <= '9'
                               ? strtoull(argv[2], &end, 0)
                               : 0;
    if (argc > 2 && (!end || *end || errno || b == 0 || b > SIZE_MAX)) {
      fprintf(stderr, "symheap-info: --stats wants a window size in bytes "
                      "(a positive number), not '%s'\n", argv[2]);
      return 2;
    }
    return print_stats(argc > 2 ? (size_t)b : 1u << 20);
  }
  if (argc > 1) {
    fprintf(stderr,
            "usage: symheap-info [-e [--markdown]] | --stats [BYTES] | "
            "--version\n");
    return 2;
  }
  int major, minor, patch;
  symheap_get_version(&major, &minor, &patch);
  symheap_result_t pr = symheap_plugins_load();
  char plugin_error[1024];
  snprintf(plugin_error, sizeof plugin_error, "%s", symheap_last_error());
  if (pr != SYMHEAP_SUCCESS)
    problem("plugins", plugin_error);
  if (symheap_vars_check() != SYMHEAP_SUCCESS)
    problem("variables", symheap_last_error());
  printf("symheap %d.%d.%d (adaptor ABI %d)\n\ndevice adaptors "
         "(SYMHEAP_DEVICE=auto prefers a usable GPU adaptor, else host):\n",
         major, minor, patch, SYMHEAP_ADAPTOR_ABI_VERSION);
  char chosen[32];
  print_devices(chosen, sizeof chosen);
  const char *base = chosen[0] ? chosen : "?";
  print_ccls();
  print_nets();
  print_plugins(pr, plugin_error);
  if (plugins())
    print_hook_resolution(base);
  print_window_path(base);
  print_rdma();
  print_multicast_policy();
  print_cuda_tuning();
  return report_problems();
}

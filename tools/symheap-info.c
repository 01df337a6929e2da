/* symheap-info: what this build of symheap can use here.
 *   symheap-info      version, device adaptors and their capabilities, ccls,
 *                     net adaptors and their providers
 *   symheap-info -e   every environment variable, its value and its help
 *   symheap-info -e --markdown   the same as the table in docs/env.md
 *   symheap-info --stats [BYTES]  the accounting of a one-rank comm on the
 *                     selected adaptor: fresh, with a window of BYTES
 *                     (default 1 MiB), after freeing it, and after trimming
 *                     the heap it came from */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "base/config.h"
#include "base/plugin.h"
#include "comm/ccl_env.h"
#include "base/registry.h"
#include "base/net_registry.h"
#include "comm/net.h"

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

static void print_caps(const symheap__device_table_t *t) {
  symheap_device_init_t args = {sizeof args, 0, 1, 0, 1};
  void *ctx = NULL;
  symheap_device_caps_t caps;
  memset(&caps, 0, sizeof caps);
  caps.struct_size = sizeof caps;
  if (t->ops.init(&symheap__host_services, &args, &ctx) != SYMHEAP_SUCCESS ||
      t->ops.query(ctx, &caps) != SYMHEAP_SUCCESS) {
    printf("    capabilities: unknown (%s)\n", symheap_last_error());
    if (ctx)
      t->ops.fini(ctx);
    return;
  }
  t->ops.fini(ctx);
  printf("    device:       %s\n", caps.device_name);
  printf("    granularity:  %zu bytes (recommended %zu)\n", caps.granularity,
         caps.recommended_granularity);
  printf("    VMM:          %s\n", caps.caps & SYMHEAP_CAP_VMM ? "yes" : "no");
  printf("    CPU access:   %s\n",
         caps.caps & SYMHEAP_CAP_HOST_ACCESS ? "yes" : "no");
  printf("    handles:      %s%s\n",
         caps.handle_kinds & (1u << SYMHEAP_HANDLE_FD) ? "fd " : "",
         caps.handle_kinds & (1u << SYMHEAP_HANDLE_BYTES) ? "bytes" : "");
  printf("    multicast:    %s",
         t->has_multicast && (caps.caps & SYMHEAP_CAP_MULTICAST) ? "supported"
                                                                 : "no");
  if (t->has_multicast && caps.multicast_granularity)
    printf(" (granularity %zu)", caps.multicast_granularity);
  printf("\n    IPC fallback: %s\n", t->has_ipc ? "yes" : "no");
}

/* Every variable: the core's table, then what adaptors and plugins
 * declared (the built-ins are admitted, and SYMHEAP_PLUGIN loaded, first).
 * Returns the i-th, or NULL past the end; *owner is "core" or who declared
 * it. */
static const symheap__cfg_var_t *var_at(size_t i, const char **owner) {
  size_t n;
  const symheap__cfg_var_t *v = symheap__cfg_table(&n);
  if (i < n) {
    *owner = "core";
    return &v[i];
  }
  return symheap__cfg_declared((int)(i - n), owner);
}

static void load_declarations(void) {
  symheap__builtins_load();
  (void)symheap__net_list(NULL, 0);
  (void)symheap__plugins_load();
}

static void print_env(void) {
  const char *owner, *last = NULL;
  const symheap__cfg_var_t *v;
  load_declarations();
  for (size_t i = 0; (v = var_at(i, &owner)) != NULL; i++) {
    if (!last || strcmp(last, owner) != 0)
      printf("%s== %s%s\n\n", last ? "\n" : "",
             strcmp(owner, "core") == 0 ? "" : "adaptor ", owner);
    last = owner;
    const char *set = symheap__cfg_raw(v->name);
    printf("%s\n  value:   %s\n  default: %s\n", v->name, set ? set : "(unset)",
           v->def ? v->def : "(unset)");
    if (v->kind == SYMHEAP_CFG_CHOICE)
      printf("  values:  %s\n", v->choices);
    else if (v->kind == SYMHEAP_CFG_INT)
      printf("  values:  %ld to %ld\n", v->min, v->max);
    else if (v->kind == SYMHEAP_CFG_BOOL)
      printf("  values:  0 or 1\n");
    printf("  %s\n", v->help);
  }
  symheap_result_t r = symheap__cfg_validate_all();
  if (r != SYMHEAP_SUCCESS)
    printf("\nerror: %s\n", symheap_last_error());
}

/* The accepted values of a variable as a Markdown cell ('|' would split
 * it). */
static void values_cell(const symheap__cfg_var_t *v, char *out, size_t len) {
  if (v->kind == SYMHEAP_CFG_CHOICE) {
    size_t o = 0;
    for (const char *p = v->choices; *p && o + 3 < len; p++)
      if (*p == '|') {
        out[o++] = ',';
        out[o++] = ' ';
      } else {
        out[o++] = *p;
      }
    out[o] = '\0';
  } else if (v->kind == SYMHEAP_CFG_INT)
    snprintf(out, len, "%ld to %ld", v->min, v->max);
  else if (v->kind == SYMHEAP_CFG_BOOL)
    snprintf(out, len, "0 or 1");
  else
    snprintf(out, len, "text");
}

/* The same table as Markdown: docs/env.md is this output (a test checks). */
static void print_env_markdown(void) {
  const char *owner;
  const symheap__cfg_var_t *v;
  load_declarations();
  printf("| variable | read by | default | accepted values | meaning |\n"
         "|---|---|---|---|---|\n");
  for (size_t i = 0; (v = var_at(i, &owner)) != NULL; i++) {
    char values[64];
    values_cell(v, values, sizeof values);
    printf("| `%s` | %s | %s | %s | %s |\n", v->name, owner,
           v->def ? v->def : "(unset)", values, v->help);
  }
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
 * take now (into *chosen; its name stays NULL when none would). */
static void print_devices(symheap__device_table_t *chosen) {
  for (int i = 0; i < symheap__device_count(); i++) {
    symheap__device_table_t t;
    if (symheap__device_get(i, &t) != SYMHEAP_SUCCESS)
      continue;
    char why[256] = "";
    int ok = t.ops.available(&symheap__host_services, why, sizeof why);
    printf("  %-8s %s%s%s\n", t.ops.name, ok ? "available" : "unavailable",
           ok ? "" : ": ", ok ? "" : why);
    if (ok)
      print_caps(&t);
  }
  const char *want = "auto";
  symheap__cfg_string("SYMHEAP_DEVICE", &want);
  char why[512];
  if (symheap__device_select(want, chosen, why, sizeof why) ==
      SYMHEAP_SUCCESS) {
    printf("  selected now: %s (%s)\n", chosen->ops.name, why);
  } else {
    printf("  selected now: none: %s\n", symheap_last_error());
    problem("device adaptor", symheap_last_error());
  }
}

/* The net adaptors (other hosts' ranks), each one's providers here.
 * Listing providers asks the engine (libfabric's fi_getinfo), which is
 * what fi_info does too. */
static void print_nets(void) {
  symheap__net_table_t all[8];
  int n = symheap__net_list(all, 8);
  printf("\nnet adaptors (SYMHEAP_NET=<name>; SYMHEAP_NET_PROVIDER picks the "
         "provider):\n");
  if (!symheap__net_builtin_ofi())
    printf("  ofi      not built: libfabric's headers (Debian package "
           "libfabric-dev) were missing at build time\n");
  if (n == 0 && symheap__net_builtin_ofi())
    printf("  none registered\n");
  for (int i = 0; i < n && i < 8; i++) {
    char why[512] = "";
    if (!all[i].ops.available(&symheap__host_services, why, sizeof why)) {
      printf("  %-8s unavailable: %s\n", all[i].ops.name, why);
      continue;
    }
    char list[2048] = "";
    if (all[i].ops.providers(&symheap__host_services, list, sizeof list) !=
        SYMHEAP_SUCCESS) {
      printf("  %-8s available; providers: cannot list: %s\n", all[i].ops.name,
             symheap_last_error());
      continue;
    }
    for (char *p = list; *p; p++)
      if (*p == '\n')
        *p = p[1] ? ',' : '\0';
    printf("  %-8s available; providers here (FI_EP_RDM with RMA): %s\n",
           all[i].ops.name, list[0] ? list : "none");
  }
  const char *prov = NULL;
  if (symheap__cfg_string("SYMHEAP_NET_PROVIDER", &prov) == SYMHEAP_SUCCESS &&
      prov)
    printf("  SYMHEAP_NET_PROVIDER=%s\n", prov);
}

/* The ccl adaptors, and which one symheap_comm_init_env would join on. */
static void print_ccls(void) {
  printf("\nccl adaptors:\n  local    built-in bootstrap over Unix sockets "
         "(one host); used by symheap_comm_init and symheap_comm_init_env\n");
  char mpi_path[512];
  if (symheap__find_library("libsymheap-ccl-mpi.so", mpi_path,
                            sizeof mpi_path) == SYMHEAP_SUCCESS)
    printf("  mpi      %s (symheap_comm_init_mpi; symheap_comm_init_env under "
           "mpirun)\n",
           mpi_path);
  else
    printf("  mpi      not installed: %s\n", symheap_last_error());
  for (int i = 0; i < symheap__plugin_count(); i++) {
    const char *path;
    const symheap_plugin_t *p = symheap__plugin_get(i, &path);
    if (p && p->ccl)
      printf("  %-8s from plugin '%s' (%s)\n", p->ccl->name, p->name,
             SYMHEAP_HAS_MEMBER(p->ccl, symheap_ccl_ops, open) && p->ccl->open
                 ? "SYMHEAP_CCL=<this name> joins through it"
                 : "pass it to symheap_comm_init_ccl");
  }
  const char *ccl_why;
  const symheap_ccl_ops *ccl_plugin = NULL;
  symheap_result_t ccl_r;
  symheap__ccl_kind_t kind =
      symheap__ccl_env_choice(&ccl_r, &ccl_why, &ccl_plugin);
  if (ccl_r != SYMHEAP_SUCCESS) {
    printf("  symheap_comm_init_env would join through: none: %s\n",
           symheap_last_error());
    problem("SYMHEAP_CCL", symheap_last_error());
  } else {
    printf("  symheap_comm_init_env would join through: %s (%s)\n",
           kind == SYMHEAP__CCL_MPI      ? "mpi"
           : kind == SYMHEAP__CCL_PLUGIN ? ccl_plugin->name
                                         : "local",
           ccl_why);
  }
}

static void print_plugins(symheap_result_t pr, const char *plugin_error) {
  printf("\nplugins (SYMHEAP_PLUGIN):\n");
  if (pr != SYMHEAP_SUCCESS)
    printf("  NOT LOADED: %s\n", plugin_error);
  else if (symheap__plugin_count() == 0)
    printf("  none\n");
  for (int i = 0; i < symheap__plugin_count(); i++) {
    const char *path;
    const symheap_plugin_t *p = symheap__plugin_get(i, &path);
    char hooked[256];
    symheap__plugin_hooked_ops(i, hooked, sizeof hooked);
    printf("  %-8s %s (ABI %u.%u)\n", p->name, path, p->abi_major,
           p->abi_minor);
    if (p->device)
      printf("    provides device adaptor '%s'\n", p->device->name);
    if (p->ccl)
      printf("    provides ccl adaptor '%s'\n", p->ccl->name);
    if (p->hooks)
      printf("    hooks over %s: %s\n",
             strcmp(p->hooks->target, "*") == 0
                 ? "whichever adaptor a comm uses"
                 : p->hooks->target,
             hooked);
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
    for (int i = symheap__plugin_count() - 1; i >= 0; i--) {
      const char *path;
      const symheap_plugin_t *p = symheap__plugin_get(i, &path);
      char hooked[256], needle[32];
      symheap__plugin_hooked_ops(i, hooked, sizeof hooked);
      snprintf(needle, sizeof needle, ",%s,", ops[k]);
      char padded[260];
      snprintf(padded, sizeof padded, ",%s,", hooked);
      if (p->hooks &&
          (strcmp(p->hooks->target, "*") == 0 ||
           strcmp(p->hooks->target, base) == 0) &&
          strstr(padded, needle) && o < sizeof chain)
        o += (size_t)snprintf(chain + o, sizeof chain - o, "%s -> ", p->name);
    }
    printf("    %-14s %s%s\n", ops[k], chain, base);
  }
}

static void print_window_path(const char *base) {
  int path = 0;
  if (symheap__cfg_choice("SYMHEAP_WINDOW_PATH", &path) != SYMHEAP_SUCCESS)
    printf("\nwindow path: %s\n", symheap_last_error());
  else if (path == 0)
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
  int net = 0;
  void *v = NULL;
  const symheap_netops_t *ops = symheap__builtin_net("ibverbs");
  symheap__net_table_t adaptor;
  if (symheap__net_mode(&net, &adaptor) != SYMHEAP_SUCCESS) {
    printf("RDMA registration: %s\n", symheap_last_error());
    problem("SYMHEAP_NET", symheap_last_error());
    return;
  }
  if (net == SYMHEAP__NET_ADAPTOR) {
    printf("RDMA registration: off (SYMHEAP_NET=%s, a net adaptor)\n",
           adaptor.ops.name);
    return;
  }
  if (net == 2)
    printf("RDMA registration: off (SYMHEAP_NET=none)\n");
  else if (!ops)
    printf("RDMA registration: this libsymheap was built without the ibverbs "
           "net adaptor\n");
  else if (ops->open(&v) != SYMHEAP_SUCCESS) {
    printf("RDMA registration: unavailable: %s\n", symheap_last_error());
    if (net == 1)
      problem("SYMHEAP_NET=ibverbs", symheap_last_error());
  } else
    printf("RDMA registration: %s on %s (SYMHEAP_NET=%s)\n",
           net == 1 ? "always" : "for comms spanning hosts",
           ops->device_name(v), net == 1 ? "ibverbs" : "auto");
  if (v)
    ops->close(v);
}

static void print_multicast_policy(void) {
  const char *by = NULL;
  if (symheap__multicast_disabled_by(&by) != SYMHEAP_SUCCESS)
    printf("multicast policy: %s\n", symheap_last_error());
  else
    printf("multicast policy: %s\n", by ? by : "allowed where supported");
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "-e") == 0 &&
      strcmp(argv[2], "--markdown") == 0) {
    print_env_markdown();
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "-e") == 0) {
    print_env();
    return symheap__cfg_validate_all() == SYMHEAP_SUCCESS ? 0 : 1;
  }
  if (argc > 1 && strcmp(argv[1], "--stats") == 0) {
    size_t bytes = argc > 2 ? (size_t)strtoull(argv[2], NULL, 0) : 1u << 20;
    return print_stats(bytes ? bytes : 1u << 20);
  }
  if (argc > 1) {
    fprintf(stderr,
            "usage: symheap-info [-e [--markdown]] | --stats [BYTES]\n");
    return 2;
  }
  int major, minor, patch;
  symheap_get_version(&major, &minor, &patch);
  symheap_result_t pr = symheap__plugins_load();
  char plugin_error[1024];
  snprintf(plugin_error, sizeof plugin_error, "%s", symheap_last_error());
  if (pr != SYMHEAP_SUCCESS)
    problem("plugins", plugin_error);
  symheap__builtins_load(); /* built-ins declare their variables */
  if (symheap__cfg_validate_all() != SYMHEAP_SUCCESS)
    problem("variables", symheap_last_error());
  printf("symheap %d.%d.%d (adaptor ABI %d)\n\ndevice adaptors "
         "(SYMHEAP_DEVICE=auto prefers a usable GPU adaptor, else host):\n",
         major, minor, patch, SYMHEAP_ADAPTOR_ABI_VERSION);
  symheap__device_table_t chosen;
  memset(&chosen, 0, sizeof chosen);
  print_devices(&chosen);
  const char *base = chosen.ops.name ? chosen.ops.name : "?";
  print_ccls();
  print_nets();
  print_plugins(pr, plugin_error);
  if (symheap__plugin_count())
    print_hook_resolution(base);
  print_window_path(base);
  print_rdma();
  print_multicast_policy();
  return report_problems();
}

/* Introspection without a comm (symheap.h; symheap-info is written on it):
 * the variables with their help, the adaptors and plugins, and what a comm
 * would choose now. */
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/net_registry.h"
#include "base/plugin.h"
#include "comm/ccl_env.h"
#include "comm/comm.h"
#include "comm/net.h"

/* The caller's struct from ours, as far as both reach. */
#define COPY_OUT(info, mine, fn)                                               \
  (!(info) ? symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: NULL argument", fn) \
           : symheap__copy_sized(info, &(mine), sizeof(mine), fn))

static symheap_result_t null_arg(const char *fn) {
  return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: NULL argument", fn);
}

SYMHEAP__EXPORT symheap_result_t symheap_plugins_load(void) {
  return symheap__plugins_load();
}

/* Every variable: the core's table, then what adaptors and plugins
 * declared; the i-th, or NULL past the end. */
static const symheap__cfg_var_t *var_at(int i, const char **owner) {
  size_t n;
  const symheap__cfg_var_t *v = symheap__cfg_table(&n);
  if (i >= 0 && (size_t)i < n) {
    *owner = "core";
    return &v[i];
  }
  return symheap__cfg_declared(i - (int)n, owner);
}

SYMHEAP__EXPORT symheap_result_t symheap_var_count(int *count) {
  if (!count)
    return null_arg("symheap_var_count");
  symheap__builtins_load();
  size_t n;
  (void)symheap__cfg_table(&n);
  *count = (int)n + symheap__cfg_declared_count();
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_var_get(int i,
                                                 symheap_var_info_t *info) {
  symheap__builtins_load();
  const char *owner = NULL;
  const symheap__cfg_var_t *v = var_at(i, &owner);
  if (!v)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_var_get: no variable %d", i);
  symheap_var_info_t mine;
  memset(&mine, 0, sizeof mine);
  mine.struct_size = sizeof mine;
  mine.type = v->kind == SYMHEAP_CFG_INT      ? SYMHEAP_VAR_INT
              : v->kind == SYMHEAP_CFG_BOOL   ? SYMHEAP_VAR_BOOL
              : v->kind == SYMHEAP_CFG_CHOICE ? SYMHEAP_VAR_CHOICE
                                              : SYMHEAP_VAR_TEXT;
  mine.name = v->name;
  mine.owner = owner;
  mine.def = v->def;
  mine.choices = v->choices;
  mine.min = v->min;
  mine.max = v->max;
  mine.help = v->help;
  mine.value = symheap__cfg_raw(v->name);
  return COPY_OUT(info, mine, "symheap_var_get");
}

SYMHEAP__EXPORT symheap_result_t symheap_vars_check(void) {
  symheap__builtins_load();
  return symheap__cfg_validate_all();
}

SYMHEAP__EXPORT symheap_result_t symheap_device_adaptor_count(int *count) {
  if (!count)
    return null_arg("symheap_device_adaptor_count");
  symheap__builtins_load();
  *count = symheap__device_count();
  return SYMHEAP_SUCCESS;
}

/* One rank's instance of the adaptor: its capabilities, then closed. */
static void probe_caps(const symheap__device_table_t *t,
                       symheap_device_adaptor_info_t *i) {
  symheap_device_init_t args = {sizeof args, 0, 1, 0, 1};
  void *ctx = NULL;
  symheap_device_caps_t caps;
  memset(&caps, 0, sizeof caps);
  caps.struct_size = sizeof caps;
  if (t->ops.init(&symheap__host_services, &args, &ctx) != SYMHEAP_SUCCESS ||
      t->ops.query(ctx, &caps) != SYMHEAP_SUCCESS) {
    snprintf(i->caps_why, sizeof i->caps_why, "%s", symheap__error_peek());
    if (ctx)
      t->ops.fini(ctx);
    return;
  }
  t->ops.fini(ctx);
  i->caps_known = 1;
  snprintf(i->device, sizeof i->device, "%s", caps.device_name);
  i->caps = caps.caps;
  i->handle_kinds = caps.handle_kinds;
  i->granularity = caps.granularity;
  i->recommended_granularity = caps.recommended_granularity;
  i->multicast_granularity = caps.multicast_granularity;
}

SYMHEAP__EXPORT symheap_result_t
symheap_device_adaptor_get(int i, symheap_device_adaptor_info_t *info) {
  symheap__builtins_load();
  symheap__device_table_t t;
  if (symheap__device_get(i, &t) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  symheap_device_adaptor_info_t mine;
  memset(&mine, 0, sizeof mine);
  mine.struct_size = sizeof mine;
  snprintf(mine.name, sizeof mine.name, "%s", t.ops.name);
  mine.available =
      t.ops.available(&symheap__host_services, mine.why, sizeof mine.why);
  if (mine.available)
    mine.why[0] = '\0';
  mine.has_multicast = t.has_multicast;
  mine.has_ipc = t.has_ipc;
  if (mine.available)
    probe_caps(&t, &mine);
  return COPY_OUT(info, mine, "symheap_device_adaptor_get");
}

SYMHEAP__EXPORT symheap_result_t symheap_device_adaptor_choice(char *name,
                                                               size_t name_len,
                                                               char *why,
                                                               size_t why_len) {
  if (!name || !why || !name_len || !why_len)
    return null_arg("symheap_device_adaptor_choice");
  symheap__builtins_load();
  const char *want = "auto";
  symheap_result_t r = symheap__cfg_string("SYMHEAP_DEVICE", &want);
  symheap__device_table_t t;
  if (r == SYMHEAP_SUCCESS)
    r = symheap__device_select(want, &t, why, why_len);
  if (r == SYMHEAP_SUCCESS)
    snprintf(name, name_len, "%s", t.ops.name);
  return r;
}

SYMHEAP__EXPORT symheap_result_t symheap_plugin_count(int *count) {
  if (!count)
    return null_arg("symheap_plugin_count");
  *count = symheap__plugin_count();
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_plugin_get(int i,
                                                    symheap_plugin_info_t *info) {
  const char *path = NULL;
  const symheap_plugin_t *p = symheap__plugin_get(i, &path);
  if (!p)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_plugin_get: no plugin %d", i);
  symheap_plugin_info_t mine;
  memset(&mine, 0, sizeof mine);
  mine.struct_size = sizeof mine;
  mine.abi_major = p->abi_major;
  mine.abi_minor = p->abi_minor;
  snprintf(mine.name, sizeof mine.name, "%s", p->name);
  snprintf(mine.path, sizeof mine.path, "%s", path);
  if (p->device)
    snprintf(mine.device, sizeof mine.device, "%s", p->device->name);
  if (p->ccl) {
    snprintf(mine.ccl, sizeof mine.ccl, "%s", p->ccl->name);
    mine.ccl_joins =
        SYMHEAP_HAS_MEMBER(p->ccl, symheap_ccl_ops, open) && p->ccl->open;
  }
  if (p->hooks)
    snprintf(mine.hooks_target, sizeof mine.hooks_target, "%s",
             p->hooks->target);
  symheap__plugin_hooked_ops(i, mine.hooked, sizeof mine.hooked);
  return COPY_OUT(info, mine, "symheap_plugin_get");
}

SYMHEAP__EXPORT symheap_result_t symheap_ccl_env_choice(char *name,
                                                        size_t name_len,
                                                        char *why,
                                                        size_t why_len) {
  if (!name || !why || !name_len || !why_len)
    return null_arg("symheap_ccl_env_choice");
  const char *because = "";
  const symheap_ccl_ops *plugin = NULL;
  symheap_result_t r;
  symheap__ccl_kind_t kind = symheap__ccl_env_choice(&r, &because, &plugin);
  if (r != SYMHEAP_SUCCESS)
    return r;
  snprintf(name, name_len, "%s",
           kind == SYMHEAP__CCL_MPI      ? "mpi"
           : kind == SYMHEAP__CCL_PLUGIN ? plugin->name
                                         : "local");
  snprintf(why, why_len, "%s", because);
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t symheap_ccl_mpi_path(char *path, size_t len) {
  if (!path || !len)
    return null_arg("symheap_ccl_mpi_path");
  return symheap__find_library("libsymheap-ccl-mpi.so", path, len);
}

SYMHEAP__EXPORT symheap_result_t symheap_window_path(char *name, size_t len) {
  static const char *const paths[] = {"symheap", "nccl", "ccl"};
  if (!name || !len)
    return null_arg("symheap_window_path");
  int path = 0;
  symheap_result_t r = symheap__cfg_choice("SYMHEAP_WINDOW_PATH", &path);
  if (r == SYMHEAP_SUCCESS)
    snprintf(name, len, "%s", paths[path]);
  return r;
}

SYMHEAP__EXPORT symheap_result_t symheap_multicast_disabled_by(const char **by) {
  if (!by)
    return null_arg("symheap_multicast_disabled_by");
  return symheap__multicast_disabled_by(by);
}

SYMHEAP__EXPORT symheap_result_t symheap_net_probe(symheap_net_info_t *info) {
  symheap_net_info_t mine;
  memset(&mine, 0, sizeof mine);
  mine.struct_size = sizeof mine;
  int mode = SYMHEAP__NET_AUTO;
  symheap__net_table_t tab;
  symheap_result_t r = symheap__net_mode(&mode, &tab);
  if (r != SYMHEAP_SUCCESS)
    return r;
  /* The public numbers are the internal ones, in the same order. */
  mine.mode = mode;
  if (mode == SYMHEAP__NET_ADAPTOR) {
    snprintf(mine.adaptor, sizeof mine.adaptor, "%s", tab.ops.name);
    snprintf(mine.why_not, sizeof mine.why_not,
             "SYMHEAP_NET=%s: one-sided access through that net adaptor, no "
             "RDMA registration",
             tab.ops.name);
    return COPY_OUT(info, mine, "symheap_net_probe");
  }
  const symheap_netops_t *ops = symheap__builtin_net("ibverbs");
  void *ctx = NULL;
  if (ops)
    snprintf(mine.adaptor, sizeof mine.adaptor, "%s", ops->name);
  if (mode == SYMHEAP_NET_NONE)
    snprintf(mine.why_not, sizeof mine.why_not, "SYMHEAP_NET=none");
  else if (!ops)
    snprintf(mine.why_not, sizeof mine.why_not,
             "this libsymheap was built without a net adaptor");
  else if (ops->open(&ctx) != SYMHEAP_SUCCESS)
    snprintf(mine.why_not, sizeof mine.why_not, "%s", symheap__error_peek());
  else {
    mine.available = 1;
    snprintf(mine.device, sizeof mine.device, "%s", ops->device_name(ctx));
    ops->close(ctx);
  }
  return COPY_OUT(info, mine, "symheap_net_probe");
}

SYMHEAP__EXPORT symheap_result_t symheap_net_adaptor_count(int *count) {
  if (!count)
    return null_arg("symheap_net_adaptor_count");
  symheap__builtins_load();
  *count = symheap__net_list(NULL, 0);
  return SYMHEAP_SUCCESS;
}

SYMHEAP__EXPORT symheap_result_t
symheap_net_adaptor_get(int i, symheap_net_adaptor_info_t *info) {
  symheap__net_table_t all[16];
  symheap__builtins_load();
  int n = symheap__net_list(all, 16);
  if (i < 0 || i >= n || i >= 16)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_net_adaptor_get: no net adaptor %d (%d "
                          "known)",
                          i, n);
  symheap_net_adaptor_info_t mine;
  memset(&mine, 0, sizeof mine);
  mine.struct_size = sizeof mine;
  const symheap_net_ops *ops = &all[i].ops;
  snprintf(mine.name, sizeof mine.name, "%s", ops->name);
  mine.available = ops->available(&symheap__host_services, mine.why,
                                  sizeof mine.why) != 0;
  if (mine.available) {
    mine.why[0] = '\0';
    if (ops->providers(&symheap__host_services, mine.providers,
                       sizeof mine.providers) != SYMHEAP_SUCCESS)
      snprintf(mine.providers, sizeof mine.providers, "(cannot list: %s)",
               symheap__error_peek());
    /* One per line from the adaptor; one line here. */
    for (char *p = mine.providers; *p; p++)
      if (*p == '\n')
        *p = p[1] ? ',' : '\0';
  }
  return COPY_OUT(info, mine, "symheap_net_adaptor_get");
}

_Static_assert(SYMHEAP__NET_AUTO == SYMHEAP_NET_AUTO &&
                   SYMHEAP__NET_IBVERBS == SYMHEAP_NET_ALWAYS &&
                   SYMHEAP__NET_NONE == SYMHEAP_NET_NONE &&
                   SYMHEAP__NET_ADAPTOR == SYMHEAP_NET_ADAPTOR,
               "symheap_net_info_t.mode is SYMHEAP__NET_* as the core reads it");

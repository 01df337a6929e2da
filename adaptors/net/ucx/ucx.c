/* The UCX net adaptor's table, its variables and its plugin entry.
 *
 * Built into libsymheap (symheap_builtin_ucx, registered as the net adaptor
 * "ucx", chosen by SYMHEAP_NET=ucx).  UCX itself is opened at run time
 * (ucx_lib.c); its transports are chosen by UCX's own variables (UCX_TLS,
 * UCX_NET_DEVICES: docs/network.md), which symheap does not duplicate. */
#include <string.h>

#include "ucx.h"

#ifdef SYMHEAP_PLUGIN_BUILD
#define UCX_NAME "ucx_plugin"
#else
#define UCX_NAME "ucx"
#endif

const symheap_host_services_t *ucx_svc;

static int ucx_available(const symheap_host_services_t *svc, char *why,
                         size_t len) {
  (void)svc;
  return ucx_load(why, len);
}

static const symheap_net_ops ucx_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_net_ops),
    .name = UCX_NAME,
    .available = ucx_available,
    .providers = ucx_providers,
    .open = ucx_open,
    .close = ucx_close,
    .query = ucx_query,
    .connect = ucx_connect,
    .mem_register = ucx_mem_register,
    .mem_deregister = ucx_mem_deregister,
    .rkey_import = ucx_rkey_import,
    .rkey_release = ucx_rkey_release,
    .put = ucx_put,
    .get = ucx_get,
    .atomic = ucx_atomic,
    .put_signal = ucx_put_signal,
    .fence = ucx_fence,
    .quiet = ucx_quiet,
    .progress = ucx_progress,
    .wait_fds = ucx_wait_fds,
};

static const symheap_param_t ucx_params[] = {
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_UCX_LIBRARY",
     UCX_LIBRARY_DEFAULT, 0, 0, NULL,
     "the UCP library the ucx net adaptor loads with dlopen (a name searched "
     "the usual way, or a path); its transports are UCX's own variables: "
     "UCX_TLS (e.g. self,tcp) and UCX_NET_DEVICES (e.g. eth0)"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_BOOL, "SYMHEAP_UCX_WAKEUP", "1", 0,
     1, NULL,
     "1: ask UCX for wakeup support (UCP_FEATURE_WAKEUP), so a rank that only "
     "waits sleeps on the worker's event fd and is woken by its peers' "
     "requests; 0: a waiting rank polls (transports without events stay "
     "usable)"},
};

static symheap_result_t ucx_plugin_init(const symheap_host_services_t *svc) {
  if (!SYMHEAP_HAS_MEMBER(svc, symheap_host_services_t, now_ns))
    return svc->error(SYMHEAP_ERR_PLUGIN,
                      "the ucx net adaptor needs host services with "
                      "param_define and now_ns (a newer libsymheap)");
  ucx_svc = svc;
  return symheap_params_define(svc, "ucx", ucx_params,
                               sizeof ucx_params / sizeof ucx_params[0]);
}

/* UCX stays loaded: it keeps threads and state. */
static void ucx_plugin_fini(void) {}

SYMHEAP_PLUGIN_ENTRY(ucx) = {
    .abi_major = SYMHEAP_PLUGIN_ABI_MAJOR,
    .abi_minor = SYMHEAP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(symheap_plugin_t),
    .name = UCX_NAME,
    .init = ucx_plugin_init,
    .fini = ucx_plugin_fini,
    .net = &ucx_ops,
};

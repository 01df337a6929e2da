/* The libfabric net adaptor's table, its variables and its plugin entry.
 *
 * Built into libsymheap (symheap_builtin_ofi, registered as the net adaptor
 * "ofi") or, copied out of the tree, as a plugin:
 *   cc -shared -fPIC -fvisibility=hidden -DSYMHEAP_PLUGIN_BUILD \
 *      $(pkg-config --cflags symheap) adaptors/net/ofi/ofi*.c -o libmine.so
 * (the plugin build calls itself "ofi_plugin" so both can be in one
 * process).  libfabric itself is opened at run time (ofi_lib.c). */
#include <string.h>

#include "ofi.h"

#ifdef SYMHEAP_PLUGIN_BUILD
#define OFI_NAME "ofi_plugin"
#else
#define OFI_NAME "ofi"
#endif

const symheap_host_services_t *ofi_svc;

static int ofi_available(const symheap_host_services_t *svc, char *why,
                         size_t len) {
  (void)svc;
  return ofi_load(why, len);
}

static const symheap_net_ops ofi_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_net_ops),
    .name = OFI_NAME,
    .available = ofi_available,
    .providers = ofi_providers,
    .open = ofi_open,
    .close = ofi_close,
    .query = ofi_query,
    .connect = ofi_connect,
    .mem_register = ofi_mem_register,
    .mem_deregister = ofi_mem_deregister,
    .rkey_import = ofi_rkey_import,
    .rkey_release = ofi_rkey_release,
    .put = ofi_put,
    .get = ofi_get,
    .atomic = ofi_atomic,
    .put_signal = ofi_put_signal,
    .fence = ofi_fence,
    .quiet = ofi_quiet,
    .progress = ofi_progress,
    .wait_fds = ofi_wait_fds,
};

static const symheap_param_t ofi_params[] = {
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_NET_PROVIDER",
     NULL, 0, 0, NULL,
     "the libfabric provider the net adaptor opens, as FI_PROVIDER names it "
     "(\"tcp;ofi_rxm\", \"shm\", \"verbs;ofi_rxm\"...); unset: the first "
     "that offers FI_EP_RDM with RMA, shm last; symheap-info lists them"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_NET_DOMAIN", NULL,
     0, 0, NULL,
     "the provider's domain or fabric to open (an interface such as \"lo\" "
     "or \"eth0\" for tcp, a device such as \"mlx5_0\" for verbs; fi_info "
     "lists them); unset: the provider's first"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_BOOL, "SYMHEAP_NET_HMEM", "0", 0, 1,
     NULL,
     "1: ask libfabric for a provider that registers device memory "
     "(FI_HMEM, CUDA) first, so GPU memory is reached without staging"},
    /* A choice, not text: the core then refuses a bad value at every comm
     * init, whichever net adaptor (or none) the comm opens. */
    {sizeof(symheap_param_t), SYMHEAP_PARAM_CHOICE, "SYMHEAP_OFI_PUT_SIGNAL",
     "auto", 0, 0, "auto|atomic",
     "how put_signal travels: auto = one message (the signal in the write's "
     "remote CQ data, applied by the target's progress) where the provider "
     "carries 8 bytes of it and applies atomics in software (tcp;ofi_rxm, "
     "shm), else put, fence, atomic; atomic = always put, fence, atomic"},
    {sizeof(symheap_param_t), SYMHEAP_PARAM_STRING, "SYMHEAP_OFI_LIBRARY",
     OFI_LIBRARY_DEFAULT, 0, 0, NULL,
     "the libfabric library the ofi net adaptor loads with dlopen (a name "
     "searched the usual way, or a path)"},
};

static symheap_result_t ofi_plugin_init(const symheap_host_services_t *svc) {
  if (!SYMHEAP_HAS_MEMBER(svc, symheap_host_services_t, now_ns))
    return svc->error(SYMHEAP_ERR_PLUGIN,
                      "the ofi net adaptor needs host services with "
                      "param_define and now_ns (a newer libsymheap)");
  ofi_svc = svc;
  return symheap_params_define(svc, "ofi", ofi_params,
                               sizeof ofi_params / sizeof ofi_params[0]);
}

/* libfabric stays loaded: its providers keep threads and state. */
static void ofi_plugin_fini(void) {}

SYMHEAP_PLUGIN_ENTRY(ofi) = {
    .abi_major = SYMHEAP_PLUGIN_ABI_MAJOR,
    .abi_minor = SYMHEAP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(symheap_plugin_t),
    .name = OFI_NAME,
    .init = ofi_plugin_init,
    .fini = ofi_plugin_fini,
    .net = &ofi_ops,
};

/* The test net adaptor "loop" (net_loop.c) as a plugin, for programs that
 * cannot register it themselves: the OpenSHMEM tests and the specification's
 * examples run across pretend hosts with
 *   SYMHEAP_PLUGIN_PATH=build/test/plugins SYMHEAP_PLUGIN=netloop
 *   SYMHEAP_NET=loop
 * (test/shmem/run_hosts.sh). */
#include "net_loop.h"

static symheap_result_t plugin_init(const symheap_host_services_t *s) {
  (void)s;
  return SYMHEAP_SUCCESS;
}

static void plugin_fini(void) {}

SYMHEAP_PLUGIN_EXPORT const symheap_plugin_t symheap_plugin_v1 = {
    .abi_major = SYMHEAP_PLUGIN_ABI_MAJOR,
    .abi_minor = SYMHEAP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(symheap_plugin_t),
    .name = "netloop",
    .init = plugin_init,
    .fini = plugin_fini,
    .net = &net_loop_ops,
};

/* Which net adaptor SYMHEAP_NET names: one of the net registry's adaptors
 * (base/net_registry.c: built-ins, plugins, symheap_register_net_adaptor),
 * beside the RDMA registration switch's own words (auto, ibverbs, none:
 * win/rdma.c, through the ibverbs adaptor of symheap_netops.h). */
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/plugin.h"
#include "net.h"

symheap_result_t symheap__net_mode(int *mode, symheap__net_table_t *tab) {
  const char *v = NULL;
  symheap_result_t r = symheap__cfg_string("SYMHEAP_NET", &v);
  *mode = SYMHEAP__NET_AUTO;
  if (r != SYMHEAP_SUCCESS || !v || !strcmp(v, "auto"))
    return r;
  if (!strcmp(v, "ibverbs") || !strcmp(v, "none")) {
    *mode = !strcmp(v, "none") ? SYMHEAP__NET_NONE : SYMHEAP__NET_IBVERBS;
    return SYMHEAP_SUCCESS;
  }
  /* Found by name only: whether it can run here is asked when a comm that
   * spans hosts opens it (net_comm.c), so a one-host comm never needs it. */
  symheap__builtins_load();
  symheap__net_table_t all[16];
  int n = symheap__net_list(all, 16);
  char names[256] = "";
  for (int i = 0; i < n && i < 16; i++) {
    if (!strcmp(all[i].ops.name, v)) {
      *tab = all[i];
      *mode = SYMHEAP__NET_ADAPTOR;
      return SYMHEAP_SUCCESS;
    }
    snprintf(names + strlen(names), sizeof names - strlen(names), ", %s",
             all[i].ops.name);
  }
  return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                        "SYMHEAP_NET='%s': not a registered net adaptor "
                        "(accepted: auto, ibverbs, none%s)",
                        v, names);
}

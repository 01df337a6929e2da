/* The adaptor-facing public calls: the services the core lends, registering
 * a device adaptor, and a comm over a caller's communicator of a built-in
 * ccl adaptor (symheap_comm_init_nccl). */
#include <string.h>

#include "base/net_registry.h"
#include "base/plugin.h"

SYMHEAP__EXPORT const symheap_host_services_t *symheap_host_services(void) {
  /* The built-ins' variables are declared before anyone asks for them. */
  symheap__builtins_load();
  return &symheap__host_services;
}

SYMHEAP__EXPORT symheap_result_t
symheap_register_device_adaptor(const symheap_device_ops *ops) {
  symheap__builtins_load();
  symheap_result_t r = symheap__device_add(ops);
  if (r == SYMHEAP_SUCCESS)
    SYMHEAP_INFO("registered device adaptor '%s'", ops->name);
  return r;
}

SYMHEAP__EXPORT symheap_result_t
symheap_register_net_adaptor(const symheap_net_ops *ops) {
  /* SYMHEAP_NET's own words (comm/net_select.c) would shadow the name. */
  if (ops && ops->name &&
      (!strcmp(ops->name, "auto") || !strcmp(ops->name, "ibverbs") ||
       !strcmp(ops->name, "none")))
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_register_net_adaptor: '%s' is a reserved "
                          "SYMHEAP_NET word",
                          ops->name);
  symheap__builtins_load(); /* a built-in's name stays taken */
  symheap_result_t r = symheap__net_add(ops);
  if (r == SYMHEAP_SUCCESS)
    SYMHEAP_INFO("registered net adaptor '%s'", ops->name);
  return r;
}

SYMHEAP__EXPORT symheap_result_t symheap_comm_init_nccl(symheap_comm_t *comm,
                                                        void *nccl_comm) {
  if (!comm || !nccl_comm)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "symheap_comm_init_nccl: comm or nccl_comm is NULL");
  const symheap_ccl_ops *ops = symheap__builtin_ccl("nccl");
  if (!ops || !SYMHEAP_HAS_MEMBER(ops, symheap_ccl_ops, wrap) || !ops->wrap)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "symheap_comm_init_nccl: this libsymheap has no "
                          "nccl ccl adaptor");
  void *ctx = NULL;
  symheap_result_t r = ops->wrap(&symheap__host_services, nccl_comm, &ctx);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(r, "symheap_comm_init_nccl");
  /* fini is set: ctx is the comm's from here on, released at destroy or
   * failure; the caller's communicator stays the caller's. */
  return symheap_comm_init_ccl(comm, ops, ctx);
}

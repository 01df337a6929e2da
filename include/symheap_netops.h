/* Internal, never installed: the small table between the core's RDMA
 * registration (core/win/rdma.c) and the built-in net adaptor that speaks
 * verbs (adaptors/net/ibverbs/).  Written against the public headers alone,
 * so the adaptor stays on its side of the boundary; the public, versioned
 * net table replaces it. */
#ifndef SYMHEAP_NETOPS_H
#define SYMHEAP_NETOPS_H

#include <stdint.h>

#include "symheap_adaptor.h"

typedef struct symheap_netops {
  const char *name; /* what SYMHEAP_NET=<name> selects */
  /* Once, when the built-ins are admitted: the adaptor declares its own
   * variables (symheap-info -e lists them from then on). */
  symheap_result_t (*init)(const symheap_host_services_t *svc);
  /* Open the device the adaptor's variables name: a context, or
   * SYMHEAP_ERR_UNSUPPORTED saying why there is none here. */
  symheap_result_t (*open)(void **ctx);
  void (*close)(void *ctx);
  /* The device's name, and its native objects (context, protection
   * domain) for symheap_comm_rdma_info. */
  const char *(*device_name)(void *ctx);
  void (*native)(void *ctx, void **context, void **pd);
  /* Register [addr, addr + len) for remote read, write and atomics (device
   * memory by its dma-buf when dmabuf_fd >= 0): the region and the keys a
   * peer reaches it by. */
  symheap_result_t (*reg_mr)(void *ctx, void *addr, size_t len, int dmabuf_fd,
                             uint64_t dmabuf_offset, void **mr, uint32_t *lkey,
                             uint32_t *rkey);
  symheap_result_t (*dereg_mr)(void *ctx, void *mr);
} symheap_netops_t;

/* A built-in net adaptor's entry: the build lists every one it links. */
#define SYMHEAP_NET_ENTRY(id) const symheap_netops_t symheap_builtin_net_##id

#endif

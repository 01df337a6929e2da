/* The libfabric net adaptor ("ofi"): what its files share.
 *
 * Written as a vendor would write it: the public headers, the host services
 * and our declarations of libfabric's ABI (ofi_api.h, so no libfabric-dev is
 * needed to build), whose inline wrappers (ofi_api_calls.h: fi_writemsg,
 * fi_mr_regattr...) call through the ops tables of the objects libfabric
 * returns.  The few
 * functions libfabric really exports (fi_getinfo, fi_fabric, fi_freeinfo,
 * fi_dupinfo, fi_strerror) are looked up in the library opened at run time
 * (ofi_lib.c), so nothing links libfabric.
 *
 * Files: ofi_lib.c (loading, providers, choosing an fi_info), ofi_ep.c (the
 * endpoint: open, connect, progress, quiet), ofi_mr.c (registration, keys,
 * local descriptors, the bounce arena), ofi_rma.c (put, get, atomics,
 * put_signal), ofi.c (variables, the table, the plugin entry). */
#ifndef SYMHEAP_OFI_H
#define SYMHEAP_OFI_H

#include <stddef.h>
#include <stdint.h>

#include "ofi_api_calls.h"

#include "symheap_adaptor.h"

/* Every function of these files that is not static is hidden
 * (-fvisibility=hidden), so the built-in and a plugin never clash. */
#define OFI_LIBRARY_DEFAULT "libfabric.so.1"
#define OFI_API_VERSION FI_VERSION(1, 9)

/* libfabric's exported functions, looked up at run time. */
typedef struct {
  int (*getinfo)(uint32_t version, const char *node, const char *service,
                 uint64_t flags, const struct fi_info *hints,
                 struct fi_info **info);
  void (*freeinfo)(struct fi_info *info);
  struct fi_info *(*dupinfo)(const struct fi_info *info);
  int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
                void *context);
  const char *(*strerror)(int errnum);
} ofi_api_t;

extern const symheap_host_services_t *ofi_svc;
extern ofi_api_t ofi_api;

/* Open libfabric once (SYMHEAP_OFI_LIBRARY); nonzero when loaded, else
 * why (naming the Debian package) in `why`. */
int ofi_load(char *why, size_t len);
/* The fi_info to open for `provider` (NULL: the first that offers RDM with
 * RMA) and SYMHEAP_NET_DOMAIN; the caller frees it with ofi_api.freeinfo.
 * An unknown provider is INVALID_ARG listing the available ones. */
symheap_result_t ofi_choose(const char *provider, struct fi_info **out);
/* The providers here that offer FI_EP_RDM with RMA, one per line. */
symheap_result_t ofi_providers(const symheap_host_services_t *svc, char *buf,
                               size_t len);
/* "<what>: <libfabric's text> (<code>)", recorded; returns r. */
symheap_result_t ofi_fail(symheap_result_t r, int ret, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A local registration (mem_register's *mr). */
typedef struct {
  struct fid_mr *mr;
  void *desc;
  char *base;
  size_t size;
  uint64_t key;
} ofi_mr_t;

/* A peer's key as it travels (mem_register's key bytes). */
#define OFI_KEY_MAGIC 0x6f66696bu /* "ofik" */
typedef struct {
  uint32_t magic;
  uint32_t reserved;
  uint64_t key;
  uint64_t base; /* the address to add offsets to (0: offset addressing) */
  uint64_t size;
} ofi_key_t;

/* Memory registered only for the duration of operations (FI_MR_LOCAL with
 * a buffer outside every registration), released at quiet. */
typedef struct ofi_tmp_mr {
  struct fid_mr *mr;
  struct ofi_tmp_mr *next;
} ofi_tmp_mr_t;

typedef struct {
  const symheap_host_services_t *svc;
  struct fi_info *info;
  struct fid_fabric *fabric;
  struct fid_domain *domain;
  struct fid_av *av;
  struct fid_cq *cq;
  int cq_fd; /* the CQ's wait object (FI_WAIT_FD), or -1: none */
  struct fid_cntr *cntr;
  struct fid_ep *ep;
  fi_addr_t *peers;
  int rank, nranks;
  /* Operations counted by cntr: issued ones, and the counter's values
   * (success + error) seen complete at the last quiet. */
  uint64_t issued;
  uint64_t errors_seen;
  uint64_t next_key;
  int timeout_ms;
  /* What the provider asked for (mr_mode) and offers. */
  int mr_local, virt_addr, prov_key, mr_endpoint, has_fence, hmem, manual;
  /* FI_ATOMIC offered and implemented (ofi_ep.c: check_atomics). */
  int atomics;
  uint64_t fence_next; /* FI_FENCE for the next operation, after fence() */
  /* Writes up to this size are placed at the target in the order issued
   * (FI_ORDER_WAW and max_order_waw_size); 0: no such promise. */
  size_t waw_size;
  /* Small puts and atomic operands are copied here so the caller's buffer
   * is free on return; reset by quiet. */
  char *bounce;
  size_t bounce_size, bounce_used;
  struct fid_mr *bounce_mr;
  void *bounce_desc;
  ofi_tmp_mr_t *tmp;
  char provider[64], fabric_name[64];
  /* This rank's regions by key (adaptor-chosen keys only), for what is
   * applied here by the CPU (ofi_local.c). */
  ofi_mr_t **regions;
  size_t nregions;
  /* put_signal as one message (remote CQ data), atomics to this rank by
   * the CPU: where the provider's atomics are software at the target. */
  int sig_data, self_cpu;
  /* Ranks given operations since the last complete quiet (nranks bytes),
   * named when a quiet times out. */
  unsigned char *touched;
} ofi_ctx_t;

/* Copies of puts up to this size are made (the caps' inject_size). */
#define OFI_BOUNCE_MAX 8192
#define OFI_BOUNCE_SIZE (1u << 20)

/* ofi_ep.c */
symheap_result_t ofi_open(const symheap_host_services_t *svc,
                          const symheap_net_init_t *args, void **ctx,
                          void *addr, size_t *addr_len);
void ofi_close(void *ctx);
symheap_result_t ofi_query(void *ctx, symheap_net_caps_t *caps);
symheap_result_t ofi_connect(void *ctx, int nranks, const void *addrs,
                             size_t stride);
symheap_result_t ofi_progress(void *ctx);
int ofi_wait_fds(void *ctx, int *fds, int max);
symheap_result_t ofi_quiet(void *ctx, int timeout_ms);
symheap_result_t ofi_fence(void *ctx);
/* One step of a loop retrying an operation that returned -FI_EAGAIN:
 * progress, and 1 while the deadline (now_ns) is ahead, else 0.  */
uint64_t ofi_deadline(const ofi_ctx_t *c);
int ofi_again(ofi_ctx_t *c, uint64_t deadline);

/* ofi_mr.c */
symheap_result_t ofi_mem_register(void *ctx, void *ptr, size_t size,
                                  int is_device, void **mr, void *key,
                                  size_t *key_len);
symheap_result_t ofi_mem_deregister(void *ctx, void *mr);
symheap_result_t ofi_rkey_import(void *ctx, int peer, const void *key,
                                 size_t key_len, void **rkey);
void ofi_rkey_release(void *ctx, void *rkey);
/* The descriptor for a local buffer: mr's, or NULL where the provider does
 * not need one, or a registration made now and released at quiet. */
symheap_result_t ofi_local_desc(ofi_ctx_t *c, const void *buf, size_t len,
                                void *mr, void **desc);
/* A copy of len bytes in the bounce arena (quiet first when it is full);
 * *desc is the arena's descriptor. */
symheap_result_t ofi_bounce(ofi_ctx_t *c, const void *src, size_t len,
                            void **copy, void **desc);
symheap_result_t ofi_bounce_open(ofi_ctx_t *c);
void ofi_bounce_close(ofi_ctx_t *c);
/* After a quiet: the arena is free again and temporary registrations go. */
void ofi_release_after_quiet(ofi_ctx_t *c);

/* ofi_local.c */
/* Whether `prov` applies atomics in software at the target's progress. */
int ofi_soft_atomics(const char *prov);
symheap_result_t ofi_regions_add(ofi_ctx_t *c, ofi_mr_t *m);
void ofi_regions_remove(ofi_ctx_t *c, const ofi_mr_t *m);
/* An atomic to this rank itself applied here (1), or not ours to (0). */
int ofi_self_atomic(ofi_ctx_t *c, int peer, symheap_net_amo_t op, size_t size,
                    const ofi_key_t *k, uint64_t offset, const void *operand,
                    const void *compare, void *fetch);
/* A signal as 64 bits of CQ data (1), or it does not fit (0). */
int ofi_sig_encode(const ofi_ctx_t *c, const ofi_key_t *k, uint64_t sig_offset,
                   uint64_t value, symheap_net_amo_t op, uint64_t *data);
/* The target side: apply the signal a remote CQ entry carries. */
void ofi_sig_apply(ofi_ctx_t *c, uint64_t data);

/* ofi_rma.c */
symheap_result_t ofi_put(void *ctx, int peer, const void *src, void *mr,
                         size_t len, void *rkey, uint64_t offset,
                         unsigned flags);
symheap_result_t ofi_get(void *ctx, int peer, void *dst, void *mr, size_t len,
                         void *rkey, uint64_t offset, unsigned flags);
symheap_result_t ofi_atomic(void *ctx, int peer, symheap_net_amo_t op,
                            size_t size, void *rkey, uint64_t offset,
                            const void *operand, const void *compare,
                            void *fetch);
symheap_result_t ofi_put_signal(void *ctx, int peer, const void *src, void *mr,
                                size_t len, void *rkey, uint64_t offset,
                                void *sig_rkey, uint64_t sig_offset,
                                uint64_t value, symheap_net_amo_t sig_op,
                                unsigned flags);

#endif

/* The UCX net adaptor ("ucx"): what its files share.
 *
 * Written as a vendor would write it: the public headers, the host services
 * and our declarations of UCP's ABI (ucx_api.h, so no libucx-dev is needed
 * to build).  UCP's functions are looked up in libucp.so.0, opened at run
 * time (ucx_lib.c), so nothing links UCX.
 *
 * One UCP context and one worker per symheap net context, the worker in
 * UCS_THREAD_MODE_SERIALIZED: the adaptor does not report
 * SYMHEAP_NET_CAP_THREAD_SAFE, so the core holds one lock around every call
 * (its progress thread and the comm's thread never enter together), which
 * is what SERIALIZED asks.  Transports are UCX's to choose: UCX_TLS and
 * UCX_NET_DEVICES, read by ucp_init from the environment as always.
 *
 * Files: ucx_lib.c (loading, the transports for symheap-info, errors),
 * ucx_ep.c (context, worker, endpoints, progress, wait_fds), ucx_quiet.c
 * (requests, quiet, fence),
 * ucx_mr.c (mem_map, keys as bytes, rkeys), ucx_rma.c (put, get, atomics,
 * put_signal), ucx.c (variables, the table, the plugin entry). */
#ifndef SYMHEAP_UCX_H
#define SYMHEAP_UCX_H

#include <stddef.h>
#include <stdint.h>

#include "ucx_api.h"

#include "symheap_adaptor.h"

#define UCX_LIBRARY_DEFAULT "libucp.so.0"

/* UCP's exported functions, looked up at run time. */
typedef struct {
  ucs_status_t (*init_version)(unsigned, unsigned, const ucp_params_t *,
                               const ucp_config_t *, ucp_context_h *);
  void (*cleanup)(ucp_context_h);
  void (*context_print_info)(const ucp_context_h, void *stream);
  void (*get_version)(unsigned *, unsigned *, unsigned *);
  ucs_status_t (*worker_create)(ucp_context_h, const ucp_worker_params_t *,
                                ucp_worker_h *);
  void (*worker_destroy)(ucp_worker_h);
  ucs_status_t (*worker_query)(ucp_worker_h, ucp_worker_attr_t *);
  void (*worker_release_address)(ucp_worker_h, ucp_address_t *);
  unsigned (*worker_progress)(ucp_worker_h);
  ucs_status_t (*worker_get_efd)(ucp_worker_h, int *);
  ucs_status_t (*worker_arm)(ucp_worker_h);
  ucs_status_t (*worker_fence)(ucp_worker_h);
  ucs_status_ptr_t (*worker_flush_nbx)(ucp_worker_h,
                                       const ucp_request_param_t *);
  ucs_status_t (*ep_create)(ucp_worker_h, const ucp_ep_params_t *,
                            ucp_ep_h *);
  ucs_status_ptr_t (*ep_close_nbx)(ucp_ep_h, const ucp_request_param_t *);
  ucs_status_t (*mem_map)(ucp_context_h, const ucp_mem_map_params_t *,
                          ucp_mem_h *);
  ucs_status_t (*mem_unmap)(ucp_context_h, ucp_mem_h);
  ucs_status_t (*rkey_pack)(ucp_context_h, ucp_mem_h, void **, size_t *);
  void (*rkey_buffer_release)(void *);
  ucs_status_t (*ep_rkey_unpack)(ucp_ep_h, const void *, ucp_rkey_h *);
  void (*rkey_destroy)(ucp_rkey_h);
  ucs_status_ptr_t (*put_nbx)(ucp_ep_h, const void *, size_t, uint64_t,
                              ucp_rkey_h, const ucp_request_param_t *);
  ucs_status_ptr_t (*get_nbx)(ucp_ep_h, void *, size_t, uint64_t, ucp_rkey_h,
                              const ucp_request_param_t *);
  ucs_status_ptr_t (*atomic_op_nbx)(ucp_ep_h, ucp_atomic_op_t, const void *,
                                    size_t, uint64_t, ucp_rkey_h,
                                    const ucp_request_param_t *);
  ucs_status_t (*request_check_status)(void *);
  void (*request_free)(void *);
  const char *(*status_string)(ucs_status_t);
} ucx_api_t;

extern const symheap_host_services_t *ucx_svc;
extern ucx_api_t ucx_api;

/* Open libucp once (SYMHEAP_UCX_LIBRARY); nonzero when loaded, else why
 * (naming the Debian package) in `why`. */
int ucx_load(char *why, size_t len);
/* The transports UCX offers here (as UCX_TLS and UCX_NET_DEVICES leave
 * them), one "transport/device" per line. */
symheap_result_t ucx_providers(const symheap_host_services_t *svc, char *buf,
                               size_t len);
/* "<what>: <UCX's text> (<code>)", recorded; returns r. */
symheap_result_t ucx_fail(symheap_result_t r, ucs_status_t st,
                          const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The symheap result for a UCX failure status. */
symheap_result_t ucx_result(ucs_status_t st);

struct ucx_ctx;
/* A peer: its endpoint, and whether UCX reported it failed. */
typedef struct {
  struct ucx_ctx *c;
  int rank;
  ucp_ep_h ep;
  ucs_status_t failed; /* UCS_OK, or what the error handler was told */
} ucx_peer_t;

/* A local registration (mem_register's *mr), listed in its context:
 * close unmaps what is still mapped (ucp_cleanup asserts when a mapping
 * outlives it). */
typedef struct ucx_mr {
  ucp_mem_h memh;
  char *base;
  size_t size;
  struct ucx_mr *prev, *next;
} ucx_mr_t;

/* A peer's key as it travels (mem_register's key bytes): this header,
 * then ucp_rkey_pack's bytes. */
#define UCX_KEY_MAGIC 0x7563786bu /* "ucxk" */
typedef struct {
  uint32_t magic;
  uint16_t packed_len; /* ucp_rkey_pack's bytes that follow */
  uint16_t reserved;
  uint64_t base; /* the region's address: UCP addresses by VA */
  uint64_t size; /* its length: the initiator refuses what lies outside */
} ucx_key_hdr_t;
#define UCX_PACKED_MAX (SYMHEAP_NET_KEY_MAX - sizeof(ucx_key_hdr_t))

/* An imported key (rkey_import's *rkey): UCX's, unpacked on `peer`'s
 * endpoint, and the region it reaches.  UCX's tcp transport applies RMA
 * in software at the target without checking keys, so the bounds are
 * checked here, before anything is sent (ucx_rma.c).  Listed in its
 * context: close destroys what the caller did not release (UCX warns of,
 * and leaks, an unpacked key that outlives its worker). */
typedef struct ucx_rkey {
  ucp_rkey_h rkey;
  uint64_t base, size;
  int peer;
  struct ucx_rkey *prev, *next;
} ucx_rkey_t;

/* Atomic operands and discarded results live until quiet (UCP reads the
 * operand, and writes a result, when the operation completes). */
#define UCX_ARENA_SLOTS 8192

typedef struct ucx_ctx {
  const symheap_host_services_t *svc;
  ucp_context_h context;
  ucp_worker_h worker;
  int efd; /* the worker's event fd (UCP_FEATURE_WAKEUP), or -1 */
  int rank, nranks;
  int timeout_ms;
  int wakeup;
  ucx_peer_t *peers;
  ucx_mr_t *mrs; /* registrations not yet deregistered */
  ucx_rkey_t *rkeys; /* imported keys not yet released */
  /* Ranks given operations since the last complete quiet, named when a
   * quiet times out. */
  unsigned char *touched;
  /* Requests whose completion callback has not run yet. */
  uint64_t pending;
  /* A request was given up on (a wait or a quiet ran out of time): UCX
   * may still hold it, so the worker is not destroyed (ucx_close). */
  int abandoned;
  /* The first operation that failed since the last quiet. */
  ucs_status_t op_error;
  int op_error_peer;
  /* Puts and non-fetching atomics issued since the last quiet: only they
   * need the worker's flush (a get or a fetching atomic is complete at
   * its target once its reply has landed, i.e. once its request is). */
  uint64_t unflushed;
  uint64_t *arena;
  size_t arena_used;
  unsigned version[3];
  size_t addr_len;
  int net_only; /* the address left shared-memory transports out */
} ucx_ctx_t;

/* ucx_ep.c */
symheap_result_t ucx_open(const symheap_host_services_t *svc,
                          const symheap_net_init_t *args, void **ctx,
                          void *addr, size_t *addr_len);
void ucx_close(void *ctx);
symheap_result_t ucx_query(void *ctx, symheap_net_caps_t *caps);
symheap_result_t ucx_connect(void *ctx, int nranks, const void *addrs,
                             size_t stride);
symheap_result_t ucx_progress(void *ctx);
int ucx_wait_fds(void *ctx, int *fds, int max);
/* Wait (progressing) for one request to complete; frees it. */
symheap_result_t ucx_wait(ucx_ctx_t *c, void *req, const char *what,
                          int peer);

/* ucx_quiet.c */
symheap_result_t ucx_quiet(void *ctx, int timeout_ms);
symheap_result_t ucx_fence(void *ctx);
/* The completion callback of every counted request (user_data: the
 * ucx_peer_t it went to). */
void ucx_op_done(void *req, ucs_status_t st, void *user);
/* What an operation returned: a request counted, done, or a failure
 * recorded (returns it). */
symheap_result_t ucx_issued(ucx_ctx_t *c, ucx_peer_t *p, ucs_status_ptr_t sp,
                            const char *op);

/* ucx_mr.c */
symheap_result_t ucx_mem_register(void *ctx, void *ptr, size_t size,
                                  int is_device, void **mr, void *key,
                                  size_t *key_len);
symheap_result_t ucx_mem_deregister(void *ctx, void *mr);
/* Unmap every registration still mapped (close). */
void ucx_unmap_all(ucx_ctx_t *c);
void ucx_rkeys_destroy_all(ucx_ctx_t *c);
symheap_result_t ucx_rkey_import(void *ctx, int peer, const void *key,
                                 size_t key_len, void **rkey);
void ucx_rkey_release(void *ctx, void *rkey);

/* ucx_rma.c */
symheap_result_t ucx_put(void *ctx, int peer, const void *src, void *mr,
                         size_t len, void *rkey, uint64_t offset,
                         unsigned flags);
symheap_result_t ucx_get(void *ctx, int peer, void *dst, void *mr, size_t len,
                         void *rkey, uint64_t offset, unsigned flags);
symheap_result_t ucx_atomic(void *ctx, int peer, symheap_net_amo_t op,
                            size_t size, void *rkey, uint64_t offset,
                            const void *operand, const void *compare,
                            void *fetch);
symheap_result_t ucx_put_signal(void *ctx, int peer, const void *src, void *mr,
                                size_t len, void *rkey, uint64_t offset,
                                void *sig_rkey, uint64_t sig_offset,
                                uint64_t value, symheap_net_amo_t sig_op,
                                unsigned flags);

#endif

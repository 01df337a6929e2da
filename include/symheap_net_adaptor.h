/* symheap adaptor ABI, net adaptors: for authors of adaptors that reach
 * ranks on other hosts (docs/writing-an-adaptor.md, "Net adaptors").
 *
 * Included by symheap_adaptor.h, which every adaptor includes; its own file
 * because the net family is the third table of that ABI and grows on its
 * own.  The same rules hold: the table starts with abi_version, struct_size
 * and name, members are only appended, optional members may be NULL. */
#ifndef SYMHEAP_NET_ADAPTOR_H
#define SYMHEAP_NET_ADAPTOR_H

#include <stddef.h>
#include <stdint.h>

#include "symheap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Defined in symheap_adaptor.h; a net adaptor's init receives a pointer. */
typedef struct symheap_host_services symheap_host_services_t;

/* --- Net adaptors -----------------------------------------------------------
 * A net adaptor reaches ranks on other hosts (docs/network.md): it registers
 * memory, hands out remote keys as opaque bytes (the core exchanges them
 * through its agreement), and moves bytes one-sidedly.  Peers on the same host
 * keep load/store through the flat VA; the core uses the net adaptor for the
 * others, and for every atomic of a window whose comm spans hosts (one
 * atomicity domain per window).  SYMHEAP_NET=<name> picks one; the first
 * in-tree one is "ofi" (libfabric).
 *
 * Addressing: a remote access names a peer, the peer's key (rkey_import of the
 * bytes that peer's mem_register gave) and an offset from the start of the
 * region the peer registered; the adaptor turns that into whatever its
 * engine wants (virtual address or offset).  The core checks bounds before
 * it calls: an adaptor may assume [offset, offset+len) lies in the region.
 *
 * Completion: put, get and atomic are non-blocking: they may return before
 * the remote side sees the data.  `quiet` returns once every operation this
 * context issued is complete at its target (delivery complete: visible to
 * loads and later operations there) and every get or fetch has landed
 * locally.  `fence` orders: operations issued after it to a peer are seen
 * there after those issued before it (an adaptor without a cheaper fence
 * implements it as quiet).  Unless flags has SYMHEAP_NET_NBI, a put's source
 * buffer may be reused as soon as put returns (the adaptor copies or waits
 * for local completion); with SYMHEAP_NET_NBI it must stay untouched until
 * quiet.
 *
 * Progress: an engine with manual progress advances only inside calls of
 * the context; the core calls progress() while it waits (agreements,
 * wait_until, quiet) and can run a progress thread (SYMHEAP_NET_PROGRESS).
 * Every entry may be called from the progress thread and the comm's thread
 * at once: an adaptor that reports SYMHEAP_NET_CAP_THREAD_SAFE serialises
 * what it must itself; otherwise the core holds one lock around each call.
 *
 * Every call that waits gives up after timeout_ms with SYMHEAP_ERR_TIMEOUT,
 * or returns SYMHEAP_ERR_REMOTE naming the peer when it is gone. */
#define SYMHEAP_NET_ADDR_MAX 256 /* largest endpoint address, in bytes */
#define SYMHEAP_NET_KEY_MAX 64   /* largest remote key, in bytes */

/* Flags for put, get and atomic. */
#define SYMHEAP_NET_NBI 0x1u /* the source buffer stays untouched until quiet */

/* Capability bits (symheap_net_caps_t.caps). */
#define SYMHEAP_NET_CAP_RMA 0x1u         /* put and get */
#define SYMHEAP_NET_CAP_ATOMIC 0x2u      /* atomic, 32- and 64-bit */
#define SYMHEAP_NET_CAP_FENCE 0x4u       /* a fence cheaper than quiet */
#define SYMHEAP_NET_CAP_REMOTE_CQ 0x8u   /* put_signal is one message */
#define SYMHEAP_NET_CAP_HMEM 0x10u       /* registers device memory */
#define SYMHEAP_NET_CAP_MANUAL 0x20u     /* needs progress() calls */
#define SYMHEAP_NET_CAP_THREAD_SAFE 0x40u /* callable from several threads */

typedef enum {
  SYMHEAP_NET_AMO_FETCH = 0,     /* *fetch = remote */
  SYMHEAP_NET_AMO_SET = 1,       /* remote = operand */
  SYMHEAP_NET_AMO_ADD = 2,       /* remote += operand */
  SYMHEAP_NET_AMO_FETCH_ADD = 3, /* *fetch = remote; remote += operand */
  SYMHEAP_NET_AMO_SWAP = 4,      /* *fetch = remote; remote = operand */
  SYMHEAP_NET_AMO_CSWAP = 5,     /* *fetch = remote; if == compare: = operand */
  SYMHEAP_NET_AMO_AND = 6,       /* remote &= operand (fetch if fetch) */
  SYMHEAP_NET_AMO_OR = 7,
  SYMHEAP_NET_AMO_XOR = 8,
} symheap_net_amo_t;

/* What open() learns about its rank (struct_size: the core's sizeof). */
typedef struct {
  uint32_t struct_size;
  int32_t rank, nranks;
  const char *provider; /* SYMHEAP_NET_PROVIDER's value, or NULL: the best */
} symheap_net_init_t;

/* What query() fills; the core zeroes it and sets struct_size first. */
typedef struct {
  uint32_t struct_size;
  uint32_t caps;          /* SYMHEAP_NET_CAP_* */
  size_t max_msg;         /* largest put or get in one call */
  size_t inject_size;     /* puts up to this size return with the source free */
  char provider[64];      /* e.g. "tcp;ofi_rxm", "shm", "verbs;ofi_rxm" */
  char fabric[64];        /* the engine's fabric or device name */
} symheap_net_caps_t;

typedef struct symheap_net_ops {
  uint32_t abi_version; /* SYMHEAP_ADAPTOR_ABI_VERSION */
  uint32_t struct_size; /* sizeof(symheap_net_ops) as the adaptor saw it */
  const char *name;     /* what SYMHEAP_NET=<name> selects */

  /* Required.  Cheap probe: nonzero when the engine can be loaded here;
   * otherwise why (naming the package to install).  Must not block. */
  int (*available)(const symheap_host_services_t *svc, char *why, size_t len);
  /* Required.  List the providers this engine offers here, one per line
   * into buf (for symheap-info and for the error on an unknown name). */
  symheap_result_t (*providers)(const symheap_host_services_t *svc, char *buf,
                                size_t len);
  /* Required.  Open an endpoint for this rank and write its address
   * (*addr_len <= SYMHEAP_NET_ADDR_MAX bytes) for the core to allgather. */
  symheap_result_t (*open)(const symheap_host_services_t *svc,
                           const symheap_net_init_t *args, void **ctx,
                           void *addr, size_t *addr_len);
  /* Required.  Close; never fails; outstanding operations are dropped. */
  void (*close)(void *ctx);
  /* Required. */
  symheap_result_t (*query)(void *ctx, symheap_net_caps_t *caps);
  /* Required.  Every rank's address, rank r's at addrs + r * stride (its own
   * included); called once after open, before any other operation. */
  symheap_result_t (*connect)(void *ctx, int nranks, const void *addrs,
                              size_t stride);
  /* Required.  Register [ptr, ptr+size) of local memory (host memory, or
   * device memory with SYMHEAP_NET_CAP_HMEM and is_device) for remote access
   * and local use; write the bytes a peer needs (*key_len <=
   * SYMHEAP_NET_KEY_MAX).  The region is addressed by offset from ptr. */
  symheap_result_t (*mem_register)(void *ctx, void *ptr, size_t size,
                                   int is_device, void **mr, void *key,
                                   size_t *key_len);
  /* Required.  No operation on the region may be outstanding. */
  symheap_result_t (*mem_deregister)(void *ctx, void *mr);
  /* Required.  Turn a peer's key bytes into a handle for put/get/atomic. */
  symheap_result_t (*rkey_import)(void *ctx, int peer, const void *key,
                                   size_t key_len, void **rkey);
  /* Required. */
  void (*rkey_release)(void *ctx, void *rkey);
  /* Required.  Write len bytes from src (inside local region mr, or mr NULL
   * for any memory) to peer's region at offset. */
  symheap_result_t (*put)(void *ctx, int peer, const void *src, void *mr,
                          size_t len, void *rkey, uint64_t offset,
                          unsigned flags);
  /* Required.  Read len bytes of peer's region at offset into dst; dst is
   * valid after quiet. */
  symheap_result_t (*get)(void *ctx, int peer, void *dst, void *mr, size_t len,
                          void *rkey, uint64_t offset, unsigned flags);
  /* Optional (NULL: no SYMHEAP_NET_CAP_ATOMIC).  A 4- or 8-byte atomic on
   * peer's region at offset (aligned to size); operand/compare/fetch point to
   * values of that size; fetch is NULL for the non-fetching forms and is
   * valid after quiet. */
  symheap_result_t (*atomic)(void *ctx, int peer, symheap_net_amo_t op,
                             size_t size, void *rkey, uint64_t offset,
                             const void *operand, const void *compare,
                             void *fetch);
  /* Optional (NULL: the core does put, fence, atomic).  Put, then update an
   * 8-byte signal (SYMHEAP_NET_AMO_SET or _ADD) in the same peer's region
   * sig_rkey at sig_offset, the data visible before the signal. */
  symheap_result_t (*put_signal)(void *ctx, int peer, const void *src,
                                 void *mr, size_t len, void *rkey,
                                 uint64_t offset, void *sig_rkey,
                                 uint64_t sig_offset, uint64_t value,
                                 symheap_net_amo_t sig_op, unsigned flags);
  /* Required.  See "Completion" above. */
  symheap_result_t (*fence)(void *ctx);
  symheap_result_t (*quiet)(void *ctx, int timeout_ms);
  /* Required.  Advance the engine without waiting; cheap when idle. */
  symheap_result_t (*progress)(void *ctx);
  /* v1 ends here */
  /* -- Appended (read only when struct_size covers it) -- */
  /* Optional (NULL, or a table too short to hold it: the core progresses a
   * waiting rank by calling progress() in a loop).  Prepare to sleep on
   * the engine: write up to max file descriptors that become readable when
   * the engine has work (a peer's request to serve, a completion) and
   * return how many (> 0); the caller may then sleep in poll() on them and
   * calls progress() when one is readable or its sleep ends.  0: work is
   * pending (progress() and ask again, as fi_trywait's -FI_EAGAIN); < 0:
   * no such descriptors here (the core polls as without this entry).
   * Serialised like every entry; never blocks.  With it, a rank that only
   * waits serves its peers' gets and emulated atomics as soon as they
   * arrive while using no CPU (the progress thread sleeps on them). */
  int (*wait_fds)(void *ctx, int *fds, int max);
} symheap_net_ops;

#ifdef __cplusplus
}
#endif

#endif

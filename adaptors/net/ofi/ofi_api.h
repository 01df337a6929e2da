/* The slice of libfabric's public ABI that the ofi net adaptor uses, declared
 * here so that the adaptor builds without libfabric's headers (Debian's
 * libfabric-dev): machines with only the run-time library (libfabric1, the
 * lent GPU machines among them) still get the adaptor, and a machine
 * without libfabric at all gets the adaptor's "install libfabric1" message
 * at run time instead of no adaptor.
 *
 * What it matches: libfabric 1.x's ABI as of FI_VERSION(1, 17), Debian 12's
 * libfabric 1.17 (what CI checks it against).  Within 1.x libfabric keeps
 * its ABI by only appending members to its structs and ops tables, so a
 * later 1.x (the lent GPU machines' 1.20) lays out everything below the
 * same way.  The adaptor asks fi_getinfo for API version OFI_API_VERSION
 * (ofi.h), and libfabric reads the structs passed in (attrs, messages) and
 * fills the entries read back as that version defines them.
 *
 * Names are libfabric's own, so that the adaptor reads as libfabric code;
 * this header therefore cannot be included beside <rdma/fabric.h>, and
 * test/ofi_api_check.sh compiles instead a program printing the size and offset of
 * every struct member and the value of every constant declared below,
 * once against this header and once against libfabric's, and compares the
 * two (where libfabric-dev is installed, as in CI).  So:
 * - structs are declared whole, one member per line, with libfabric's
 *   member names; pointers to objects the adaptor never touches point to
 *   incomplete types (same size);
 * - every ops table is declared up to its last 1.17 member; the members
 *   the adaptor does not call have the type ofi_unused_op (a function
 *   pointer, as in libfabric) so they hold their place without a
 *   signature to get wrong;
 * - constants are libfabric's values, only the ones the adaptor uses.
 * The functions libfabric exports (fi_getinfo, fi_fabric, ...) are not
 * declared: ofi_lib.c looks them up in the library it opens (ofi_api_t in
 * ofi.h).  The static inline wrappers that do what libfabric's do (call
 * through the object's ops table) are in ofi_api_calls.h, which includes
 * this header: the layout here, the calls there. */
#ifndef SYMHEAP_OFI_API_H
#define SYMHEAP_OFI_API_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t */
#include <sys/uio.h>   /* struct iovec */

#define FI_VERSION(major, minor) (((major) << 16) | (minor))

typedef uint64_t fi_addr_t;
typedef void (*ofi_unused_op)(void);

/* Capabilities, operation flags and access flags (64-bit). */
#define FI_RMA (1ULL << 2)
#define FI_ATOMIC (1ULL << 4)
#define FI_READ (1ULL << 8)
#define FI_WRITE (1ULL << 9)
#define FI_RECV (1ULL << 10)
#define FI_SEND (1ULL << 11)
#define FI_TRANSMIT FI_SEND
#define FI_REMOTE_READ (1ULL << 12)
#define FI_REMOTE_WRITE (1ULL << 13)
#define FI_REMOTE_CQ_DATA (1ULL << 17)
#define FI_FENCE (1ULL << 21)
#define FI_DELIVERY_COMPLETE (1ULL << 28)
#define FI_HMEM (1ULL << 47)
/* fi_ep_bind of a completion queue: entries only for operations that ask. */
#define FI_SELECTIVE_COMPLETION (1ULL << 59)

/* domain_attr->mr_mode bits. */
#define FI_MR_LOCAL (1 << 2)
#define FI_MR_VIRT_ADDR (1 << 4)
#define FI_MR_ALLOCATED (1 << 5)
#define FI_MR_PROV_KEY (1 << 6)
#define FI_MR_ENDPOINT (1 << 9)
#define FI_MR_HMEM (1 << 10)

/* tx_attr->msg_order: writes placed in the order issued. */
#define FI_ORDER_WAW (1ULL << 4)

/* fi_mr_key's answer for a provider whose keys do not fit 64 bits. */
#define FI_KEY_NOTAVAIL ((uint64_t)-1)

/* Errors, returned negated.  Below 256 they are errno values. */
#define FI_EAGAIN EAGAIN
#define FI_ENOMEM ENOMEM
#define FI_ENODATA ENODATA
#define FI_EADDRNOTAVAIL EADDRNOTAVAIL
#define FI_ETOOSMALL 257
#define FI_EAVAIL 259

/* fi_control commands. */
#define FI_GETWAIT 5
#define FI_ENABLE 6

enum fi_av_type { FI_AV_TABLE = 2 };
enum fi_progress { FI_PROGRESS_MANUAL = 2 };
enum fi_threading { FI_THREAD_DOMAIN = 3 };
enum fi_resource_mgmt { FI_RM_UNSPEC = 0 };
enum fi_ep_type { FI_EP_RDM = 3 };
enum fi_hmem_iface { FI_HMEM_SYSTEM = 0, FI_HMEM_CUDA = 1 };
enum fi_wait_obj { FI_WAIT_NONE = 0, FI_WAIT_FD = 3 };
enum fi_cq_format { FI_CQ_FORMAT_DATA = 3 };
enum fi_cq_wait_cond { FI_CQ_COND_NONE = 0 };
enum fi_cntr_events { FI_CNTR_EVENTS_COMP = 0 };
enum fi_datatype { FI_UINT32 = 5, FI_UINT64 = 7 };
enum fi_op {
  FI_SUM = 2,
  FI_BOR = 6,
  FI_BAND = 7,
  FI_BXOR = 9,
  FI_ATOMIC_READ = 10,
  FI_ATOMIC_WRITE = 11,
  FI_CSWAP = 12
};

/* The objects (declared below), and those the adaptor only passes around. */
struct fid_fabric;
struct fid_domain;
struct fid_av;
struct fid_cq;
struct fid_cntr;
struct fid_ep;
struct fid_mr;
struct fi_rx_attr;
struct fid_nic;
struct fid_wait;
struct fi_ops_ep;
struct fi_ops_msg;
struct fi_ops_tagged;
struct fi_ops_collective;

/* Every object libfabric returns starts with a fid. */
struct fid;
typedef struct fid *fid_t;

struct fi_ops {
  size_t size;
  int (*close)(struct fid *fid);
  int (*bind)(struct fid *fid, struct fid *bfid, uint64_t flags);
  int (*control)(struct fid *fid, int command, void *arg);
  ofi_unused_op ops_open;
  ofi_unused_op tostr;
  ofi_unused_op ops_set;
};

struct fid {
  size_t fclass;
  void *context;
  struct fi_ops *ops;
};

/* What fi_getinfo describes and fi_dupinfo allocates. */
struct fi_tx_attr {
  uint64_t caps;
  uint64_t mode;
  uint64_t op_flags;
  uint64_t msg_order;
  uint64_t comp_order;
  size_t inject_size;
  size_t size;
  size_t iov_limit;
  size_t rma_iov_limit;
  uint32_t tclass;
};

struct fi_ep_attr {
  enum fi_ep_type type;
  uint32_t protocol;
  uint32_t protocol_version;
  size_t max_msg_size;
  size_t msg_prefix_size;
  size_t max_order_raw_size;
  size_t max_order_war_size;
  size_t max_order_waw_size;
  uint64_t mem_tag_format;
  size_t tx_ctx_cnt;
  size_t rx_ctx_cnt;
  size_t auth_key_size;
  uint8_t *auth_key;
};

struct fi_domain_attr {
  struct fid_domain *domain;
  char *name;
  enum fi_threading threading;
  enum fi_progress control_progress;
  enum fi_progress data_progress;
  enum fi_resource_mgmt resource_mgmt;
  enum fi_av_type av_type;
  int mr_mode;
  size_t mr_key_size;
  size_t cq_data_size;
  size_t cq_cnt;
  size_t ep_cnt;
  size_t tx_ctx_cnt;
  size_t rx_ctx_cnt;
  size_t max_ep_tx_ctx;
  size_t max_ep_rx_ctx;
  size_t max_ep_stx_ctx;
  size_t max_ep_srx_ctx;
  size_t cntr_cnt;
  size_t mr_iov_limit;
  uint64_t caps;
  uint64_t mode;
  uint8_t *auth_key;
  size_t auth_key_size;
  size_t max_err_data;
  size_t mr_cnt;
  uint32_t tclass;
};

struct fi_fabric_attr {
  struct fid_fabric *fabric;
  char *name;
  char *prov_name;
  uint32_t prov_version;
  uint32_t api_version;
};

struct fi_info {
  struct fi_info *next;
  uint64_t caps;
  uint64_t mode;
  uint32_t addr_format;
  size_t src_addrlen;
  size_t dest_addrlen;
  void *src_addr;
  void *dest_addr;
  fid_t handle;
  struct fi_tx_attr *tx_attr;
  struct fi_rx_attr *rx_attr;
  struct fi_ep_attr *ep_attr;
  struct fi_domain_attr *domain_attr;
  struct fi_fabric_attr *fabric_attr;
  struct fid_nic *nic;
};

/* Attributes the adaptor fills to open objects. */
struct fi_av_attr {
  enum fi_av_type type;
  int rx_ctx_bits;
  size_t count;
  size_t ep_per_node;
  const char *name;
  void *map_addr;
  uint64_t flags;
};

struct fi_cq_attr {
  size_t size;
  uint64_t flags;
  enum fi_cq_format format;
  enum fi_wait_obj wait_obj;
  int signaling_vector;
  enum fi_cq_wait_cond wait_cond;
  struct fid_wait *wait_set;
};

struct fi_cntr_attr {
  enum fi_cntr_events events;
  enum fi_wait_obj wait_obj;
  struct fid_wait *wait_set;
  uint64_t flags;
};

struct fi_mr_attr {
  const struct iovec *mr_iov;
  size_t iov_count;
  uint64_t access;
  uint64_t offset;
  uint64_t requested_key;
  void *context;
  size_t auth_key_size;
  uint8_t *auth_key;
  enum fi_hmem_iface iface;
  union {
    uint64_t reserved;
    int cuda;
  } device;
};

/* Completion entries (FI_CQ_FORMAT_DATA) and errors. */
struct fi_cq_data_entry {
  void *op_context;
  uint64_t flags;
  size_t len;
  void *buf;
  uint64_t data;
};

struct fi_cq_err_entry {
  void *op_context;
  uint64_t flags;
  size_t len;
  void *buf;
  uint64_t data;
  uint64_t tag;
  size_t olen;
  int err;
  int prov_errno;
  void *err_data;
  size_t err_data_size;
};

/* Descriptions of one-sided operations. */
struct fi_ioc {
  void *addr;
  size_t count;
};

struct fi_rma_iov {
  uint64_t addr;
  size_t len;
  uint64_t key;
};

struct fi_rma_ioc {
  uint64_t addr;
  size_t count;
  uint64_t key;
};

struct fi_msg_rma {
  const struct iovec *msg_iov;
  void **desc;
  size_t iov_count;
  fi_addr_t addr;
  const struct fi_rma_iov *rma_iov;
  size_t rma_iov_count;
  void *context;
  uint64_t data;
};

struct fi_msg_atomic {
  const struct fi_ioc *msg_iov;
  void **desc;
  size_t iov_count;
  fi_addr_t addr;
  const struct fi_rma_ioc *rma_iov;
  size_t rma_iov_count;
  enum fi_datatype datatype;
  enum fi_op op;
  void *context;
  uint64_t data;
};

/* The objects and their ops tables. */
struct fi_ops_fabric {
  size_t size;
  int (*domain)(struct fid_fabric *fabric, struct fi_info *info,
                struct fid_domain **dom, void *context);
  ofi_unused_op passive_ep;
  ofi_unused_op eq_open;
  ofi_unused_op wait_open;
  int (*trywait)(struct fid_fabric *fabric, struct fid **fids, int count);
  ofi_unused_op domain2;
};

struct fid_fabric {
  struct fid fid;
  struct fi_ops_fabric *ops;
  uint32_t api_version;
};

struct fi_ops_domain {
  size_t size;
  int (*av_open)(struct fid_domain *domain, struct fi_av_attr *attr,
                 struct fid_av **av, void *context);
  int (*cq_open)(struct fid_domain *domain, struct fi_cq_attr *attr,
                 struct fid_cq **cq, void *context);
  int (*endpoint)(struct fid_domain *domain, struct fi_info *info,
                  struct fid_ep **ep, void *context);
  ofi_unused_op scalable_ep;
  int (*cntr_open)(struct fid_domain *domain, struct fi_cntr_attr *attr,
                   struct fid_cntr **cntr, void *context);
  ofi_unused_op poll_open;
  ofi_unused_op stx_ctx;
  ofi_unused_op srx_ctx;
  ofi_unused_op query_atomic;
  ofi_unused_op query_collective;
  ofi_unused_op endpoint2;
};

struct fi_ops_mr {
  size_t size;
  ofi_unused_op reg;
  ofi_unused_op regv;
  int (*regattr)(struct fid *fid, const struct fi_mr_attr *attr,
                 uint64_t flags, struct fid_mr **mr);
};

struct fid_domain {
  struct fid fid;
  struct fi_ops_domain *ops;
  struct fi_ops_mr *mr;
};

struct fid_mr {
  struct fid fid;
  void *mem_desc;
  uint64_t key;
};

struct fi_ops_av {
  size_t size;
  int (*insert)(struct fid_av *av, const void *addr, size_t count,
                fi_addr_t *fi_addr, uint64_t flags, void *context);
  ofi_unused_op insertsvc;
  ofi_unused_op insertsym;
  ofi_unused_op remove;
  ofi_unused_op lookup;
  ofi_unused_op straddr;
  ofi_unused_op av_set;
};

struct fid_av {
  struct fid fid;
  struct fi_ops_av *ops;
};

struct fi_ops_cq {
  size_t size;
  ssize_t (*read)(struct fid_cq *cq, void *buf, size_t count);
  ofi_unused_op readfrom;
  ssize_t (*readerr)(struct fid_cq *cq, struct fi_cq_err_entry *buf,
                     uint64_t flags);
  ofi_unused_op sread;
  ofi_unused_op sreadfrom;
  ofi_unused_op signal;
  const char *(*strerror)(struct fid_cq *cq, int prov_errno,
                          const void *err_data, char *buf, size_t len);
};

struct fid_cq {
  struct fid fid;
  struct fi_ops_cq *ops;
};

struct fi_ops_cntr {
  size_t size;
  uint64_t (*read)(struct fid_cntr *cntr);
  uint64_t (*readerr)(struct fid_cntr *cntr);
  ofi_unused_op add;
  ofi_unused_op set;
  ofi_unused_op wait;
  ofi_unused_op adderr;
  ofi_unused_op seterr;
};

struct fid_cntr {
  struct fid fid;
  struct fi_ops_cntr *ops;
};

struct fi_ops_cm {
  size_t size;
  int (*setname)(fid_t fid, void *addr, size_t addrlen);
  int (*getname)(fid_t fid, void *addr, size_t *addrlen);
  ofi_unused_op getpeer;
  ofi_unused_op connect;
  ofi_unused_op listen;
  ofi_unused_op accept;
  ofi_unused_op reject;
  ofi_unused_op shutdown;
  ofi_unused_op join;
};

struct fi_ops_rma {
  size_t size;
  ssize_t (*read)(struct fid_ep *ep, void *buf, size_t len, void *desc,
                  fi_addr_t src_addr, uint64_t addr, uint64_t key,
                  void *context);
  ofi_unused_op readv;
  ssize_t (*readmsg)(struct fid_ep *ep, const struct fi_msg_rma *msg,
                     uint64_t flags);
  ofi_unused_op write;
  ofi_unused_op writev;
  ssize_t (*writemsg)(struct fid_ep *ep, const struct fi_msg_rma *msg,
                      uint64_t flags);
  ofi_unused_op inject;
  ofi_unused_op writedata;
  ofi_unused_op injectdata;
};

struct fi_ops_atomic {
  size_t size;
  ofi_unused_op write;
  ofi_unused_op writev;
  ssize_t (*writemsg)(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                      uint64_t flags);
  ofi_unused_op inject;
  ofi_unused_op readwrite;
  ofi_unused_op readwritev;
  ssize_t (*readwritemsg)(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                          struct fi_ioc *resultv, void **result_desc,
                          size_t result_count, uint64_t flags);
  ofi_unused_op compwrite;
  ofi_unused_op compwritev;
  ssize_t (*compwritemsg)(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                          const struct fi_ioc *comparev, void **compare_desc,
                          size_t compare_count, struct fi_ioc *resultv,
                          void **result_desc, size_t result_count,
                          uint64_t flags);
  ofi_unused_op writevalid;
  int (*readwritevalid)(struct fid_ep *ep, enum fi_datatype datatype,
                        enum fi_op op, size_t *count);
  ofi_unused_op compwritevalid;
};

struct fid_ep {
  struct fid fid;
  struct fi_ops_ep *ops;
  struct fi_ops_cm *cm;
  struct fi_ops_msg *msg;
  struct fi_ops_rma *rma;
  struct fi_ops_tagged *tagged;
  struct fi_ops_atomic *atomic;
  struct fi_ops_collective *collective;
};

#endif

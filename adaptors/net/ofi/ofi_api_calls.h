/* The calls of libfabric's API that the ofi net adaptor makes, as
 * libfabric's own headers define them: static inline wrappers that call
 * through the ops tables of the objects libfabric returns (ofi_api.h
 * declares those objects and their tables; test/ofi_api_check.sh checks
 * that layout against libfabric's headers).  Only the few functions
 * libfabric really exports are not here: ofi_lib.c looks them up. */
#ifndef SYMHEAP_OFI_API_CALLS_H
#define SYMHEAP_OFI_API_CALLS_H

#include "ofi_api.h"

static inline int fi_close(struct fid *fid) { return fid->ops->close(fid); }

static inline int fi_domain(struct fid_fabric *fabric, struct fi_info *info,
                            struct fid_domain **domain, void *context) {
  return fabric->ops->domain(fabric, info, domain, context);
}

static inline int fi_av_open(struct fid_domain *domain,
                             struct fi_av_attr *attr, struct fid_av **av,
                             void *context) {
  return domain->ops->av_open(domain, attr, av, context);
}

static inline int fi_cq_open(struct fid_domain *domain,
                             struct fi_cq_attr *attr, struct fid_cq **cq,
                             void *context) {
  return domain->ops->cq_open(domain, attr, cq, context);
}

static inline int fi_cntr_open(struct fid_domain *domain,
                               struct fi_cntr_attr *attr,
                               struct fid_cntr **cntr, void *context) {
  return domain->ops->cntr_open(domain, attr, cntr, context);
}

static inline int fi_endpoint(struct fid_domain *domain, struct fi_info *info,
                              struct fid_ep **ep, void *context) {
  return domain->ops->endpoint(domain, info, ep, context);
}

static inline int fi_ep_bind(struct fid_ep *ep, struct fid *bfid,
                             uint64_t flags) {
  return ep->fid.ops->bind(&ep->fid, bfid, flags);
}

static inline int fi_control(struct fid *fid, int command, void *arg) {
  return fid->ops->control(fid, command, arg);
}

/* 0: the objects have nothing pending, their wait fds may be slept on. */
static inline int fi_trywait(struct fid_fabric *fabric, struct fid **fids,
                             int count) {
  return fabric->ops->trywait(fabric, fids, count);
}

static inline int fi_enable(struct fid_ep *ep) {
  return ep->fid.ops->control(&ep->fid, FI_ENABLE, NULL);
}

/* fid is an endpoint's (its first member, so the cast is its container). */
static inline int fi_setname(fid_t fid, void *addr, size_t addrlen) {
  struct fid_ep *ep = (struct fid_ep *)(void *)fid;
  return ep->cm->setname(fid, addr, addrlen);
}

static inline int fi_getname(fid_t fid, void *addr, size_t *addrlen) {
  struct fid_ep *ep = (struct fid_ep *)(void *)fid;
  return ep->cm->getname(fid, addr, addrlen);
}

static inline int fi_av_insert(struct fid_av *av, const void *addr,
                               size_t count, fi_addr_t *fi_addr,
                               uint64_t flags, void *context) {
  return av->ops->insert(av, addr, count, fi_addr, flags, context);
}

static inline ssize_t fi_cq_read(struct fid_cq *cq, void *buf, size_t count) {
  return cq->ops->read(cq, buf, count);
}

static inline ssize_t fi_cq_readerr(struct fid_cq *cq,
                                    struct fi_cq_err_entry *buf,
                                    uint64_t flags) {
  return cq->ops->readerr(cq, buf, flags);
}

static inline const char *fi_cq_strerror(struct fid_cq *cq, int prov_errno,
                                         const void *err_data, char *buf,
                                         size_t len) {
  return cq->ops->strerror(cq, prov_errno, err_data, buf, len);
}

static inline uint64_t fi_cntr_read(struct fid_cntr *cntr) {
  return cntr->ops->read(cntr);
}

static inline uint64_t fi_cntr_readerr(struct fid_cntr *cntr) {
  return cntr->ops->readerr(cntr);
}

static inline int fi_mr_regattr(struct fid_domain *domain,
                                const struct fi_mr_attr *attr, uint64_t flags,
                                struct fid_mr **mr) {
  return domain->mr->regattr(&domain->fid, attr, flags, mr);
}

static inline int fi_mr_bind(struct fid_mr *mr, struct fid *bfid,
                             uint64_t flags) {
  return mr->fid.ops->bind(&mr->fid, bfid, flags);
}

static inline int fi_mr_enable(struct fid_mr *mr) {
  return mr->fid.ops->control(&mr->fid, FI_ENABLE, NULL);
}

static inline void *fi_mr_desc(struct fid_mr *mr) { return mr->mem_desc; }

static inline uint64_t fi_mr_key(struct fid_mr *mr) { return mr->key; }

static inline ssize_t fi_read(struct fid_ep *ep, void *buf, size_t len,
                              void *desc, fi_addr_t src_addr, uint64_t addr,
                              uint64_t key, void *context) {
  return ep->rma->read(ep, buf, len, desc, src_addr, addr, key, context);
}

static inline ssize_t fi_readmsg(struct fid_ep *ep,
                                 const struct fi_msg_rma *msg,
                                 uint64_t flags) {
  return ep->rma->readmsg(ep, msg, flags);
}

static inline ssize_t fi_writemsg(struct fid_ep *ep,
                                  const struct fi_msg_rma *msg,
                                  uint64_t flags) {
  return ep->rma->writemsg(ep, msg, flags);
}

static inline ssize_t fi_atomicmsg(struct fid_ep *ep,
                                   const struct fi_msg_atomic *msg,
                                   uint64_t flags) {
  return ep->atomic->writemsg(ep, msg, flags);
}

static inline int fi_fetch_atomicvalid(struct fid_ep *ep,
                                       enum fi_datatype datatype,
                                       enum fi_op op, size_t *count) {
  return ep->atomic->readwritevalid(ep, datatype, op, count);
}

static inline ssize_t fi_fetch_atomicmsg(struct fid_ep *ep,
                                         const struct fi_msg_atomic *msg,
                                         struct fi_ioc *resultv,
                                         void **result_desc,
                                         size_t result_count, uint64_t flags) {
  return ep->atomic->readwritemsg(ep, msg, resultv, result_desc, result_count,
                                  flags);
}

static inline ssize_t
fi_compare_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                     const struct fi_ioc *comparev, void **compare_desc,
                     size_t compare_count, struct fi_ioc *resultv,
                     void **result_desc, size_t result_count, uint64_t flags) {
  return ep->atomic->compwritemsg(ep, msg, comparev, compare_desc,
                                  compare_count, resultv, result_desc,
                                  result_count, flags);
}

#endif

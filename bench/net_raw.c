/* The raw libfabric floor: the probe (net_probe.h) written directly on
 * libfabric, linked with -lfabric, set up the way the ofi net adaptor is
 * (FI_EP_RDM, delivery complete, a counter for completion, no completion
 * entries), so that symheap's overhead over it is what net_adaptor shows
 * on top.  Built by `make net-bench` where libfabric-dev is installed. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "net_probe.h"

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_cntr *cntr;
static struct fid_ep *ep;
static struct fid_mr *mr;
static fi_addr_t peer;
static char *local;
static void *desc;
static int cq_fd = -1; /* --passive: the CQ's wait object */
static uint64_t issued, rkey, rbase;

#define TRY(call)                                                              \
  do {                                                                         \
    int ret_ = (int)(call);                                                    \
    if (ret_) {                                                                \
      fprintf(stderr, "net_raw: %s: %s\n", #call, fi_strerror(-ret_));         \
      return -1;                                                               \
    }                                                                          \
  } while (0)

static int r_open(const char *prov, const char *dom, void *addr, size_t *len,
                  char *d, size_t dlen) {
  struct fi_info *h = fi_allocinfo(), *list = NULL;
  h->caps = FI_RMA | FI_ATOMIC;
  h->ep_attr->type = FI_EP_RDM;
  h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
                            FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  if (prov)
    h->fabric_attr->prov_name = strdup(prov);
  TRY(fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, h, &list));
  fi_freeinfo(h);
  for (struct fi_info *i = list; i && !info; i = i->next)
    if (!dom || !strcmp(i->domain_attr->name, dom) ||
        !strcmp(i->fabric_attr->name, dom))
      info = fi_dupinfo(i);
  fi_freeinfo(list);
  if (!info) {
    fprintf(stderr, "net_raw: no domain %s\n", dom ? dom : "");
    return -1;
  }
  TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
  TRY(fi_domain(fabric, info, &domain, NULL));
  struct fi_av_attr aa = {.type = FI_AV_TABLE};
  TRY(fi_av_open(domain, &aa, &av, NULL));
  enum fi_wait_obj w = probe_passive ? FI_WAIT_FD : FI_WAIT_NONE;
  struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = w};
  TRY(fi_cq_open(domain, &ca, &cq, NULL));
  /* The counter without one: tcp;ofi_rxm's has no FI_GETWAIT, and the CQ's
   * fd is the endpoint's (a peer's request wakes it). */
  struct fi_cntr_attr ct = {.events = FI_CNTR_EVENTS_COMP,
                            .wait_obj = FI_WAIT_NONE};
  TRY(fi_cntr_open(domain, &ct, &cntr, NULL));
  TRY(fi_endpoint(domain, info, &ep, NULL));
  TRY(fi_ep_bind(ep, &av->fid, 0));
  TRY(fi_ep_bind(ep, &cq->fid,
                 FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION));
  TRY(fi_ep_bind(ep, &cntr->fid, FI_READ | FI_WRITE));
  TRY(fi_enable(ep));
  if (probe_passive)
    TRY(fi_control(&cq->fid, FI_GETWAIT, &cq_fd));
  TRY(fi_getname(&ep->fid, addr, len));
  snprintf(d, dlen, "provider %s, fabric %s, domain %s, mr_mode 0x%x",
           info->fabric_attr->prov_name, info->fabric_attr->name,
           info->domain_attr->name, (unsigned)info->domain_attr->mr_mode);
  return 0;
}

static int r_connect(const void *a, size_t len) {
  (void)len;
  return fi_av_insert(av, a, 1, &peer, 0, NULL) == 1 ? 0 : -1;
}

static int r_reg(char *region, size_t size, void *key, size_t *len) {
  local = region;
  TRY(fi_mr_reg(domain, region, size,
                FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 7, 0,
                &mr, NULL));
  if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
    TRY(fi_mr_bind(mr, &ep->fid, 0));
    TRY(fi_mr_enable(mr));
  }
  desc = fi_mr_desc(mr);
  uint64_t k[2] = {fi_mr_key(mr), (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
                                      ? (uint64_t)(uintptr_t)region
                                      : 0};
  memcpy(key, k, sizeof k);
  *len = sizeof k;
  return 0;
}

static int r_import(const void *key, size_t len) {
  uint64_t k[2];
  if (len != sizeof k)
    return -1;
  memcpy(k, key, sizeof k);
  rkey = k[0], rbase = k[1];
  return 0;
}

static int again(ssize_t ret) {
  if (ret == -FI_EAGAIN) {
    struct fi_cq_entry e;
    (void)fi_cq_read(cq, &e, 1);
    return 1;
  }
  return 0;
}

static int r_put(size_t off, size_t len) {
  ssize_t ret;
  while (again(ret = fi_write(ep, local + off, len, desc, peer, rbase + off,
                              rkey, NULL)))
    ;
  issued += ret == 0;
  return ret ? -1 : 0;
}

static int r_get(size_t off, size_t len) {
  ssize_t ret;
  while (again(
      ret = fi_read(ep, local + off, len, desc, peer, rbase + off, rkey, NULL)))
    ;
  issued += ret == 0;
  return ret ? -1 : 0;
}

static int r_fetch_add(size_t off, uint64_t *result) {
  static uint64_t one = 1;
  ssize_t ret;
  uint64_t *res = (uint64_t *)(void *)(local + off);
  while (
      again(ret = fi_fetch_atomic(ep, &one, 1, NULL, res, desc, peer,
                                  rbase + off, rkey, FI_UINT64, FI_SUM, NULL)))
    ;
  issued += ret == 0;
  *result = *res; /* valid after wait; the probe does not look */
  return ret ? -1 : 0;
}

static int r_wait(void) {
  while (fi_cntr_read(cntr) + fi_cntr_readerr(cntr) < issued) {
    struct fi_cq_entry e;
    ssize_t n = fi_cq_read(cq, &e, 1);
    if (n < 0 && n != -FI_EAGAIN) {
      fprintf(stderr, "net_raw: an operation failed\n");
      return -1;
    }
  }
  return fi_cntr_readerr(cntr) ? -1 : 0;
}

static int r_progress(void) {
  struct fi_cq_entry e;
  ssize_t n = fi_cq_read(cq, &e, 1);
  return n >= 0 || n == -FI_EAGAIN ? 0 : -1;
}

/* --passive: libfabric's way to block (fi_trywait, then poll on the wait
 * objects' fds); -FI_EAGAIN from fi_trywait: work is pending, no sleep. */
static int r_sleep(int fd) {
  struct fid *fids[1] = {&cq->fid};
  int ret = fi_trywait(fabric, fids, 1);
  if (ret == -FI_EAGAIN)
    return 1;
  if (ret) {
    fprintf(stderr, "net_raw: fi_trywait: %s\n", fi_strerror(-ret));
    return -1;
  }
  struct pollfd p[2] = {{cq_fd, POLLIN, 0}, {fd, POLLIN, 0}};
  if (poll(p, 2, PROBE_SLEEP_MS) < 0)
    return -1;
  return p[0].revents ? 1 : 0;
}

static void r_close(void) {
  if (ep)
    fi_close(&ep->fid);
  if (mr)
    fi_close(&mr->fid);
  if (cntr)
    fi_close(&cntr->fid);
  if (cq)
    fi_close(&cq->fid);
  if (av)
    fi_close(&av->fid);
  if (domain)
    fi_close(&domain->fid);
  if (fabric)
    fi_close(&fabric->fid);
  if (info)
    fi_freeinfo(info);
}

int main(int argc, char **argv) {
  const probe_engine_t raw = {
      "raw libfabric", r_open,      r_connect, r_reg,      r_import, r_put,
      r_get,           r_fetch_add, r_wait,    r_progress, r_close,
      r_sleep};
  return probe_main(argc, argv, &raw);
}

/* A fake libibverbs for CI: devices, contexts, protection domains and
 * memory regions over nothing, with the checks the real library makes
 * (a protection domain with regions cannot go, nor a context with domains)
 * and counts that tests read.  Registration reads the first and last byte of
 * host memory, so a region over memory the process cannot touch crashes
 * here as the real pinning would fail. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_ibverbs.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct {
  void *context;
  void *pd;
  void *addr;
  size_t length;
  uint32_t handle;
  uint32_t lkey;
  uint32_t rkey;
} ibv_mr_t;

typedef struct {
  char name[16];
} dev_t_;
typedef struct {
  dev_t_ *dev;
  int pds;
} ctx_t;
typedef struct {
  ctx_t *ctx;
  int mrs;
} pd_t;
typedef struct mr {
  ibv_mr_t pub;
  int dmabuf;
  struct mr *next;
} mr_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dev_t_ devs[8];
static mr_t *live;
static fake_ibv_counts_t counts;
static uint32_t next_key = 0x100;

static pthread_once_t devs_once = PTHREAD_ONCE_INIT;
static void name_devs(void) {
  for (int i = 0; i < 8; i++)
    snprintf(devs[i].name, sizeof devs[i].name, "fake_%d", i);
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

EXPORT void **ibv_get_device_list(int *num) {
  int n = env_int("FAKE_IBV_DEVICES", 1);
  if (n < 0 || n > 8) {
    errno = EINVAL;
    return NULL;
  }
  void **list = calloc((size_t)n + 1, sizeof *list);
  if (!list) {
    errno = ENOMEM;
    return NULL;
  }
  /* The devices are the library's, named once: threads list them at once. */
  pthread_once(&devs_once, name_devs);
  for (int i = 0; i < n; i++)
    list[i] = &devs[i];
  if (num)
    *num = n;
  return list;
}

EXPORT void ibv_free_device_list(void **list) { free(list); }

EXPORT const char *ibv_get_device_name(void *dev) {
  return dev ? ((dev_t_ *)dev)->name : NULL;
}

EXPORT void *ibv_open_device(void *dev) {
  ctx_t *c = calloc(1, sizeof *c);
  if (!c) {
    errno = ENOMEM;
    return NULL;
  }
  c->dev = dev;
  pthread_mutex_lock(&lock);
  counts.contexts++;
  pthread_mutex_unlock(&lock);
  return c;
}

EXPORT int ibv_close_device(void *ctx) {
  ctx_t *c = ctx;
  pthread_mutex_lock(&lock);
  int busy = c->pds > 0;
  if (!busy)
    counts.contexts--;
  pthread_mutex_unlock(&lock);
  if (busy)
    return EBUSY;
  free(c);
  return 0;
}

EXPORT void *ibv_alloc_pd(void *ctx) {
  pd_t *p = calloc(1, sizeof *p);
  if (!p) {
    errno = ENOMEM;
    return NULL;
  }
  p->ctx = ctx;
  pthread_mutex_lock(&lock);
  p->ctx->pds++;
  counts.pds++;
  pthread_mutex_unlock(&lock);
  return p;
}

EXPORT int ibv_dealloc_pd(void *pd) {
  pd_t *p = pd;
  pthread_mutex_lock(&lock);
  int busy = p->mrs > 0;
  if (!busy) {
    p->ctx->pds--;
    counts.pds--;
  }
  pthread_mutex_unlock(&lock);
  if (busy)
    return EBUSY;
  free(p);
  return 0;
}

static ibv_mr_t *reg(void *pd, void *addr, size_t len, int dmabuf) {
  pthread_mutex_lock(&lock);
  int nth = ++counts.regs, fail = env_int("FAKE_IBV_FAIL_REG", 0);
  pthread_mutex_unlock(&lock);
  if (!pd || len == 0 || nth == fail) {
    errno = nth == fail ? ENOMEM : EINVAL;
    return NULL;
  }
  mr_t *m = calloc(1, sizeof *m);
  if (!m) {
    errno = ENOMEM;
    return NULL;
  }
  pthread_mutex_lock(&lock);
  m->pub.context = ((pd_t *)pd)->ctx;
  m->pub.pd = pd;
  m->pub.addr = addr;
  m->pub.length = len;
  m->pub.lkey = next_key++;
  /* Distinct across the processes of a test: the pid in the top bits. */
  m->pub.rkey = ((uint32_t)getpid() << 16) ^ next_key++;
  m->dmabuf = dmabuf;
  m->next = live;
  live = m;
  ((pd_t *)pd)->mrs++;
  counts.mrs++;
  counts.dmabuf_regs += dmabuf;
  pthread_mutex_unlock(&lock);
  return &m->pub;
}

EXPORT ibv_mr_t *ibv_reg_mr(void *pd, void *addr, size_t len, int access) {
  if (!addr || !(access & 1)) {
    errno = EINVAL;
    return NULL;
  }
  volatile const char *p = addr;
  (void)p[0];
  (void)p[len - 1];
  return reg(pd, addr, len, 0);
}

EXPORT ibv_mr_t *ibv_reg_dmabuf_mr(void *pd, uint64_t offset, size_t len,
                                   uint64_t iova, int fd, int access) {
  (void)offset;
  if (fcntl(fd, F_GETFD) < 0 || !(access & 1)) {
    errno = EBADF;
    return NULL;
  }
  return reg(pd, (void *)(uintptr_t)iova, len, 1);
}

EXPORT int ibv_dereg_mr(ibv_mr_t *mr) {
  pthread_mutex_lock(&lock);
  mr_t **pp = &live;
  while (*pp && &(*pp)->pub != mr)
    pp = &(*pp)->next;
  mr_t *m = *pp;
  if (m) {
    *pp = m->next;
    ((pd_t *)m->pub.pd)->mrs--;
    counts.mrs--;
    counts.deregs++;
  }
  pthread_mutex_unlock(&lock);
  if (!m)
    return EINVAL;
  free(m);
  return 0;
}

EXPORT void fake_ibv_counts(fake_ibv_counts_t *out) {
  pthread_mutex_lock(&lock);
  *out = counts;
  pthread_mutex_unlock(&lock);
}

EXPORT int fake_ibv_find(uint32_t rkey, uint64_t *addr, size_t *len,
                         uint32_t *lkey, int *dmabuf) {
  pthread_mutex_lock(&lock);
  mr_t *m = live;
  while (m && m->pub.rkey != rkey)
    m = m->next;
  if (m) {
    *addr = (uint64_t)(uintptr_t)m->pub.addr;
    *len = m->pub.length;
    *lkey = m->pub.lkey;
    *dmabuf = m->dmabuf;
  }
  pthread_mutex_unlock(&lock);
  return m != NULL;
}

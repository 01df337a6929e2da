/* The recording test adaptor: the host adaptor underneath, every call logged
 * per rank, a fault injected at the Nth call of a chosen op on a chosen rank,
 * and (when asked) a multicast object faked over host memory so the core's
 * multicast sequence and its unwinding can be checked without a GPU. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_RANKS 16
#define MAX_OPS 32

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char logs[MAX_RANKS][16384];
static struct {
  char op[32];
  int count;
} counts[MAX_RANKS][MAX_OPS];
static struct {
  char op[32];
  int rank, nth;
  symheap_result_t code;
} fault;
static int mc_enabled;

typedef struct {
  void *inner;
  int rank;
  const symheap_host_services_t *svc;
} rec_t;

/* The built-in host adaptor, as the library links it in. */
extern const symheap_plugin_t symheap_builtin_host;
#define host (symheap_builtin_host.device)

void th_record_reset(int multicast) {
  pthread_mutex_lock(&lock);
  memset(logs, 0, sizeof logs);
  memset(counts, 0, sizeof counts);
  memset(&fault, 0, sizeof fault);
  mc_enabled = multicast;
  pthread_mutex_unlock(&lock);
}

void th_record_fault(const char *op, int rank, int nth, symheap_result_t code) {
  pthread_mutex_lock(&lock);
  snprintf(fault.op, sizeof fault.op, "%s", op);
  fault.rank = rank;
  fault.nth = nth;
  fault.code = code;
  pthread_mutex_unlock(&lock);
}

static int *count_slot(int rank, const char *op) {
  for (int i = 0; i < MAX_OPS; i++) {
    if (counts[rank][i].op[0] == '\0')
      snprintf(counts[rank][i].op, sizeof counts[rank][i].op, "%s", op);
    if (strcmp(counts[rank][i].op, op) == 0)
      return &counts[rank][i].count;
  }
  return NULL;
}

int th_record_count(const char *op, int rank) {
  pthread_mutex_lock(&lock);
  int *c = count_slot(rank, op);
  int n = c ? *c : 0;
  pthread_mutex_unlock(&lock);
  return n;
}

const char *th_record_log(int rank) { return logs[rank]; }

/* Log the call; return an injected failure when this is the chosen call. */
static symheap_result_t hit(rec_t *r, const char *op) {
  int rank = r->rank < MAX_RANKS ? r->rank : MAX_RANKS - 1;
  pthread_mutex_lock(&lock);
  size_t len = strlen(logs[rank]);
  if (len + strlen(op) + 2 < sizeof logs[rank])
    snprintf(logs[rank] + len, sizeof logs[rank] - len, "%s%s", len ? "," : "",
             op);
  int *c = count_slot(rank, op);
  int n = c ? ++*c : 0;
  int fire = fault.nth && fault.rank == r->rank && strcmp(fault.op, op) == 0 &&
             fault.nth == n;
  symheap_result_t code = fault.code;
  pthread_mutex_unlock(&lock);
  if (fire && code == TH_RECORD_KILL)
    raise(SIGKILL); /* the rank dies here, as a crash would take it */
  if (fire && code == TH_RECORD_STOP) {
    th_stop_self(TH_RECORD_STOP_MS); /* stalls here, then carries on */
    return SYMHEAP_SUCCESS;
  }
  if (fire)
    return r->svc->error(code, "injected fault in %s on rank %d (call %d)", op,
                         r->rank, n);
  return SYMHEAP_SUCCESS;
}

#define HIT(op)                                                                \
  do {                                                                         \
    symheap_result_t h_ = hit(r, op);                                          \
    if (h_ != SYMHEAP_SUCCESS)                                                 \
      return h_;                                                               \
  } while (0)

static int rec_available(const symheap_host_services_t *svc, char *why,
                         size_t len) {
  return host->available(svc, why, len);
}

static symheap_result_t rec_init(const symheap_host_services_t *svc,
                                 const symheap_device_init_t *args,
                                 void **ctx) {
  rec_t *r = calloc(1, sizeof *r);
  if (!r)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "record: no memory");
  r->rank = args->rank;
  r->svc = svc;
  symheap_result_t res = hit(r, "init");
  if (res == SYMHEAP_SUCCESS)
    res = host->init(svc, args, &r->inner);
  if (res != SYMHEAP_SUCCESS) {
    free(r);
    return res;
  }
  *ctx = r;
  return SYMHEAP_SUCCESS;
}

static void rec_fini(void *ctx) {
  rec_t *r = ctx;
  (void)hit(r, "fini");
  host->fini(r->inner);
  free(r);
}

static symheap_result_t rec_query(void *ctx, symheap_device_caps_t *caps) {
  rec_t *r = ctx;
  HIT("query");
  symheap_result_t res = host->query(r->inner, caps);
  snprintf(caps->device_name, sizeof caps->device_name, "record over host");
  if (mc_enabled) {
    caps->caps |= SYMHEAP_CAP_MULTICAST;
    caps->multicast_granularity = 2 * caps->granularity;
  }
  return res;
}

static symheap_result_t rec_mem_create(void *ctx, size_t size,
                                       symheap_mem_handle_t *h) {
  rec_t *r = ctx;
  HIT("mem_create");
  return host->mem_create(r->inner, size, h);
}
static symheap_result_t rec_mem_release(void *ctx, symheap_mem_handle_t h) {
  rec_t *r = ctx;
  (void)hit(r, "mem_release"); /* release must not fail in teardown paths */
  return host->mem_release(r->inner, h);
}
static symheap_result_t rec_mem_export(void *ctx, symheap_mem_handle_t h,
                                       uint32_t kind,
                                       symheap_shareable_t *out) {
  rec_t *r = ctx;
  HIT("mem_export");
  return host->mem_export(r->inner, h, kind, out);
}
static symheap_result_t rec_mem_import(void *ctx, const symheap_shareable_t *in,
                                       symheap_mem_handle_t *h) {
  rec_t *r = ctx;
  symheap_result_t res = hit(r, "mem_import");
  if (res != SYMHEAP_SUCCESS) {
    /* The contract: the adaptor owns the descriptor even when it fails. */
    symheap_shareable_t tmp = *in;
    symheap_mem_handle_t dummy;
    if (host->mem_import(r->inner, &tmp, &dummy) == SYMHEAP_SUCCESS)
      host->mem_release(r->inner, dummy);
    return r->svc->error(res, "injected fault in mem_import on rank %d",
                         r->rank);
  }
  return host->mem_import(r->inner, in, h);
}
static symheap_result_t rec_va_reserve(void *ctx, size_t size, size_t align,
                                       void **va) {
  rec_t *r = ctx;
  HIT("va_reserve");
  return host->va_reserve(r->inner, size, align, va);
}
static symheap_result_t rec_va_free(void *ctx, void *va, size_t size) {
  rec_t *r = ctx;
  (void)hit(r, "va_free");
  return host->va_free(r->inner, va, size);
}
static symheap_result_t rec_map(void *ctx, void *va, size_t size,
                                symheap_mem_handle_t h, size_t off) {
  rec_t *r = ctx;
  HIT("map");
  return host->map(r->inner, va, size, h, off);
}
static symheap_result_t rec_unmap(void *ctx, void *va, size_t size) {
  rec_t *r = ctx;
  (void)hit(r, "unmap");
  return host->unmap(r->inner, va, size);
}
static symheap_result_t rec_set_access(void *ctx, void *va, size_t size) {
  rec_t *r = ctx;
  HIT("set_access");
  return host->set_access(r->inner, va, size);
}

static symheap_result_t rec_mem_zero(void *ctx, void *va, size_t size) {
  rec_t *r = ctx;
  HIT("mem_zero");
  return host->mem_zero(r->inner, va, size);
}

/* Fake multicast: the object is host memory of its own; binding is only
 * recorded.  Enough to check order and unwinding, not data movement. */
static symheap_result_t rec_mc_create(void *ctx, size_t size, int ndev,
                                      symheap_mem_handle_t *mc) {
  rec_t *r = ctx;
  HIT("mc_create");
  if (ndev < 1)
    return r->svc->error(SYMHEAP_ERR_INVALID_ARG, "mc_create: %d devices",
                         ndev);
  return host->mem_create(r->inner, size, mc);
}
static symheap_result_t rec_mc_add_device(void *ctx, symheap_mem_handle_t mc) {
  rec_t *r = ctx;
  (void)mc;
  HIT("mc_add_device");
  return SYMHEAP_SUCCESS;
}
static symheap_result_t rec_mc_bind(void *ctx, symheap_mem_handle_t mc,
                                    size_t mco, symheap_mem_handle_t mem,
                                    size_t memo, size_t size) {
  rec_t *r = ctx;
  (void)mc, (void)mco, (void)mem, (void)memo, (void)size;
  HIT("mc_bind");
  return SYMHEAP_SUCCESS;
}
static symheap_result_t rec_mc_unbind(void *ctx, symheap_mem_handle_t mc,
                                      size_t o, size_t size) {
  rec_t *r = ctx;
  (void)mc, (void)o, (void)size;
  (void)hit(r, "mc_unbind");
  return SYMHEAP_SUCCESS;
}

const symheap_device_ops th_record_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_device_ops),
    .name = "record",
    .available = rec_available,
    .init = rec_init,
    .fini = rec_fini,
    .query = rec_query,
    .mem_create = rec_mem_create,
    .mem_release = rec_mem_release,
    .mem_export = rec_mem_export,
    .mem_import = rec_mem_import,
    .va_reserve = rec_va_reserve,
    .va_free = rec_va_free,
    .map = rec_map,
    .unmap = rec_unmap,
    .set_access = rec_set_access,
    .mc_create = rec_mc_create,
    .mc_add_device = rec_mc_add_device,
    .mc_bind = rec_mc_bind,
    .mc_unbind = rec_mc_unbind,
    .mem_zero = rec_mem_zero,
};

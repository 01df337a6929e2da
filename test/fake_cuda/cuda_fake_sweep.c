/* test_cuda_fake: the registration's driver calls, each failed in turn on
 * every rank (everything undone everywhere; plain, multicast, heap growth),
 * and the multicast call sequence, or its refusal when disabled. */
#include <string.h>

#include "cuda_fake_test.h"

/* --- a fault at every driver call of a registration ---------------------- */
static const char *reg_calls[] = {"cuMemCreate",
                                  "cuMemAddressReserve",
                                  "cuMemMap",
                                  "cuMemSetAccess",
                                  "cuMemExportToShareableHandle",
                                  "cuMemImportFromShareableHandle",
                                  "cuMulticastCreate",
                                  "cuMulticastAddDevice",
                                  "cuMulticastBindMem"};
#define NCALLS (sizeof reg_calls / sizeof reg_calls[0])

int count_calls(const char *log, const char *fn, int dev) {
  char needle[96];
  snprintf(needle, sizeof needle, "%s@%d", fn, dev);
  int n = 0;
  size_t len = strlen(needle);
  for (const char *p = log; (p = strstr(p, needle)); p += len)
    if ((p == log || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
      n++;
  return n;
}

/* With the heap: release its chunks, so that the next malloc grows it. */
void trim(th_ctx_t *c, const sweep_t *sw) {
  if (sw->heap)
    CHECK_OK(symheap_heap_trim(c->comm));
}

void sweep(th_ctx_t *c, void *arg) {
  sweep_t *sw = arg;
  th_begin("cuda",
           sw->heap    ? "fault_at_every_driver_call_heap_growth"
           : sw->flags ? "fault_at_every_driver_call_multicast"
                       : "fault_at_every_driver_call",
           c->rank);
  static int calls[2][NCALLS];
  symheap_window_t w;
  if (sw->heap) { /* the reservation first: the sweep is of growth alone */
    CHECK_OK(symheap_malloc(c->comm, 4096, 0, &w));
    CHECK_OK(symheap_free(c->comm, w));
    trim(c, sw);
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    log_reset();
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_malloc(c->comm, 3 << 20, sw->flags, &w));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    for (int d = 0; d < 2; d++)
      for (size_t i = 0; i < NCALLS; i++)
        calls[d][i] = count_calls(call_log(), reg_calls[i], d);
  CHECK_OK(symheap_free(c->comm, w));
  trim(c, sw);
  CHECK_OK(symheap_comm_barrier(c->comm));
  fake_cuda_live_t base, now;
  int fds0 = 0;
  if (c->rank == 0) { /* one counter: counting opens a descriptor */
    live(&base);
    fds0 = th_count_fds();
  }
  symheap_comm_stats_t s0 = SYMHEAP_COMM_STATS_INIT,
                       s1 = SYMHEAP_COMM_STATS_INIT;
  CHECK_OK(symheap_comm_get_stats(c->comm, &s0));
  CHECK_OK(symheap_comm_barrier(c->comm));
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < NCALLS; i++)
      for (int nth = 1; nth <= calls[d][i]; nth++) {
        CHECK_OK(symheap_comm_barrier(c->comm));
        if (c->rank == 0) {
          set_fault(reg_calls[i], d, nth, CU_ERR_UNKNOWN);
          sw->injected++;
        }
        CHECK_OK(symheap_comm_barrier(c->comm));
        symheap_result_t r = symheap_malloc(c->comm, 3 << 20, sw->flags, &w);
        CHECK(r == SYMHEAP_ERR_DEVICE &&
                  strstr(symheap_last_error(), reg_calls[i]),
              "%s #%d on device %d: got %s (%s)", reg_calls[i], nth, d,
              symheap_strerror(r), symheap_last_error());
        if (r == SYMHEAP_SUCCESS)
          CHECK_OK(symheap_free(c->comm, w));
        if (r == SYMHEAP_SUCCESS)
          trim(c, sw);
        CHECK_OK(symheap_comm_get_stats(c->comm, &s1));
        CHECK(memcmp(&s0, &s1, sizeof s0) == 0,
              "%s #%d on device %d: accounting moved", reg_calls[i], nth, d);
        CHECK_OK(symheap_comm_barrier(c->comm));
        if (c->rank == 0) {
          live(&now);
          CHECK(memcmp(&now, &base, sizeof now) == 0 && th_count_fds() == fds0,
                "%s #%d on device %d left: handles %d->%d mappings %d->%d "
                "reservations %d->%d multicast %d->%d fds %d->%d",
                reg_calls[i], nth, d, base.handles, now.handles, base.mappings,
                now.mappings, base.reservations, now.reservations,
                base.mc_objects, now.mc_objects, fds0, th_count_fds());
          set_fault(NULL, 0, 0, 0);
        }
      }
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_malloc(c->comm, 3 << 20, sw->flags, &w));
  CHECK_OK(symheap_free(c->comm, w));
  th_end();
}

/* --- multicast order ----------------------------------------------------- */
/* The calls appear in this order (each after the one before it). */
static int in_order(const char *log, const char *const *calls) {
  const char *p = log;
  for (; *calls; calls++) {
    p = strstr(p, *calls);
    if (!p)
      return 0;
    p += strlen(*calls);
  }
  return 1;
}
#define IN_ORDER(log, ...)                                                     \
  in_order(log, (const char *const[]){__VA_ARGS__, NULL})

void mc_sequence(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("cuda", "multicast_call_sequence", c->rank);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    log_reset();
  CHECK_OK(symheap_comm_barrier(c->comm));
  symheap_window_t w;
  CHECK_OK(symheap_malloc(c->comm, 1 << 20, SYMHEAP_WINDOW_MULTICAST, &w));
  void *mc = NULL;
  CHECK_OK(symheap_window_multicast_ptr(w, &mc));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    const char *l = call_log();
    CHECK(count_calls(l, "cuMulticastCreate", 0) == 1 &&
              count_calls(l, "cuMulticastCreate", 1) == 0,
          "exactly one rank creates the object: %s", l);
    CHECK(IN_ORDER(l, "cuMulticastCreate@0", "cuMemExportToShareableHandle@0",
                   "cuMulticastAddDevice@0"),
          "create, export, add on rank 0: %s", l);
    CHECK(IN_ORDER(l, "cuMulticastCreate@0", "cuMemImportFromShareableHandle@1",
                   "cuMulticastAddDevice@1"),
          "import, add on rank 1: %s", l);
    const char *first_bind = strstr(l, "cuMulticastBindMem");
    const char *add0 = strstr(l, "cuMulticastAddDevice@0");
    const char *add1 = strstr(l, "cuMulticastAddDevice@1");
    CHECK(first_bind && add0 && add1 && add0 < first_bind && add1 < first_bind,
          "every device is added before any binds: %s", l);
    CHECK(IN_ORDER(l, "cuMulticastBindMem@0", "cuMemAddressReserve@0",
                   "cuMemMap@0", "cuMemSetAccess@0") &&
              IN_ORDER(l, "cuMulticastBindMem@1", "cuMemAddressReserve@1",
                       "cuMemMap@1", "cuMemSetAccess@1") &&
              count_calls(l, "cuMulticastBindMem", 1) == 1,
          "bind, then map and set access: %s", l);
    log_reset();
  }
  CHECK_OK(symheap_comm_barrier(c->comm));
  CHECK_OK(symheap_free(c->comm, w));
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0) {
    const char *l = call_log();
    CHECK(IN_ORDER(l, "cuMemUnmap@0", "cuMemAddressFree@0",
                   "cuMulticastUnbind@0", "cuMemRelease@0") &&
              IN_ORDER(l, "cuMemUnmap@1", "cuMemAddressFree@1",
                       "cuMulticastUnbind@1", "cuMemRelease@1") &&
              count_calls(l, "cuMulticastUnbind", 1) == 1,
          "teardown runs in reverse: %s", l);
    fake_cuda_live_t now;
    live(&now);
    CHECK(now.mc_objects == 0, "%d multicast objects left", now.mc_objects);
  }
  th_end();
}

void mc_refused(th_ctx_t *c, void *arg) {
  (void)arg;
  th_begin("cuda", "multicast_refused_when_disabled", c->rank);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    log_reset();
  CHECK_OK(symheap_comm_barrier(c->comm));
  symheap_window_t w;
  CHECK_ERR(symheap_malloc(c->comm, 1 << 20, SYMHEAP_WINDOW_MULTICAST, &w),
            SYMHEAP_ERR_UNSUPPORTED);
  CHECK_OK(symheap_comm_barrier(c->comm));
  if (c->rank == 0)
    CHECK(strstr(call_log(), "cuMulticastCreate") == NULL,
          "a multicast object was created: %s", call_log());
  th_end();
}

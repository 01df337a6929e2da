/* The device proxy's producer played by the CPU, as the device code does
 * it (kernels/symheap_device.cuh: symheap_dev_proxy_post / _quiet), for
 * the tests that stand in for a kernel (test_proxy.c, test_stage.c). */
#ifndef SYMHEAP_TEST_PROXY_PRODUCER_H
#define SYMHEAP_TEST_PROXY_PRODUCER_H
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "symheap_device.h"

static inline uint64_t producer_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t *ticket_ctr(const symheap_device_window_t *v) {
  return (uint64_t *)symheap_device_pad_ptr(v, v->rank,
                                            SYMHEAP_PAD_PROXY_OFFSET);
}

static inline symheap_result_t post(const symheap_device_window_t *v, uint32_t op,
                             int peer, uint64_t off, const void *src,
                             uint64_t len, uint32_t sig_index, uint32_t sig_op,
                             uint64_t value, uint64_t timeout_ns) {
  symheap_proxy_ring_t *ring = v->proxy_ring;
  uint64_t t = __atomic_fetch_add(ticket_ctr(v), 1, __ATOMIC_RELAXED);
  uint64_t start = producer_now_ns();
  while (t - __atomic_load_n(&ring->consumed, __ATOMIC_ACQUIRE) >=
         ring->entries) {
    if (__atomic_load_n(&ring->stopped, __ATOMIC_ACQUIRE))
      return SYMHEAP_ERR_REMOTE;
    if (producer_now_ns() - start > timeout_ns)
      return SYMHEAP_ERR_TIMEOUT;
    sched_yield(); /* the device's __nanosleep; valgrind runs one thread */
  }
  if (__atomic_load_n(&ring->stopped, __ATOMIC_ACQUIRE))
    return SYMHEAP_ERR_REMOTE; /* nobody would take it */
  symheap_proxy_desc_t *d = &ring->desc[t % ring->entries];
  d->op = op;
  d->peer = peer;
  d->window = v->proxy_window;
  d->offset = off;
  d->src = (uint64_t)(uintptr_t)src;
  d->len = len;
  d->sig_index = sig_index;
  d->sig_op = sig_op;
  d->sig_value = value;
  __atomic_thread_fence(__ATOMIC_SEQ_CST); /* __threadfence_system */
  __atomic_store_n(&d->seq, t + 1, __ATOMIC_RELEASE);
  return SYMHEAP_SUCCESS;
}

static inline symheap_result_t quiet(const symheap_device_window_t *v) {
  symheap_proxy_ring_t *ring = v->proxy_ring;
  uint64_t upto = __atomic_load_n(ticket_ctr(v), __ATOMIC_ACQUIRE);
  uint64_t start = producer_now_ns();
  while (__atomic_load_n(&ring->completed, __ATOMIC_ACQUIRE) < upto) {
    if (producer_now_ns() - start > ring->timeout_ns)
      return SYMHEAP_ERR_TIMEOUT;
    sched_yield();
  }
  return (symheap_result_t)__atomic_load_n(&ring->error, __ATOMIC_ACQUIRE);
}

#endif

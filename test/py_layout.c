/* The C layout of the structures the Python binding mirrors with ctypes
 * (bindings/python/symheap/_lib.py), for test/python/host_basics.py's
 * struct_layout case to compare field by field: a line per structure,
 *   S <ctypes name> <sizeof>
 * then one per member, in the header's order,
 *   F <ctypes name> <member> <offsetof> <sizeof member>
 * Every member of the C structure is listed: the binding may stop early in
 * a caller-sized structure (struct_size says how much the library writes),
 * never skip one or place one elsewhere.  Not a test by itself: it prints
 * and exits 0. */
#include <stddef.h>
#include <stdio.h>

#include "symheap.h"
#include "symheap_device.h"

#define S(PY, T) printf("S %s %zu\n", PY, sizeof(T))
#define F(PY, T, M)                                                            \
  printf("F %s %s %zu %zu\n", PY, #M, offsetof(T, M), sizeof(((T *)0)->M))

static void device_status(void) {
  const char *p = "DeviceStatus";
  S(p, symheap_device_status_t);
  F(p, symheap_device_status_t, code);
  F(p, symheap_device_status_t, wait);
  F(p, symheap_device_status_t, peer);
  F(p, symheap_device_status_t, block);
  F(p, symheap_device_status_t, want);
  F(p, symheap_device_status_t, seen);
  F(p, symheap_device_status_t, waited_ns);
  F(p, symheap_device_status_t, done);
  F(p, symheap_device_status_t, pad_);
  F(p, symheap_device_status_t, reserved);
}

static void device_window(void) {
  const char *p = "DeviceWindow";
  S(p, symheap_device_window_t);
  F(p, symheap_device_window_t, version);
  F(p, symheap_device_window_t, struct_size);
  F(p, symheap_device_window_t, flat_base);
  F(p, symheap_device_window_t, stride);
  F(p, symheap_device_window_t, size);
  F(p, symheap_device_window_t, rank);
  F(p, symheap_device_window_t, nranks);
  F(p, symheap_device_window_t, flags);
  F(p, symheap_device_window_t, signal_count);
  F(p, symheap_device_window_t, multicast_base);
  F(p, symheap_device_window_t, pad_base);
  F(p, symheap_device_window_t, pad_stride);
  F(p, symheap_device_window_t, signal_offset);
  F(p, symheap_device_window_t, peer_ptrs);
  F(p, symheap_device_window_t, world_ranks);
  F(p, symheap_device_window_t, local_rank);
  F(p, symheap_device_window_t, local_nranks);
  F(p, symheap_device_window_t, reachable);
  F(p, symheap_device_window_t, rdma_addr);
  F(p, symheap_device_window_t, rdma_rkey);
  F(p, symheap_device_window_t, proxy_ring);
  F(p, symheap_device_window_t, proxy_window);
  F(p, symheap_device_window_t, status);
  F(p, symheap_device_window_t, timeout_ns);
}

static void comm_info(void) {
  const char *p = "CommInfo";
  S(p, symheap_comm_info_t);
  F(p, symheap_comm_info_t, struct_size);
  F(p, symheap_comm_info_t, rank);
  F(p, symheap_comm_info_t, nranks);
  F(p, symheap_comm_info_t, local_rank);
  F(p, symheap_comm_info_t, device_adaptor);
  F(p, symheap_comm_info_t, ccl_adaptor);
  F(p, symheap_comm_info_t, granularity);
  F(p, symheap_comm_info_t, multicast_available);
  F(p, symheap_comm_info_t, timeout_ms);
  F(p, symheap_comm_info_t, device);
  F(p, symheap_comm_info_t, cpu_access);
  F(p, symheap_comm_info_t, window_cache);
  F(p, symheap_comm_info_t, local_nranks);
  F(p, symheap_comm_info_t, nhosts);
  F(p, symheap_comm_info_t, window_path);
}

static void comm_stats(void) {
  const char *p = "CommStats";
  S(p, symheap_comm_stats_t);
  F(p, symheap_comm_stats_t, struct_size);
  F(p, symheap_comm_stats_t, windows_live);
  F(p, symheap_comm_stats_t, allocations_live);
  F(p, symheap_comm_stats_t, bytes_allocated);
  F(p, symheap_comm_stats_t, bytes_registered);
  F(p, symheap_comm_stats_t, va_reserved);
  F(p, symheap_comm_stats_t, bytes_mapped);
  F(p, symheap_comm_stats_t, descriptors_held);
  F(p, symheap_comm_stats_t, multicast_objects);
  F(p, symheap_comm_stats_t, mappings_cached);
  F(p, symheap_comm_stats_t, heap_reserved);
  F(p, symheap_comm_stats_t, heap_committed);
  F(p, symheap_comm_stats_t, heap_used);
  F(p, symheap_comm_stats_t, heap_allocations);
}

static void heap_info(void) {
  const char *p = "HeapInfo";
  S(p, symheap_heap_info_t);
  F(p, symheap_heap_info_t, struct_size);
  F(p, symheap_heap_info_t, reserved);
  F(p, symheap_heap_info_t, committed);
  F(p, symheap_heap_info_t, used);
  F(p, symheap_heap_info_t, largest_free);
  F(p, symheap_heap_info_t, allocations);
  F(p, symheap_heap_info_t, chunks);
  F(p, symheap_heap_info_t, chunk_size);
  F(p, symheap_heap_info_t, threshold);
  F(p, symheap_heap_info_t, enabled);
}

int main(void) {
  S("UniqueId", symheap_unique_id_t);
  F("UniqueId", symheap_unique_id_t, bytes);
  device_status();
  device_window();
  comm_info();
  comm_stats();
  heap_info();
  return 0;
}

/* The device-side window view: a plain struct that kernels take by value.
 *
 * It is plain C with no dependency on any runtime, so the same definition
 * serves host code, CUDA and HIP.  Peer p's copy of the window is at
 * flat_base + p * stride when SYMHEAP_VIEW_FLAT is set; otherwise (the
 * asymmetric fallback, e.g. legacy CUDA IPC) at peer_ptrs[p].
 */
#ifndef SYMHEAP_DEVICE_H
#define SYMHEAP_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define SYMHEAP_DEVICE_INLINE __host__ __device__ static inline
#else
#define SYMHEAP_DEVICE_INLINE static inline
#endif

#define SYMHEAP_DEVICE_WINDOW_VERSION 1
/* The per-peer table is carried inline so the view needs no memory of its own
 * on the device; windows wider than this need the flat VA. */
#define SYMHEAP_DEVICE_MAX_PEERS 32

/* View flags. */
#define SYMHEAP_VIEW_FLAT 0x1u      /* flat_base/stride are valid */
#define SYMHEAP_VIEW_MULTICAST 0x2u /* multicast_base is valid */

typedef struct symheap_device_window {
  uint32_t version;     /* SYMHEAP_DEVICE_WINDOW_VERSION */
  uint32_t struct_size; /* sizeof(symheap_device_window_t) of the library */
  void *flat_base;      /* rank 0's copy; NULL without SYMHEAP_VIEW_FLAT */
  uint64_t stride;      /* bytes between consecutive ranks' copies */
  uint64_t size;        /* usable bytes of each rank's copy */
  int32_t rank;
  int32_t nranks;
  uint32_t flags; /* SYMHEAP_VIEW_* */
  uint32_t reserved0;
  void *multicast_base; /* NULL without SYMHEAP_VIEW_MULTICAST */
  /* Peer addresses; filled in both modes for the first
   * SYMHEAP_DEVICE_MAX_PEERS ranks. */
  void *peer_ptrs[SYMHEAP_DEVICE_MAX_PEERS];
  uint64_t reserved[4]; /* room to grow without changing the size */
} symheap_device_window_t;

/* Address of byte `offset` of peer's copy.  No bounds check: kernels are hot.
 */
SYMHEAP_DEVICE_INLINE void *
symheap_device_peer_ptr(const symheap_device_window_t *w, int peer,
                        size_t offset) {
  char *p = (w->flags & SYMHEAP_VIEW_FLAT)
                ? (char *)w->flat_base + (uint64_t)peer * w->stride
                : (char *)w->peer_ptrs[peer];
  return p + offset;
}

SYMHEAP_DEVICE_INLINE void *
symheap_device_local_ptr(const symheap_device_window_t *w, size_t offset) {
  return symheap_device_peer_ptr(w, w->rank, offset);
}

SYMHEAP_DEVICE_INLINE void *
symheap_device_multicast_ptr(const symheap_device_window_t *w, size_t offset) {
  return (w->flags & SYMHEAP_VIEW_MULTICAST)
             ? (void *)((char *)w->multicast_base + offset)
             : (void *)0;
}

#endif /* SYMHEAP_DEVICE_H */

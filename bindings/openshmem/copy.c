/* Large puts and gets on one host: which stores write them.
 *
 * A plain store to a line that is not in this core's cache first reads it
 * (read-for-ownership), then leaves it in the cache, where nobody reads it
 * soon; streaming (non-temporal) stores write whole lines to memory and do
 * neither.  But a destination written a moment ago is still cached, and
 * streaming it back out to memory costs more than the plain stores' hits.
 * OSU at 2 PEs here, with glibc's streaming copies from 64 KiB
 * (GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold): the message-rate
 * benchmarks (each put or get to the next offset of a 50x region) ran
 * 1.4-1.7x as many copies a second from 64 KiB to 4 MiB, and the latency
 * benchmarks (one dest, again and again) took twice as long from 64 KiB to
 * 512 KiB (docs/perf/openshmem.md, round 15).  glibc streams only above
 * its share of the L3, which is 480 MiB on that machine: never.  With the
 * copy below, from 16 KiB, against the library without it in the same
 * minutes: 1.0-1.8x at 16 KiB-4 MiB (each benchmark's median 1.5-1.7x);
 * latency the same within the runs' spread, and 0.01-0.04 us slower at
 * 16 KiB: the call, its code and data cold in each size's first put.
 *
 * So a copy of stream_min bytes or more (SYMHEAP_SHMEM_STREAM_MIN) streams
 * when its destination starts where the last such copy's (of this thread)
 * ended, a stream through memory, and overlaps none of the last few
 * written less than an L2's worth of bytes ago: a guess at "not in this
 * core's cache".  A destination seen for the first time is copied plainly:
 * smaller copies, which the library does not see (programs inline them),
 * may have just warmed it (OSU's get latency at 64 KiB, after its 32 KiB
 * ones, took 1.6 us against 1.4 when the first 64 KiB copy streamed).  The
 * guess only picks the stores; the bytes, and their order before whatever
 * the caller stores next (an sfence ends a streamed copy), are the same
 * either way. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define SHM_CAN_STREAM 1
#else
#define SHM_CAN_STREAM 0
#endif

#include "shmem_internal.h"

/* The last destinations, per thread (each thread may run on its own core,
 * with its own cache), and the bytes written by large copies so far: an
 * entry is warm while fewer than warm_bytes were written after it.  (The
 * TLS lookup is not what a copy costs: 16 KiB gets in a loop took 95-99
 * ns through here against 93-96 for a memcpy, alike with initial-exec.) */
#define RECENT 8
struct recent {
  uintptr_t lo, hi;
  unsigned long long after; /* `written` once it was written */
};
static _Thread_local struct {
  struct recent r[RECENT];
  unsigned next;
  unsigned long long written;
} recent;

/* An L2's bytes (sysconf says it on Linux; 1 MiB where it cannot). */
static size_t warm_bytes = 1 << 20;

static int warm(uintptr_t lo, uintptr_t hi) {
  for (int i = 0; i < RECENT; i++) {
    const struct recent *e = &recent.r[i];
    if (e->lo < hi && lo < e->hi && recent.written - e->after < warm_bytes)
      return 1;
  }
  return 0;
}

#if SHM_CAN_STREAM
/* One 64-byte line with streaming stores; d is line-aligned. */
static inline void line_streamed(char *d, const char *s) {
  __m128i a = _mm_loadu_si128((const __m128i *)s);
  __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
  __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
  __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
  _mm_stream_si128((__m128i *)d, a);
  _mm_stream_si128((__m128i *)(d + 16), b);
  _mm_stream_si128((__m128i *)(d + 32), c);
  _mm_stream_si128((__m128i *)(d + 48), e);
}

/* Whole lines of dest with streaming stores, the unaligned ends plain.
 * Four pages at a time, a line of each in turn, as glibc's own streaming
 * copy does: four streams of reads in flight instead of one.  In one
 * process here copying 64 KiB-4 MiB to fresh offsets, beside another doing
 * the same: 1.2-1.4x the copies a second of a line after line loop, 1.3-1.8x
 * memcpy's. */
static void copy_streaming(char *d, const char *s, size_t n) {
  size_t head = (size_t)(-(uintptr_t)d & 63);
  if (n < head + 64) { /* not one whole line (copies here are larger) */
    memcpy(d, s, n);
    return;
  }
  memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 4 * 4096; n -= 4 * 4096, d += 4 * 4096, s += 4 * 4096)
    for (size_t o = 0; o < 4096; o += 64)
      for (size_t p = 0; p < 4 * 4096; p += 4096)
        line_streamed(d + p + o, s + p + o);
  for (; n >= 64; n -= 64, d += 64, s += 64)
    line_streamed(d, s);
  memcpy(d, s, n);
  /* Streaming stores are weakly ordered: make them visible before any
   * later store (a flag, a signal, quiet's fence), as plain ones are. */
  _mm_sfence();
}
#endif

int shm__copy_large(void *dest, const void *src, size_t bytes) {
  uintptr_t lo = (uintptr_t)dest;
  int stream = SHM_CAN_STREAM &&
               lo == recent.r[(recent.next + RECENT - 1) % RECENT].hi &&
               !warm(lo, lo + bytes);
#if SHM_CAN_STREAM
  if (stream)
    copy_streaming(dest, src, bytes);
  else
#endif
    memcpy(dest, src, bytes);
  recent.written += bytes;
  recent.r[recent.next] = (struct recent){lo, lo + bytes, recent.written};
  recent.next = (recent.next + 1) % RECENT;
  return stream;
}

void shm__copy(void *dest, const void *src, size_t bytes) {
  if (bytes >= shm__s.stream_min)
    (void)shm__copy_large(dest, src, bytes);
  else
    memcpy(dest, src, bytes);
}
void (*const symheap_shmem_fast_copy)(void *, const void *, size_t) = shm__copy;

/* At shmem_init: the code above runs once, on bytes of this thread's
 * stack, so that its pages are mapped before a program's first large put.
 * On the machine of docs/perf/openshmem.md (round 15) a first touch of a
 * library page took 100-1200 us (the page cache went cold within seconds):
 * OSU's put and get latency at the first size copied here (64 KiB then)
 * paid it in its first of 100 iterations, and put_overlap's took 3-10 us a
 * put instead of 1.4.  The history it leaves is cleared. */
void shm__copy_setup(size_t stream_min) {
  char a[256], b[256];
#ifdef _SC_LEVEL2_CACHE_SIZE /* glibc's */
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0)
    warm_bytes = (size_t)l2;
#endif
  shm__s.stream_min = SHM_CAN_STREAM && stream_min ? stream_min : SIZE_MAX;
  memset(a, 0, sizeof a);
  shm__copy(b, a, sizeof b);
  (void)shm__copy_large(b, a, 128);
  (void)shm__copy_large(b + 128, a, 128); /* a continuation: streams */
  memset(&recent, 0, sizeof recent);
}

/* Large puts' and gets' stores (bindings/openshmem/copy.c, built here on its
 * own; round 15): which copies stream, and that every copy, streamed or
 * not, writes exactly its bytes.  One process, no shmem_init.  A copy of
 * stream_min bytes or more streams when its destination starts where the
 * last one's ended and was not written lately; elsewhere (and where the
 * CPU has no streaming stores) it is a memcpy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bindings/openshmem/copy.c"

struct shm_state shm__s;
static int failures;
#define K64 ((size_t)64 << 10)

static void want(const char *what, int got, int streamed) {
  got = got > 0; /* -1: below the minimum, which with no streaming is all */
  if (got != (SHM_CAN_STREAM && streamed)) {
    printf("FAIL copy_choice %s: %s, want %s\n", what,
           got ? "streamed" : "plain",
           SHM_CAN_STREAM && streamed ? "streamed" : "plain");
    failures++;
  }
}

static unsigned char pattern(size_t i, int salt) {
  return (unsigned char)(i * 7 + (i >> 11) + (size_t)salt * 29 + 1);
}

/* shm__copy of n bytes from src + so to dst + doff; the bytes around it in
 * dst untouched.  Returns shm__copy_large's answer (or -1 below min). */
static int copied(unsigned char *dst, size_t doff, const unsigned char *src,
                  size_t so, size_t n, size_t span, const char *what) {
  int streamed = -1;
  if (n >= shm__s.stream_min)
    streamed = shm__copy_large(dst + doff, src + so, n);
  else
    shm__copy(dst + doff, src + so, n);
  for (size_t i = 0; i < span; i++) {
    int in = i >= doff && i < doff + n;
    unsigned char w = in ? src[so + i - doff] : 0xEE;
    if (dst[i] != w) {
      printf("FAIL copy_bytes %s: byte %zu of %zu (dest offset %zu) is %#x, "
             "want %#x\n",
             what, i, n, doff, dst[i], w);
      failures++;
      break;
    }
  }
  return streamed;
}

int main(void) {
  size_t span = 40 * K64;
  unsigned char *src = malloc(span + 64), *dst = malloc(span + 64);
  if (!src || !dst)
    return 2;
  for (size_t i = 0; i < span + 64; i++)
    src[i] = pattern(i, 1);
  shm__copy_setup(K64);
  /* Choices, in a fresh region of dst. */
  memset(dst, 0xEE, span);
  unsigned char *b = dst + 8 * K64;
  want("first destination", shm__copy_large(b, src, K64), 0);
  want("the next 64 KiB", shm__copy_large(b + K64, src, K64), 1);
  want("and the next", shm__copy_large(b + 2 * K64, src, 2 * K64), 1);
  want("the first one again", shm__copy_large(b, src, K64), 0);
  want("one before it", shm__copy_large(b - K64, src, K64), 0);
  want("continuing into one written lately", shm__copy_large(b, src, K64), 0);
  want("a fresh one", shm__copy_large(b + 4 * K64, src, K64), 0);
  want("its continuation", shm__copy_large(b + 5 * K64, src, K64), 1);
  /* An L2's worth of bytes later (sysconf says, or 1 MiB) b is cold again:
   * 8 MiB streamed elsewhere, then a continuation into b. */
  size_t far_size = 2 * warm_bytes > (9 << 20) ? 2 * warm_bytes : 9 << 20;
  unsigned char *far = malloc(far_size);
  if (!far)
    return 2;
  memset(far, 0x5A, far_size);
  for (size_t off = 0; off < ((size_t)8 << 20); off += K64)
    (void)shm__copy_large(far + off, src, K64);
  (void)shm__copy_large(b - K64, src, K64);
  want("a continuation into one long ago", shm__copy_large(b, src, K64), 1);
  /* The same with the ring still holding b: few copies, but an L2's worth
   * of bytes (warm_bytes, copy.c's) after b, or just under it. */
  for (int enough = 0; enough < 2; enough++) {
    size_t after = enough ? warm_bytes : warm_bytes - 2 * K64;
    (void)shm__copy_large(b, src, K64);
    (void)shm__copy_large(far, far + far_size / 2, after); /* one entry */
    (void)shm__copy_large(b - K64, src, K64);
    want(enough ? "a continuation into one an L2's worth ago"
                : "a continuation into one just under an L2's worth ago",
         shm__copy_large(b, src, K64), enough);
  }
  free(far);
  /* Bytes: odd offsets and sizes, streamed (a continuation, into a region
   * not written before) and not (the copy it continues). */
  unsigned char *fresh = malloc(16 << 20);
  if (!fresh)
    return 2;
  size_t at = 0;
  for (int salt = 0; salt < 3; salt++) {
    size_t n[] = {K64, K64 + 1, K64 + 63, 3 * K64 + 17, 5 * K64 - 5};
    for (unsigned i = 0; i < sizeof n / sizeof n[0]; i++) {
      size_t d0 = 1 + (size_t)salt * 13 + i * 5, so = i * 3 + (size_t)salt;
      size_t win = d0 + 2 * n[i] + 64;
      unsigned char *w = fresh + at;
      char what[64];
      at += win;
      memset(w, 0xEE, win);
      snprintf(what, sizeof what, "size %zu, %zu then %zu", n[i], d0, so);
      want(what, copied(w, d0, src, so, n[i], d0 + n[i], what), 0);
      memset(w, 0xEE, d0 + n[i]);
      want(what, copied(w, d0 + n[i], src, so, n[i], win, what), 1);
    }
  }
  free(fresh);
  /* Below the minimum and with streaming off: memcpy. */
  memset(dst, 0xEE, span);
  (void)copied(dst, 3, src, 0, K64 - 1, span, "below the minimum");
  shm__copy_setup(0);
  if (shm__s.stream_min != SIZE_MAX) {
    printf("FAIL copy_off: stream_min %zu\n", shm__s.stream_min);
    failures++;
  }
  memset(dst, 0xEE, span);
  (void)copied(dst, 5, src, 1, 2 * K64, span, "streaming off");
  printf("%s copy_large (%s)\n", failures ? "FAIL" : "PASS",
         SHM_CAN_STREAM ? "streaming stores" : "no streaming stores here");
  free(src);
  free(dst);
  return failures != 0;
}

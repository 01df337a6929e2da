/* PEs on other hosts (docs/openshmem.md, "PEs on several hosts").
 *
 * On a job that spans hosts, a PE on another host has no address here: it
 * is reached through symheap's one-sided API (symheap_put/get/atomic/
 * put_signal, fence, quiet), on the window that holds the symmetric address
 * (the heap's or the data segment's) at its offset in it.  shm__s.remote
 * says which PEs those are; every other PE keeps load/store.  Atomics are
 * the exception: on such a job every atomic goes through symheap_atomic,
 * this host's PEs and this PE included, because the network engine's
 * atomics and the CPU's are not atomic with each other (one atomicity
 * domain per window).  A failure of the network ends the job, saying why
 * (the specification gives the routines no error to return). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shmem_peer.h"

/* The one-sided calls are made by one thread at a time (symheap.h); under
 * SHMEM_THREAD_MULTIPLE the threads of this PE take turns. */
static void net_enter(void) {
  if (shm__s.thread_level == SHMEM_THREAD_MULTIPLE)
    pthread_mutex_lock(&shm__s.net_lock);
}
static void net_leave(void) {
  if (shm__s.thread_level == SHMEM_THREAD_MULTIPLE)
    pthread_mutex_unlock(&shm__s.net_lock);
}

static void check(symheap_result_t r, const char *what, int pe) {
  if (r != SYMHEAP_SUCCESS)
    shm__fatal("%s with PE %d: %s (%s)", what, pe, symheap_strerror(r),
               symheap_last_error());
}

void shm__where(const void *addr, int pe, symheap_window_t *win,
                size_t *off) {
  uintptr_t a = (uintptr_t)addr;
  if (a - (uintptr_t)shm__s.heap_base < shm__s.heap_size) {
    *win = shm__s.heap_win;
    *off = shm__s.heap_shift[pe] + (a - (uintptr_t)shm__s.heap_base);
  } else if (a - (uintptr_t)shm__s.data_base < shm__s.data_size) {
    *win = shm__s.data_win;
    *off = a - (uintptr_t)shm__s.data_base;
  } else {
    shm__fatal("address %p is not symmetric (neither in the symmetric heap "
               "nor in the program's data or bss)",
               addr);
  }
}

static void pe_check(int pe) {
  if ((unsigned)pe >= (unsigned)shm__s.npes)
    shm__fatal("PE %d is out of range (0..%d)", pe, shm__s.npes - 1);
}

void shm__net_put(void *dest, const void *src, size_t bytes, int pe, int nbi) {
  symheap_window_t w;
  size_t off;
  shm__where(dest, pe, &w, &off);
  net_enter();
  symheap_result_t r = nbi ? symheap_put_nbi(w, pe, off, src, bytes)
                           : symheap_put(w, pe, off, src, bytes);
  net_leave();
  check(r, "put", pe);
}

void shm__net_get(void *dest, const void *src, size_t bytes, int pe, int nbi) {
  symheap_window_t w;
  size_t off;
  shm__where(src, pe, &w, &off);
  net_enter();
  symheap_result_t r = nbi ? symheap_get_nbi(w, pe, off, dest, bytes)
                           : symheap_get(w, pe, off, dest, bytes);
  net_leave();
  check(r, "get", pe);
}

/* Element k from s + k*sst*elem to d + k*dst*elem, one element at a time
 * (a put each; the gets complete together at the quiet). */
void shm__net_strided(char *d, ptrdiff_t dst, const char *s, ptrdiff_t sst,
                      size_t n, size_t elem, int pe, int is_put) {
  for (size_t k = 0; k < n; k++) {
    char *to = d + (ptrdiff_t)k * dst * (ptrdiff_t)elem;
    const char *from = s + (ptrdiff_t)k * sst * (ptrdiff_t)elem;
    if (is_put)
      shm__net_put(to, from, elem, pe, 0);
    else
      shm__net_get(to, from, elem, pe, 1);
  }
  if (!is_put && n)
    shm__net_quiet();
}

void shm__amo(const void *addr, int pe, symheap_amo_t op, size_t size,
              const void *operand, const void *compare, void *result) {
  symheap_window_t w;
  size_t off;
  pe_check(pe);
  shm__where(addr, pe, &w, &off);
  net_enter();
  symheap_result_t r =
      symheap_atomic(w, pe, off, op, size, operand, compare, result);
  net_leave();
  check(r, "atomic", pe);
}

void shm__net_put_signal(void *dest, const void *src, size_t bytes,
                         uint64_t *sig, uint64_t value, symheap_amo_t op,
                         int pe) {
  symheap_window_t w, sw;
  size_t off, soff;
  pe_check(pe);
  shm__where(sig, pe, &sw, &soff);
  if (!bytes) { /* dest may be any pointer then (Annex C) */
    shm__amo(sig, pe, op, 8, &value, NULL, NULL);
    return;
  }
  shm__where(dest, pe, &w, &off);
  net_enter();
  symheap_result_t r =
      symheap_put_signal(w, pe, off, src, bytes, sw, soff, value, op);
  net_leave();
  check(r, "put with signal", pe);
}

void shm__net_quiet(void) {
  net_enter();
  symheap_result_t r = symheap_quiet(shm__s.comm);
  net_leave();
  check(r, "quiet", shm__s.me);
}

void shm__net_fence(void) {
  net_enter();
  symheap_result_t r = symheap_fence(shm__s.comm);
  net_leave();
  check(r, "fence", shm__s.me);
}

void shm__getmem(void *dest, const void *src, size_t bytes, int pe) {
  if (shm__remote(pe))
    shm__net_get(dest, src, bytes, pe, 0);
  else
    memcpy(dest, shm__peer_n(src, bytes, pe), bytes);
}

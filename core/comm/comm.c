/* The comm object's ground floor: the checks on entering a public call, the
 * one call in progress, the call's deadline, the ccl allgather, breaking
 * the comm, and retiring a destroyed one.  Making it is join.c's; setting
 * up and closing its subsystems is api/init.c's. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/forks.h"
#include "comm.h"

/* A forked child shares its parent's sockets: a call of its own would
 * interleave with the parent's messages and desynchronise the job. */
static symheap_result_t forked(symheap_comm_t c, const char *fn) {
  return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                        "%s: this comm belongs to process %d and this is "
                        "process %d, a fork of it: a child cannot use its "
                        "parent's comm (make a comm of its own; "
                        "symheap_comm_destroy releases only this process's "
                        "part)",
                        fn, (int)c->pid, (int)getpid());
}

int symheap__in_forked_child(symheap_comm_t c) {
  return symheap__forked_since(c->pid, c->forks_at_init);
}

int64_t symheap__call_deadline(symheap_comm_t c) {
  return c->call_deadline_ms ? c->call_deadline_ms
                             : symheap__now_ms() + c->timeout_ms;
}

int symheap__call_remaining_ms(symheap_comm_t c) {
  int64_t left = symheap__call_deadline(c) - symheap__now_ms();
  return left < 1 ? 1 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* The error of every collective entry once the comm broke. */
static symheap_result_t broken_error(symheap_comm_t c, const char *fn) {
  return symheap__error(c->broken,
                        "%s: the comm failed earlier and cannot be used for "
                        "collectives (destroy it): %s",
                        fn, c->broken_why);
}

symheap_result_t symheap__comm_enter_local(symheap_comm_t c, const char *fn) {
  if (symheap__in_forked_child(c))
    return forked(c, fn);
  symheap__log_set_rank(c->rank);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__comm_enter(symheap_comm_t c, const char *fn) {
  symheap_result_t live = symheap__comm_check(c, fn);
  if (live != SYMHEAP_SUCCESS)
    return live;
  if (symheap__in_forked_child(c))
    return forked(c, fn);
  c->call_fn = fn; /* what its agreements say they are (agree.c) */
  c->call_digest = 0;
  c->call_counted = 0;
  c->call_deadline_ms = symheap__now_ms() + c->timeout_ms;
  symheap__log_set_rank(c->rank);
  /* A comm broken earlier keeps that cause's code; else a kernel that
   * gave up waiting for a peer breaks it here. */
  if (c->broken != SYMHEAP_SUCCESS)
    return broken_error(c, fn);
  return symheap__dstatus_check(c, fn);
}

symheap_result_t symheap__comm_allgather(symheap_comm_t c, const void *in,
                                         void *out, size_t bytes) {
  if (symheap__in_forked_child(c))
    return forked(c, "a collective");
  if (c->broken != SYMHEAP_SUCCESS)
    return symheap__error(c->broken, "the comm failed earlier: %s",
                          c->broken_why);
  symheap_result_t r = c->ccl.allgather(c->ccl_ctx, in, out, bytes,
                                        symheap__call_remaining_ms(c));
  /* A collective that failed part way leaves the ranks out of step. */
  return r == SYMHEAP_SUCCESS ? r : symheap__comm_break(c, r);
}

/* Every check after a kernel gave up says so (SYMHEAP_ERR_TIMEOUT and what
 * the status records), not "failed earlier" with whatever broke the comm
 * first; the first breaks the comm, unless something else did already
 * (whose code the comm's collectives keep). */
symheap_result_t symheap__dstatus_check(symheap_comm_t c, const char *fn) {
  symheap_result_t r = symheap__dstatus_error(c, fn);
  if (r != SYMHEAP_SUCCESS && c->broken == SYMHEAP_SUCCESS)
    symheap__comm_break(c, r);
  return r;
}

symheap_result_t symheap__comm_break(symheap_comm_t c, symheap_result_t r) {
  c->broken = r;
  snprintf(c->broken_why, sizeof c->broken_why, "%s", symheap__error_peek());
  SYMHEAP_WARN("comm broken: %s", c->broken_why);
  return r;
}

symheap_result_t symheap__capture_check(symheap_comm_t c, const char *fn) {
  symheap_result_t r = c->dev.ops.capture_check(c->dev_ctx);
  return r == SYMHEAP_SUCCESS ? r : symheap__error_context(r, "%s", fn);
}

symheap_result_t symheap__multicast_disabled_by(const char **by) {
  int off = 0;
  *by = NULL;
  symheap_result_t r = symheap__cfg_bool("SYMHEAP_DISABLE_MULTICAST", &off);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (off) {
    *by = "SYMHEAP_DISABLE_MULTICAST=1";
    return SYMHEAP_SUCCESS;
  }
  if (symheap__cfg_raw("NCCL_NVLS_ENABLE")) {
    long nvls;
    r = symheap__cfg_int("NCCL_NVLS_ENABLE", &nvls);
    if (r != SYMHEAP_SUCCESS)
      return r;
    if (nvls == 0)
      *by = "NCCL_NVLS_ENABLE=0";
  }
  return SYMHEAP_SUCCESS;
}

/* A destroyed comm's struct is never given back to the allocator, so no
 * later allocation can sit at its address: a stale handle finds it dead.
 * (What it pointed to is freed; the struct itself is a few kilobytes.) */
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;
static symheap_comm_t retired;

static void retire(symheap_comm_t c) {
  c->magic = SYMHEAP__COMM_DEAD;
  pthread_mutex_lock(&retired_lock);
  c->retired_next = retired;
  retired = c;
  pthread_mutex_unlock(&retired_lock);
}

symheap_result_t symheap__comm_check(symheap_comm_t c, const char *fn) {
  if (!c)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: comm is NULL", fn);
  if (c->magic == SYMHEAP__COMM_DEAD)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: comm %p was destroyed",
                          fn, (void *)c);
  if (c->magic != SYMHEAP__COMM_LIVE)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: %p is not a comm", fn,
                          (void *)c);
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__comm_claim(symheap_comm_t c, const char *fn) {
  symheap_result_t r = symheap__comm_check(c, fn);
  if (r != SYMHEAP_SUCCESS)
    return r;
  int idle = 0;
  if (!__atomic_compare_exchange_n(&c->busy, &idle, 1, 0, __ATOMIC_ACQUIRE,
                                   __ATOMIC_RELAXED)) {
    const char *other = __atomic_load_n(&c->busy_fn, __ATOMIC_RELAXED);
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: another thread is in %s on this comm right "
                          "now; a comm belongs to one thread at a time (give "
                          "each thread a comm of its own, or serialise the "
                          "calls)",
                          fn, other ? other : "a call");
  }
  __atomic_store_n(&c->busy_fn, fn, __ATOMIC_RELAXED);
  return SYMHEAP_SUCCESS;
}

void symheap__comm_unclaim(symheap_comm_t c) {
  __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

void symheap__comm_free(symheap_comm_t c) {
  if (c->ccl_owned && c->ccl.fini)
    c->ccl.fini(c->ccl_ctx);
  free(c->world);
  free(c->reach);
  free(c->host);
  free(c->host_nranks);
  free(c->mapped_from);
  free(c->agree_buf);
  free(c->scratch_fds);
  free(c->scratch_sh);
  retire(c);
}

void symheap__comm_drain(symheap_comm_t c) {
  if (c->broken == SYMHEAP_SUCCESS)
    symheap__fdx_drain(&c->fdx);
}

/* Copy a library-filled struct into a caller-sized one. */
symheap_result_t symheap__copy_sized(void *dst, const void *src, size_t ours,
                                     const char *what) {
  uint32_t theirs;
  memcpy(&theirs, dst, sizeof theirs);
  if (theirs < sizeof(uint32_t))
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: set struct_size to sizeof the struct (got %u)",
                          what, theirs);
  memcpy((char *)dst + sizeof theirs, (const char *)src + sizeof theirs,
         (theirs < ours ? theirs : ours) - sizeof theirs);
  return SYMHEAP_SUCCESS;
}

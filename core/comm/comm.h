/* The comm object (comm floor): its struct, and what every higher floor
 * uses of it: the checks on entering a call, the deadline, the ccl
 * allgather, breaking it.  The agreement channels are in agree.h. */
#ifndef SYMHEAP_COMM_H
#define SYMHEAP_COMM_H

#include <sys/types.h>

#include "base/registry.h"
#include "boot/fdx.h"

#define SYMHEAP__AGREE_MAX 256
/* Longest host identity (SYMHEAP_HOST_ID), with its terminating NUL. */
#define SYMHEAP__HOST_ID_MAX 96
/* The size of one agreement record (agree.c). */
/* The call's identity and status, then the payload (agree.c). */
#define SYMHEAP__AGREE_REC (320 + SYMHEAP__AGREE_MAX)
/* Bytes of host memory per rank for agreements over shared memory
 * (agree_shm.c): two slots. */
#define SYMHEAP__AGREE_SHM_BYTES 4096

struct symheap_window;        /* win/window.h */
struct symheap__alloc;        /* mem/mem.h */
struct symheap__map;          /* mem/mem.h */
struct symheap__heap;         /* mem/heap.h */
struct symheap__winpath;      /* win/window.h */
struct symheap_netops;        /* symheap_netops.h */

/* A live comm's magic; a destroyed one's struct is kept (never reused) with
 * SYMHEAP__COMM_DEAD, so a stale handle is an error, not a use of freed
 * memory. */
#define SYMHEAP__COMM_LIVE 0x53484d43u
#define SYMHEAP__COMM_DEAD 0x44454144u
struct symheap_comm {
  uint32_t magic;
  int busy;            /* a public call is in progress (comm.c, claim) */
  const char *busy_fn; /* which one, for the other thread's message */
  struct symheap_comm *retired_next; /* once destroyed (comm.c) */
  int rank, nranks;
  /* The node-local team: ranks with this rank's host identity.  Only they
   * map each other's memory (reach[p] is 1 for them, this rank included);
   * the flat range keeps every rank's place, unmapped for the others. */
  int local_rank, local_nranks, nhosts;
  unsigned char *reach;
  /* The host map (symheap__comm_host): each rank's host, numbered in the
   * order hosts first appear among the ranks, and each host's rank count
   * (nranks entries each; the first nhosts of host_nranks are used). */
  int *host, *host_nranks;
  symheap_ccl_ops ccl;
  void *ccl_ctx;
  int ccl_owned;
  symheap__device_table_t dev;
  void *dev_ctx;
  symheap_device_caps_t caps;
  /* The descriptor-exchange mesh (boot/fdx.c), with the job's token and
   * where its sockets go. */
  symheap__fdx_t fdx;
  int timeout_ms;
  /* The deadline of the collective call in progress: every wait inside one
   * call (exchanges, agreements) shares it, so a silent peer costs the
   * call SYMHEAP_TIMEOUT_MS once, not once per step.  Set on entry. */
  int64_t call_deadline_ms;
  const char *mc_disabled_by; /* NULL when multicast may be used */
  symheap_result_t broken;    /* SYMHEAP_SUCCESS while healthy */
  char broken_why[512];
  pid_t pid; /* the process that made it (fork detection) */
  /* Forks this process had seen when it made the comm (base/forks.c). */
  unsigned forks_at_init;
  struct symheap_window *windows;
  struct symheap__alloc *allocs; /* mem/alloc.c */
  uint64_t next_window_id;
  uint64_t next_alloc_id;
  struct symheap_window *pad; /* the comm's own window, made at init */
  int pad_ready;              /* cleared on every rank: views may carry it */
  struct symheap__proxy *proxy; /* the device host proxy (api/proxy.c) */
  /* Where this rank's kernels record a wait that gave up (dev_status.c):
   * host-pinned, NULL where the device adaptor has no host_alloc. */
  symheap_device_status_t *dstatus;
  void *dstatus_dev; /* its device address, which views carry */
  /* Signal slots of the pad in use (SYMHEAP_PAD_SLOTS bits).  Windows come
   * and go in the same order on every rank, so every rank gives a window
   * the same slot without exchanging anything. */
  uint64_t slot_used[(SYMHEAP_PAD_SLOTS + 63) / 64];
  struct symheap__map *maps; /* every mapping: live, kept, the heap's */
  int cache_max;        /* SYMHEAP_WINDOW_CACHE: kept mappings at most */
  uint64_t cache_clock;
  symheap_comm_stats_t stats;
  uint64_t *mapped_from; /* nranks: bytes of rank p's memory mapped here */
  /* Made at setup so that the protocol never needs memory it may not get:
   * a rank out of memory still takes its part in every exchange. */
  char *agree_buf;                 /* (nranks + 1) agreement records */
  int *scratch_fds;                /* nranks */
  symheap_shareable_t *scratch_sh; /* nranks */
  int *world;                      /* nranks: job-wide rank of each rank */
  /* RDMA registration (win/rdma.c): the net adaptor and its context, or
   * NULL (net_why says why). */
  const struct symheap_netops *net_ops;
  void *net;
  /* A vendor window path (win/window_vendor.c), or NULL: symheap's own
   * flat VA. */
  struct symheap__winpath *winpath;
  struct symheap__netc *netc;      /* the net adaptor (net.h), or NULL */
  char net_why[256];
  /* The symmetric heap (heap.c), made at the first symheap_malloc that
   * wants it.  heap_state: 0 variables not read yet, 1 on, -1 off
   * (SYMHEAP_HEAP=0, or the reservation failed on some rank). */
  struct symheap__heap *heap;
  int heap_state;
  /* Agreements over shared memory (agree_shm.c): every rank's area
   * (nranks pointers), or NULL where the ccl carries them. */
  char **agree_shm;
  uint64_t agree_shm_seq;
  /* How this rank waits (agree_shm.c): agreements left that sleep without
   * yielding first, since a yield lately lost the core; and that count's
   * next value, doubled each time a yield is slow again. */
  uint32_t agree_no_yield, agree_backoff;
  uint64_t heap_reserve, heap_chunk, heap_threshold;
  /* The public call in progress, as every agreement record names it
   * (agree.c): two different calls never pair.  call_fn is set on entry
   * (symheap__comm_enter), call_seq counts the calls that took part in an
   * agreement (call_counted: this one has), call_digest is what the call
   * set of the arguments every rank must pass alike (0: none). */
  const char *call_fn;
  uint64_t call_seq, call_digest;
  int call_counted;
};

/* The host map: rank p's host (0 .. nhosts-1, rank 0's host is 0), and
 * how many ranks host h runs.  Same-host paths (descriptors, mappings,
 * shared memory) are for ranks with this rank's host only. */
static inline int symheap__comm_host(symheap_comm_t c, int p) {
  return c->host[p];
}
static inline int symheap__comm_host_nranks(symheap_comm_t c, int h) {
  return c->host_nranks[h];
}

/* comm.c */
/* The device adaptor may refuse while a graph capture is in progress. */
symheap_result_t symheap__capture_check(symheap_comm_t c, const char *fn);
/* Enter a public call: checks the comm, tags log lines with the rank. */
symheap_result_t symheap__comm_enter(symheap_comm_t c, const char *fn);
/* Enter a local public call that changes the comm's state (claimed):
 * refused in a forked child; tags log lines with the rank.  Unlike
 * symheap__comm_enter it works on a broken comm. */
symheap_result_t symheap__comm_enter_local(symheap_comm_t c, const char *fn);
/* Copy our struct into a caller-sized one (its struct_size first): no more
 * than either size; INVALID_ARG when struct_size is unset. */
symheap_result_t symheap__copy_sized(void *dst, const void *src, size_t ours,
                                     const char *what);
/* Every public call that uses the comm's channels runs as the one call in
 * progress on it: a second thread's call fails at once, saying what the
 * caller did, instead of interleaving messages and blaming a peer. */
symheap_result_t symheap__comm_claim(symheap_comm_t c, const char *fn);
void symheap__comm_unclaim(symheap_comm_t c);
/* The body of such a public call: `call` runs claimed, its result returned. */
#define SYMHEAP__CLAIMED(c, fn, call)                                          \
  do {                                                                         \
    symheap_result_t claimed_r_ = symheap__comm_claim(c, fn);                  \
    if (claimed_r_ == SYMHEAP_SUCCESS) {                                       \
      claimed_r_ = (call);                                                     \
      symheap__comm_unclaim(c);                                                \
    }                                                                          \
    return claimed_r_;                                                         \
  } while (0)
/* A live comm, or INVALID_ARG naming fn (NULL, destroyed, or not a comm). */
symheap_result_t symheap__comm_check(symheap_comm_t c, const char *fn);
/* Which variable turns multicast off (SYMHEAP_DISABLE_MULTICAST=1,
 * NCCL_NVLS_ENABLE=0), or NULL; an error for a malformed value. */
symheap_result_t symheap__multicast_disabled_by(const char **by);
/* Mark the comm broken by r (the thread's message says why, and is
 * logged): later collectives refuse with it.  Returns r. */
symheap_result_t symheap__comm_break(symheap_comm_t c, symheap_result_t r);
/* The device status (symheap_device_status_t; dev_status.c), made with the
 * pad and freed with it; check (comm.c) returns SYMHEAP_ERR_TIMEOUT with
 * the recorded wait at every call once a kernel has recorded one that gave
 * up, and breaks the comm the first time (one host load when not). */
symheap_result_t symheap__dstatus_open(symheap_comm_t c);
void symheap__dstatus_close(symheap_comm_t c);
symheap_result_t symheap__dstatus_check(symheap_comm_t c, const char *fn);
/* UNSUPPORTED naming the missing host_alloc where the comm has a pad
 * (kernels of its views wait for peers) but no status to say that one
 * gave up; else SUCCESS. */
symheap_result_t symheap__dstatus_missing(symheap_comm_t c, const char *fn);
/* The error a recorded status says (set as the thread's message), or
 * SUCCESS; breaks nothing (comm.c's check does). */
symheap_result_t symheap__dstatus_error(symheap_comm_t c, const char *fn);
/* Milliseconds left of the current call's deadline (at least 1). */
int symheap__call_remaining_ms(symheap_comm_t c);
/* The current call's deadline as an absolute symheap__now_ms() time. */
int64_t symheap__call_deadline(symheap_comm_t c);
/* The ccl allgather; a failure breaks the comm for good. */
symheap_result_t symheap__comm_allgather(symheap_comm_t c, const void *in,
                                         void *out, size_t bytes);
/* Read the peers' notices of freed memory that have arrived (fdx), while
 * the comm is healthy. */
void symheap__comm_drain(symheap_comm_t c);
/* Whether this process is a fork of the one that made the comm. */
int symheap__in_forked_child(symheap_comm_t c);

/* join.c: making the comm object, in the phases api/init.c runs. */
/* The struct and everything the protocol needs before its first exchange;
 * NULL (with the error set) when there is no memory for it.  An owned
 * context is released (fini) on every way out. */
symheap_comm_t symheap__comm_alloc(const symheap_ccl_ops *ops, void *ctx,
                                   int owned, int timeout_ms,
                                   int64_t deadline_ms);
/* Collective: every rank's host, device choice and variables, agreed; the
 * node-local team follows.  `why` says how the device was chosen. */
symheap_result_t symheap__comm_join(symheap_comm_t c, char *why, size_t len);
/* Collective: the device adaptor's context (with plugin hooks), its
 * capabilities checked, the multicast policy and the window cache.
 * `check` (a higher floor's, or NULL): variables that depend on the
 * device (the heap's), checked before the agreement, so that one rank's
 * refusal fails every rank's init. */
symheap_result_t symheap__comm_device(symheap_comm_t c,
                                      symheap_result_t (*check)(symheap_comm_t));
void symheap__comm_device_close(symheap_comm_t c);
/* The ccl's context (when owned) and the struct's memory; the struct itself
 * is retired, never freed, so a stale handle finds it dead. */
void symheap__comm_free(symheap_comm_t c);

/* mesh.c: collective, the descriptor mesh among the ranks of this host
 * (when the device shares descriptors); `on_freed` is called with `arg`
 * for each peer's notice that an allocation of its is gone. */
symheap_result_t symheap__mesh_setup(symheap_comm_t c,
                                     void (*on_freed)(void *arg, int peer,
                                                      uint64_t id),
                                     void *arg);
void symheap__mesh_close(symheap_comm_t c);

#endif

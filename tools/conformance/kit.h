/* symheap-conformance: what the parts of the kit share.
 *
 * main.c runs each check in a forked child with a time bound and prints its
 * verdict; the checks (local.c, handles.c, data.c, optional.c, leaks.c,
 * ranks.c) drive the adaptor
 * under test through dev.c; res.c counts the process's resources and probes
 * addresses; faults.c is the fault-injecting layer the rollback checks use.
 * The kit reaches the adaptor registry of the core it is linked with
 * (statically), so it needs nothing beyond itself and the plugin. */
#ifndef SYMHEAP_CONFORMANCE_KIT_H
#define SYMHEAP_CONFORMANCE_KIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/internal.h"
#include "base/registry.h"
#include "base/net_registry.h"

/* --- the run ------------------------------------------------------------ */
typedef struct {
  const char *name;          /* --device */
  symheap__device_table_t T; /* the adaptor as registered (no hooks) */
  int ranks;                 /* --ranks */
  int cycles;                /* --cycles: create/release rounds */
  int timeout_s;             /* --timeout: the bound of one check */
  /* --net NAME [--provider P]: the net adaptor's checks (net.c) instead. */
  const char *net;
  const char *provider;
  symheap__net_table_t N; /* the net adaptor as registered */
} kit_config_t;
extern kit_config_t K;

/* A check's verdict, written by the child into memory the parent reads. */
enum { KIT_NONE = 0, KIT_PASS, KIT_FAIL, KIT_SKIP };
void kit_pass(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kit_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kit_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int kit_failed(void);
/* What the check is doing now: named in the FAIL line if the child dies or
 * hangs there. */
void kit_stage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

typedef struct {
  const char *name;
  void (*fn)(void);
  const char *what; /* one line for --list and the docs */
} kit_check_t;
/* The checks of each part, NULL-terminated. */
extern const kit_check_t kit_local_checks[];
extern const kit_check_t kit_handle_checks[];
extern const kit_check_t kit_data_checks[];
extern const kit_check_t kit_optional_checks[];
extern const kit_check_t kit_leak_checks[];
extern const kit_check_t kit_rank_checks[];
extern const kit_check_t kit_net_checks[];
extern const kit_check_t kit_net_amo_checks[];
extern const kit_check_t kit_net_order_checks[];
extern const kit_check_t kit_net_bounds_checks[];

/* --- the adaptor under test (dev.c) ------------------------------------ */
typedef struct {
  symheap__device_table_t t; /* with any plugin hooks over it */
  void *ctx;
  symheap_device_caps_t caps;
  size_t g; /* granularity */
  int host; /* SYMHEAP_CAP_HOST_ACCESS */
  int vmm;  /* SYMHEAP_CAP_VMM */
} kit_dev_t;

/* Init and query (and the hooks of plugins that target it); on failure
 * the check FAILs naming the precondition and this returns 0. */
int kit_open(kit_dev_t *d);
/* The same without judging the granularity (for the check that does). */
int kit_open_raw(kit_dev_t *d);
/* As kit_open, and SKIPs (returning 0) when the adaptor has no VMM. */
int kit_open_vmm(kit_dev_t *d);
void kit_close(kit_dev_t *d);

/* Clear the library's error text before calling the adaptor, so that what
 * symheap_last_error() says afterwards is the adaptor's. */
void kit_clear_error(void);
/* "returned <code> (<text>)", or "... with no error text" when the adaptor
 * said nothing: never empty.  Rotating static buffers. */
const char *kit_said(symheap_result_t r);

/* The common preparations, each FAILing the check (naming the step and
 * what the adaptor said) and returning 0 when a step fails. */
int kit_create(kit_dev_t *d, size_t size, symheap_mem_handle_t *h);
int kit_reserve(kit_dev_t *d, size_t size, size_t align, char **va);
/* Reserve, map [off, off+size) of h and set access. */
int kit_map(kit_dev_t *d, symheap_mem_handle_t h, size_t off, size_t size,
            char **va);
/* Unmap and free what kit_map made (errors ignored: cleanup). */
void kit_unmap(kit_dev_t *d, char *va, size_t size);

/* --- two processes over a net adaptor (net_pair.c) --------------------- */
typedef struct {
  symheap__net_table_t *T; /* &K.N */
  void *ctx;
  symheap_net_caps_t caps;
  int rank;  /* 0: the check's process; 1: the one it forked */
  int fd;    /* a stream socket to the other process */
  int other; /* rank 0: rank 1's process id */
  char *mem; /* this process's registered region: [mem, mem + size) */
  size_t size;
  void *mr;
  void *rkey;      /* the other process's region */
  void *self_rkey; /* this process's own region, through the adaptor */
} kit_net_t;
/* Fork rank 1, open the adaptor in both (K.provider), exchange addresses
 * and connect, register a region of `size` bytes (zeroed, guard pages
 * around it) in each and exchange keys.  Returns 1 in both processes, or
 * 0 in rank 0 after a FAIL naming the step (rank 1 exits on failure). */
int kit_net_start(kit_net_t *n, size_t size);
/* Send one word to the other process; receive one, progressing the engine
 * while waiting (rxm's atomics need the target to progress), bounded by
 * --timeout.  0 and a FAIL when the other is gone or silent. */
int kit_net_send(kit_net_t *n, uint64_t v);
int kit_net_recv(kit_net_t *n, uint64_t *v);
/* Both: send, then receive (a barrier that progresses). */
int kit_net_sync(kit_net_t *n);
/* Quiet, FAILing (and returning 0) when it does not succeed. */
int kit_net_quiet(kit_net_t *n, const char *after);
/* Release and close; rank 1 exits here, rank 0 waits for it (FAILing if it
 * died) and returns. */
void kit_net_finish(kit_net_t *n);

/* --- resources and probes (res.c) -------------------------------------- */
typedef struct {
  int fds;     /* entries of /proc/self/fd */
  long maps;   /* lines of /proc/self/maps */
  uint64_t va; /* bytes of address space in them */
} kit_res_t;
void kit_res(kit_res_t *r);
/* Whether [va, va+size) grew by about one unit per cycle from a to b: what
 * leaked ("descriptors", "mappings", "bytes of address space") goes into
 * `what`; 0 when nothing did.  The threshold (a quarter of the cycles)
 * ignores the few mappings an allocator or a sanitizer makes. */
int kit_leaked(const kit_res_t *a, const kit_res_t *b, int cycles,
               size_t va_unit, char *what, size_t len);
/* Whether every byte of [va, va+size) lies in some mapping of
 * /proc/self/maps (reserved, accessible or not). */
int kit_range_reserved(const void *va, size_t size);
/* Whether any byte of [va, va+size) lies in a mapping. */
int kit_range_any(const void *va, size_t size);
/* 1 when a load (write: a load and a store of the same value) at p works,
 * 0 when it faults (SIGSEGV or SIGBUS). */
int kit_probe(void *p, int write);
/* Whether a descriptor number is open. */
int kit_fd_open(int fd);

/* --- the fault-injecting layer (faults.c) ------------------------------ */
/* Register "kit-<name>" over K.T (once, before any fork); its
 * state is shared memory, so ranks that are processes see it too. */
symheap_result_t kit_faults_register(char *name, size_t len);
/* Fail the nth call of `op` on `rank` from now on (nth 0: none). */
void kit_faults_arm(const char *op, int rank, int nth);
/* Whether the armed failure fired; disarms. */
int kit_faults_fired(void);
/* Objects (handles, reservations, mappings) live through the layer on a
 * rank. */
long kit_faults_live(int rank);
extern const char *const kit_fault_ops[];

/* --- small things ------------------------------------------------------ */
int kit_pow2(size_t v);
/* Shared anonymous memory that forked children write and the parent reads;
 * never freed (the kit is short-lived). */
void *kit_shared(size_t size);

#endif

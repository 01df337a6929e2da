/* The one-sided latency and bandwidth probe between two processes
 * (bench/net_probe.c), shared by the raw libfabric floor (bench/net_raw.c)
 * and the same measurement through symheap's net adaptor table
 * (bench/net_adaptor.c), so the two differ only in the engine below.
 *
 *   PROG server HOST:PORT [--provider P] [--domain D] [--passive]
 *   PROG client HOST:PORT [--provider P] [--domain D] [--quick]
 *
 * The server listens on HOST:PORT (TCP, for the rendezvous only: endpoint
 * addresses and keys), progresses its endpoint and answers nothing else;
 * the client measures against it and prints, one line per size, the
 * median over the iterations (robust on a shared machine):
 *   put_quiet <bytes> <usec>    put, then wait until delivered
 *   get <bytes> <usec>          get, then wait until it landed
 *   fetch_add 8 <usec>          64-bit fetch-add, then wait for the value
 *   put_bw <bytes> <MB/s>       rounds of 64 puts in flight (fewer past
 *                               8 MiB a round), then wait for all
 * Lines starting with '#' are comments (provider, fabric, engine).
 * --passive: the server sleeps in the kernel on the engine's wait object
 * (FI_WAIT_FD, fi_trywait, poll) once its engine has been idle for
 * PROBE_SPIN_US, as a symheap rank that waits does, instead of spinning
 * all the time. */
#ifndef SYMHEAP_NET_PROBE_H
#define SYMHEAP_NET_PROBE_H

#include <stddef.h>
#include <stdint.h>

#define PROBE_REGION (8u << 20) /* registered on each side */
#define PROBE_BLOB_MAX 512
/* --passive, as symheap's waits (core/comm/net_comm.c): the server spins
 * PROBE_SPIN_US after its engine had work, then sleeps on the wait object
 * at most PROBE_SLEEP_MS at a time. */
#define PROBE_SPIN_US 5000.0
#define PROBE_SLEEP_MS 20

/* What an engine provides the probe.  Every call returns 0 on success;
 * on failure it prints why to stderr and returns nonzero. */
typedef struct {
  const char *engine; /* "raw libfabric" or "symheap ofi adaptor" */
  /* Open an endpoint; write its address. */
  int (*open)(const char *provider, const char *domain, void *addr, size_t *len,
              char *describe, size_t dlen);
  int (*connect)(const void *peer_addr, size_t len);
  /* Register the local region; write what the peer needs to reach it. */
  int (*reg)(char *region, size_t size, void *key, size_t *len);
  int (*import)(const void *key, size_t len);
  /* Operations on the peer's region at `off`, from the local region's
   * buffer at `off` (non-blocking; complete after wait). */
  int (*put)(size_t off, size_t len);
  int (*get)(size_t off, size_t len);
  int (*fetch_add)(size_t off, uint64_t *result);
  int (*wait)(void); /* everything issued is complete */
  int (*progress)(void);
  void (*close)(void);
  /* Optional (NULL: no --passive).  Sleep until the engine has work or fd
   * (the rendezvous socket) is readable, at most PROBE_SLEEP_MS: 1 when
   * the engine had work (woken by it, or work was pending), 0 when not,
   * -1 on failure. */
  int (*sleep)(int fd);
} probe_engine_t;

/* Set by probe_main before open: --passive was given (the engine opens
 * its completion objects with a wait object). */
extern int probe_passive;

/* Parse the command line and run as server or client; the exit status. */
int probe_main(int argc, char **argv, const probe_engine_t *e);

#endif

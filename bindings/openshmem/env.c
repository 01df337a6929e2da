/* The environment variables OpenSHMEM 1.5 defines, and their deprecated
 * SMA_ names (still required: the 1.5 deprecation table), plus
 * symheap-shmem's own and the launchers' it looks at.  SHMEM_INFO prints
 * every one of them with its help, then symheap's own (symheap_var_get),
 * SHMEM_VERSION the library's version; PE 0 prints, once, at shmem_init.
 * test/shmem/run_shmem.sh checks that every name this binding reads is
 * printed: a variable read here needs its line below. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmem.h"
#include "shmem_env.h"
#include "symheap.h"

/* The documentation of every variable, printed by SHMEM_INFO. */
static const struct {
  const char *name, *help;
} shm_vars[] = {
    {"SHMEM_SYMMETRIC_SIZE",
     "the most bytes of symmetric heap per PE: a number, with a fraction or "
     "not, and an optional suffix K, M, G or T (k, m, g, t): 512M, 1.5G, .5m, "
     "0 (default 1G).  It is a limit, not a cost: memory is committed as it "
     "is touched"},
    {"SHMEM_DEBUG",
     "if set (and not 0), an allocation that fails says why on stderr"},
    {"SHMEM_VERSION",
     "if set, PE 0 prints the library's version at shmem_init"},
    {"SHMEM_INFO", "if set, PE 0 prints this list of variables at shmem_init"},
    {"SMA_SYMMETRIC_SIZE", "deprecated name of SHMEM_SYMMETRIC_SIZE"},
    {"SMA_DEBUG", "deprecated name of SHMEM_DEBUG"},
    {"SMA_VERSION", "deprecated name of SHMEM_VERSION"},
    {"SMA_INFO", "deprecated name of SHMEM_INFO"},
    {"SYMHEAP_SHMEM_SPIN",
     "pause-spins of a wait before it yields the CPU (default 3000, or 2 "
     "with more PEs than CPUs); symheap-shmem's own"},
    {"SYMHEAP_SHMEM_TIMEOUT_MS",
     "a wait (barrier, collective, wait_until) that lasts longer ends the "
     "job, saying so: a PE stopped or deadlocked (1 to 86400000; unset or "
     "0: waits last as long as the PEs take); symheap-shmem's own"},
    {"SYMHEAP_SHMEM_DATA_SEGMENT",
     "0: the program's data and bss are not symmetric (default 1); "
     "symheap-shmem's own"},
    {"SYMHEAP_SHMEM_PUSH",
     "1 (default): a small broadcast's root, and every PE of an fcollect, "
     "write into the other PEs' dest as they enter (the specification has "
     "dest ready on every PE before any PE calls); 0: each PE copies into "
     "its own dest inside its own call, for programs that reuse dest "
     "without a sync.  The same on every PE; symheap-shmem's own"},
    {"SYMHEAP_SHMEM_STREAM_MIN",
     "the smallest put or get on one host (bytes, with K, M, G or T) "
     "written with streaming stores, which bypass the cache, when its "
     "destination continues the last one's and was not written lately "
     "(default 16K, the least allowed; 0: never); x86-64 only; "
     "symheap-shmem's own"},
    {"SYMHEAP_SHMEM_PREFAULT",
     "objects of up to this many bytes (with K, M, G or T; default 64M, "
     "at least 4K) over the PEs of the host get their pages, and every PE "
     "of the host its page tables for them, at allocation, not at their "
     "first put or get (the data segment at shmem_init); 0: none; "
     "symheap-shmem's own"},
    /* init.c's launched_alone: with none of these (nor symheap-run's
     * SYMHEAP_RANK, ..., listed with symheap's below) the program is one PE. */
    {"OMPI_COMM_WORLD_SIZE",
     "set by Open MPI's mpirun: the PEs join its job (symheap's MPI ccl "
     "adaptor); without a launcher's variables the program is one PE"},
    {"PMI_SIZE", "set by a PMI launcher (MPICH's mpiexec, srun): as "
                 "OMPI_COMM_WORLD_SIZE"},
    {"PMIX_RANK", "set by a PMIx launcher: as OMPI_COMM_WORLD_SIZE"},
};

/* symheap's own variables (the core's table, and what adaptors and plugins
 * declared), each with its help; they were one "SYMHEAP_*" line before. */
static void print_symheap_vars(void) {
  int n = 0;
  if (symheap_var_count(&n) != SYMHEAP_SUCCESS)
    return;
  for (int i = 0; i < n; i++) {
    symheap_var_info_t v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    if (symheap_var_get(i, &v) == SYMHEAP_SUCCESS && v.name)
      printf("  %-26s %s (symheap's: docs/env.md)\n", v.name,
             v.help ? v.help : "");
  }
}

/* SHMEM_NAME, else its deprecated SMA_NAME. */
const char *shm__getenv(const char *name) {
  char sma[64];
  const char *v = getenv(name);
  if (v || strncmp(name, "SHMEM_", 6) != 0)
    return v;
  snprintf(sma, sizeof sma, "SMA_%s", name + 6);
  return getenv(sma);
}

int shm__env_heap_size(size_t *size) {
  const char *name = getenv("SHMEM_SYMMETRIC_SIZE") ? "SHMEM_SYMMETRIC_SIZE"
                                                    : "SMA_SYMMETRIC_SIZE";
  const char *v = getenv(name);
  if (!v)
    return 0;
  if (shm__parse_size(v, size) == 0)
    return 0;
  fprintf(stderr,
          "symheap-shmem: shmem_init: %s=\"%s\" is not a size: a number (a "
          "fraction allowed) with an optional suffix K, M, G or T, nothing "
          "before it, and small enough to fit in %zu bytes\n",
          name, v, (size_t)SIZE_MAX);
  return -1;
}

/* v as a decimal count from 0 to max: digits only (strtoul took "abc" as
 * 0 and "-1" as 4294967295: a wait that never yields), or -1. */
static long long env_digits(const char *v, long long max) {
  long long n = 0;
  const char *p = v;
  for (; *p >= '0' && *p <= '9' && n <= max; p++)
    n = n * 10 + (*p - '0');
  return *p || p == v || n > max ? -1 : n;
}

/* Variable name as a decimal count from 0 to max into *out: 0 when it is
 * unset or empty (*out untouched), 1 when set, -1 (said on stderr: "is
 * not <what> to <max>") for anything else. */
static int env_bounded(const char *name, long long max, const char *what,
                       long long *out) {
  const char *v = getenv(name);
  if (!v || !*v)
    return 0;
  long long n = env_digits(v, max);
  if (n < 0) {
    fprintf(stderr, "symheap-shmem: shmem_init: %s=\"%s\" is not %s to %lld\n",
            name, v, what, max);
    return -1;
  }
  *out = n;
  return 1;
}

int shm__env_spin(unsigned *spin, int *given) {
  long long n = 0;
  int r = env_bounded("SYMHEAP_SHMEM_SPIN", SHM_SPIN_MAX,
                      "a count: decimal digits, 0", &n);
  *given = r != 0;
  if (r < 0)
    return -1;
  if (r > 0)
    *spin = (unsigned)n;
  return 0;
}

int shm__env_wait_limit_ns(long long *ns) {
  long long ms = 0;
  int r =
      env_bounded("SYMHEAP_SHMEM_TIMEOUT_MS", SHM_WAIT_MAX_MS,
                  "a time: decimal digits, milliseconds, 0 (no bound)", &ms);
  *ns = ms * 1000000LL;
  return r < 0 ? -1 : 0;
}

/* A switch: 0 or 1 (unset or empty: 1), or -1, said on stderr. */
static int env_switch(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v || strcmp(v, "1") == 0)
    return 1;
  if (strcmp(v, "0") == 0)
    return 0;
  /* "off", "false", "no" meant 1 before: statics symmetric after all. */
  fprintf(stderr, "symheap-shmem: shmem_init: %s=\"%s\" is not 0 or 1\n", name,
          v);
  return -1;
}

int shm__env_data_segment(void) {
  return env_switch("SYMHEAP_SHMEM_DATA_SEGMENT");
}

int shm__env_push(void) { return env_switch("SYMHEAP_SHMEM_PUSH"); }

/* A size variable of symheap-shmem's (shm__parse_size's syntax) into
 * *bytes when set: 0, or from `least` bytes (a whole number of KiB); -1,
 * said on stderr, for anything else. */
static int env_size_from(const char *name, size_t least, size_t *bytes) {
  const char *v = getenv(name);
  size_t n = 0;
  if (!v || !*v)
    return 0;
  if (shm__parse_size(v, &n) == 0 && (n == 0 || n >= least)) {
    *bytes = n;
    return 0;
  }
  fprintf(stderr,
          "symheap-shmem: shmem_init: %s=\"%s\" is not 0 or a size from "
          "%zuK: a number with an optional suffix K, M, G or T\n",
          name, v, least >> 10);
  return -1;
}

int shm__env_stream_min(size_t *bytes) {
  return env_size_from("SYMHEAP_SHMEM_STREAM_MIN", SYMHEAP_SHMEM_FAST_COPY_MAX,
                       bytes);
}

int shm__env_prefault(size_t *bytes) {
  return env_size_from("SYMHEAP_SHMEM_PREFAULT", SHM_PREFAULT_LEAST, bytes);
}

void shm__env_print(int me, size_t stream_min, const char *prefault) {
  if (me != 0)
    return;
  if (shm__getenv("SHMEM_VERSION"))
    printf("%s %d.%d.%d (OpenSHMEM %d.%d)\n", SHMEM_VENDOR_STRING,
           SHMEM_VENDOR_MAJOR_VERSION, SHMEM_VENDOR_MINOR_VERSION,
           SHMEM_VENDOR_PATCH_VERSION, SHMEM_MAJOR_VERSION,
           SHMEM_MINOR_VERSION);
  if (shm__getenv("SHMEM_INFO")) {
    printf("%s %d.%d.%d (OpenSHMEM %d.%d): environment variables\n",
           SHMEM_VENDOR_STRING, SHMEM_VENDOR_MAJOR_VERSION,
           SHMEM_VENDOR_MINOR_VERSION, SHMEM_VENDOR_PATCH_VERSION,
           SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
    for (size_t i = 0; i < sizeof shm_vars / sizeof shm_vars[0]; i++)
      printf("  %-26s %s\n", shm_vars[i].name, shm_vars[i].help);
    print_symheap_vars();
    if (stream_min == SIZE_MAX)
      printf("large puts and gets on one host: memcpy only\n");
    else
      printf("large puts and gets on one host: streaming stores from %zu "
             "bytes, for a destination not written lately\n",
             stream_min);
    printf("%s\n", prefault);
  }
  fflush(stdout);
}

int shm__env_debug(void) {
  const char *v = shm__getenv("SHMEM_DEBUG");
  return v && *v && strcmp(v, "0") != 0;
}

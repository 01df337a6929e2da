/* A ccl plugin for the tests: a job joined through the plugin's `open`
 * (SYMHEAP_CCL=shmccl under symheap-run), its allgather over one POSIX
 * shared-memory object that every rank maps.  Written from the public
 * headers alone, as a vendor's ccl would be.
 *
 * Each rank owns two slots (rounds alternate between them) and a sequence
 * word: it writes its slot, publishes the round, and reads every peer's
 * slot once the peer has published the same round.  A peer can only reuse
 * a slot two rounds later, after every rank has published the round in
 * between, i.e. finished reading this one. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symheap_adaptor.h"

#define SLOT_BYTES (256u << 10)
#define SEQ_STRIDE 64 /* one cache line per rank's sequence word */

typedef struct {
  const symheap_host_services_t *svc;
  int rank, nranks;
  char name[64];
  unsigned char *base;
  size_t bytes;
  uint64_t seq;
} shm_ccl_t;

static const symheap_host_services_t *svc;

static uint64_t *seq_of(shm_ccl_t *x, int r) {
  return (uint64_t *)(x->base + (size_t)r * SEQ_STRIDE);
}
static unsigned char *slot_of(shm_ccl_t *x, int r, uint64_t round) {
  size_t seqs = (size_t)x->nranks * SEQ_STRIDE;
  return x->base + seqs + ((size_t)r * 2 + (round & 1)) * SLOT_BYTES;
}

static int shm_rank(void *ctx) { return ((shm_ccl_t *)ctx)->rank; }
static int shm_size(void *ctx) { return ((shm_ccl_t *)ctx)->nranks; }

static symheap_result_t shm_allgather(void *ctx, const void *in, void *out,
                                      size_t bytes, int timeout_ms) {
  shm_ccl_t *x = ctx;
  if (bytes > SLOT_BYTES)
    return svc->error(SYMHEAP_ERR_UNSUPPORTED,
                      "shmccl: an allgather of %zu bytes per rank exceeds its "
                      "%u-byte slots",
                      bytes, SLOT_BYTES);
  uint64_t round = ++x->seq;
  memcpy(slot_of(x, x->rank, round), in, bytes);
  __atomic_store_n(seq_of(x, x->rank), round, __ATOMIC_RELEASE);
  uint64_t deadline = svc->now_ns() + (uint64_t)timeout_ms * 1000000u;
  for (int p = 0; p < x->nranks; p++) {
    while (__atomic_load_n(seq_of(x, p), __ATOMIC_ACQUIRE) < round) {
      if (svc->now_ns() > deadline)
        return svc->error(SYMHEAP_ERR_TIMEOUT,
                          "shmccl: rank %d did not reach allgather %llu "
                          "within %d ms",
                          p, (unsigned long long)round, timeout_ms);
      sched_yield();
    }
    memcpy((char *)out + (size_t)p * bytes, slot_of(x, p, round), bytes);
  }
  /* Every rank has the object open once round 1 is done: drop the name. */
  if (round == 1 && x->rank == 0)
    shm_unlink(x->name);
  return SYMHEAP_SUCCESS;
}

static void shm_fini(void *ctx) {
  shm_ccl_t *x = ctx;
  if (x->base)
    munmap(x->base, x->bytes);
  if (x->rank == 0 && x->seq == 0)
    shm_unlink(x->name);
  free(x);
}

/* Rank 0 makes the object; the others wait for it to exist at full size. */
static symheap_result_t attach(shm_ccl_t *x, int timeout_ms) {
  uint64_t deadline = svc->now_ns() + (uint64_t)timeout_ms * 1000000u;
  int fd = -1;
  struct stat st;
  if (x->rank == 0) {
    fd = shm_open(x->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0 && ftruncate(fd, (off_t)x->bytes) != 0) {
      close(fd);
      fd = -1;
    }
  } else {
    while ((fd = shm_open(x->name, O_RDWR, 0)) < 0 || fstat(fd, &st) != 0 ||
           (size_t)st.st_size != x->bytes) {
      if (fd >= 0)
        close(fd);
      fd = -1;
      if (svc->now_ns() > deadline)
        break;
      usleep(1000);
    }
  }
  if (fd < 0)
    return svc->error(SYMHEAP_ERR_TIMEOUT, "shmccl: cannot open %s: %s",
                      x->name, strerror(errno));
  void *p = mmap(NULL, x->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    return svc->error(SYMHEAP_ERR_SYSTEM, "shmccl: mmap: %s", strerror(errno));
  x->base = p;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t shm_open_job(const symheap_host_services_t *s,
                                     int timeout_ms, void **ctx) {
  long rank, nranks;
  const char *uid = NULL;
  symheap_result_t r = s->param_get_int("SYMHEAP_RANK", &rank);
  if (r == SYMHEAP_SUCCESS)
    r = s->param_get_int("SYMHEAP_NRANKS", &nranks);
  if (r == SYMHEAP_SUCCESS)
    r = s->param_get_string("SYMHEAP_UNIQUE_ID", &uid);
  if (r != SYMHEAP_SUCCESS || !uid || strlen(uid) < 24)
    return r != SYMHEAP_SUCCESS
               ? s->error_context(r, "shmccl needs symheap-run's variables")
               : s->error(SYMHEAP_ERR_INVALID_ARG,
                          "shmccl needs SYMHEAP_UNIQUE_ID (symheap-run)");
  shm_ccl_t *x = calloc(1, sizeof *x);
  if (!x)
    return s->error(SYMHEAP_ERR_NO_MEMORY, "shmccl: no memory");
  x->rank = (int)rank;
  x->nranks = (int)nranks;
  x->bytes = (size_t)nranks * (SEQ_STRIDE + 2 * (size_t)SLOT_BYTES);
  snprintf(x->name, sizeof x->name, "/symheap-shmccl-%.24s", uid);
  r = attach(x, timeout_ms);
  if (r != SYMHEAP_SUCCESS) {
    free(x);
    return r;
  }
  *ctx = x;
  return SYMHEAP_SUCCESS;
}

static const symheap_ccl_ops shm_ccl_ops = {
    .abi_version = SYMHEAP_ADAPTOR_ABI_VERSION,
    .struct_size = sizeof(symheap_ccl_ops),
    .name = "shmccl",
    .rank = shm_rank,
    .size = shm_size,
    .allgather = shm_allgather,
    .fini = shm_fini,
    .open = shm_open_job,
};

static symheap_result_t plugin_init(const symheap_host_services_t *s) {
  if (!SYMHEAP_HAS_MEMBER(s, symheap_host_services_t, now_ns))
    return s->error(SYMHEAP_ERR_PLUGIN, "shmccl needs a newer libsymheap");
  svc = s;
  return SYMHEAP_SUCCESS;
}

static void plugin_fini(void) {}

SYMHEAP_PLUGIN_EXPORT const symheap_plugin_t symheap_plugin_v1 = {
    SYMHEAP_PLUGIN_ABI_FIELDS,
    .name = "shmccl",
    .init = plugin_init,
    .fini = plugin_fini,
    .ccl = &shm_ccl_ops,
};

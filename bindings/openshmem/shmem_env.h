/* symheap-shmem's environment: the variables OpenSHMEM 1.5 defines (and
 * their deprecated SMA_ names), read once at shmem_init.  Not installed. */
#ifndef SYMHEAP_SHMEM_ENV_H
#define SYMHEAP_SHMEM_ENV_H

#include <stddef.h>

/* SHMEM_SYMMETRIC_SIZE's syntax (env_size.c): 0, or -1 for text that is not
 * a size or a size that does not fit. */
int shm__parse_size(const char *s, size_t *out);

/* The value of SHMEM_NAME, else of its deprecated SMA_NAME (env.c). */
const char *shm__getenv(const char *name);
/* SHMEM_SYMMETRIC_SIZE (or SMA_SYMMETRIC_SIZE) into *size when set; -1,
 * said on stderr, when it is not a size. */
int shm__env_heap_size(size_t *size);
/* SHMEM_VERSION and SHMEM_INFO: what they ask printed, on PE 0; SHMEM_INFO
 * ends with how large puts and gets are copied (stream_min: copy.c's
 * choice from that size, SIZE_MAX: memcpy only) and the line prefault.c
 * gives on which objects it prefaults. */
void shm__env_print(int me, size_t stream_min, const char *prefault);
/* SHMEM_DEBUG set and not 0. */
int shm__env_debug(void);
/* SYMHEAP_SHMEM_SPIN into *spin when set (*given 1): digits, at most
 * SHM_SPIN_MAX; -1, said on stderr, for anything else. */
#define SHM_SPIN_MAX 1000000u
int shm__env_spin(unsigned *spin, int *given);
/* SYMHEAP_SHMEM_DATA_SEGMENT: 0 or 1 (unset or empty: 1); -1, said on
 * stderr, for anything else. */
int shm__env_data_segment(void);
/* SYMHEAP_SHMEM_PUSH: the same (coll.c: whether collectives write into the
 * peers' dest). */
int shm__env_push(void);
/* SYMHEAP_SHMEM_STREAM_MIN into *bytes (untouched when unset): 0 or from
 * SYMHEAP_SHMEM_FAST_COPY_MAX, else -1, said on stderr. */
int shm__env_stream_min(size_t *bytes);
/* SYMHEAP_SHMEM_PREFAULT into *bytes (untouched when unset): 0 for none,
 * or a size from SHM_PREFAULT_LEAST; -1, said on stderr, for anything
 * else (below it no object could qualify). */
#define SHM_PREFAULT_LEAST 4096
int shm__env_prefault(size_t *bytes);
/* SYMHEAP_SHMEM_TIMEOUT_MS into *ns (0: unset, no bound): how long an
 * OpenSHMEM wait may last; -1, saying why, when it is malformed.  Its own
 * variable: SYMHEAP_TIMEOUT_MS, the core's bound on joining and exchanges,
 * is set for slow networks, and must not cut a PE's long computation. */
#define SHM_WAIT_MAX_MS 86400000
int shm__env_wait_limit_ns(long long *ns);

#endif /* SYMHEAP_SHMEM_ENV_H */

/* Shared by test_stage.c and test_stage_get.c (one program): the windows
 * every case uses and the helpers that read and write device memory through
 * the device adaptor's copies. */
#ifndef TEST_STAGE_ENV_H
#define TEST_STAGE_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "symheap_device.h"

#define WIN_BYTES (12u << 20) /* over the heap threshold: a registration */
#define BIG ((1u << 20) + 3u)
#define SIG_OFF (WIN_BYTES - 64) /* the host API's signal words */
#define WAIT_NS 20000000000ull

typedef struct {
  th_ctx_t *c;
  symheap_window_t w, src;         /* the target window, a source window */
  symheap_device_window_t v, vsrc; /* their device views */
  int peer;
} env_t;

extern int g_per_host; /* ranks per pretend host */
extern int TIMEOUT_MS; /* SYMHEAP_TIMEOUT_MS */

uint64_t now_ns(void);
void pause_us(long us);
void dev_read(env_t *e, void *dst, const void *dev, size_t n);
void dev_write(env_t *e, void *dev, const void *src, size_t n);
uint64_t dev_word(env_t *e, const void *dev);
unsigned char pat(int from, uint64_t salt, size_t i);
void fill(unsigned char *b, size_t n, int from, uint64_t salt);
/* The first wrong byte of [at, at + n) of this rank's copy of v, or n. */
size_t check(env_t *e, const symheap_device_window_t *v, size_t at, size_t n,
             int from, uint64_t salt);

/* test_stage_get.c: gets and atomics on staged windows. */
void case_get(env_t *e);
void case_get_put_race(env_t *e);
void case_amo_fetch(env_t *e);
void case_amo_contention_all(env_t *e);
void case_bad_input(env_t *e);
/* The get half of the "never progresses" case (rank 0, victim held). */
void get_times_out(env_t *e, int victim);

#endif

/* SHMEM_SYMMETRIC_SIZE's syntax (bindings/openshmem/env_size.c, built here
 * on its own): the forms OpenSHMEM 1.5 allows and the ones it does not.
 * Runs without shmem_init (one process, no launcher).  Issue 28 item 6:
 * 17179869185G wrapped to 1 GiB and " 1G" was accepted; issue 31: 3.1M,
 * .5m, 20kk, 0 and the T suffix were refused. */
#include <stdint.h>
#include <stdio.h>

#include "../../bindings/openshmem/env_size.c"

static int failures;

static void want(const char *text, int ok, size_t value) {
  size_t got = 12345;
  int rc = shm__parse_size(text, &got);
  if (ok && (rc != 0 || got != value)) {
    printf("FAIL env_symmetric_size \"%s\": rc %d value %zu, want %zu\n", text,
           rc, got, value);
    failures++;
  } else if (!ok && rc == 0) {
    printf("FAIL env_symmetric_size \"%s\" accepted as %zu, want refused\n",
           text, got);
    failures++;
  }
}

int main(void) {
  const size_t K = 1024, M = K * K, G = M * K, T = G * K;
  want("0", 1, 0);
  want("4096", 1, 4096);
  want("1K", 1, K);
  want("1k", 1, K);
  want("2M", 1, 2 * M);
  want("512m", 1, 512 * M);
  want("1G", 1, G);
  want("3g", 1, 3 * G);
  want("2T", 1, 2 * T);
  want("1t", 1, T);
  want("3.1M", 1, (size_t)(3.1 * (double)M) + 1); /* rounded up */
  want(".5m", 1, M / 2);
  want("0.25G", 1, G / 4);
  want("1.5", 1, 2);
  want("20kk", 1, 20 * K); /* what follows the suffix is ignored */
  want("1GB", 1, G);
  want("100B", 1, 100);
  want("0K", 1, 0);
  want("16777215T", 1, (size_t)16777215 * T);
  want("", 0, 0);
  want(" 1G", 0, 0);
  want("\t1G", 0, 0);
  want("-1", 0, 0);
  want("+1", 0, 0);
  want("G", 0, 0);
  want(".", 0, 0);
  want("1x", 0, 0);
  want("12 ", 0, 0);
  want("1BB", 0, 0);
  want("17179869185G", 0, 0);         /* wrapped to 1 GiB before */
  want("16777216T", 0, 0);            /* 2^64 */
  want("18446744073709551616", 0, 0); /* 2^64 */
  want("99999999999999999999999", 0, 0);
  want("18446744073709551615", 1, SIZE_MAX);
  printf("%s env_symmetric_size\n", failures ? "FAIL" : "PASS");
  return failures != 0;
}

/* Ending a job: run by test/run.sh, which checks the job's exit status.
 *   --global-exit S   PE 0 calls shmem_global_exit(S) while every other PE
 *                     waits in shmem_barrier_all: the job ends with S (also
 *                     for S = 0, when no launcher would stop the others).
 *   --pe-dies         the last PE exits without shmem_finalize while the
 *                     others wait in a barrier: they end with an error
 *                     instead of waiting for ever.
 *   --before-init     an RMA call before shmem_init ends the program with
 *                     status 1 and a message instead of crashing.
 * A PE that gets past the barrier prints "FAIL ..." (it should not). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--before-init") == 0) {
    static int x;
    shmem_int_p(&x, 1, 0); /* must end the program with a message */
    printf("FAIL exit shmem_int_p before shmem_init returned\n");
    return 0;
  }
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  if (argc > 2 && strcmp(argv[1], "--global-exit") == 0) {
    if (me == 0) {
      usleep(300 * 1000); /* the others are in the barrier by now */
      shmem_global_exit(atoi(argv[2]));
    }
  } else if (argc > 1 && strcmp(argv[1], "--pe-dies") == 0) {
    if (me == npes - 1) {
      usleep(300 * 1000);
      _exit(0);
    }
  } else {
    fprintf(stderr, "usage: %s --global-exit S | --pe-dies\n", argv[0]);
    return 2;
  }
  shmem_barrier_all();
  printf("FAIL exit PE %d got past the barrier\n", me);
  shmem_finalize();
  return 1;
}

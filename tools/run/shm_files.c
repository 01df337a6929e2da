/* What a rank killed (or crashed) leaves in /dev/shm: libfabric's shm
 * provider backs each endpoint with a 16 MiB file there, which the
 * process removes when it closes the endpoint, so a killed rank's stay.
 * The ofi adaptor names them "symheap-<pid>-<random>" (adaptors/net/ofi/
 * ofi_ep.c), so once a rank is gone its launcher can tell them apart.
 * Before, every stopped job over shm left 16 MiB a rank behind, until
 * someone cleaned /dev/shm by hand. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

#define SHM_DIR "/dev/shm"

static int remove_files(const pid_t *pids, int n) {
  DIR *d = opendir(SHM_DIR);
  if (!d)
    return 0;
  int removed = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int pid;
    char rest;
    /* "symheap-<pid>-<16 hex digits>" and nothing else */
    if (sscanf(e->d_name, "symheap-%d-%*16[0-9a-f]%c", &pid, &rest) != 1 ||
        strlen(e->d_name) > 64)
      continue;
    int ours = 0;
    for (int i = 0; i < n && !ours; i++)
      ours = pids[i] > 0 && pids[i] == (pid_t)pid;
    /* Only a rank that is gone: a pid taken again since names a process
     * whose own endpoints have other random parts. */
    if (!ours || !(kill((pid_t)pid, 0) != 0 && errno == ESRCH))
      continue;
    char path[sizeof SHM_DIR + 70];
    snprintf(path, sizeof path, SHM_DIR "/%s", e->d_name);
    if (unlink(path) == 0)
      removed++;
  }
  closedir(d);
  return removed;
}

void run_clean_shm_files(const pid_t *pids, int n) {
  int removed = remove_files(pids, n);
  if (removed)
    fprintf(stderr,
            "symheap-run: removed %d file(s) of libfabric shm endpoints that "
            "ended ranks left in " SHM_DIR "\n",
            removed);
}

/* Which host a rank is on: the machine's own identity, or the one
 * SYMHEAP_HOST_ID gives it. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "host.h"

/* The machine itself: ranks that say they share a host (SYMHEAP_HOST_ID)
 * must really share one, since their team maps each other's memory. */
void symheap__machine_identity(char *out, size_t len) {
  char name[64] = "?", boot[40] = "";
  gethostname(name, sizeof name);
  name[sizeof name - 1] = '\0';
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
  if (f) {
    if (!fgets(boot, sizeof boot, f))
      boot[0] = '\0';
    fclose(f);
    boot[strcspn(boot, "\n")] = '\0';
  }
  snprintf(out, len, "%s/%s", name, boot);
}

symheap_result_t symheap__host_identity(char *out, size_t len) {
  const char *forced = symheap__cfg_raw("SYMHEAP_HOST_ID");
  if (!forced) {
    symheap__machine_identity(out, len);
    return SYMHEAP_SUCCESS;
  }
  if (!forced[0] || strlen(forced) >= len)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_HOST_ID='%s': expected 1 to %zu characters",
                          forced, len - 1);
  snprintf(out, len, "%s", forced);
  return SYMHEAP_SUCCESS;
}

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

/* Unset SYMHEAP_HOST_ID: the machine and its network namespace.  Ranks in
 * two namespaces of one machine cannot meet at each other's abstract
 * sockets, so they are two hosts (as two containers are); the boot id and
 * namespace come first so that a long host name is what gets cut. */
static void default_identity(char *out, size_t len) {
  char machine[112], ns[64] = "";
  symheap__machine_identity(machine, sizeof machine);
  ssize_t n = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
  ns[n > 0 ? n : 0] = '\0';
  const char *slash = strrchr(machine, '/');
  int name_len = slash ? (int)(slash - machine) : (int)strlen(machine);
  snprintf(out, len, "%s/%s/%.*s", slash ? slash + 1 : "", ns, name_len,
           machine);
}

symheap_result_t symheap__host_identity(char *out, size_t len) {
  const char *forced = symheap__cfg_raw("SYMHEAP_HOST_ID");
  if (!forced) {
    default_identity(out, len);
    return SYMHEAP_SUCCESS;
  }
  if (!forced[0] || strlen(forced) >= len)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_HOST_ID='%s': expected 1 to %zu characters",
                          forced, len - 1);
  snprintf(out, len, "%s", forced);
  return SYMHEAP_SUCCESS;
}

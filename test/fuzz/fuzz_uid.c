/* libFuzzer target: the unique id as it arrives from the environment (hex)
 * and as bytes handed to symheap_comm_init.  Neither may crash, read past
 * its input or accept an id that fails its own checks. */
#include <stdlib.h>
#include <string.h>

#include "boot/uid.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  char *hex = malloc(size + 1);
  if (!hex)
    return 0;
  memcpy(hex, data, size);
  hex[size] = '\0';
  symheap_unique_id_t id;
  symheap__uid_t u;
  if (symheap__uid_from_hex(hex, &id) == SYMHEAP_SUCCESS)
    (void)symheap__uid_decode(&id, &u);
  free(hex);
  memset(&id, 0, sizeof id);
  memcpy(&id, data, size < sizeof id ? size : sizeof id);
  if (symheap__uid_decode(&id, &u) == SYMHEAP_SUCCESS &&
      memchr(u.name, '\0', sizeof u.name) == NULL)
    abort(); /* a decoded id must carry a terminated socket name */
  return 0;
}

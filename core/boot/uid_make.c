/* Which kind of id symheap_get_unique_id makes: SYMHEAP_BOOTSTRAP decides
 * between one host's Unix socket (uid.c) and TCP (uid_tcp.c). */
#include "base/config.h"
#include "uid.h"

/* What symheap_get_unique_id makes (SYMHEAP_BOOTSTRAP decides). */
symheap_result_t symheap__uid_make(symheap_unique_id_t *id) {
  int tcp = 0, report = 0;
  symheap_result_t r = symheap__cfg_choice("SYMHEAP_BOOTSTRAP", &tcp);
  if (r == SYMHEAP_SUCCESS)
    r = symheap__cfg_bool("SYMHEAP_RUN_ROOT_REPORT", &report);
  if (r != SYMHEAP_SUCCESS)
    return r;
  return tcp ? symheap__uid_make_tcp(NULL, report, id)
             : symheap__uid_make_unix(id);
}

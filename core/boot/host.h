/* Host identity (host.c). */
#ifndef SYMHEAP_HOST_H
#define SYMHEAP_HOST_H

#include "base/internal.h"

/* The machine itself ("name/boot id"). */
void symheap__machine_identity(char *out, size_t len);
/* This host's identity: SYMHEAP_HOST_ID's value, or the machine's. */
symheap_result_t symheap__host_identity(char *out, size_t len);

#endif

/* symheap-shmem: <shmemx.h>, where OpenSHMEM implementations declare their
 * extensions.  Programs include it unconditionally, so it must exist; every
 * routine symheap-shmem has is in the specification, so it only brings in
 * <shmem.h>. */
#ifndef SYMHEAP_SHMEMX_H
#define SYMHEAP_SHMEMX_H

#include "shmem.h"

#endif /* SYMHEAP_SHMEMX_H */

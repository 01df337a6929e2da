/* symheap-shmem: <mpp/shmem.h>, the header's deprecated place (OpenSHMEM
 * 1.5's deprecation table still requires it); the same as <shmem.h>. */
#ifndef SYMHEAP_MPP_SHMEM_H
#define SYMHEAP_MPP_SHMEM_H

#include "../shmem.h"

#endif /* SYMHEAP_MPP_SHMEM_H */

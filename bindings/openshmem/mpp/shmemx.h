/* symheap-shmem: <mpp/shmemx.h>, the deprecated place of <shmemx.h>. */
#ifndef SYMHEAP_MPP_SHMEMX_H
#define SYMHEAP_MPP_SHMEMX_H

#include "../shmemx.h"

#endif /* SYMHEAP_MPP_SHMEMX_H */

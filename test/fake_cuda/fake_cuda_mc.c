/* The fake CUDA driver's multicast objects (fake_cuda.c says what it
 * fakes): they record their devices and bindings; binding before every
 * device was added fails, as on real hardware. */
#include <stdint.h>
#include <stdlib.h>

#include "fake_cuda_impl.h"

/* Multicast. */
static cu_result_t f_cuMulticastGetGranularity(size_t *g, const cu_mc_prop_t *p,
                                               int opt) {
  ENTER("cuMulticastGetGranularity");
  if (!p || p->num_devices == 0 || opt < 0 || opt > 1)
    LEAVE(CU_ERR_INVALID_VALUE);
  *g = GRAN;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMulticastCreate(cu_mem_handle_t *mc,
                                       const cu_mc_prop_t *p) {
  ENTER("cuMulticastCreate");
  NEED_CTX();
  if (no_mc)
    LEAVE(CU_ERR_NOT_SUPPORTED);
  if (!p || p->num_devices == 0 || p->size == 0 || p->size % GRAN ||
      p->handle_types != CU_MEM_HANDLE_TYPE_POSIX_FD || p->flags)
    LEAVE(CU_ERR_INVALID_VALUE);
  mem_t *m = new_mem(p->size, cur_dev());
  if (!m)
    LEAVE(CU_ERR_OUT_OF_MEMORY);
  m->is_mc = 1;
  m->mc_ndev = p->num_devices;
  *mc = (cu_mem_handle_t)(uintptr_t)m;
  LEAVE(CU_OK);
}
/* Multicast state lives in the creator's record; an imported handle points
 * at it (found by inode at import).  So the fake supports multicast among
 * ranks of one process, which is how the tests use it. */
static mem_t *mc_object(mem_t *m) { return m->is_mc ? m : m->mc_of; }
static cu_result_t f_cuMulticastAddDevice(cu_mem_handle_t mc, cu_device_t d) {
  ENTER("cuMulticastAddDevice");
  mem_t *m = find_mem(mc), *o = m ? mc_object(m) : NULL;
  if (!o || d < 0 || d >= ndev)
    LEAVE(CU_ERR_INVALID_VALUE);
  if (o->mc_added >= o->mc_ndev)
    LEAVE(CU_ERR_INVALID_VALUE);
  o->mc_added++;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMulticastBindMem(cu_mem_handle_t mc, size_t mco,
                                        cu_mem_handle_t mem, size_t memo,
                                        size_t size, unsigned long long flags) {
  ENTER("cuMulticastBindMem");
  mem_t *m = find_mem(mc), *o = m ? mc_object(m) : NULL, *phys = find_mem(mem);
  if (!o || !phys || flags || size % GRAN || mco + size > o->size ||
      memo + size > phys->size)
    LEAVE(CU_ERR_INVALID_VALUE);
  if (o->mc_added < o->mc_ndev)
    LEAVE(CU_ERR_ILLEGAL_STATE); /* every device must be added first */
  o->mc_bound++;
  LEAVE(CU_OK);
}
static cu_result_t f_cuMulticastUnbind(cu_mem_handle_t mc, cu_device_t d,
                                       size_t mco, size_t size) {
  ENTER("cuMulticastUnbind");
  mem_t *m = find_mem(mc), *o = m ? mc_object(m) : NULL;
  if (!o || d < 0 || d >= ndev || mco + size > o->size || o->mc_bound == 0)
    LEAVE(CU_ERR_INVALID_VALUE);
  o->mc_bound--;
  LEAVE(CU_OK);
}


const fake_cu_entry_t fake_cu_mc_entries[] = {
    {"cuMulticastGetGranularity", (void *)f_cuMulticastGetGranularity, 12010},
    {"cuMulticastCreate", (void *)f_cuMulticastCreate, 12010},
    {"cuMulticastAddDevice", (void *)f_cuMulticastAddDevice, 12010},
    {"cuMulticastBindMem", (void *)f_cuMulticastBindMem, 12010},
    {"cuMulticastUnbind", (void *)f_cuMulticastUnbind, 12010},
};
const size_t fake_cu_mc_entries_n = sizeof fake_cu_mc_entries / sizeof fake_cu_mc_entries[0];

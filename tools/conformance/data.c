/* Checks of the address space: reservations, mappings, access, unmap and
 * mem_zero.  Where the CPU can reach the memory (SYMHEAP_CAP_HOST_ACCESS)
 * the kit looks at the bytes and probes the addresses; without it those
 * parts are checked by device code (the GPU suites) and say so. */
#include <stdio.h>
#include <string.h>

#include "kit.h"

/* The first page of [p, p+size) that a probe cannot touch, or -1. */
static long first_fault(char *p, size_t size, int write) {
  for (size_t o = 0; o < size; o += 4096)
    if (!kit_probe(p + o, write))
      return (long)o;
  return -1;
}

/* The first page of [p, p+size) that a load can touch, or -1. */
static long first_readable(char *p, size_t size) {
  for (size_t o = 0; o < size; o += 4096)
    if (kit_probe(p + o, 0))
      return (long)o;
  return -1;
}

/* The end of the checks that allocate: unmap and free what kit_map made
 * (va may be NULL), release the allocation (h may be 0), close the adaptor. */
static void finish(kit_dev_t *d, symheap_mem_handle_t h, char *va,
                   size_t size) {
  kit_unmap(d, va, size);
  if (h)
    d->t.ops.mem_release(d->ctx, h);
  kit_close(d);
}

static void check_va_reserve_inaccessible(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  char *va;
  if (!d.host)
    kit_skip("no SYMHEAP_CAP_HOST_ACCESS: the CPU cannot tell");
  else if (kit_reserve(&d, 2 * d.g, d.g, &va)) {
    kit_stage("probe a fresh reservation");
    if (!kit_range_reserved(va, 2 * d.g))
      kit_fail("va_reserve's range [%p, +%zu) is not in /proc/self/maps: "
               "nothing holds it, so anything may be placed there",
               (void *)va, 2 * d.g);
    else if (first_readable(va, 2 * d.g) >= 0)
      kit_fail("a fresh reservation is readable: va_reserve must reserve "
               "inaccessible address space (PROT_NONE)");
    else
      kit_pass("reserved in /proc/self/maps, and a load from it faults");
    d.t.ops.va_free(d.ctx, va, 2 * d.g);
  }
  kit_close(&d);
}

/* va_free gives the whole range back: nothing of it stays in the maps (no
 * other thread of this process maps anything meanwhile). */
static void check_va_free_releases(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  char *va;
  if (!d.host) {
    kit_skip("no SYMHEAP_CAP_HOST_ACCESS: the reservation may live in the "
             "device's own address space");
  } else if (kit_reserve(&d, 4 * d.g, d.g, &va)) {
    kit_stage("va_free");
    kit_clear_error();
    symheap_result_t r = d.t.ops.va_free(d.ctx, va, 4 * d.g);
    if (r != SYMHEAP_SUCCESS)
      kit_fail("va_free of a fresh reservation %s", kit_said(r));
    else if (kit_range_any(va, 4 * d.g))
      kit_fail("after va_free, part of [%p, +%zu) is still in "
               "/proc/self/maps: va_free leaked the range",
               (void *)va, 4 * d.g);
    else
      kit_pass("after va_free nothing of the range is in /proc/self/maps");
  }
  kit_close(&d);
}

static void check_set_access(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  symheap_mem_handle_t h = 0;
  char *va = NULL;
  size_t sz = 3 * d.g;
  if (kit_create(&d, sz, &h) && kit_map(&d, h, 0, sz, &va)) {
    kit_stage("stores and loads after set_access");
    long f = d.host ? first_fault(va, sz, 1) : -1;
    if (f >= 0)
      kit_fail("after map and set_access, a store at byte %ld faulted: "
               "set_access did not make the range accessible to the CPU, "
               "which SYMHEAP_CAP_HOST_ACCESS promises",
               f);
    else
      kit_pass("map and set_access of 3 granules%s",
               d.host ? "; every page loads and stores"
                      : " (no CPU access: the device's access is checked by "
                        "device code)");
  }
  finish(&d, h, va, sz);
}

/* Map, write, unmap: the range must stay reserved, then map again. */
static void unmap_case(int probe) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  if (probe && !d.host) {
    kit_skip("no SYMHEAP_CAP_HOST_ACCESS: the CPU cannot tell");
    kit_close(&d);
    return;
  }
  symheap_mem_handle_t h = 0;
  char *va = NULL;
  size_t sz = 2 * d.g;
  if (!kit_create(&d, sz, &h) || !kit_map(&d, h, 0, sz, &va))
    goto out;
  if (d.host)
    memset(va, 0x3c, sz);
  kit_stage("unmap");
  kit_clear_error();
  symheap_result_t r = d.t.ops.unmap(d.ctx, va, sz);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("unmap %s", kit_said(r));
    goto out;
  }
  kit_stage("look at the range after unmap");
  if (probe) {
    if (!kit_range_reserved(va, sz))
      kit_skip("the range is no longer reserved (see unmap_keeps_reservation)");
    else if (first_readable(va, sz) < 0)
      kit_pass("after unmap the range is reserved and a load faults");
    else
      kit_fail("after unmap, the range is still readable: unmap must leave "
               "it inaccessible (reserved, nothing mapped)");
    d.t.ops.va_free(d.ctx, va, sz);
    va = NULL;
    goto out;
  }
  if (d.host && !kit_range_reserved(va, sz)) {
    kit_fail("after unmap, [%p, +%zu) is no longer reserved (not in "
             "/proc/self/maps): unmap gave the reservation back; it must "
             "stay reserved until va_free",
             (void *)va, sz);
    va = NULL; /* nothing of it is ours any more */
    goto out;
  }
  kit_stage("map again at the same address");
  kit_clear_error();
  r = d.t.ops.map(d.ctx, va, sz, h, 0);
  if (r == SYMHEAP_SUCCESS)
    r = d.t.ops.set_access(d.ctx, va, sz);
  if (r != SYMHEAP_SUCCESS)
    kit_fail("map at the same address after unmap %s", kit_said(r));
  else if (d.host && (va[0] != 0x3c || va[sz - 1] != 0x3c))
    kit_fail("mapped again after unmap, byte 0 reads 0x%02x, expected 0x3c",
             (unsigned char)va[0]);
  else
    kit_pass("the range stays reserved%s and maps again at the same "
             "address%s",
             d.host ? " (in /proc/self/maps)" : "",
             d.host ? ", with the memory's bytes" : "");
out:
  finish(&d, h, va, sz);
}
static void check_unmap_keeps_reservation(void) { unmap_case(0); }

/* The docs: map makes the range mapped but not yet accessible; set_access
 * opens it.  An adaptor that opens it in map lets a rank touch memory the
 * core has not agreed on yet (a failed set_access elsewhere). */
static void check_map_before_access(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  if (!d.host) {
    kit_skip("no SYMHEAP_CAP_HOST_ACCESS: the CPU cannot tell");
    kit_close(&d);
    return;
  }
  symheap_mem_handle_t h = 0;
  char *va = NULL;
  size_t sz = 2 * d.g;
  if (kit_create(&d, sz, &h) && kit_reserve(&d, sz, d.g, &va)) {
    kit_stage("map, then probe before set_access");
    kit_clear_error();
    symheap_result_t r = d.t.ops.map(d.ctx, va, sz, h, 0);
    if (r != SYMHEAP_SUCCESS)
      kit_fail("map %s", kit_said(r));
    else if (first_readable(va, sz) >= 0)
      kit_fail("after map, before set_access, the range is readable: map "
               "must leave it inaccessible until set_access opens it");
    else
      kit_pass("after map and before set_access a load faults");
    if (r == SYMHEAP_SUCCESS)
      d.t.ops.unmap(d.ctx, va, sz);
    d.t.ops.va_free(d.ctx, va, sz);
  }
  finish(&d, h, NULL, 0);
}
static void check_unmap_makes_inaccessible(void) { unmap_case(1); }

static int partial(kit_dev_t *d) {
  if (d->caps.caps & SYMHEAP_CAP_MAP_PARTIAL)
    return 1;
  kit_skip("no SYMHEAP_CAP_MAP_PARTIAL: the core maps whole allocations "
           "only");
  return 0;
}

static void check_map_partial(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  symheap_mem_handle_t h = 0;
  static const size_t parts[][2] = {{1, 1}, {0, 1}, {2, 1}, {1, 2}};
  if (partial(&d) && kit_create(&d, 3 * d.g, &h)) {
    for (int i = 0; i < 4 && !kit_failed(); i++) {
      size_t off = parts[i][0] * d.g, sz = parts[i][1] * d.g;
      char *va;
      if (!kit_reserve(&d, sz, d.g, &va))
        break;
      kit_stage("map [%zu, %zu) of 3 granules", off, off + sz);
      kit_clear_error();
      symheap_result_t r = d.t.ops.map(d.ctx, va, sz, h, off);
      if (r != SYMHEAP_SUCCESS) {
        kit_fail("the adaptor claims SYMHEAP_CAP_MAP_PARTIAL, but map of "
                 "granules [%zu, %zu) of a 3-granule allocation %s",
                 parts[i][0], parts[i][0] + parts[i][1], kit_said(r));
        d.t.ops.va_free(d.ctx, va, sz);
        break;
      }
      d.t.ops.unmap(d.ctx, va, sz);
      d.t.ops.va_free(d.ctx, va, sz);
    }
    kit_pass("granules [1,2), [0,1), [2,3) and [1,3) of 3 map");
  }
  finish(&d, h, NULL, 0);
}

/* A mapping at offset off shows the allocation's bytes from off, and
 * stores through either mapping land in the same memory. */
static void check_map_offset_bytes(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  symheap_mem_handle_t h = 0;
  char *w = NULL, *p = NULL;
  size_t off = 0, sz = 3 * d.g;
  if (!partial(&d))
    goto out;
  if (!d.host) {
    kit_skip("no SYMHEAP_CAP_HOST_ACCESS: bytes are checked by device code");
    goto out;
  }
  off = d.g;
  if (!kit_create(&d, sz, &h) || !kit_map(&d, h, 0, sz, &w) ||
      !kit_map(&d, h, off, sz - off, &p))
    goto out;
  kit_stage("pattern through the whole and the part");
  for (size_t i = 0; i < sz; i += 61)
    w[i] = (char)(i / 61 + 1);
  for (size_t i = (off + 60) / 61 * 61; i < sz && !kit_failed(); i += 61)
    if (p[i - off] != (char)(i / 61 + 1))
      kit_fail("byte %zu of a mapping at offset %zu reads 0x%02x, expected "
               "0x%02x (byte %zu of the allocation): map at an offset maps "
               "the wrong bytes",
               i - off, off, (unsigned char)p[i - off],
               (unsigned char)(i / 61 + 1), i);
  for (size_t i = 0; i < sz - off && !kit_failed(); i += 53) {
    p[i] = (char)~i;
    if (w[off + i] != (char)~i)
      kit_fail("a store at byte %zu of a mapping at offset %zu is not seen "
               "at byte %zu of the whole mapping: map at an offset maps the "
               "wrong bytes",
               i, off, off + i);
  }
  kit_pass("granules [1,3) mapped beside the whole: bytes agree both ways");
out:
  kit_unmap(&d, p, sz - off);
  finish(&d, h, w, sz);
}

static void check_mem_zero(void) {
  kit_dev_t d;
  if (!kit_open_vmm(&d))
    return;
  symheap_mem_handle_t h = 0;
  char *w = NULL;
  size_t sz = 3 * d.g;
  if (!K.T.has_mem_zero) {
    kit_skip("mem_zero is not provided: views carry no pad (no device "
             "signals or collectives)");
    goto out;
  }
  if (!kit_create(&d, sz, &h) || !kit_map(&d, h, 0, sz, &w))
    goto out;
  if (d.host)
    memset(w, 0xa5, sz);
  kit_stage("mem_zero of the middle granule");
  kit_clear_error();
  symheap_result_t r = d.t.ops.mem_zero(d.ctx, w + d.g, d.g);
  if (r != SYMHEAP_SUCCESS) {
    kit_fail("mem_zero of one mapped granule %s", kit_said(r));
    goto out;
  }
  for (size_t i = d.g; d.host && i < 2 * d.g && !kit_failed(); i++)
    if (w[i])
      kit_fail("after mem_zero of [%zu, %zu), byte %zu reads 0x%02x: "
               "mem_zero must leave every byte of its range zero",
               d.g, 2 * d.g, i, (unsigned char)w[i]);
  if (d.host && !kit_failed() &&
      ((unsigned char)w[d.g - 1] != 0xa5 || (unsigned char)w[2 * d.g] != 0xa5))
    kit_fail("mem_zero of [%zu, %zu) changed bytes outside its range", d.g,
             2 * d.g);
  kit_pass("one granule of three cleared%s",
           d.host ? ": zero inside, untouched outside" : " (returned success)");
out:
  finish(&d, h, w, sz);
}

const kit_check_t kit_data_checks[] = {
    {"va_reserve_inaccessible", check_va_reserve_inaccessible,
     "a reservation is in /proc/self/maps and a load from it faults"},
    {"va_free_releases", check_va_free_releases,
     "after va_free nothing of the range is in /proc/self/maps"},
    {"map_before_access", check_map_before_access,
     "after map and before set_access a load from the range faults"},
    {"set_access", check_set_access,
     "after map and set_access every page loads and stores (host access)"},
    {"unmap_keeps_reservation", check_unmap_keeps_reservation,
     "after unmap the range stays reserved and maps again at the same "
     "address"},
    {"unmap_makes_inaccessible", check_unmap_makes_inaccessible,
     "after unmap a load from the range faults"},
    {"map_partial", check_map_partial,
     "with SYMHEAP_CAP_MAP_PARTIAL, parts of an allocation map"},
    {"map_offset_bytes", check_map_offset_bytes,
     "a mapping at an offset shows the right bytes, stores land, both ways"},
    {"mem_zero", check_mem_zero, "mem_zero clears its range and nothing else"},
    {NULL, NULL, NULL}};

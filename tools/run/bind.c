/* Where symheap-run puts a rank: a CPU of its own (core), the CPUs of its
 * GPU's NUMA node (numa), or anywhere (none).
 *
 * The GPU a rank will use is found without CUDA: the NVIDIA display/3D PCI
 * functions under $SYMHEAP_RUN_SYSFS/bus/pci/devices (default /sys; AMD's
 * when there is no NVIDIA one), sorted by PCI address, which is CUDA's
 * order with CUDA_DEVICE_ORDER=PCI_BUS_ID and, with identical GPUs, its
 * default order too; CUDA_VISIBLE_DEVICES (HIP_VISIBLE_DEVICES, ROCR_...)
 * given as indices picks among them, as the driver does.  Rank r uses the
 * (r mod count)-th, as the CUDA and HIP adaptors pick (SYMHEAP_CUDA_DEVICE /
 * SYMHEAP_HIP_DEVICE, when set, name it for every rank).  Its node is the
 * device's numa_node file; its CPUs that node's cpulist, within the CPUs
 * symheap-run may use.  Anything not found (no GPU, numa_node -1, a UUID in
 * CUDA_VISIBLE_DEVICES) means no node: core binding then uses every
 * allowed CPU, numa binding binds nothing. */
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define MAX_GPUS 64

static const char *sysfs_root(void) {
  const char *r = getenv("SYMHEAP_RUN_SYSFS");
  return r && *r ? r : "/sys";
}

/* The first line of a file under the sysfs root; 0 or -1. */
static int read_line(const char *rel, char *buf, size_t len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", sysfs_root(), rel);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char *ok = fgets(buf, (int)len, f);
  fclose(f);
  if (!ok)
    return -1;
  buf[strcspn(buf, "\n")] = 0;
  return 0;
}

/* A GPU of this vendor: a display controller (class 0x03xxxx). */
static int is_gpu(const char *bdf, const char *vendor) {
  char rel[300], v[32], c[32];
  snprintf(rel, sizeof rel, "bus/pci/devices/%s/vendor", bdf);
  if (read_line(rel, v, sizeof v) || strcmp(v, vendor) != 0)
    return 0;
  snprintf(rel, sizeof rel, "bus/pci/devices/%s/class", bdf);
  return read_line(rel, c, sizeof c) == 0 && strncmp(c, "0x03", 4) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The vendor's GPUs' PCI addresses, sorted; their count. */
static int list_gpus(const char *vendor, char bdf[][32]) {
  char path[512];
  snprintf(path, sizeof path, "%s/bus/pci/devices", sysfs_root());
  DIR *d = opendir(path);
  if (!d)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < MAX_GPUS)
    if (e->d_name[0] != '.' && strlen(e->d_name) < 32 &&
        is_gpu(e->d_name, vendor))
      snprintf(bdf[n++], 32, "%s", e->d_name);
  closedir(d);
  char *p[MAX_GPUS];
  for (int i = 0; i < n; i++)
    p[i] = bdf[i];
  qsort(p, (size_t)n, sizeof *p, cmp_str);
  char tmp[MAX_GPUS][32];
  for (int i = 0; i < n; i++)
    snprintf(tmp[i], 32, "%s", p[i]);
  memcpy(bdf, tmp, sizeof(tmp[0]) * (size_t)n);
  return n;
}

/* The index of the local_rank's GPU among all, honouring the visible-devices
 * list (indices only) and the adaptor's device variable; -1 if unknown. */
static int gpu_index(int n, int local_rank, const char *visible_var,
                     const char *device_var) {
  int vis[MAX_GPUS], nvis = 0;
  const char *v = getenv(visible_var);
  if (v) {
    const char *s = v;
    while (*s && nvis < MAX_GPUS) {
      char *end;
      long i = strtol(s, &end, 10);
      if (end == s || i < 0)
        return -1; /* a UUID or junk: the driver's mapping is not ours */
      if (i >= n)
        break; /* the driver ignores this entry and the rest */
      vis[nvis++] = (int)i;
      s = *end == ',' ? end + 1 : end;
      if (*end && *end != ',')
        return -1;
    }
  } else {
    for (; nvis < n && nvis < MAX_GPUS; nvis++)
      vis[nvis] = nvis;
  }
  if (nvis == 0)
    return -1;
  const char *dev = getenv(device_var);
  long pick = local_rank % nvis;
  if (dev && *dev) {
    char *end;
    pick = strtol(dev, &end, 10);
    if (*end || pick < 0 || pick >= nvis)
      return -1;
  }
  return vis[pick];
}

/* "0-3,8,10-11" into set; 0, or -1 if it is not a cpulist. */
int run_parse_cpulist(const char *s, cpu_set_t *set) {
  CPU_ZERO(set);
  while (*s) {
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if (end == s || a < 0)
      return -1;
    if (*end == '-') {
      s = end + 1;
      b = strtol(s, &end, 10);
      if (end == s || b < a)
        return -1;
    }
    for (long c = a; c <= b && c < CPU_SETSIZE; c++)
      CPU_SET((int)c, set);
    if (*end != ',' && *end)
      return -1;
    s = *end ? end + 1 : end;
  }
  return 0;
}

int run_gpu_node_cpus(int local_rank, const cpu_set_t *allowed,
                      cpu_set_t *out) {
  static char bdf[MAX_GPUS][32];
  const char *visible = "CUDA_VISIBLE_DEVICES", *device = "SYMHEAP_CUDA_DEVICE";
  int n = list_gpus("0x10de", bdf);
  if (n == 0) {
    n = list_gpus("0x1002", bdf);
    visible = getenv("HIP_VISIBLE_DEVICES") ? "HIP_VISIBLE_DEVICES"
                                            : "ROCR_VISIBLE_DEVICES";
    device = "SYMHEAP_HIP_DEVICE";
  }
  if (n == 0)
    return -1;
  int g = gpu_index(n, local_rank, visible, device);
  if (g < 0)
    return -1;
  char rel[300], buf[4096];
  snprintf(rel, sizeof rel, "bus/pci/devices/%s/numa_node", bdf[g]);
  if (read_line(rel, buf, sizeof buf))
    return -1;
  int node = atoi(buf);
  if (node < 0)
    return -1;
  snprintf(rel, sizeof rel, "devices/system/node/node%d/cpulist", node);
  cpu_set_t cpus;
  if (read_line(rel, buf, sizeof buf) || run_parse_cpulist(buf, &cpus))
    return -1;
  CPU_AND(out, &cpus, allowed);
  return CPU_COUNT(out) ? node : -1;
}

/* symheap-run's rank placement (issue 31 item 6), as the ranks see it:
 * each rank prints sched_getaffinity's answer and this driver checks it.
 *   --bind core (default): one CPU of its own per rank; with more ranks than
 *     CPUs, rank r on the (r mod CPUs)-th CPU (no GPU) or its GPU's node
 *     (fake sysfs);
 *   --bind none / SYMHEAP_RUN_BIND=none: the launcher's whole set;
 *   --bind numa: the CPUs of the rank's GPU's NUMA node, found under
 *     SYMHEAP_RUN_SYSFS (a fake tree made here: two NVIDIA GPUs on nodes 0
 *     and 1, a non-GPU NVIDIA function and another vendor's device), with
 *     CUDA_VISIBLE_DEVICES reordering them; numa_node -1 or a UUID in
 *     CUDA_VISIBLE_DEVICES: not bound.
 * Usage: test_run_bind (the driver; finds ../bin/symheap-run beside it). */
#include <errno.h>
#include <libgen.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char run[4096], root[64];
static cpu_set_t all;
static int cpu_a, cpu_b, failures;

/* A rank: "BIND rank cpu,cpu,...". */
static int rank_main(void) {
  cpu_set_t s;
  if (sched_getaffinity(0, sizeof s, &s) != 0)
    return 1;
  printf("BIND %s ", getenv("SYMHEAP_RANK"));
  for (int c = 0, first = 1; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &s)) {
      printf(first ? "%d" : ",%d", c);
      first = 0;
    }
  printf("\n");
  return 0;
}

static void set_str(const cpu_set_t *s, char *out, size_t len) {
  out[0] = 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, s))
      snprintf(out + strlen(out), len - strlen(out), out[0] ? ",%d" : "%d", c);
}

/* Runs symheap-run OPTS -n n; want[r] each rank's set ("ALL": the whole
 * set, "ONE": one CPU no other rank has). */
static void expect(const char *name, const char *env, const char *opts, int n,
                   const char *const *want) {
  char cmd[8192], line[8192], got[64][4096] = {{0}}, whole[4096];
  set_str(&all, whole, sizeof whole);
  snprintf(cmd, sizeof cmd, "env %s %s %s -n %d %s/../test/test_run_bind --rank",
           env, run, opts, n, dirname(strdup(run)));
  FILE *p = popen(cmd, "r");
  int ok = p != NULL, seen = 0;
  while (p && fgets(line, sizeof line, p)) {
    int r;
    char set[4096];
    if (sscanf(line, "BIND %d %4095s", &r, set) == 2 && r >= 0 && r < n &&
        r < 64) {
      snprintf(got[r], sizeof got[r], "%s", set);
      seen++;
    }
  }
  if (p && pclose(p) != 0)
    ok = 0;
  for (int r = 0; ok && r < n; r++) {
    const char *w = strcmp(want[r], "ALL") == 0 ? whole : want[r];
    if (strcmp(want[r], "ONE") == 0) {
      ok = strchr(got[r], ',') == NULL && got[r][0];
      for (int q = 0; ok && q < r; q++)
        ok = strcmp(got[q], got[r]) != 0;
    } else {
      ok = strcmp(got[r], w) == 0;
    }
    if (!ok)
      printf("FAIL %s rank %d has CPUs %s, wanted %s (%s)\n", name, r, got[r],
             w, cmd);
  }
  if (ok && seen != n)
    printf("FAIL %s: %d of %d ranks answered (%s)\n", name, seen, n, cmd), ok = 0;
  if (ok)
    printf("PASS %s\n", name);
  failures += !ok;
}

static void put(const char *rel, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = 0;
    mkdir(path, 0755);
    *s = '/';
  }
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "%s\n", text);
    fclose(f);
  }
}

static void fake_sysfs(const char *node_of_second) {
  char a[16], b[16];
  snprintf(a, sizeof a, "%d", cpu_a);
  snprintf(b, sizeof b, "%d", cpu_b);
  /* readdir order is not PCI order: the later address is made first. */
  put("bus/pci/devices/0000:81:00.0/vendor", "0x10de");
  put("bus/pci/devices/0000:81:00.0/class", "0x030200");
  put("bus/pci/devices/0000:81:00.0/numa_node", node_of_second);
  put("bus/pci/devices/0000:01:00.0/vendor", "0x10de");
  put("bus/pci/devices/0000:01:00.0/class", "0x030000");
  put("bus/pci/devices/0000:01:00.0/numa_node", "0");
  put("bus/pci/devices/0000:00:01.0/vendor", "0x10de"); /* an audio function */
  put("bus/pci/devices/0000:00:01.0/class", "0x040300");
  put("bus/pci/devices/0000:00:01.0/numa_node", "1");
  put("bus/pci/devices/0000:00:00.0/vendor", "0x8086");
  put("bus/pci/devices/0000:00:00.0/class", "0x030000");
  put("devices/system/node/node0/cpulist", a);
  put("devices/system/node/node1/cpulist", b);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--rank") == 0)
    return rank_main();
  snprintf(run, sizeof run, "%s/../bin/symheap-run", dirname(strdup(argv[0])));
  if (sched_getaffinity(0, sizeof all, &all) != 0)
    return printf("FAIL affinity: %s\n", strerror(errno)), 1;
  int n = CPU_COUNT(&all);
  for (int c = CPU_SETSIZE - 1; c >= 0; c--)
    if (CPU_ISSET(c, &all))
      cpu_a = c; /* the first */
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &all))
      cpu_b = c; /* the last */
  snprintf(root, sizeof root, "/tmp/symheap-sysfs.XXXXXX");
  if (!mkdtemp(root))
    return printf("FAIL mkdtemp: %s\n", strerror(errno)), 1;
  char nosys[128], sys[128];
  /* An empty tree: no GPU (a tree that is not there is refused). */
  char empty[96];
  snprintf(empty, sizeof empty, "%s/none", root);
  if (mkdir(empty, 0700) != 0)
    return printf("FAIL mkdir: %s\n", strerror(errno)), 1;
  snprintf(nosys, sizeof nosys, "SYMHEAP_RUN_SYSFS=%s", empty);
  snprintf(sys, sizeof sys, "SYMHEAP_RUN_SYSFS=%s", root);
  const char *one[64], *every[64];
  for (int i = 0; i < 64; i++)
    one[i] = "ONE", every[i] = "ALL";
  int m = n < 64 ? n : 64;
  expect("run_bind_core_default", nosys, "", m, one);
  expect("run_bind_none", nosys, "--bind none", m, every);
  expect("run_bind_none_env", "SYMHEAP_RUN_BIND=none", "", m, every);
  expect("run_bind_to_none_mpirun_spelling", nosys, "--bind-to none", m, every);
  /* More ranks than CPUs: dealt out in turn, rank r on the (r mod n)-th
   * CPU (they were left unbound, and the scheduler stacked them). */
  char turn[64][16];
  const char *dealt[64];
  for (int r = 0, k = 0; r < 64; r++, k = (k + 1) % n) {
    int c = -1;
    for (int i = 0, seen = 0; i < CPU_SETSIZE && c < 0; i++)
      if (CPU_ISSET(i, &all) && seen++ == k)
        c = i;
    snprintf(turn[r], sizeof turn[r], "%d", c);
    dealt[r] = turn[r];
  }
  expect("run_bind_more_ranks_than_cpus_in_turn", nosys, "",
         m + 1 < 64 ? m + 1 : 63, dealt);
  expect("run_bind_more_ranks_than_cpus_none", nosys, "--bind none",
         m + 1 < 64 ? m + 1 : 63, every);
  expect("run_bind_numa_without_gpu_unbound", nosys, "--bind numa", 2, every);
  if (n >= 2) {
    char a[16], b[16];
    snprintf(a, sizeof a, "%d", cpu_a);
    snprintf(b, sizeof b, "%d", cpu_b);
    fake_sysfs("1");
    char env[512];
    expect("run_bind_numa_gpu_node", sys, "--bind numa", 3,
           (const char *const[]){a, b, a});
    snprintf(env, sizeof env, "%s CUDA_VISIBLE_DEVICES=1,0", sys);
    expect("run_bind_numa_visible_devices", env, "--bind numa", 2,
           (const char *const[]){b, a});
    expect("run_bind_core_from_gpu_node", env, "", 2,
           (const char *const[]){b, a});
    if (n < 8) /* more ranks than CPUs: no CPU of its own, its node's */
      expect("run_bind_core_oversubscribed_gpu_node", sys, "", n + 1,
           (const char *const[]){a, b, a, b, a, b, a, b});
    snprintf(env, sizeof env, "%s CUDA_VISIBLE_DEVICES=GPU-12ab", sys);
    expect("run_bind_numa_uuid_unbound", env, "--bind numa", 2, every);
    fake_sysfs("-1");
    snprintf(env, sizeof env, "%s SYMHEAP_CUDA_DEVICE=1", sys);
    expect("run_bind_numa_node_unknown", env, "--bind numa", 2, every);
  }
  /* A bad mode is refused. */
  char cmd[4600];
  snprintf(cmd, sizeof cmd, "SYMHEAP_RUN_BIND=socket %s -n 1 true 2>/dev/null", run);
  int rc = system(cmd);
  printf("%s run_bind_bad_env_refused\n", rc != 0 ? "PASS" : "FAIL");
  failures += rc == 0;
  /* SYMHEAP_RUN_SYSFS naming no directory is refused (it read as "no
   * GPU" and bound ranks silently otherwise than the tree would have). */
  snprintf(cmd, sizeof cmd,
           "SYMHEAP_RUN_SYSFS=%s/missing %s -n 1 true 2>/dev/null", root, run);
  rc = system(cmd);
  printf("%s run_bind_missing_sysfs_refused\n", rc != 0 ? "PASS" : "FAIL");
  failures += rc == 0;
  snprintf(cmd, sizeof cmd, "%s --bind socket -n 1 true 2>/dev/null", run);
  rc = system(cmd);
  printf("%s run_bind_bad_option_refused\n", rc != 0 ? "PASS" : "FAIL");
  failures += rc == 0;
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  if (system(cmd) != 0)
    printf("note: could not remove %s\n", root);
  return failures != 0;
}

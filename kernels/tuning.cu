/* The tuning tables at run time (tuning.h).  A table is looked up once per
 * device, at the first AUTO call on it: SYMHEAP_TUNING_FILE if set ("none":
 * no table), else <libdir>/../share/symheap/tuning/<gpu>.tsv beside this
 * library (make copies the tree's tuning/ tables there, in the build tree
 * and at install).  No table: the thresholds of before.  SYMHEAP_DEBUG=INFO
 * says which. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_api.h"
#include "symheap_adaptor.h"
#include "tuning.h"

namespace symheap_coll {

namespace {

constexpr int kMaxDevices = 64;

struct dev_table_t {
  int ready;    /* read with acquire once set */
  int bad;      /* the table file is bad: every AUTO call fails with err */
  int has;      /* a table was loaded */
  char err[800];
  char path[PATH_MAX];
  symheap_tune_table_t table;
};

dev_table_t tables[kMaxDevices];
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
__thread int override_blocks, override_threads;
__thread int override_algo[SYMHEAP_TUNE_NCOLL]; /* 0: none */

const char *detect_topology() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return "single";
  }
  if (n < 2)
    return "single";
  bool access = true, atomics = true;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (i == j)
        continue;
      int acc = 0, atom = 0;
      if (cudaDeviceGetP2PAttribute(&acc, cudaDevP2PAttrAccessSupported, i,
                                    j) != cudaSuccess ||
          cudaDeviceGetP2PAttribute(&atom,
                                    cudaDevP2PAttrNativeAtomicSupported, i,
                                    j) != cudaSuccess) {
        (void)cudaGetLastError();
        acc = atom = 0;
      }
      access = access && acc;
      atomics = atomics && atom;
    }
  return !access ? "nop2p" : atomics ? "nvlink" : "pcie";
}

/* <dir of this library>/../share/symheap/tuning/<file> */
void default_path(const char *file, char *out, size_t len) {
  Dl_info info;
  char dir[PATH_MAX] = ".";
  if (dladdr((const void *)&default_path, &info) && info.dli_fname) {
    snprintf(dir, sizeof dir, "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    if (slash)
      *slash = 0;
    else
      snprintf(dir, sizeof dir, ".");
  }
  char lib[PATH_MAX + 8], real[PATH_MAX];
  snprintf(lib, sizeof lib, "%s/..", dir);
  if (realpath(lib, real)) /* <prefix>/share/..., not <prefix>/lib/../share */
    snprintf(out, len, "%s/share/symheap/tuning/%s", real, file);
  else
    snprintf(out, len, "%s/../share/symheap/tuning/%s", dir, file);
}

void load(dev_table_t *t, int dev) {
  const symheap_host_services_t *svc = symheap_host_services();
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(prop.name, sizeof prop.name, "unknown");
  }
  const char *env = NULL;
  if (svc->param_get_string("SYMHEAP_TUNING_FILE", &env) != SYMHEAP_SUCCESS)
    env = NULL; /* not declared: no cuda adaptor loaded the declarations */
  if (env && strcmp(env, "none") == 0) {
    snprintf(t->path, sizeof t->path, "none (SYMHEAP_TUNING_FILE=none)");
    svc->log(SYMHEAP_LOG_INFO,
             "cuda collectives, device %d (%s): no tuning table "
             "(SYMHEAP_TUNING_FILE=none): thresholds",
             dev, prop.name);
    return;
  }
  char file[160];
  symheap_tune_file_name(prop.name, file, sizeof file);
  if (env && *env)
    snprintf(t->path, sizeof t->path, "%s", env);
  else
    default_path(file, t->path, sizeof t->path);
  int rc = symheap_tune_load(t->path, &t->table, t->err, sizeof t->err);
  if (rc == 1 && !(env && *env)) {
    svc->log(SYMHEAP_LOG_INFO,
             "cuda collectives, device %d (%s, %s): no tuning table at %s: "
             "thresholds",
             dev, prop.name, tuning_topology(), t->path);
    return;
  }
  if (rc != 0) {
    t->bad = 1;
    svc->log(SYMHEAP_LOG_WARN, "cuda collectives: tuning table: %s%s", t->err,
             env && *env ? " (SYMHEAP_TUNING_FILE)" : "");
    return;
  }
  t->has = 1;
  svc->log(SYMHEAP_LOG_INFO,
           "cuda collectives, device %d (%s, %s): tuning table %s (%d rows, "
           "measured on %s)",
           dev, prop.name, tuning_topology(), t->path, t->table.nrows,
           t->table.gpu);
}

symheap_result_t device_table(const dev_table_t **out) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    /* No usable device (a host-side check, a machine without GPU): the
     * choice is still made, by a named file or the thresholds; the
     * launch, if any, reports the device's error. */
    (void)cudaGetLastError();
    dev = 0;
  }
  static dev_table_t overflow; /* devices past kMaxDevices: no table */
  if (dev < 0 || dev >= kMaxDevices) {
    *out = &overflow;
    return SYMHEAP_SUCCESS;
  }
  dev_table_t *t = &tables[dev];
  if (!__atomic_load_n(&t->ready, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&lock);
    if (!t->ready) {
      load(t, dev);
      __atomic_store_n(&t->ready, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
  }
  *out = t;
  return SYMHEAP_SUCCESS;
}

/* The override variables' choices, in the order adaptors/device/cuda.c
 * declares them (test_coll_tuning forced_pipe checks one end to end). */
constexpr int kChoices = 8;
const char *const choices[SYMHEAP_TUNE_NCOLL][kChoices] = {
    {"auto", "one_shot", "two_shot", "rs_ce", "one_shot_push", "two_shot_push",
     "rs_ce_pipe", "ll128"},
    {"auto", "one_shot", "two_shot"},
    {"auto", "sm", "zero_sm"},
    {"auto", "sm", "zero_sm", "scatter", "scatter_pipe", "ce_pipe"},
    {"auto", "sm", "zero_sm"},
};

/* The override variable of coll: its algorithm id, 0 for auto or unset. */
int forced_algo(int coll) {
  static const char *const names[SYMHEAP_TUNE_NCOLL] = {
      "SYMHEAP_ALL_REDUCE_ALGO", "SYMHEAP_REDUCE_SCATTER_ALGO",
      "SYMHEAP_ALL_GATHER_ALGO", "SYMHEAP_BROADCAST_ALGO",
      "SYMHEAP_ALL_TO_ALL_ALGO"};
  static int cached[SYMHEAP_TUNE_NCOLL]; /* index + 1; 0: not read yet */
  int v = __atomic_load_n(&cached[coll], __ATOMIC_RELAXED);
  if (!v) {
    int idx = 0;
    if (symheap_host_services()->param_get_choice(names[coll], &idx) !=
            SYMHEAP_SUCCESS ||
        idx < 0 || idx >= kChoices || !choices[coll][idx])
      idx = 0;
    /* the choice's name to its id: ids need not follow the list's order */
    int id = idx ? symheap_tune_algo_id(coll, choices[coll][idx]) : 0;
    v = (id > 0 ? id : 0) + 1;
    __atomic_store_n(&cached[coll], v, __ATOMIC_RELAXED);
  }
  return v - 1;
}

} // namespace

const char *tuning_topology() {
  static const char *topo = detect_topology(); /* thread-safe once */
  return topo;
}

symheap_result_t tuned_choice(int coll, symheap_tune_query_t *q,
                              symheap_tune_choice_t *c) {
  q->forced = override_algo[coll] ? override_algo[coll] : forced_algo(coll);
  q->table = NULL;
  q->topo = "";
  if (!q->forced) {
    const dev_table_t *t = NULL;
    symheap_result_t r = device_table(&t);
    if (r != SYMHEAP_SUCCESS)
      return r;
    if (t->bad)
      return fail(SYMHEAP_ERR_INVALID_ARG,
                  "the collectives' tuning table is bad: %s (fix it, or set "
                  "SYMHEAP_TUNING_FILE=none for the built-in thresholds)",
                  t->err);
    if (t->has) {
      q->table = &t->table;
      q->topo = tuning_topology();
    }
  }
  symheap_tune_choose(coll, q, c);
  return SYMHEAP_SUCCESS;
}

void apply_choice(const symheap_tune_choice_t &c, launch_t *a) {
  if (c.blocks > 0 && c.blocks < a->max_blocks)
    a->max_blocks = c.blocks;
  if (c.threads > 0)
    a->threads = c.threads;
}

void set_launch_override(int blocks, int threads) {
  override_blocks = blocks;
  override_threads = threads;
}

void set_algo_override(int coll, int algo) {
  if (coll >= 0 && coll < SYMHEAP_TUNE_NCOLL)
    override_algo[coll] = algo;
}

void launch_override(symheap_tune_choice_t *c) {
  c->blocks = override_blocks;
  c->threads = override_threads;
}

} // namespace symheap_coll

/* The table this thread's device uses, for symheap-info and logs. */
EXPORT symheap_result_t symheap_cuda_tuning_table(char *buf, size_t len) {
  using namespace symheap_coll;
  if (!buf || len == 0)
    return fail(SYMHEAP_ERR_INVALID_ARG,
                "symheap_cuda_tuning_table: buf is NULL or len is 0");
  const dev_table_t *t = NULL;
  symheap_result_t r = device_table(&t);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (t->bad)
    snprintf(buf, len, "bad table: %s", t->err);
  else if (t->has)
    snprintf(buf, len, "%s (%d rows, gpu %s, topology %s)", t->path,
             t->table.nrows, t->table.gpu, tuning_topology());
  else
    snprintf(buf, len, "none: %s%s", t->path[0] ? t->path : "(no path)",
             strncmp(t->path, "none", 4) == 0 ? "" : " absent; thresholds");
  return SYMHEAP_SUCCESS;
}

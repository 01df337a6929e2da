/* The one table of environment variables, and their validated readers. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "size.h"

static const symheap__cfg_var_t cfg_vars[] = {
    {"SYMHEAP_DEVICE", SYMHEAP_CFG_STRING, "auto", 0, 0, NULL,
     "device adaptor: auto (a GPU adaptor when one is usable, else host), "
     "host, or the name of a registered adaptor"},
    {"SYMHEAP_TIMEOUT_MS", SYMHEAP_CFG_INT, "30000", 1, 86400000, NULL,
     "upper bound in milliseconds on every wait for a peer (joining, "
     "exchanges, barriers); a peer silent for longer gives "
     "SYMHEAP_ERR_TIMEOUT"},
    {"SYMHEAP_DEBUG", SYMHEAP_CFG_CHOICE, "WARN", 0, 0, "NONE|WARN|INFO|TRACE",
     "log level; lines go to stderr, each with pid and rank"},
    {"SYMHEAP_DEBUG_FILE", SYMHEAP_CFG_STRING, NULL, 0, 0, NULL,
     "write the log to this file instead of stderr; %p becomes the pid. A "
     "regular file on storage, a terminal or /dev/null: a FIFO, socket, "
     "directory, other device or kernel interface (/proc, /sys) is refused"},
    {"SYMHEAP_DISABLE_MULTICAST", SYMHEAP_CFG_BOOL, "0", 0, 0, NULL,
     "1 refuses SYMHEAP_WINDOW_MULTICAST with SYMHEAP_ERR_UNSUPPORTED; no "
     "multicast object is ever created"},
    {"NCCL_NVLS_ENABLE", SYMHEAP_CFG_INT, NULL, 0, 2, NULL,
     "NCCL's switch, honoured too: 0 disables multicast as "
     "SYMHEAP_DISABLE_MULTICAST=1 does"},
    {"SYMHEAP_WINDOW_CACHE", SYMHEAP_CFG_INT, "8", 0, 4096, NULL,
     "flat mappings each rank keeps after deregistration, so registering the "
     "same symheap_mem_alloc memory again needs no driver call; 0 turns the "
     "cache off. A kept mapping of a peer's memory is dropped when this rank "
     "next registers, deregisters or frees after the peer frees it"},
    {"SYMHEAP_IPC_SOCKET", SYMHEAP_CFG_STRING, "abstract", 0, 0, NULL,
     "where the local bootstrap and descriptor exchange listen: 'abstract' "
     "(Linux abstract Unix sockets, per network namespace) or an absolute "
     "directory for filesystem sockets (crosses namespaces that share it), "
     "which must exist and be writable: one that is not is refused at "
     "symheap_get_unique_id and comm init"},
    {"SYMHEAP_BOOTSTRAP", SYMHEAP_CFG_CHOICE, "unix", 0, 0, "unix|tcp",
     "how symheap_get_unique_id's ranks meet: unix (rank 0's Unix socket, "
     "one host, SO_PEERCRED) or tcp (rank 0's TCP port on the interface "
     "SYMHEAP_SOCKET_IFNAME chooses, for ranks on several hosts; every "
     "connection proves the id's secret).  symheap-run --hosts sets tcp"},
    {"SYMHEAP_SOCKET_IFNAME", SYMHEAP_CFG_STRING, NULL, 0, 0, NULL,
     "the interface the TCP bootstrap's rank 0 listens on, as "
     "NCCL_SOCKET_IFNAME: comma-separated name prefixes, '^' first to "
     "exclude them, '=' first for exact names; unset: the first interface "
     "that is up with an address, loopback last. One that admits no "
     "interface up with an address is refused, listing this host's"},
    {"SYMHEAP_RUN_ROOT_REPORT", SYMHEAP_CFG_BOOL, "0", 0, 0, NULL,
     "set by symheap-run --hosts on rank 0 only: rank 0 picks its TCP "
     "bootstrap address when it joins and writes it to its stdout in one "
     "line that symheap-run takes out, to start the other ranks with it"},
    {"SYMHEAP_RANK", SYMHEAP_CFG_INT, NULL, 0, 1 << 20, NULL,
     "rank of this process, for symheap_comm_init_env (set by symheap-run)"},
    {"SYMHEAP_NRANKS", SYMHEAP_CFG_INT, NULL, 1, 1 << 20, NULL,
     "number of ranks, for symheap_comm_init_env (set by symheap-run)"},
    {"SYMHEAP_LOCAL_RANK", SYMHEAP_CFG_INT, NULL, 0, 1 << 20, NULL,
     "rank among the ranks of this host, set by symheap-run for the "
     "program's own use (picking a GPU before symheap_comm_init_env); "
     "symheap derives local ranks itself"},
    {"SYMHEAP_PLUGIN", SYMHEAP_CFG_STRING, NULL, 0, 0, NULL,
     "plugins to load, comma-separated: a path, or a name foo for "
     "libsymheap-plugin-foo.so; read once per process, at the first comm "
     "init. A plugin that cannot be loaded fails every comm init"},
    {"SYMHEAP_PLUGIN_PATH", SYMHEAP_CFG_STRING, NULL, 0, 0, NULL,
     "colon-separated directories searched for plugins named by a bare name, "
     "before the directory libsymheap was loaded from"},
    {"SYMHEAP_HOST_ID", SYMHEAP_CFG_STRING, NULL, 0, 0, NULL,
     "this rank's host identity (1 to 95 characters): ranks with the same one "
     "form a node-local team that maps each other's memory, and "
     "symheap_comm_split_local groups by it; unset: boot id, network "
     "namespace and host name (ranks in two network namespaces are two "
     "hosts: their abstract sockets do not meet).  For tests that pretend "
     "one machine is several"},
    {"SYMHEAP_NET", SYMHEAP_CFG_STRING, "auto", 0, 0, NULL,
     "auto, ibverbs, none, or a net adaptor's name. RDMA registration of "
     "windows: auto (with libibverbs and an RDMA device, when the comm spans "
     "more than one host), ibverbs (always; a comm init without a usable RDMA "
     "device fails), none. A net adaptor's name (e.g. ofi) opens it when the "
     "comm spans hosts: one-sided calls reach other hosts' ranks through it "
     "(docs/network-onesided.md)"},
    {"SYMHEAP_NET_PROGRESS", SYMHEAP_CFG_CHOICE, "auto", 0, 0,
     "auto|thread|none",
     "progress of the net adaptor besides the core's waits: thread (a thread "
     "per comm calls its progress), none, auto (a thread when the adaptor "
     "needs manual progress)"},
    {"SYMHEAP_DEVICE_PROXY", SYMHEAP_CFG_CHOICE, "auto", 0, 0, "auto|on|off",
     "the device host proxy, which lets kernels put and signal to other "
     "hosts' ranks (docs/device-api.md): on (the comm's pad is registered with "
     "the net adaptor at init, a thread starts at the first device view), "
     "off, auto (on where the device adaptor gives the CPU no access to "
     "window memory, i.e. GPUs)"},
    {"SYMHEAP_CCL", SYMHEAP_CFG_STRING, "auto", 0, 0, NULL,
     "how symheap_comm_init_env joins: local (symheap-run's SYMHEAP_RANK, "
     "SYMHEAP_NRANKS, SYMHEAP_UNIQUE_ID), mpi (MPI_COMM_WORLD through "
     "libsymheap-ccl-mpi.so), the name of a loaded plugin's ccl (one with "
     "open), or auto: local when SYMHEAP_UNIQUE_ID is set, else mpi when an "
     "MPI launcher's variables are (OMPI_COMM_WORLD_SIZE, PMI_SIZE, "
     "PMIX_RANK)"},
    {"SYMHEAP_WINDOW_PATH", SYMHEAP_CFG_CHOICE, "symheap", 0, 0,
     "symheap|nccl|ccl",
     "who maps windows: symheap (its own flat VA), nccl (NCCL's symmetric "
     "windows, through the nccl ccl adaptor, over an NCCL communicator the "
     "comm makes; cuda adaptor, one host), or ccl (the "
     "window_register of the ccl adaptor the comm was made on)"},
    {"SYMHEAP_UNIQUE_ID", SYMHEAP_CFG_STRING, NULL, 0, 0, NULL,
     "the job's unique id as 256 hex digits, for symheap_comm_init_env (set by "
     "symheap-run)"},
    {"SYMHEAP_HEAP", SYMHEAP_CFG_BOOL, "1", 0, 0, NULL,
     "1: symheap_malloc carves windows from the comm's symmetric heap "
     "(docs/heap.md); 0: every symheap_malloc is its own registration. Must "
     "be the same on every rank"},
    {"SYMHEAP_AGREE_SHM", SYMHEAP_CFG_BOOL, "1", 0, 0, NULL,
     "1: where every rank of a comm is on this host, the heap's agreements "
     "and the comm's barrier go through shared memory; 0: over the ccl (for "
     "tests and debugging; off on every rank if any rank sets 0)"},
    {"SYMHEAP_HEAP_RESERVE", SYMHEAP_CFG_SIZE, "64G", 1, 0, NULL,
     "address space per rank reserved for the heap (bytes, or with a K, M, G "
     "or T suffix); it costs address space only: memory is committed in "
     "chunks as allocations need it. Set, a reservation that fails fails "
     "symheap_malloc; unset, symheap_malloc then registers each allocation "
     "(with a warning)"},
    {"SYMHEAP_HEAP_CHUNK", SYMHEAP_CFG_SIZE, "64M", 1, 0, NULL,
     "bytes of memory per rank the heap commits (and symheap_heap_trim "
     "releases) at a time, rounded up to the device's granularity; at most "
     "SYMHEAP_HEAP_RESERVE, and where chunks are host memory (the host "
     "adaptor), at most the machine's physical memory"},
    {"SYMHEAP_HEAP_THRESHOLD", SYMHEAP_CFG_SIZE, "1G", 0, 0, NULL,
     "symheap_malloc of more bytes than this is its own registration instead "
     "of a heap allocation"},
};

const symheap__cfg_var_t *symheap__cfg_table(size_t *count) {
  *count = sizeof cfg_vars / sizeof cfg_vars[0];
  return cfg_vars;
}

/* Variables adaptors and plugins declare (param_define).  Entries are
 * only appended, each complete before the count that publishes it, so
 * readers need no lock; strings are copied and kept for the process's
 * life (a plugin is never unloaded once its declarations are taken). */
#define MAX_DECLARED 128
typedef struct {
  symheap__cfg_var_t var;
  char owner[32];
} declared_t;
static declared_t declared[MAX_DECLARED];
static int ndeclared;
static pthread_mutex_t declare_lock = PTHREAD_MUTEX_INITIALIZER;

int symheap__cfg_declared_count(void) {
  return __atomic_load_n(&ndeclared, __ATOMIC_ACQUIRE);
}

const symheap__cfg_var_t *symheap__cfg_declared(int i, const char **owner) {
  if (i < 0 || i >= symheap__cfg_declared_count())
    return NULL;
  if (owner)
    *owner = declared[i].owner;
  return &declared[i].var;
}

static const symheap__cfg_var_t *find(const char *name) {
  for (size_t i = 0; i < sizeof cfg_vars / sizeof cfg_vars[0]; i++)
    if (strcmp(cfg_vars[i].name, name) == 0)
      return &cfg_vars[i];
  int n = symheap__cfg_declared_count();
  for (int i = 0; i < n; i++)
    if (strcmp(declared[i].var.name, name) == 0)
      return &declared[i].var;
  return NULL;
}

const char *symheap__cfg_raw(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

static symheap_result_t lookup(const char *name, const symheap__cfg_var_t **var,
                               const char **value) {
  *var = find(name);
  if (!*var)
    return symheap__error(SYMHEAP_ERR_INTERNAL,
                          "configuration variable %s is not declared", name);
  *value = symheap__cfg_raw(name);
  if (!*value)
    *value = (*var)->def;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__cfg_string(const char *name, const char **value) {
  const symheap__cfg_var_t *var;
  return lookup(name, &var, value);
}

/* lookup, for a kind that has no meaning unset (an int, a size): its
 * value or its default, else an error naming it. */
static symheap_result_t lookup_set(const char *name,
                                   const symheap__cfg_var_t **var,
                                   const char **value) {
  symheap_result_t r = lookup(name, var, value);
  if (r == SYMHEAP_SUCCESS && !*value)
    r = symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s is not set", name);
  return r;
}

static symheap_result_t parse_int(const symheap__cfg_var_t *var, const char *s,
                                  long *out) {
  char *end;
  errno = 0;
  /* strtol alone would take leading blanks and a '+': the value must be
   * digits, with an optional '-', and nothing else. */
  int digits = (s[0] >= '0' && s[0] <= '9') ||
               (s[0] == '-' && s[1] >= '0' && s[1] <= '9');
  long v = digits ? strtol(s, &end, 10) : 0;
  if (!digits || errno || end == s || *end != '\0' || v < var->min ||
      v > var->max)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s='%s' is not valid: expected an integer from %ld "
                          "to %ld",
                          var->name, s, var->min, var->max);
  *out = v;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__cfg_int(const char *name, long *value) {
  const symheap__cfg_var_t *var;
  const char *s;
  symheap_result_t r = lookup_set(name, &var, &s);
  return r == SYMHEAP_SUCCESS ? parse_int(var, s, value) : r;
}

symheap_result_t symheap__cfg_bool(const char *name, int *value) {
  const symheap__cfg_var_t *var;
  const char *s;
  symheap_result_t r = lookup(name, &var, &s);
  if (r != SYMHEAP_SUCCESS)
    return r;
  if (s && strcmp(s, "0") == 0) {
    *value = 0;
  } else if (s && strcmp(s, "1") == 0) {
    *value = 1;
  } else {
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s='%s' is not valid: expected 0 or 1", name,
                          s ? s : "");
  }
  return SYMHEAP_SUCCESS;
}

static symheap_result_t parse_size(const symheap__cfg_var_t *var,
                                   const char *s, uint64_t *out) {
  int ok;
  uint64_t v = symheap__parse_size(s, &ok);
  if (!ok || v < (uint64_t)var->min)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s='%s' is not a size of at least %ld bytes (a "
                          "number of bytes, or with a K, M, G or T suffix)",
                          var->name, s, var->min);
  if (var->max > 0 && v > (uint64_t)var->max)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s='%s' is more than its maximum (%ld bytes)",
                          var->name, s, var->max);
  *out = v;
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__cfg_size(const char *name, uint64_t *value) {
  const symheap__cfg_var_t *var;
  const char *s;
  symheap_result_t r = lookup_set(name, &var, &s);
  return r == SYMHEAP_SUCCESS ? parse_size(var, s, value) : r;
}

static int choice_index(const char *choices, const char *s) {
  int idx = 0;
  size_t n = strlen(s);
  for (const char *p = choices; *p; idx++) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && strncasecmp(p, s, n) == 0)
      return idx;
    if (!bar)
      break;
    p = bar + 1;
  }
  return -1;
}

symheap_result_t symheap__cfg_choice(const char *name, int *index) {
  const symheap__cfg_var_t *var;
  const char *s;
  symheap_result_t r = lookup(name, &var, &s);
  if (r != SYMHEAP_SUCCESS)
    return r;
  int i = s ? choice_index(var->choices, s) : -1;
  if (i < 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s='%s' is not valid: expected one of %s", name,
                          s ? s : "", var->choices);
  *index = i;
  return SYMHEAP_SUCCESS;
}

static symheap_result_t validate_one(const symheap__cfg_var_t *var) {
  long l;
  int b;
  uint64_t u;
  if (!symheap__cfg_raw(var->name))
    return SYMHEAP_SUCCESS;
  switch (var->kind) {
  case SYMHEAP_CFG_INT:
    return symheap__cfg_int(var->name, &l);
  case SYMHEAP_CFG_BOOL:
    return symheap__cfg_bool(var->name, &b);
  case SYMHEAP_CFG_CHOICE:
    return symheap__cfg_choice(var->name, &b);
  case SYMHEAP_CFG_SIZE:
    return symheap__cfg_size(var->name, &u);
  case SYMHEAP_CFG_STRING:
    break;
  }
  return SYMHEAP_SUCCESS;
}

symheap_result_t symheap__cfg_validate_all(void) {
  for (size_t i = 0; i < sizeof cfg_vars / sizeof cfg_vars[0]; i++) {
    symheap_result_t r = validate_one(&cfg_vars[i]);
    if (r != SYMHEAP_SUCCESS)
      return r;
  }
  int n = symheap__cfg_declared_count();
  for (int i = 0; i < n; i++) {
    symheap_result_t r = validate_one(&declared[i].var);
    if (r != SYMHEAP_SUCCESS)
      return symheap__error_context(r, "variable of adaptor '%s'",
                                    declared[i].owner);
  }
  return SYMHEAP_SUCCESS;
}

/* A declared name: upper-case letters, digits and '_', not leading with a
 * digit, as environment variables are written. */
static int name_ok(const char *n) {
  size_t len = n ? strlen(n) : 0;
  if (len == 0 || len > 63 || (n[0] >= '0' && n[0] <= '9'))
    return 0;
  for (size_t i = 0; i < len; i++)
    if (!((n[i] >= 'A' && n[i] <= 'Z') || (n[i] >= '0' && n[i] <= '9') ||
          n[i] == '_'))
      return 0;
  return 1;
}

/* Why the declaration cannot be taken, or NULL. */
static const char *declaration_fault(const symheap_param_t *p) {
  if (!SYMHEAP_SIZE_COVERS(p->struct_size, symheap_param_t, help))
    return "its struct_size does not cover the members of symheap_param_t";
  if (!name_ok(p->name))
    return "its name is not 1 to 63 upper-case letters, digits and '_'";
  if (p->type > SYMHEAP_PARAM_CHOICE)
    return "its type is not a symheap_param_type_t";
  if (!p->help || !p->help[0])
    return "it has no help text";
  if (p->type == SYMHEAP_PARAM_INT && p->min > p->max)
    return "its min is above its max";
  if (p->type == SYMHEAP_PARAM_CHOICE && (!p->choices || !p->choices[0]))
    return "it is a choice with no choices";
  return NULL;
}

static int same_declaration(const symheap__cfg_var_t *v,
                            const symheap_param_t *p) {
  return (int)v->kind == (int)p->type && v->min == p->min && v->max == p->max &&
         strcmp(v->choices ? v->choices : "", p->choices ? p->choices : "") ==
             0;
}

/* The default must be a value the variable accepts. */
static symheap_result_t check_default(const symheap__cfg_var_t *v) {
  long l;
  if (!v->def)
    return SYMHEAP_SUCCESS;
  uint64_t u;
  if (v->kind == SYMHEAP_CFG_INT)
    return parse_int(v, v->def, &l);
  if (v->kind == SYMHEAP_CFG_SIZE)
    return parse_size(v, v->def, &u);
  if (v->kind == SYMHEAP_CFG_BOOL && strcmp(v->def, "0") != 0 &&
      strcmp(v->def, "1") != 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "its default '%s' is not 0 or 1", v->def);
  if (v->kind == SYMHEAP_CFG_CHOICE && choice_index(v->choices, v->def) < 0)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "its default '%s' is not one of %s", v->def,
                          v->choices);
  return SYMHEAP_SUCCESS;
}

static char *dup_or_null(const char *s, int *fail) {
  char *d = s ? strdup(s) : NULL;
  if (s && !d)
    *fail = 1;
  return d;
}

symheap_result_t symheap__cfg_declare(const char *owner,
                                      const symheap_param_t *p) {
  const char *fault = !owner || !owner[0] || strlen(owner) >= 32
                          ? "its owner is not a name of 1 to 31 characters"
                      : !p ? "it is NULL"
                           : declaration_fault(p);
  if (fault)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "param_define of %s by %s refused: %s",
                          p && p->name ? p->name : "(no name)",
                          owner ? owner : "(no owner)", fault);
  pthread_mutex_lock(&declare_lock);
  symheap_result_t r = SYMHEAP_SUCCESS;
  const symheap__cfg_var_t *old = find(p->name);
  int n = ndeclared, fail = 0;
  if (old) {
    if (!same_declaration(old, p))
      r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                         "param_define of %s by %s refused: the variable is "
                         "declared already with another type or range",
                         p->name, owner);
  } else if (n == MAX_DECLARED) {
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY,
                       "param_define of %s by %s refused: %d variables are "
                       "declared already",
                       p->name, owner, MAX_DECLARED);
  } else {
    declared_t *d = &declared[n];
    memset(d, 0, sizeof *d);
    d->var.kind = (symheap__cfg_kind_t)p->type;
    d->var.min = p->min;
    d->var.max = p->max;
    d->var.name = dup_or_null(p->name, &fail);
    d->var.def = dup_or_null(p->def, &fail);
    d->var.choices = dup_or_null(p->choices, &fail);
    d->var.help = dup_or_null(p->help, &fail);
    snprintf(d->owner, sizeof d->owner, "%s", owner);
    if (fail)
      r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "param_define: no memory");
    else if ((r = check_default(&d->var)) != SYMHEAP_SUCCESS)
      r = symheap__error_context(r, "param_define of %s by %s refused", p->name,
                                 owner);
    if (r != SYMHEAP_SUCCESS) {
      free((char *)d->var.name);
      free((char *)d->var.def);
      free((char *)d->var.choices);
      free((char *)d->var.help);
    } else {
      __atomic_store_n(&ndeclared, n + 1, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&declare_lock);
  return r;
}

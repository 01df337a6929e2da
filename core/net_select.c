/* Which net adaptor SYMHEAP_NET names: the process's registered adaptors
 * (symheap_register_net_adaptor), beside the RDMA registration switch's own
 * words (auto, ibverbs, none: rdma.c).  Kept small on purpose: the adaptor
 * admission of plugins and built-ins lives with them (net_registry.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "net.h"

#define NET_MAX 16

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static symheap_net_ops g_nets[NET_MAX];
static int g_count;

/* The members a net adaptor cannot do without (checked in order, so the
 * error names the first one missing). */
static const char *missing_op(const symheap_net_ops *o) {
#define NEED(m)                                                                \
  if (o->struct_size < offsetof(symheap_net_ops, m) + sizeof o->m || !o->m)    \
    return #m;
  NEED(available) NEED(providers) NEED(open) NEED(close) NEED(query)
  NEED(connect) NEED(mem_register) NEED(mem_deregister) NEED(rkey_import)
  NEED(rkey_release) NEED(put) NEED(get) NEED(fence) NEED(quiet)
  NEED(progress)
#undef NEED
  return NULL;
}

SYMHEAP__EXPORT symheap_result_t
symheap_register_net_adaptor(const symheap_net_ops *ops) {
  const char *fn = "symheap_register_net_adaptor";
  if (!ops || !ops->name || !ops->name[0])
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "%s: %s", fn,
                          !ops ? "ops is NULL" : "the adaptor has no name");
  if (ops->abi_version != SYMHEAP_ADAPTOR_ABI_VERSION)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: net adaptor '%s' was built for adaptor ABI %u, "
                          "this library speaks %u",
                          fn, ops->name, ops->abi_version,
                          SYMHEAP_ADAPTOR_ABI_VERSION);
  if (ops->struct_size < offsetof(symheap_net_ops, name) + sizeof ops->name)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: net adaptor '%s': struct_size %u is too small",
                          fn, ops->name, ops->struct_size);
  const char *miss = missing_op(ops);
  if (miss)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: net adaptor '%s' lacks the required op %s", fn,
                          ops->name, miss);
  if (!strcmp(ops->name, "auto") || !strcmp(ops->name, "ibverbs") ||
      !strcmp(ops->name, "none"))
    return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                          "%s: '%s' is a reserved SYMHEAP_NET word", fn,
                          ops->name);
  symheap_result_t r = SYMHEAP_SUCCESS;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_count && r == SYMHEAP_SUCCESS; i++)
    if (!strcmp(g_nets[i].name, ops->name))
      r = symheap__error(SYMHEAP_ERR_INVALID_ARG,
                         "%s: a net adaptor called '%s' is registered already",
                         fn, ops->name);
  if (r == SYMHEAP_SUCCESS && g_count == NET_MAX)
    r = symheap__error(SYMHEAP_ERR_NO_MEMORY, "%s: %d net adaptors at most",
                       fn, NET_MAX);
  if (r == SYMHEAP_SUCCESS) {
    /* Normalised copy: members the adaptor's table does not reach read as
     * NULL, so the core tests optional ops once, here and at their use. */
    symheap_net_ops *d = &g_nets[g_count];
    memset(d, 0, sizeof *d);
    memcpy(d, ops,
           ops->struct_size < sizeof *d ? ops->struct_size : sizeof *d);
    d->struct_size = sizeof *d;
    g_count++;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

const symheap_net_ops *symheap__net_find(const char *name) {
  const symheap_net_ops *found = NULL;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_count && !found; i++)
    if (!strcmp(g_nets[i].name, name))
      found = &g_nets[i];
  pthread_mutex_unlock(&g_lock);
  return found; /* entries are never removed or moved */
}

symheap_result_t symheap__net_mode(int *mode, const symheap_net_ops **ops) {
  const char *v = NULL;
  symheap_result_t r = symheap__cfg_string("SYMHEAP_NET", &v);
  *ops = NULL;
  *mode = SYMHEAP__NET_AUTO;
  if (r != SYMHEAP_SUCCESS || !v || !strcmp(v, "auto"))
    return r;
  if (!strcmp(v, "ibverbs") || !strcmp(v, "none")) {
    *mode = !strcmp(v, "none") ? SYMHEAP__NET_NONE : SYMHEAP__NET_IBVERBS;
    return SYMHEAP_SUCCESS;
  }
  *ops = symheap__net_find(v);
  if (*ops) {
    *mode = SYMHEAP__NET_ADAPTOR;
    return SYMHEAP_SUCCESS;
  }
  char names[256] = "";
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_count; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), ", %s",
             g_nets[i].name);
  pthread_mutex_unlock(&g_lock);
  return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                        "SYMHEAP_NET='%s': not a registered net adaptor "
                        "(accepted: auto, ibverbs, none%s)",
                        v, names);
}

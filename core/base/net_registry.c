/* The registry of net adaptors: normalisation, the built-ins, registration
 * and lookup by name (net_registry.h). */
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include "net_registry.h"
#include "internal.h"

#define MAX_NET_ADAPTORS 8

static pthread_mutex_t net_lock = PTHREAD_MUTEX_INITIALIZER;
static symheap__net_table_t nets[MAX_NET_ADAPTORS];
static int nnets;

static symheap_result_t stub_atomic(void *ctx, int peer, symheap_net_amo_t op,
                                    size_t size, void *rkey, uint64_t offset,
                                    const void *operand, const void *compare,
                                    void *fetch) {
  (void)ctx, (void)peer, (void)op, (void)size, (void)rkey, (void)offset;
  (void)operand, (void)compare, (void)fetch;
  return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                        "the net adaptor does not implement atomics");
}

symheap_result_t symheap__net_normalise(const symheap_net_ops *in,
                                        symheap__net_table_t *out) {
  if (!in)
    return symheap__error(SYMHEAP_ERR_INVALID_ARG, "net adaptor table is NULL");
  const char *name = in->name ? in->name : "(unnamed)";
  if (in->abi_version != SYMHEAP_ADAPTOR_ABI_VERSION)
    return symheap__error(SYMHEAP_ERR_PLUGIN,
                          "net adaptor '%s' has ABI version %u; this library "
                          "speaks %u",
                          name, in->abi_version, SYMHEAP_ADAPTOR_ABI_VERSION);
  if (!SYMHEAP_HAS_MEMBER(in, symheap_net_ops, progress))
    return symheap__error(SYMHEAP_ERR_PLUGIN,
                          "net adaptor '%s' declares struct_size %u, smaller "
                          "than the %zu bytes of v1",
                          name, in->struct_size,
                          offsetof(symheap_net_ops, progress) +
                              sizeof(in->progress));
  if (!in->name || !in->name[0] || strlen(in->name) >= 32)
    return symheap__error(SYMHEAP_ERR_PLUGIN,
                          "net adaptor has no name or a name of 32 "
                          "characters or more");
  memset(out, 0, sizeof *out);
  size_t n = in->struct_size < sizeof(symheap_net_ops)
                 ? in->struct_size
                 : sizeof(symheap_net_ops);
  memcpy(&out->ops, in, n);
  out->ops.struct_size = sizeof(symheap_net_ops);
  const char *missing = !in->available        ? "available"
                        : !in->providers      ? "providers"
                        : !in->open           ? "open"
                        : !in->close          ? "close"
                        : !in->query          ? "query"
                        : !in->connect        ? "connect"
                        : !in->mem_register   ? "mem_register"
                        : !in->mem_deregister ? "mem_deregister"
                        : !in->rkey_import    ? "rkey_import"
                        : !in->rkey_release   ? "rkey_release"
                        : !in->put            ? "put"
                        : !in->get            ? "get"
                        : !in->fence          ? "fence"
                        : !in->quiet          ? "quiet"
                        : !in->progress       ? "progress"
                                              : NULL;
  if (missing)
    return symheap__error(SYMHEAP_ERR_PLUGIN,
                          "net adaptor '%s' lacks the required operation "
                          "'%s'",
                          name, missing);
  out->has_atomic = in->atomic != NULL;
  out->has_put_signal = in->put_signal != NULL;
  if (!out->ops.atomic)
    out->ops.atomic = stub_atomic;
  return SYMHEAP_SUCCESS;
}

/* Caller holds net_lock. */
static symheap_result_t add_locked(const symheap_net_ops *ops) {
  symheap__net_table_t t;
  symheap_result_t r = symheap__net_normalise(ops, &t);
  if (r != SYMHEAP_SUCCESS)
    return r;
  for (int i = 0; i < nnets; i++)
    if (strcmp(nets[i].ops.name, t.ops.name) == 0)
      return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                            "a net adaptor named '%s' is already registered",
                            t.ops.name);
  if (nnets == MAX_NET_ADAPTORS)
    return symheap__error(SYMHEAP_ERR_NO_MEMORY,
                          "too many net adaptors (at most %d)",
                          MAX_NET_ADAPTORS);
  nets[nnets++] = t;
  return SYMHEAP_SUCCESS;
}

/* Built-in net adaptors are plugins linked in (adaptors/net/<name>/ ends
 * with SYMHEAP_PLUGIN_ENTRY): the build lists them with the device adaptors
 * and plugin.c, a file above this one, admits them and registers their
 * tables here.  So a caller loads the built-ins (symheap__builtins_load)
 * before it lists or looks up; this file calls nothing above it. */

symheap_result_t symheap__net_add(const symheap_net_ops *ops) {
  pthread_mutex_lock(&net_lock);
  symheap_result_t r = add_locked(ops);
  pthread_mutex_unlock(&net_lock);
  return r;
}

int symheap__net_list(symheap__net_table_t *out, int max) {
  pthread_mutex_lock(&net_lock);
  int n = nnets;
  for (int i = 0; out && i < n && i < max; i++)
    out[i] = nets[i];
  pthread_mutex_unlock(&net_lock);
  return n;
}

symheap_result_t symheap__net_lookup(const char *name,
                                     symheap__net_table_t *out) {
  symheap__net_table_t all[MAX_NET_ADAPTORS];
  int n = symheap__net_list(all, MAX_NET_ADAPTORS);
  int any = !name || !name[0] || strcmp(name, "auto") == 0;
  char known[256] = "", reasons[768] = "";
  size_t k = 0, o = 0;
  for (int i = 0; i < n; i++) {
    if (!any && strcmp(all[i].ops.name, name) != 0) {
      if (k < sizeof known)
        k += (size_t)snprintf(known + k, sizeof known - k, "%s%s",
                              k ? ", " : "", all[i].ops.name);
      continue;
    }
    char why[256] = "not available";
    if (all[i].ops.available(&symheap__host_services, why, sizeof why)) {
      *out = all[i];
      return SYMHEAP_SUCCESS;
    }
    if (!any)
      return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                            "net adaptor '%s' cannot run here: %s", name, why);
    if (o < sizeof reasons)
      o += (size_t)snprintf(reasons + o, sizeof reasons - o, "; %s: %s",
                            all[i].ops.name, why);
  }
  if (any)
    return symheap__error(SYMHEAP_ERR_UNSUPPORTED,
                          "no net adaptor can run here%s",
                          n ? reasons : " (none is registered)");
  return symheap__error(SYMHEAP_ERR_INVALID_ARG,
                        "'%s' is not a known net adaptor; known: %s", name,
                        known[0] ? known : "none");
}

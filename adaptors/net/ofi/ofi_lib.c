/* Loading libfabric at run time, listing its providers, and choosing the
 * fi_info a context opens. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ofi.h"

ofi_api_t ofi_api;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_why[512];
static int loaded;

static void load(void) {
  const char *lib = NULL;
  int named = ofi_svc->param_get_string("SYMHEAP_OFI_LIBRARY", &lib) ==
                  SYMHEAP_SUCCESS &&
              lib;
  if (!named)
    lib = OFI_LIBRARY_DEFAULT;
  /* The library stays loaded: providers start threads and keep state. */
  void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    /* A library the user named leads with that name: "not installed"
     * would mislead when the package is there and the path is wrong. */
    if (named)
      snprintf(load_why, sizeof load_why,
               "SYMHEAP_OFI_LIBRARY=%s cannot be loaded: %s (libfabric itself "
               "is Debian package libfabric1)",
               lib, dlerror());
    else
      snprintf(load_why, sizeof load_why,
               "libfabric is not installed (Debian package libfabric1): "
               "dlopen(%s): %s",
               lib, dlerror());
    return;
  }
  /* FABRIC_1.0 and later symbol versions: take the default one. */
  ofi_api.getinfo = (int (*)(uint32_t, const char *, const char *, uint64_t,
                             const struct fi_info *,
                             struct fi_info **))dlsym(dl, "fi_getinfo");
  ofi_api.freeinfo = (void (*)(struct fi_info *))dlsym(dl, "fi_freeinfo");
  ofi_api.dupinfo =
      (struct fi_info * (*)(const struct fi_info *)) dlsym(dl, "fi_dupinfo");
  ofi_api.fabric = (int (*)(struct fi_fabric_attr *, struct fid_fabric **,
                            void *))dlsym(dl, "fi_fabric");
  ofi_api.strerror = (const char *(*)(int))dlsym(dl, "fi_strerror");
  if (!ofi_api.getinfo || !ofi_api.freeinfo || !ofi_api.dupinfo ||
      !ofi_api.fabric || !ofi_api.strerror) {
    snprintf(load_why, sizeof load_why,
             "%s lacks fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric or "
             "fi_strerror: not libfabric 1.x (Debian package libfabric1)",
             lib);
    dlclose(dl);
    return;
  }
  loaded = 1;
}

int ofi_load(char *why, size_t len) {
  pthread_once(&load_once, load);
  if (!loaded && why && len)
    snprintf(why, len, "%s", load_why);
  return loaded;
}

symheap_result_t ofi_fail(symheap_result_t r, int ret, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int e = ret < 0 ? -ret : ret;
  return ofi_svc->error(r, "%s: %s (%d)", what,
                        ofi_api.strerror ? ofi_api.strerror(e) : "?", ret);
}

/* What every query asks: a reliable unconnected endpoint with RMA (and
 * whatever `caps` adds), the memory-registration modes this adaptor can
 * handle, and no context mode (operations carry no fi_context). */
static struct fi_info *hints_for(const char *provider, uint64_t caps) {
  struct fi_info *h = ofi_api.dupinfo(NULL);
  if (!h)
    return NULL;
  h->caps =
      FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | caps;
  h->mode = 0;
  h->ep_attr->type = FI_EP_RDM;
  h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
                            FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  if (caps & FI_HMEM)
    h->domain_attr->mr_mode |= FI_MR_HMEM;
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  if (provider && !(h->fabric_attr->prov_name = strdup(provider))) {
    ofi_api.freeinfo(h);
    return NULL;
  }
  return h;
}

static int seen(const char *buf, const char *name) {
  size_t n = strlen(name);
  for (const char *p = buf; (p = strstr(p, name)) != NULL; p += n)
    if ((p == buf || p[-1] == '\n') && p[n] == '\n')
      return 1;
  return 0;
}

symheap_result_t ofi_providers(const symheap_host_services_t *svc, char *buf,
                               size_t len) {
  if (!len)
    return svc->error(SYMHEAP_ERR_INVALID_ARG, "providers: no room");
  buf[0] = '\0';
  char why[512];
  if (!ofi_load(why, sizeof why))
    return svc->error(SYMHEAP_ERR_UNSUPPORTED, "%s", why);
  struct fi_info *h = hints_for(NULL, 0), *list = NULL;
  if (!h)
    return svc->error(SYMHEAP_ERR_NO_MEMORY, "providers: no memory");
  int ret = ofi_api.getinfo(OFI_API_VERSION, NULL, NULL, 0, h, &list);
  ofi_api.freeinfo(h);
  if (ret == -FI_ENODATA)
    return SYMHEAP_SUCCESS; /* none: an empty list */
  if (ret)
    return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_getinfo");
  size_t o = 0;
  for (struct fi_info *i = list; i; i = i->next) {
    const char *name = i->fabric_attr->prov_name;
    char line[80];
    snprintf(line, sizeof line, "%s\n", name);
    if (!name || seen(buf, name) || o + strlen(line) >= len)
      continue;
    memcpy(buf + o, line, strlen(line) + 1);
    o += strlen(line);
  }
  ofi_api.freeinfo(list);
  return SYMHEAP_SUCCESS;
}

/* The first entry of `list` that the user's domain choice admits; when
 * `skip_shm`, one other than shm if there is one (shm reaches this host
 * only; without a provider named the net adaptor is for other hosts). */
static struct fi_info *pick(struct fi_info *list, const char *domain,
                            int skip_shm) {
  struct fi_info *first = NULL;
  for (struct fi_info *i = list; i; i = i->next) {
    if (domain && strcmp(i->domain_attr->name, domain) != 0 &&
        strcmp(i->fabric_attr->name, domain) != 0)
      continue;
    if (!first)
      first = i;
    if (!skip_shm || strcmp(i->fabric_attr->prov_name, "shm") != 0)
      return i;
  }
  return first;
}

/* The providers as one line, for errors. */
static void provider_line(char *out, size_t len) {
  char list[1024];
  if (ofi_providers(ofi_svc, list, sizeof list) != SYMHEAP_SUCCESS)
    snprintf(list, sizeof list, "(cannot list: %s)\n",
             ofi_svc->error_message());
  for (char *p = list; *p; p++)
    if (*p == '\n' && p[1])
      *p = ',';
  size_t n = strlen(list);
  if (n && list[n - 1] == '\n')
    list[n - 1] = '\0';
  snprintf(out, len, "%s", list[0] ? list : "none");
}

symheap_result_t ofi_choose(const char *provider, struct fi_info **out) {
  const char *domain = NULL;
  if (ofi_svc->param_get_string("SYMHEAP_NET_DOMAIN", &domain) !=
      SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  int hmem = 0;
  if (ofi_svc->param_get_bool("SYMHEAP_NET_HMEM", &hmem) != SYMHEAP_SUCCESS)
    return SYMHEAP_ERR_INVALID_ARG;
  /* From the most to the least we can use: a provider without FI_FENCE
   * gets fence = quiet, one without atomics no SYMHEAP_NET_CAP_ATOMIC. */
  const uint64_t tries[] = {FI_HMEM | FI_ATOMIC | FI_FENCE, FI_HMEM | FI_ATOMIC,
                            FI_ATOMIC | FI_FENCE, FI_ATOMIC, 0};
  int any = 0;
  for (size_t t = hmem ? 0 : 2; t < sizeof tries / sizeof *tries; t++) {
    struct fi_info *h = hints_for(provider, tries[t]), *list = NULL;
    if (!h)
      return ofi_svc->error(SYMHEAP_ERR_NO_MEMORY, "fi_getinfo: no memory");
    int ret = ofi_api.getinfo(OFI_API_VERSION, NULL, NULL, 0, h, &list);
    ofi_api.freeinfo(h);
    if (ret == -FI_ENODATA)
      continue;
    if (ret)
      return ofi_fail(SYMHEAP_ERR_DEVICE, ret, "fi_getinfo(%s)",
                      provider ? provider : "any provider");
    any = 1;
    struct fi_info *i = pick(list, domain, provider == NULL);
    *out = i ? ofi_api.dupinfo(i) : NULL;
    ofi_api.freeinfo(list);
    if (i && !*out)
      return ofi_svc->error(SYMHEAP_ERR_NO_MEMORY, "fi_dupinfo: no memory");
    if (*out)
      return SYMHEAP_SUCCESS;
  }
  char known[1024];
  provider_line(known, sizeof known);
  if (any)
    return ofi_svc->error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_NET_DOMAIN='%s' is not a domain or fabric "
                          "of libfabric provider '%s' here (fi_info -p '%s' "
                          "lists them); providers: %s",
                          domain, provider ? provider : "(any)",
                          provider ? provider : "", known);
  if (provider)
    return ofi_svc->error(SYMHEAP_ERR_INVALID_ARG,
                          "SYMHEAP_NET_PROVIDER='%s': no such libfabric "
                          "provider offers a reliable endpoint (FI_EP_RDM) "
                          "with RMA here; available: %s",
                          provider, known);
  return ofi_svc->error(SYMHEAP_ERR_UNSUPPORTED,
                        "no libfabric provider offers a reliable endpoint "
                        "(FI_EP_RDM) with RMA here");
}

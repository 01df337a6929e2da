/* Plugins: loading what SYMHEAP_PLUGIN names, checking it, and composing
 * hook overrides over a comm's device adaptor.
 *
 * Plugins are read once per process, at the first comm init (or by
 * symheap-info).  A plugin the user named is never skipped: if one cannot be
 * loaded, every comm init of the process fails with SYMHEAP_ERR_PLUGIN and
 * the reason, naming the file. */
#include <pthread.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config.h"
#include "dl.h"
#include "net_registry.h"
#include "plugin.h"

#define MAX_PLUGINS 16

typedef struct {
  symheap_plugin_t p;  /* the members its struct_size covers; the rest NULL */
  symheap_ccl_ops ccl; /* likewise, of p.ccl when there is one */
  char path[512];
} loaded_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static loaded_t plugins[MAX_PLUGINS];
static int nplugins, tried;
static symheap_result_t load_result = SYMHEAP_SUCCESS;
static char load_error[1024];

#define COVERS SYMHEAP_SIZE_COVERS

static void run_finis(void) {
  for (int i = nplugins - 1; i >= 0; i--)
    plugins[i].p.fini();
}

/* The directory libsymheap was loaded from: installed plugins live there. */
static void library_dir(char *out, size_t len) {
  symheap__dl_file_of((const void *)&symheap__plugins_load, out, len);
  if (out[0]) {
    char *slash = strrchr(out, '/');
    if (slash)
      *slash = '\0';
    else
      out[0] = '\0';
  }
}

symheap_result_t symheap__find_library(const char *file, char *path,
                                       size_t len) {
  char dirs[2048] = "", libdir[512];
  const char *sp = symheap__cfg_raw("SYMHEAP_PLUGIN_PATH");
  library_dir(libdir, sizeof libdir);
  /* Linked statically, "the library" is the program: its ../lib then. */
  snprintf(dirs, sizeof dirs, "%s%s%s%s%s/../lib", sp ? sp : "",
           sp && libdir[0] ? ":" : "", libdir, libdir[0] ? ":" : "", libdir);
  /* Every directory looked in, as the user would find it (bin/../lib is
   * named as the lib directory it is, not as bin/). */
  char looked[1024] = "";
  size_t at = 0;
  for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d;
       d = strtok_r(NULL, ":", &save)) {
    snprintf(path, len, "%s/%s", d, file);
    if (access(path, R_OK) == 0)
      return SYMHEAP_SUCCESS;
    char real[PATH_MAX];
    const char *shown = d, *up = strstr(d, "/../");
    if (realpath(d, real))
      shown = real;
    else if (up && up > d) { /* gone: name it without the "..": x/bin/../lib */
      const char *cut = up;
      while (cut > d && cut[-1] != '/')
        cut--;
      snprintf(real, sizeof real, "%.*s%s", (int)(cut - d), d, up + 4);
      shown = real;
    }
    if (at < sizeof looked)
      at += (size_t)snprintf(looked + at, sizeof looked - at, "%s%s",
                             at ? ", " : "", shown);
  }
  return symheap__error(SYMHEAP_ERR_PLUGIN,
                        "no %s in %s (SYMHEAP_PLUGIN_PATH %s, then the "
                        "library's own directory and its ../lib)",
                        file, looked, sp ? "first" : "unset");
}

static symheap_result_t find(const char *name, char *path, size_t len) {
  if (strchr(name, '/')) {
    snprintf(path, len, "%s", name);
    return SYMHEAP_SUCCESS;
  }
  char file[256];
  snprintf(file, sizeof file, "libsymheap-plugin-%s.so", name);
  symheap_result_t r = symheap__find_library(file, path, len);
  return r == SYMHEAP_SUCCESS ? r
                              : symheap__error_context(r, "plugin '%s'", name);
}

static symheap_result_t check_ccl(const symheap_ccl_ops *c, const char *path) {
  if (c->abi_version != SYMHEAP_ADAPTOR_ABI_VERSION ||
      !COVERS(c->struct_size, symheap_ccl_ops, allgather) || !c->name ||
      !c->rank || !c->size || !c->allgather)
    return symheap__error(SYMHEAP_ERR_PLUGIN,
                          "plugin %s: its ccl adaptor has ABI %u, struct "
                          "size %u, or lacks a name, rank, size or allgather",
                          path, c->abi_version, c->struct_size);
  return SYMHEAP_SUCCESS;
}

/* Why a plugin table cannot be taken, or NULL. */
static const char *table_fault(const symheap_plugin_t *in, char *buf,
                               size_t len) {
  if (in->abi_major != SYMHEAP_PLUGIN_ABI_MAJOR) {
    snprintf(buf, len, "it speaks plugin ABI %u.%u; this library speaks %d.x",
             in->abi_major, in->abi_minor, SYMHEAP_PLUGIN_ABI_MAJOR);
    return buf;
  }
  if (!COVERS(in->struct_size, symheap_plugin_t, hooks)) {
    snprintf(buf, len, "its struct_size %u is smaller than v1's %zu",
             in->struct_size, sizeof(symheap_plugin_t));
    return buf;
  }
  if (!in->name || !in->name[0])
    return "it has no name";
  if (!in->init || !in->fini)
    return "it lacks the required init or fini";
  /* net: appended in plugin ABI minor 1, read only where covered. */
  const symheap_net_ops *net =
      COVERS(in->struct_size, symheap_plugin_t, net) ? in->net : NULL;
  if (!in->device && !in->ccl && !in->hooks && !net)
    return "it provides nothing (no device adaptor, ccl, hooks or net "
           "adaptor)";
  if (in->hooks &&
      (!COVERS(in->hooks->struct_size, symheap_device_hooks, target) ||
       !in->hooks->target))
    return "its hooks have no target";
  return NULL;
}

symheap_result_t symheap__plugin_admit(const symheap_plugin_t *in,
                                       const char *origin) {
  char buf[256];
  const char *why = table_fault(in, buf, sizeof buf);
  if (why)
    return symheap__error(SYMHEAP_ERR_PLUGIN, "plugin %s: refused: %s", origin,
                          why);
  symheap_result_t r;
  if (in->ccl && (r = check_ccl(in->ccl, origin)) != SYMHEAP_SUCCESS)
    return r;
  r = in->init(&symheap__host_services);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error_context(SYMHEAP_ERR_PLUGIN, "plugin %s: init failed",
                                  origin);
  return SYMHEAP_SUCCESS;
}

/* Caller holds the lock. */
static symheap_result_t load_one(const char *name) {
  char path[512];
  symheap_result_t r = find(name, path, sizeof path);
  if (r != SYMHEAP_SUCCESS)
    return r;
  char err[512];
  void *dl = symheap__dl_open(path, 0, err, sizeof err);
  if (!dl)
    return symheap__error(SYMHEAP_ERR_PLUGIN, "plugin %s: cannot load: %s",
                          path, err);
  const symheap_plugin_t *in = symheap__dl_sym(dl, SYMHEAP_PLUGIN_SYMBOL);
  char buf[256];
  const char *why = !in ? "it does not export " SYMHEAP_PLUGIN_SYMBOL
                        : table_fault(in, buf, sizeof buf);
  for (int i = 0; !why && i < nplugins; i++)
    if (strcmp(plugins[i].p.name, in->name) == 0)
      why = "a plugin of that name is loaded already";
  if (!why && nplugins == MAX_PLUGINS)
    why = "too many plugins";
  if (why) {
    symheap__dl_close(dl);
    return symheap__error(SYMHEAP_ERR_PLUGIN, "plugin %s: refused: %s", path,
                          why);
  }
  if ((r = symheap__plugin_admit(in, path)) != SYMHEAP_SUCCESS) {
    symheap__dl_close(dl);
    return r;
  }
  if (in->device && (r = symheap__device_add(in->device)) != SYMHEAP_SUCCESS) {
    in->fini();
    r = symheap__error_context(
        SYMHEAP_ERR_PLUGIN, "plugin %s: its device adaptor is refused", path);
    /* Registered tables are copied, so nothing of the library refers to the
     * object any more; it stays mapped only for a table that was taken. */
    return r;
  }
  if (COVERS(in->struct_size, symheap_plugin_t, net) && in->net &&
      (r = symheap__net_add(in->net)) != SYMHEAP_SUCCESS) {
    in->fini();
    return symheap__error_context(
        SYMHEAP_ERR_PLUGIN, "plugin %s: its net adaptor is refused", path);
  }
  loaded_t *l = &plugins[nplugins++];
  memset(l, 0, sizeof *l);
  memcpy(&l->p, in,
         in->struct_size < sizeof l->p ? in->struct_size : sizeof l->p);
  if (l->p.ccl)
    memcpy(&l->ccl, l->p.ccl,
           l->p.ccl->struct_size < sizeof l->ccl ? l->p.ccl->struct_size
                                                 : sizeof l->ccl);
  snprintf(l->path, sizeof l->path, "%s", path);
  SYMHEAP_INFO("loaded plugin '%s' from %s", l->p.name, path);
  return SYMHEAP_SUCCESS;
}

/* Built-in adaptors are plugins that happen to be linked in: the build
 * lists them (symheap__builtin_plugins, generated from adaptors/), in the
 * order `auto` prefers device adaptors: GPU adaptors first, host last
 * (always available: the fallback).  They come in through the same checks
 * and init as a loaded plugin.  Built-in net adaptors are listed beside
 * them. */
extern const symheap_plugin_t *const symheap__builtin_plugins[];
extern const symheap_netops_t *const symheap__builtin_nets[];

#define MAX_BUILTINS 16
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;
static const symheap_ccl_ops *builtin_ccls[MAX_BUILTINS];
static const symheap_netops_t *builtin_nets[MAX_BUILTINS];
static int nbuiltin_ccls, nbuiltin_nets;

static void admit_builtin(const symheap_plugin_t *p) {
  symheap_result_t r = symheap__plugin_admit(p, "built-in");
  if (r == SYMHEAP_SUCCESS && p->device)
    r = symheap__device_add(p->device);
  if (r == SYMHEAP_SUCCESS && p->ccl && nbuiltin_ccls < MAX_BUILTINS)
    builtin_ccls[nbuiltin_ccls++] = p->ccl;
  if (r == SYMHEAP_SUCCESS && COVERS(p->struct_size, symheap_plugin_t, net) &&
      p->net)
    r = symheap__net_add(p->net);
  if (r != SYMHEAP_SUCCESS)
    SYMHEAP_WARN("built-in adaptor '%s' refused: %s", p->name,
                 symheap__error_peek());
}

static void load_builtins(void) {
  for (int i = 0; symheap__builtin_plugins[i]; i++)
    admit_builtin(symheap__builtin_plugins[i]);
  for (int i = 0; symheap__builtin_nets[i] && i < MAX_BUILTINS; i++) {
    const symheap_netops_t *n = symheap__builtin_nets[i];
    if (n->init(&symheap__host_services) == SYMHEAP_SUCCESS)
      builtin_nets[nbuiltin_nets++] = n;
    else
      SYMHEAP_WARN("built-in net adaptor '%s' refused: %s", n->name,
                   symheap__error_peek());
  }
}

/* The first use of the registry must not change the caller's error text. */
static void load_builtins_quietly(void) {
  SYMHEAP__KEEP_ERROR(load_builtins());
}

void symheap__builtins_load(void) {
  pthread_once(&builtins_once, load_builtins_quietly);
}

const symheap_ccl_ops *symheap__builtin_ccl(const char *name) {
  symheap__builtins_load();
  for (int i = 0; i < nbuiltin_ccls; i++)
    if (strcmp(builtin_ccls[i]->name, name) == 0)
      return builtin_ccls[i];
  return NULL;
}

const symheap_netops_t *symheap__builtin_net(const char *name) {
  symheap__builtins_load();
  for (int i = 0; i < nbuiltin_nets; i++)
    if (strcmp(builtin_nets[i]->name, name) == 0)
      return builtin_nets[i];
  return NULL;
}

symheap_result_t symheap__plugins_load(void) {
  symheap__builtins_load();
  pthread_mutex_lock(&lock);
  if (!tried) {
    tried = 1;
    const char *spec = symheap__cfg_raw("SYMHEAP_PLUGIN");
    char *list = spec ? strdup(spec) : NULL;
    if (spec && !list)
      load_result = symheap__error(SYMHEAP_ERR_NO_MEMORY, "plugins: no memory");
    for (char *save = NULL, *t = list ? strtok_r(list, ",", &save) : NULL;
         t && load_result == SYMHEAP_SUCCESS; t = strtok_r(NULL, ",", &save))
      load_result = load_one(t);
    free(list);
    if (load_result != SYMHEAP_SUCCESS)
      snprintf(load_error, sizeof load_error, "%s", symheap__error_peek());
    if (nplugins)
      atexit(run_finis);
  }
  symheap_result_t r = load_result;
  pthread_mutex_unlock(&lock);
  if (r != SYMHEAP_SUCCESS)
    return symheap__error(r, "SYMHEAP_PLUGIN: %s", load_error);
  return SYMHEAP_SUCCESS;
}

int symheap__plugin_count(void) {
  pthread_mutex_lock(&lock);
  int n = nplugins;
  pthread_mutex_unlock(&lock);
  return n;
}

const symheap_plugin_t *symheap__plugin_get(int i, const char **path) {
  if (i < 0 || i >= symheap__plugin_count())
    return NULL;
  *path = plugins[i].path;
  return &plugins[i].p;
}

const symheap_ccl_ops *symheap__plugin_ccl(const char *name, char *known,
                                           size_t len) {
  const symheap_ccl_ops *found = NULL;
  size_t o = 0;
  known[0] = '\0';
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nplugins; i++) {
    if (!plugins[i].p.ccl)
      continue;
    if (strcasecmp(plugins[i].ccl.name, name) == 0)
      found = &plugins[i].ccl;
    if (o < len)
      o += (size_t)snprintf(known + o, len - o, "%s%s", o ? ", " : "",
                            plugins[i].ccl.name);
  }
  pthread_mutex_unlock(&lock);
  return found;
}

/* --- composition --------------------------------------------------------- */
typedef struct {
  symheap_device_ops below_ops; /* the table under this layer */
  symheap_hook_below_t below;
  symheap_device_hooks h; /* the members its struct_size covers */
} layer_t;

#define L ((layer_t *)ctx)
#define HOOKED(m) (L->h.m)
#define PASS(m, ...) L->below_ops.m(L->below.ctx, __VA_ARGS__)

static void l_fini(void *ctx) {
  layer_t *l = ctx;
  l->below_ops.fini(l->below.ctx);
  free(l);
}
static symheap_result_t l_query(void *ctx, symheap_device_caps_t *caps) {
  return PASS(query, caps);
}
static symheap_result_t l_mem_create(void *ctx, size_t size,
                                     symheap_mem_handle_t *h) {
  return PASS(mem_create, size, h);
}
static symheap_result_t l_mem_release(void *ctx, symheap_mem_handle_t h) {
  return HOOKED(mem_release) ? L->h.mem_release(&L->below, h)
                             : PASS(mem_release, h);
}
static symheap_result_t l_mem_export(void *ctx, symheap_mem_handle_t h,
                                     uint32_t kind, symheap_shareable_t *out) {
  return HOOKED(mem_export) ? L->h.mem_export(&L->below, h, kind, out)
                            : PASS(mem_export, h, kind, out);
}
static symheap_result_t l_mem_import(void *ctx, const symheap_shareable_t *in,
                                     symheap_mem_handle_t *h) {
  return HOOKED(mem_import) ? L->h.mem_import(&L->below, in, h)
                            : PASS(mem_import, in, h);
}
static symheap_result_t l_va_reserve(void *ctx, size_t size, size_t align,
                                     void **va) {
  return HOOKED(va_reserve) ? L->h.va_reserve(&L->below, size, align, va)
                            : PASS(va_reserve, size, align, va);
}
static symheap_result_t l_va_free(void *ctx, void *va, size_t size) {
  return HOOKED(va_free) ? L->h.va_free(&L->below, va, size)
                         : PASS(va_free, va, size);
}
static symheap_result_t l_map(void *ctx, void *va, size_t size,
                              symheap_mem_handle_t h, size_t off) {
  return HOOKED(map) ? L->h.map(&L->below, va, size, h, off)
                     : PASS(map, va, size, h, off);
}
static symheap_result_t l_unmap(void *ctx, void *va, size_t size) {
  return HOOKED(unmap) ? L->h.unmap(&L->below, va, size)
                       : PASS(unmap, va, size);
}
static symheap_result_t l_set_access(void *ctx, void *va, size_t size) {
  return HOOKED(set_access) ? L->h.set_access(&L->below, va, size)
                            : PASS(set_access, va, size);
}
static symheap_result_t l_mem_retain(void *ctx, void *ptr,
                                     symheap_mem_handle_t *h, void **base,
                                     size_t *size) {
  return PASS(mem_retain, ptr, h, base, size);
}
static symheap_result_t l_mc_create(void *ctx, size_t size, int n,
                                    symheap_mem_handle_t *mc) {
  return HOOKED(mc_create) ? L->h.mc_create(&L->below, size, n, mc)
                           : PASS(mc_create, size, n, mc);
}
static symheap_result_t l_mc_add_device(void *ctx, symheap_mem_handle_t mc) {
  return HOOKED(mc_add_device) ? L->h.mc_add_device(&L->below, mc)
                               : PASS(mc_add_device, mc);
}
static symheap_result_t l_mc_bind(void *ctx, symheap_mem_handle_t mc,
                                  size_t mco, symheap_mem_handle_t mem,
                                  size_t memo, size_t size) {
  return HOOKED(mc_bind) ? L->h.mc_bind(&L->below, mc, mco, mem, memo, size)
                         : PASS(mc_bind, mc, mco, mem, memo, size);
}
static symheap_result_t l_mc_unbind(void *ctx, symheap_mem_handle_t mc,
                                    size_t o, size_t size) {
  return HOOKED(mc_unbind) ? L->h.mc_unbind(&L->below, mc, o, size)
                           : PASS(mc_unbind, mc, o, size);
}
static symheap_result_t l_ipc_get(void *ctx, void *ptr, size_t size,
                                  symheap_shareable_t *out) {
  return PASS(ipc_get, ptr, size, out);
}
static symheap_result_t l_ipc_open(void *ctx, const symheap_shareable_t *in,
                                   void **ptr) {
  return PASS(ipc_open, in, ptr);
}
static symheap_result_t l_ipc_close(void *ctx, void *ptr) {
  return PASS(ipc_close, ptr);
}
static symheap_result_t l_mem_zero(void *ctx, void *va, size_t size) {
  return PASS(mem_zero, va, size);
}
static symheap_result_t l_dmabuf_export(void *ctx, void *ptr, size_t size,
                                        int *fd, uint64_t *offset) {
  return PASS(dmabuf_export, ptr, size, fd, offset);
}
static symheap_result_t l_host_alloc(void *ctx, size_t size, void **host,
                                     void **dev) {
  return PASS(host_alloc, size, host, dev);
}
static symheap_result_t l_host_free(void *ctx, void *host) {
  return PASS(host_free, host);
}
static symheap_result_t l_copy_to_host(void *ctx, void *dst,
                                       const void *dev_src, size_t size) {
  return PASS(copy_to_host, dst, dev_src, size);
}
static symheap_result_t l_copy_from_host(void *ctx, void *dev_dst,
                                         const void *src, size_t size) {
  return PASS(copy_from_host, dev_dst, src, size);
}
static symheap_result_t l_capture_check(void *ctx) {
  return L->below_ops.capture_check(L->below.ctx);
}

#undef L
#undef HOOKED
#undef PASS

symheap_result_t symheap__plugins_wrap(symheap__device_table_t *dev,
                                       void **ctx) {
  const char *base = dev->ops.name;
  for (int i = 0; i < symheap__plugin_count(); i++) {
    const symheap_device_hooks *h = plugins[i].p.hooks;
    if (!h || (strcmp(h->target, "*") != 0 && strcmp(h->target, base) != 0))
      continue;
    layer_t *l = calloc(1, sizeof *l);
    if (!l)
      return symheap__error(SYMHEAP_ERR_NO_MEMORY,
                            "plugin hooks: out of memory");
    l->below_ops = dev->ops;
    l->below.ops = &l->below_ops;
    l->below.ctx = *ctx;
    memcpy(&l->h, h,
           h->struct_size < sizeof l->h ? h->struct_size : sizeof l->h);
    symheap_device_ops o = dev->ops; /* name, versions, probes: the base's */
    o.fini = l_fini;
    o.query = l_query;
    o.mem_create = l_mem_create;
    o.mem_release = l_mem_release;
    o.mem_export = l_mem_export;
    o.mem_import = l_mem_import;
    o.va_reserve = l_va_reserve;
    o.va_free = l_va_free;
    o.map = l_map;
    o.unmap = l_unmap;
    o.set_access = l_set_access;
    o.mem_retain = l_mem_retain;
    o.mc_create = l_mc_create;
    o.mc_add_device = l_mc_add_device;
    o.mc_bind = l_mc_bind;
    o.mc_unbind = l_mc_unbind;
    o.ipc_get = l_ipc_get;
    o.ipc_open = l_ipc_open;
    o.ipc_close = l_ipc_close;
    o.mem_zero = l_mem_zero;
    o.capture_check = l_capture_check;
    if (dev->has_dmabuf) /* stays NULL where the base has none */
      o.dmabuf_export = l_dmabuf_export;
    if (dev->ops.host_alloc) { /* likewise */
      o.host_alloc = l_host_alloc;
      o.host_free = l_host_free;
      o.copy_to_host = l_copy_to_host;
    }
    if (dev->ops.copy_from_host) /* likewise */
      o.copy_from_host = l_copy_from_host;
    dev->ops = o;
    *ctx = l;
    SYMHEAP_INFO("device adaptor '%s': hooks of plugin '%s' compose over it",
                 base, plugins[i].p.name);
  }
  return SYMHEAP_SUCCESS;
}

/* Which hooked operations plugin i overrides, comma-separated. */
void symheap__plugin_hooked_ops(int i, char *out, size_t len) {
  out[0] = '\0';
  const symheap_device_hooks *h = plugins[i].p.hooks;
  if (!h)
    return;
  symheap_device_hooks c;
  memset(&c, 0, sizeof c);
  memcpy(&c, h, h->struct_size < sizeof c ? h->struct_size : sizeof c);
  size_t o = 0;
#define ONE(m)                                                                 \
  if (c.m && o < len)                                                          \
    o += (size_t)snprintf(out + o, len - o, "%s" #m, o ? "," : "");
  ONE(va_reserve)
  ONE(va_free)
  ONE(map) ONE(unmap) ONE(set_access) ONE(mc_create) ONE(mc_add_device)
      ONE(mc_bind) ONE(mc_unbind) ONE(mem_release) ONE(mem_export)
          ONE(mem_import)
#undef ONE
}

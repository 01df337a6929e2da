/* Plugins (plugin.c): the built-ins and loaded ones, admitted once per
 * process, and hook composition. */
#ifndef SYMHEAP_PLUGIN_H
#define SYMHEAP_PLUGIN_H

#include "registry.h"
#include "symheap_netops.h"

/* Check a plugin table (ABI, size, required members) and run its init;
 * `origin` (a path, or "built-in") names it in errors.  Built-in adaptors
 * and loaded plugins both come in through here. */
symheap_result_t symheap__plugin_admit(const symheap_plugin_t *in,
                                       const char *origin);
/* Admit the built-in adaptors the build lists (once): their device
 * adaptors into the registry, their variables declared. */
void symheap__builtins_load(void);
/* A built-in ccl adaptor (a window path: nccl) or net adaptor by name, or
 * NULL. */
const symheap_ccl_ops *symheap__builtin_ccl(const char *name);
const symheap_netops_t *symheap__builtin_net(const char *name);
/* Load what SYMHEAP_PLUGIN names (once; later calls repeat the outcome),
 * after the built-ins. */
symheap_result_t symheap__plugins_load(void);
/* Put every loaded plugin's hooks that target this adaptor (by name, or
 * "*") over it, in load order: dev's table and *ctx become the top layer's.
 * Call right after the adaptor's init. */
symheap_result_t symheap__plugins_wrap(symheap__device_table_t *dev,
                                       void **ctx);
/* Where a library shipped beside libsymheap is (plugins, the MPI ccl):
 * SYMHEAP_PLUGIN_PATH, then libsymheap's directory and its ../lib. */
symheap_result_t symheap__find_library(const char *file, char *path,
                                       size_t len);
/* The ccl of a loaded plugin whose ccl is called `name` (its table as
 * this library reads it), or NULL; `known` lists the loaded ccl names. */
const symheap_ccl_ops *symheap__plugin_ccl(const char *name, char *known,
                                           size_t len);
/* For symheap-info. */
int symheap__plugin_count(void);
const symheap_plugin_t *symheap__plugin_get(int i, const char **path);
void symheap__plugin_hooked_ops(int i, char *out, size_t len);

#endif

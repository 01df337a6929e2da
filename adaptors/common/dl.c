/* Loading a vendor library for an adaptor (dl.h). */
#include <dlfcn.h>
#include <stdio.h>

#include "dl.h"

void *symheap_dl_open(const char *path, char *why, size_t len) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h && why && len) {
    const char *e = dlerror();
    snprintf(why, len, "%s", e ? e : "unknown error");
  }
  return h;
}

void *symheap_dl_sym(void *handle, const char *name) {
  return handle ? dlsym(handle, name) : NULL;
}

const char *symheap_dl_syms(void *handle, const symheap_dl_sym_t *syms,
                            size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(*syms[i].slot = symheap_dl_sym(handle, syms[i].name)))
      return syms[i].name;
  return NULL;
}

void symheap_dl_close(void *handle) {
  if (handle)
    dlclose(handle);
}

/* Loading shared objects (dl.h): dlopen, dlsym, dladdr, once. */
#include <dlfcn.h>
#include <stdio.h>

#include "dl.h"

void *symheap__dl_open(const char *path, int global, char *why, size_t len) {
  void *h = dlopen(path, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (!h && why && len) {
    const char *e = dlerror();
    snprintf(why, len, "%s", e ? e : "unknown error");
  }
  return h;
}

void *symheap__dl_sym(void *handle, const char *name) {
  return handle ? dlsym(handle, name) : NULL;
}

void symheap__dl_close(void *handle) {
  if (handle)
    dlclose(handle);
}

void symheap__dl_file_of(const void *addr, char *out, size_t len) {
  Dl_info info;
  out[0] = '\0';
  if (dladdr(addr, &info) && info.dli_fname)
    snprintf(out, len, "%s", info.dli_fname);
}

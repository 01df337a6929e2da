/* The one place the core loads a shared object (plugins, the MPI ccl):
 * every loader of the core goes through it. */
#ifndef SYMHEAP_DL_H
#define SYMHEAP_DL_H

#include <stddef.h>

/* dlopen with RTLD_NOW (and RTLD_GLOBAL when global, else RTLD_LOCAL): the
 * handle, or NULL with the loader's words in why. */
void *symheap__dl_open(const char *path, int global, char *why, size_t len);
/* A symbol of an open object, or NULL. */
void *symheap__dl_sym(void *handle, const char *name);
void symheap__dl_close(void *handle);
/* The file the object holding `addr` was loaded from, or "" (dladdr). */
void symheap__dl_file_of(const void *addr, char *out, size_t len);

#endif

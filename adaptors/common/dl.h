/* The one place an adaptor loads its vendor's library (the CUDA driver, the
 * HIP runtime, NCCL, libibverbs): open, resolve a table of names, close. */
#ifndef SYMHEAP_ADAPTOR_DL_H
#define SYMHEAP_ADAPTOR_DL_H

#include <stddef.h>

/* One entry point to resolve: where it goes, and its name. */
typedef struct {
  void **slot;
  const char *name;
} symheap_dl_sym_t;

/* dlopen(path, RTLD_NOW | RTLD_LOCAL): the handle, or NULL with the
 * loader's words in why. */
void *symheap_dl_open(const char *path, char *why, size_t len);
/* One symbol, or NULL. */
void *symheap_dl_sym(void *handle, const char *name);
/* Every entry of the table: NULL, or the first name the library lacks
 * (the entries before it are resolved). */
const char *symheap_dl_syms(void *handle, const symheap_dl_sym_t *syms,
                            size_t n);
void symheap_dl_close(void *handle);

#endif

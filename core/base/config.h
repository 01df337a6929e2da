/* Table-driven configuration: every environment variable symheap reads is
 * declared once in config.c with its default, accepted values and help, and
 * read only through these functions, so a malformed value is always an error
 * that names the variable. */
#ifndef SYMHEAP_CONFIG_H
#define SYMHEAP_CONFIG_H

#include "internal.h"

/* SYMHEAP_TIMEOUT_MS's default (the table says the same, as text). */
#define SYMHEAP__DEFAULT_TIMEOUT_MS 30000

typedef enum {
  SYMHEAP_CFG_STRING,
  SYMHEAP_CFG_INT,
  SYMHEAP_CFG_BOOL, /* 0 or 1 */
  SYMHEAP_CFG_CHOICE,
  /* bytes, K/M/G/T suffix (size.h); at least min; max > 0: at most max
   * bytes (bounds that depend on the device, as the heap chunk's physical
   * memory, are its reader's: mem/heap_config.c) */
  SYMHEAP_CFG_SIZE,
} symheap__cfg_kind_t;

typedef struct {
  const char *name;
  symheap__cfg_kind_t kind;
  const char *def;     /* NULL: unset by default */
  long min, max;       /* SYMHEAP_CFG_INT; SYMHEAP_CFG_SIZE: see above */
  const char *choices; /* SYMHEAP_CFG_CHOICE: '|'-separated */
  const char *help;
} symheap__cfg_var_t;

const symheap__cfg_var_t *symheap__cfg_table(size_t *count);
/* Raw value, or NULL when unset (the default is not applied). */
const char *symheap__cfg_raw(const char *name);
/* Value or default, validated; *set tells whether the user set it. */
symheap_result_t symheap__cfg_string(const char *name, const char **value);
symheap_result_t symheap__cfg_int(const char *name, long *value);
symheap_result_t symheap__cfg_bool(const char *name, int *value);
/* Value or default of a SYMHEAP_CFG_SIZE variable, in bytes. */
symheap_result_t symheap__cfg_size(const char *name, uint64_t *value);
/* Index of the value in the variable's choices. */
symheap_result_t symheap__cfg_choice(const char *name, int *index);
/* Variables declared at run time by adaptors and plugins (param_define),
 * listed after the table's own; `owner` names who declared each. */
symheap_result_t symheap__cfg_declare(const char *owner,
                                      const symheap_param_t *param);
int symheap__cfg_declared_count(void);
const symheap__cfg_var_t *symheap__cfg_declared(int i, const char **owner);
/* Validate every variable that is set; the first malformed one is an error. */
symheap_result_t symheap__cfg_validate_all(void);

#endif

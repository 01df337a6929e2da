/* libFuzzer target: the environment parser.  The input becomes the value of
 * one typed variable (picked by its first byte); reading it either succeeds
 * with a value in range or fails with a message that names the variable. */
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  if (size < 1)
    return 0;
  size_t n;
  const symheap__cfg_var_t *t = symheap__cfg_table(&n);
  const symheap__cfg_var_t *v = &t[data[0] % n];
  char *val = malloc(size);
  if (!val)
    return 0;
  memcpy(val, data + 1, size - 1);
  val[size - 1] = '\0';
  setenv(v->name, val, 1);
  symheap_result_t r = SYMHEAP_SUCCESS;
  if (v->kind == SYMHEAP_CFG_INT) {
    long x = 0;
    r = symheap__cfg_int(v->name, &x);
    if (r == SYMHEAP_SUCCESS && (x < v->min || x > v->max))
      abort();
  } else if (v->kind == SYMHEAP_CFG_BOOL) {
    int b = 0;
    r = symheap__cfg_bool(v->name, &b);
    if (r == SYMHEAP_SUCCESS && b != 0 && b != 1)
      abort();
  } else if (v->kind == SYMHEAP_CFG_CHOICE) {
    int i = 0;
    r = symheap__cfg_choice(v->name, &i);
  } else {
    const char *s = NULL;
    r = symheap__cfg_string(v->name, &s);
  }
  if (r != SYMHEAP_SUCCESS && val[0] && !strstr(symheap_last_error(), v->name))
    abort(); /* an error must name the variable */
  (void)symheap__cfg_validate_all();
  unsetenv(v->name);
  free(val);
  return 0;
}

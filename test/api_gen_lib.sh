# Sourced by test/ofi_api_gen.sh and test/ucx_api_gen.sh: what the two
# generators of a vendor-ABI drift check share.  Each one reads its own
# header (adaptors/net/<engine>/<engine>_api.h) with awk rules of its own
# (the two headers declare structs differently) and writes a C program
# between api_gen_head and api_gen_tail; test/api_check_lib.sh compares
# what that program prints built after our header and after the vendor's.

# The program's start: SZ, OFF and VAL print one "fact|value" line each.
api_gen_head() {
  cat <<'EOC'
#include <stddef.h>
#include <stdio.h>
#define SZ(t) printf("sizeof(%s)|%zu\n", #t, sizeof(t))
#define OFF(t, m)                                                              \
  printf("%s.%s|%zu %zu\n", #t, #m, offsetof(t, m), sizeof(((t *)0)->m))
#define VAL(c) printf("%s|%lld\n", #c, (long long)(c))
int main(void) {
EOC
}

# api_gen_tail EXPR...: a VAL line for each EXPR (function-like macros,
# which cannot be listed by name: their uses), then the program's end.
api_gen_tail() {
  for e in "$@"; do
    printf '  VAL(%s);\n' "$e"
  done
  printf '  return 0;\n}\n'
}

# awk functions both generators' rules call: last_ident(s), the last
# identifier of a declaration (array bounds dropped); member(stmt), the
# name a member declaration declares (a function pointer's too).
API_GEN_AWK_LIB='
function last_ident(s,   n, a) {
  gsub(/\[[^]]*\]/, "", s)
  n = split(s, a, /[^A-Za-z0-9_]+/)
  while (n > 0 && a[n] == "") n--
  return a[n]
}
function member(stmt,   m) {
  if (match(stmt, /\(\*[ \t]*[A-Za-z0-9_]+[ \t]*\)/)) {
    m = substr(stmt, RSTART + 2, RLENGTH - 3)
    gsub(/[ \t]/, "", m)
    return m
  }
  sub(/;.*/, "", stmt)
  return last_ident(stmt)
}
'

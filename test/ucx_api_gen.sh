#!/bin/sh
# test/ucx_api_gen.sh HEADER: the body of a C program that prints, for what
# HEADER (adaptors/net/ucx/ucx_api.h) declares, one line per fact:
#   sizeof(T)|<n>          every struct typedef and enum typedef
#   T.member|<off> <size>  every member of every struct (a nested union is
#                          one member)
#   NAME|<value>           every object-like UCP_/UCS_ #define and every
#                          enum constant
# The same body compiled once after ucx_api.h and once after UCX's headers
# must print the same lines (test/ucx_api_check.sh compares them).  It is
# read from the header, so a member or constant added there is checked
# without anyone listing it.  The header's rule (ucx_api.h's comment): a
# struct is a typedef, one member per line, its name on its closing line.
set -eu
hdr=$1
# the program's frame and the awk helpers both generators use
. "$(dirname "$0")/api_gen_lib.sh"
api_gen_head
awk "$API_GEN_AWK_LIB"'
# A struct typedef: members collected, printed under the closing name.
/^typedef struct[ A-Za-z0-9_]*\{/ { instruct = 1; depth = 0; n = 0; next }
instruct && depth == 0 && /^}/ {
  t = $0; sub(/;.*/, "", t); t = last_ident(t)
  printf "  SZ(%s);\n", t
  for (i = 0; i < n; i++) printf "  OFF(%s, %s);\n", t, m[i]
  instruct = 0
  next
}
instruct && /^[ \t]*(union|struct)[ \t]*\{/ { depth++; next }
instruct && depth > 0 {
  if ($0 ~ /^[ \t]*}/) { depth--; if (depth == 0) m[n++] = member($0) }
  next
}
instruct && /;/ { line = $0; sub(/\/\*.*\*\//, "", line); m[n++] = member(line); next }
# Enum typedefs: the type and each constant.
/^typedef enum/ { inenum = 1; next }
inenum && /^}/ {
  t = $0; sub(/;.*/, "", t); t = last_ident(t)
  printf "  SZ(%s);\n", t
  inenum = 0
  next
}
inenum {
  c = $0; sub(/=.*/, "", c); gsub(/[ \t,]/, "", c)
  if (c ~ /^UC[PS]_/) printf "  VAL(%s);\n", c
  next
}
/^#define UC[PS]_[A-Za-z0-9_]+[ \t]/ { printf "  VAL(%s);\n", $2; next }
' "$hdr"
api_gen_tail 'ucp_dt_make_contig(8)'

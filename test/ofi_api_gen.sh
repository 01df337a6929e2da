#!/bin/sh
# test/ofi_api_gen.sh HEADER: the body of a C program that prints, for what
# HEADER (adaptors/net/ofi/ofi_api.h) declares, one line per fact:
#   sizeof(struct X)|<n>          every struct, enum and fi* typedef
#   struct X.member|<off> <size>  every member of every struct
#   FI_NAME|<value>               every object-like #define and enum constant
# The same body compiled once after ofi_api.h and once after libfabric's
# headers must print the same lines (test/ofi_api_check.sh compares them).
# It is read from the header, so a member or constant added there is
# checked without anyone listing it.  The header keeps one member per line
# (a member may wrap, ending at its ';'); a nested union's members are not
# listed, the union itself is.
set -eu
hdr=$1
# the program's frame and the awk helpers both generators use
. "$(dirname "$0")/api_gen_lib.sh"
api_gen_head
awk "$API_GEN_AWK_LIB"'
# Inside a struct body.
instruct && /^};/ { instruct = 0; next }
instruct && depth == 0 && /^[ \t]*(union|struct)[ \t]*\{/ { depth = 1; next }
instruct && depth > 0 {
  if ($0 ~ /\{/) depth++
  if ($0 ~ /^[ \t]*}/) {
    depth--
    if (depth == 0) {
      n = member($0)
      printf "  OFF(struct %s, %s);\n", sname, n
    }
  }
  next
}
instruct {
  line = $0
  sub(/\/\*.*\*\//, "", line)
  stmt = stmt " " line
  if (stmt ~ /;/) {
    printf "  OFF(struct %s, %s);\n", sname, member(stmt)
    stmt = ""
  }
  next
}
/^struct [A-Za-z0-9_]+ \{/ {
  sname = $2; instruct = 1; depth = 0; stmt = ""
  printf "  SZ(struct %s);\n", sname
  next
}
# Enums: the type and each constant (one line or several).
/^enum [A-Za-z0-9_]+ \{/ {
  printf "  SZ(enum %s);\n", $2
  inenum = 1
}
inenum {
  body = $0
  sub(/^enum [A-Za-z0-9_]+ \{/, "", body)
  sub(/\/\*.*\*\//, "", body)
  n = split(body, parts, ",")
  for (i = 1; i <= n; i++) {
    c = parts[i]
    sub(/=.*/, "", c); sub(/}.*/, "", c); gsub(/[ \t;]/, "", c)
    if (c ~ /^FI_/) printf "  VAL(%s);\n", c
  }
  if ($0 ~ /}/) inenum = 0
  next
}
/^#define FI_[A-Za-z0-9_]+[ \t]/ { printf "  VAL(%s);\n", $2; next }
/^typedef .*[ *]fi[A-Za-z0-9_]*;/ {
  t = $0; sub(/;.*/, "", t)
  printf "  SZ(%s);\n", last_ident(t)
  next
}
' "$hdr"
api_gen_tail 'FI_VERSION(1, 9)' 'FI_VERSION(1, 17)'

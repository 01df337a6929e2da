#!/bin/sh
# adaptors/net/ofi/ofi_api.h declares the part of libfabric's ABI that the
# ofi adaptor uses; this checks it against libfabric's own headers.  The
# Makefile builds one program, generated from ofi_api.h (test/ofi_api_gen.sh:
# every struct's size, every member's offset and size, every constant's
# value), twice: after ofi_api.h (ofi_api_ours) and after <rdma/*.h>
# (ofi_api_theirs, only where libfabric-dev is installed).  Their outputs
# must be the same line for line.  One PASS or FAIL per struct, enum, the
# typedefs and the constants; then the check proves itself: a copy of
# ofi_api.h with a constant changed and one with a member dropped must
# each be caught.
#   test/ofi_api_check.sh [BUILD]      (BUILD defaults to build)
set -u
cd "$(dirname "$0")/.." || exit 1
B=${1:-build}
HDR=adaptors/net/ofi/ofi_api.h
CC=${CC:-cc}

if [ ! -x "$B/test/ofi_api_theirs" ]; then
  if printf '#include <rdma/fabric.h>\n' | "$CC" -E -x c - >/dev/null 2>&1; then
    echo "FAIL ofi_api/built libfabric's headers are here but $B/test/ofi_api_theirs is not built (make tests)"
  else
    echo "SKIP ofi_api: libfabric's headers (Debian package libfabric-dev) are not installed: nothing to compare ofi_api.h with"
  fi
  exit 0
fi
if [ ! -x "$B/test/ofi_api_ours" ]; then
  echo "FAIL ofi_api/built $B/test/ofi_api_ours is not built (make tests)"
  exit 0
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$B/test/ofi_api_theirs" >"$TMP/theirs" || echo "FAIL ofi_api/run ofi_api_theirs exited $?"
"$B/test/ofi_api_ours" >"$TMP/ours" || echo "FAIL ofi_api/run ofi_api_ours exited $?"

# compare OURS THEIRS PREFIX: one line per group, "<group> ok" or
# "<group> bad <what differs>"; a group is a struct, an enum, the typedefs
# or the constants.
compare() {
  awk -F'|' '
    function group(k,   g) {
      g = k
      sub(/^sizeof\(/, "", g); sub(/\)$/, "", g); sub(/\..*/, "", g)
      if (g ~ /^FI_/) return "constants"
      if (g !~ /^(struct|enum) /) return "typedefs"
      gsub(/ /, "_", g)
      return g
    }
    NR == FNR { theirs[$1] = $2; next }
    {
      g = group($1)
      if (!(g in seen)) { seen[g] = 1; order[n++] = g }
      if (!($1 in theirs))
        bad[g] = bad[g] sprintf(" %s: ours %s, not in libfabric'"'"'s;", $1, $2)
      else if (theirs[$1] != $2)
        bad[g] = bad[g] sprintf(" %s: ours %s, libfabric'"'"'s %s;", $1, $2, theirs[$1])
    }
    END {
      for (i = 0; i < n; i++)
        print order[i], (order[i] in bad) ? "bad" bad[order[i]] : "ok"
    }' "$2" "$1"
}

compare "$TMP/ours" "$TMP/theirs" >"$TMP/result"
while read -r g verdict; do
  case $verdict in
  ok) echo "PASS ofi_api/$g" ;;
  *) echo "FAIL ofi_api/$g ${verdict#bad }" ;;
  esac
done <"$TMP/result"

# Every struct of the header was listed (the generator read it all).
want=$(grep -c '^struct [A-Za-z0-9_]* {' "$HDR")
got=$(grep -c '^struct_' "$TMP/result")
if [ "$want" -gt 0 ] && [ "$want" = "$got" ]; then
  echo "PASS ofi_api/all_structs_listed"
else
  echo "FAIL ofi_api/all_structs_listed $HDR defines $want structs, the check listed $got (test/ofi_api_gen.sh misread it)"
fi

# mutant NAME SED-EXPR GROUP: a copy of ofi_api.h changed by SED-EXPR must
# differ from libfabric's in GROUP.
mutant() {
  sed "$2" "$HDR" >"$TMP/$1.h"
  if cmp -s "$HDR" "$TMP/$1.h"; then
    echo "FAIL ofi_api/$1 the edit '$2' changed nothing in $HDR"
    return
  fi
  sh test/ofi_api_gen.sh "$TMP/$1.h" >"$TMP/$1.c" &&
    "$CC" -std=c11 -D_GNU_SOURCE -w -include "$TMP/$1.h" -o "$TMP/$1" "$TMP/$1.c" &&
    "$TMP/$1" >"$TMP/$1.out" || {
    echo "FAIL ofi_api/$1 the changed copy did not build or run"
    return
  }
  if compare "$TMP/$1.out" "$TMP/theirs" | grep -q "^$3 bad"; then
    echo "PASS ofi_api/$1"
  else
    echo "FAIL ofi_api/$1 a copy of ofi_api.h with '$2' was not told apart from libfabric's headers in $3"
  fi
}
mutant catches_changed_constant 's/^#define FI_FENCE (1ULL << 21)/#define FI_FENCE (1ULL << 22)/' constants
mutant catches_dropped_member '/^  uint64_t tag;$/d' struct_fi_cq_err_entry
mutant catches_dropped_op '/^  ofi_unused_op signal;$/d' struct_fi_ops_cq
# The calls (ofi_api_calls.h) declare no layout or constant of their own:
# whatever the check above does not read would go unchecked there.
CALLS=adaptors/net/ofi/ofi_api_calls.h
extra=$(grep -nE '^(struct [A-Za-z0-9_]* \{|enum |typedef |#define FI_)' "$CALLS")
if [ -z "$extra" ]; then
  echo "PASS ofi_api/calls_declare_no_layout"
else
  echo "FAIL ofi_api/calls_declare_no_layout $CALLS declares what belongs in $HDR (checked there): $(echo "$extra" | head -3 | tr '\n' ' ')"
fi
exit 0
